"""TD3's learning threshold on Pendulum-v1, from its tuned example."""

import pathlib

import pytest

from rljax.algorithms.td3 import TD3Config

TUNED = pathlib.Path(__file__).parents[2] / "rljax" / "tuned_examples"


@pytest.mark.xla_optimized
@pytest.mark.slow
def test_td3_pendulum_reaches_minus_250_within_20k_steps(train_until):
    algo = TD3Config.from_yaml(TUNED / "td3_pendulum.yaml").build_algo()
    try:
        assert algo.fused
        result = train_until(algo, -250, 20_000)
        runners = result["env_runners"]
        # Each iteration is 10 whole episodes: the mean of the last 10 of the exploring policy.
        assert runners["num_episodes"] == 10, runners
        assert runners["episode_return_mean"] >= -250, runners
        assert result["num_env_steps_sampled_lifetime"] <= 20_000
        # The greedy policy too, at the end of the 20k-step budget: right at the first iteration
        # past -250 it can still swing (on one CPU it measured -472 there and -125 at 20k).
        while result["num_env_steps_sampled_lifetime"] < 20_000:
            result = algo.train()
        assert algo.evaluate()["env_runners"]["episode_return_mean"] >= -250
    finally:
        algo.stop()
