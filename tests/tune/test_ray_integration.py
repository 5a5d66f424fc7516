"""An rljax algorithm as a trainable of Ray Tune itself (runs only where Ray is installed)."""

from __future__ import annotations

import importlib.util

import pytest

from rljax.tune.ray_integration import ray_trainable
from rljax.utils.errors import ConfigError

HAVE_RAY = importlib.util.find_spec("ray") is not None


@pytest.mark.skipif(HAVE_RAY, reason="checks the message shown without Ray")
def test_without_ray_the_error_says_how_to_install_it():
    with pytest.raises(ImportError, match=r'pip install "ray\[tune\]"'):
        ray_trainable("PPO")


@pytest.mark.skipif(not HAVE_RAY, reason="Ray Tune is not installed")
def test_bad_algorithm_names_are_refused():
    with pytest.raises(ConfigError, match="not an rljax algorithm"):
        ray_trainable("NoSuchAlgo")


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_RAY, reason="Ray Tune is not installed")
def test_ray_tune_trains_an_rljax_ppo_grid_and_checkpoints_it(tmp_path):
    import ray
    from ray import tune as ray_tune

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        grid = ray_tune.Tuner(
            ray_trainable("PPO"),
            param_space={
                "env": "CartPole-v1",
                "num_envs_per_env_runner": 4,
                "train_batch_size_per_learner": 256,
                "minibatch_size": 64,
                "num_epochs": 1,
                "lr": ray_tune.grid_search([1e-3, 3e-4]),
                "seed": 0,
            },
            tune_config=ray_tune.TuneConfig(metric="env_runners/episode_return_mean", mode="max"),
            run_config=ray_tune.RunConfig(
                storage_path=str(tmp_path),
                stop={"training_iteration": 2},
                checkpoint_config=ray_tune.CheckpointConfig(checkpoint_at_end=True),
            ),
        ).fit()
    finally:
        ray.shutdown()
    assert len(grid) == 2 and not grid.errors
    for result in grid:
        assert result.metrics["training_iteration"] == 2
        assert result.metrics["num_env_steps_sampled_lifetime"] >= 2 * 200
        assert result.metrics["env_runners"]["episode_return_mean"] > 0
        assert result.checkpoint is not None
    assert sorted(r.config["lr"] for r in grid) == [3e-4, 1e-3]
