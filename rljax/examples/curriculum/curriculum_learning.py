"""Curriculum learning: FrozenLake maps from easy to hard, switched on every env runner.

``FrozenLake-v1`` with a ``desc`` map runs on gymnasium (EnvPool's FrozenLake has no maps).
A callback keeps the current task in ``algorithm._counters`` and, once the mean return on it
passes ``--upgrade-task-threshold``, moves every runner to the next map: it sets the runner's
``env_config`` and rebuilds its envs (``env_runner.config.environment(...)``,
``env_runner.make_env()``, through ``algorithm.env_runner_group.foreach_env_runner``). The run
stops when the hardest map is solved (``task_solved`` reaches 1).

``python -m rljax.examples.curriculum.curriculum_learning --no-tune``
(``--no-curriculum`` starts on the hardest map, for comparison)
"""

from functools import partial
from typing import Any

from rljax.algorithms.ppo import PPOConfig
from rljax.callbacks.callbacks import RLlibCallback
from rljax.connectors.env_to_module import FlattenObservations
from rljax.tune.result import TRAINING_ITERATION
from rljax.utils.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
)
from rljax.utils.test_utils import (
    add_rllib_example_script_args,
    run_rllib_example_script_experiment,
)

parser = add_rllib_example_script_args(default_iters=100, default_timesteps=600_000)
parser.add_argument("--upgrade-task-threshold", type=float, default=0.99)
parser.add_argument("--no-curriculum", action="store_true")
args = parser.parse_args()

# Start (S) to goal (G) over frozen cells (F), avoiding holes (H); longer and holier each time.
ENV_MAPS = [
    ["SFFFFFF", "FFFFFFF", "GFFFFFF", "FFFFFFF", "FFFFFFF", "FFFFFFF", "FFFFFFF"],
    ["SFFFFFF", "FFFFFFF", "FFFFFFF", "FFFFFFF", "FFFFGFF", "FFFFFFF", "FFFFFFF"],
    ["SFFFFFF", "FFFHFFF", "FFFFFFF", "HHHFFFF", "FFFFFHF", "FFHFFFF", "FFFFFFG"],
]
ENV_OPTIONS = {"is_slippery": False, "max_episode_steps": 20}


def _set_task(env_runner: Any, task: int) -> None:
    env_runner.config.environment(env_config={"desc": ENV_MAPS[task], **ENV_OPTIONS})
    env_runner.make_env()


class EnvTaskCallback(RLlibCallback):
    def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
        algorithm._counters["current_env_task"] = len(ENV_MAPS) - 1 if args.no_curriculum else 0

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        task = algorithm._counters["current_env_task"]
        mean = result[ENV_RUNNER_RESULTS][EPISODE_RETURN_MEAN]
        result["task_solved"] = float(task == len(ENV_MAPS) - 1 and mean >= 1.0)
        result["current_env_task"] = task
        if args.no_curriculum or task == len(ENV_MAPS) - 1:
            return
        if mean > args.upgrade_task_threshold:
            algorithm._counters["current_env_task"] = task + 1
            print(f"Switching every env runner to task {task + 1} (return {mean:.2f})")
            algorithm.env_runner_group.foreach_env_runner(partial(_set_task, task=task + 1))


base_config = (
    PPOConfig()
    .callbacks(EnvTaskCallback)
    .environment(
        "FrozenLake-v1",
        env_config={"desc": ENV_MAPS[-1 if args.no_curriculum else 0], **ENV_OPTIONS},
    )
    .env_runners(
        num_envs_per_env_runner=5,
        env_to_module_connector=lambda env, spaces, device: FlattenObservations(),
    )
    .training(num_epochs=6, vf_loss_coeff=0.01, lr=2e-4)
)

stop = {
    TRAINING_ITERATION: args.stop_iters,
    "task_solved": 1.0,
    NUM_ENV_STEPS_SAMPLED_LIFETIME: args.stop_timesteps,
}

if __name__ == "__main__":
    run_rllib_example_script_experiment(
        base_config, args, stop=stop, success_metric={"task_solved": 1.0}
    )
