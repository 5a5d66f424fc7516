"""EnvPool's MuJoCo tasks (64-bit spaces) train: JAX computes in 32 bits, so such an env runs
on the host path, which hands EnvPool actions of its own dtype."""

from __future__ import annotations

import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.connectors.env_to_module import MeanStdFilter


@pytest.mark.slow  # integration: in the README's full run
def test_envpool_mujoco_runs_on_the_host_path_with_float64_actions():
    config = (
        PPOConfig()
        .environment("HalfCheetah-v4")
        .env_runners(num_envs_per_env_runner=2, env_to_module_connector=[MeanStdFilter()])
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16], "free_log_std": True})
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        assert algo.action_space.dtype == np.float64  # EnvPool's MuJoCo spaces
        assert not algo.fused  # a float64 env cannot step inside 32-bit jit
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] > 100  # 128 rows less first resets
        s = algo.state.connectors[0]
        assert int(s["count"]) == result["num_env_steps_trained_lifetime"]
        action = algo.compute_single_action(np.zeros(17))
        assert action.dtype == np.float64 and action.shape == (6,)
        assert np.all(np.abs(action) <= 1.0)


@pytest.mark.slow  # integration: in the README's full run
def test_runner_threads_on_a_float64_envpool_env_step_it_from_python():
    """An EnvPool MuJoCo task's runner threads step it from Python, which hands EnvPool
    float64 actions: sampled inside 32-bit jit (as EnvPool runners otherwise are), APPO's
    controls were NaN and its first loss about 1.9e21."""
    from rljax.algorithms.appo import APPOConfig
    from rljax.runners.host import HostRunner

    config = (
        APPOConfig()
        .environment("HalfCheetah-v4")
        .env_runners(num_env_runners=1, num_envs_per_env_runner=2, rollout_fragment_length=16)
        .training(train_batch_size_per_learner=32)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        assert isinstance(algo._runners.runners[0], HostRunner)
        result = algo.train()
        assert np.isfinite(result["learners"]["default_policy"]["total_loss"])
        fragment = algo._runners.runners[0].sample(algo._runner_params(), 4)
        assert np.all(np.isfinite(np.asarray(fragment.obs)))
