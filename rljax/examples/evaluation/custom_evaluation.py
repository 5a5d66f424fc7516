"""A custom evaluation function: each evaluation runner walks a corridor of another length.

Training runs on a 10-cell ``SimpleCorridor``; every iteration the custom function sets the
evaluation runners' corridors (through ``foreach_env_runner``) to 20 and 30 cells, samples
episodes on them, and merges the runners' metrics with ``algorithm.metrics.aggregate``. The
run stops once the evaluation's mean return passes ``--stop-reward``.

``python -m rljax.examples.evaluation.custom_evaluation --no-tune``
"""

from typing import Any

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.algorithm_config import AlgorithmConfig
from rljax.env.env_runner_group import EnvRunnerGroup
from rljax.examples.envs.classes.simple_corridor import SimpleCorridor
from rljax.tune.registry import get_trainable_cls
from rljax.tune.result import TRAINING_ITERATION
from rljax.utils.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    EVALUATION_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
)
from rljax.utils.test_utils import (
    add_rllib_example_script_args,
    run_rllib_example_script_experiment,
)

parser = add_rllib_example_script_args(
    default_iters=50, default_reward=0.7, default_timesteps=50_000
)
parser.add_argument("--no-custom-eval", action="store_true")
parser.add_argument("--corridor-length-training", type=int, default=10)
parser.add_argument("--corridor-length-eval-worker-1", type=int, default=20)
parser.add_argument("--corridor-length-eval-worker-2", type=int, default=30)
args = parser.parse_args()


def custom_eval_function(
    algorithm: Algorithm, eval_workers: EnvRunnerGroup
) -> tuple[dict[str, Any], int, int]:
    """Two rounds of one episode per env copy on each runner's own corridor length."""

    def set_length(runner: Any) -> None:
        length = (
            args.corridor_length_eval_worker_1
            if runner.worker_index == 1
            else args.corridor_length_eval_worker_2
        )
        for env in runner.env.unwrapped.envs:
            env.unwrapped.set_corridor_length(length)

    eval_workers.foreach_env_runner(set_length)
    episodes, metrics = [], []
    for _ in range(2):
        out = eval_workers.foreach_env_runner(
            lambda runner: (runner.sample(), runner.get_metrics()), local_env_runner=False
        )
        episodes += [episode for eps, _ in out for episode in eps]
        metrics += [m for _, m in out]
    algorithm.metrics.aggregate(metrics, key=(EVALUATION_RESULTS, ENV_RUNNER_RESULTS))
    results = algorithm.metrics.peek((EVALUATION_RESULTS, ENV_RUNNER_RESULTS))
    env_steps = sum(e.env_steps() for e in episodes)
    return results, env_steps, sum(e.agent_steps() for e in episodes)


base_config = (
    get_trainable_cls(args.algo)
    .get_default_config()
    .environment(SimpleCorridor, env_config={"corridor_length": args.corridor_length_training})
    .env_runners(num_envs_per_env_runner=4)
    .training(train_batch_size_per_learner=1000, minibatch_size=250)
    .evaluation(
        custom_evaluation_function=None if args.no_custom_eval else custom_eval_function,
        evaluation_num_env_runners=2,
        evaluation_interval=1,
        evaluation_config=AlgorithmConfig.overrides(
            env_config={"corridor_length": args.corridor_length_training * 2},
            metrics_num_episodes_for_smoothing=5,
        ),
    )
)

stop = {
    TRAINING_ITERATION: args.stop_iters,
    f"{EVALUATION_RESULTS}/{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}": args.stop_reward,
    NUM_ENV_STEPS_SAMPLED_LIFETIME: args.stop_timesteps,
}

if __name__ == "__main__":
    run_rllib_example_script_experiment(
        base_config,
        args,
        stop=stop,
        success_metric={
            f"{EVALUATION_RESULTS}/{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}": args.stop_reward
        },
    )
