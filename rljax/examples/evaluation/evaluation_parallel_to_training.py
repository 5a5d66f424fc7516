"""Evaluation in parallel to training, for as long as each training step takes
(``evaluation_duration="auto"``), or for a fixed number of episodes or env steps.

A callback checks every result: with a fixed duration in env steps, the evaluation reports
that many (a few more on EnvPool's envs); with episodes, at least that many finished.

``python -m rljax.examples.evaluation.evaluation_parallel_to_training --no-tune
--evaluation-duration=auto``; ``--evaluation-duration=200 --evaluation-duration-unit=timesteps``.
"""

from typing import Any

from rljax.algorithms.ppo import PPOConfig
from rljax.callbacks.callbacks import RLlibCallback
from rljax.utils.metrics import ENV_RUNNER_RESULTS, EVALUATION_RESULTS, NUM_EPISODES
from rljax.utils.test_utils import (
    add_rllib_example_script_args,
    run_rllib_example_script_experiment,
)

parser = add_rllib_example_script_args(default_reward=450.0, default_timesteps=300_000)
parser.set_defaults(
    evaluation_interval=1,
    evaluation_num_env_runners=2,
    evaluation_parallel_to_training=True,
    evaluation_duration="auto",
)
args = parser.parse_args()


class AssertEvalCallback(RLlibCallback):
    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        evaluation = result.get(EVALUATION_RESULTS)
        if evaluation is None:
            return
        stats = evaluation[ENV_RUNNER_RESULTS]
        duration = algorithm.config.evaluation_duration
        if duration == "auto":  # it ran alongside the training step
            assert stats["num_env_steps_sampled"] > 0, stats
        elif algorithm.config.evaluation_duration_unit == "timesteps":
            # Exact on gymnasium envs; EnvPool's copies may add a few (a copy's auto-reset
            # step is no env step, so a step of all copies can take fewer).
            copies = algorithm.config.evaluation_num_env_runners * 8
            assert duration <= stats["num_env_steps_sampled"] < duration + copies, stats
        else:
            assert stats[NUM_EPISODES] >= duration, stats
        print(f"evaluation: {stats[NUM_EPISODES]} episodes, {stats['num_env_steps_sampled']} steps")


config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_envs_per_env_runner=8)
    .callbacks(AssertEvalCallback)
)

if __name__ == "__main__":
    run_rllib_example_script_experiment(config, args)
