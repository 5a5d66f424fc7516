"""Save a run part-way, then continue it from the checkpoint in a new algorithm.

Trains PPO on CartPole for ``--stop-iters`` iterations (``algo.save()``, RLlib's return
value: ``.checkpoint.path``), builds a second algorithm from the same config, restores the
checkpoint into it and trains on: the counters and the return carry over.

``python -m rljax.examples.checkpoints.continue_training_from_checkpoint --stop-iters=5``
"""

import math
import tempfile

from rljax.algorithms.ppo import PPOConfig
from rljax.utils.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
)
from rljax.utils.test_utils import add_rllib_example_script_args

parser = add_rllib_example_script_args(default_iters=5, default_reward=150.0)
args = parser.parse_args()

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_envs_per_env_runner=8)
    .training(train_batch_size_per_learner=2000, minibatch_size=500)
    .debugging(seed=0)
)

if __name__ == "__main__":
    algo = config.build_algo()
    for _ in range(args.stop_iters):
        result = algo.train()
    saved = algo.save(tempfile.mkdtemp(prefix="continue_"))
    print(f"saved iteration {algo.training_iteration} to {saved.checkpoint.path}")
    algo.stop()

    resumed = config.build_algo()
    resumed.restore(saved)
    assert resumed.training_iteration == args.stop_iters
    result = resumed.train()
    assert result["training_iteration"] == args.stop_iters + 1
    steps = result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME]
    mean = result[ENV_RUNNER_RESULTS][EPISODE_RETURN_MEAN]
    print(f"continued: iteration {result['training_iteration']}, {steps} env steps, R={mean}")
    resumed.stop()
    if args.as_test and not (not math.isnan(mean) and mean >= args.stop_reward):
        raise ValueError(
            f"`{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}` of {args.stop_reward} not reached!"
        )
