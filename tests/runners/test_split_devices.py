"""The learner on one platform and acting on another (``num_gpus_per_learner=1`` with
``num_gpus_per_env_runner=0``, the one-GPU setting): an EnvPool run leaves the fused path, whose
one program cannot span two platforms, for a runner thread acting on the runner's device; a JAX
env, which lives inside the program, is refused naming both settings. A GPU machine showed the
need: the fused program failed there with JAX's "incompatible devices" error."""

from types import SimpleNamespace

import jax
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.env.vector import env_spaces, resolve_env
from rljax.runners import build as runner_build
from rljax.utils.errors import ConfigError

CPU = jax.devices("cpu")[0]
GPU = SimpleNamespace(platform="gpu")  # a stand-in: only its platform is read


def _config(env: str) -> PPOConfig:
    return (
        PPOConfig()
        .environment(env)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=4, rollout_fragment_length=8)
        .training(train_batch_size_per_learner=32, minibatch_size=16, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


def _decide(env: str, devices) -> bool:
    config = _config(env)
    spec = resolve_env(env, {})
    return runner_build.fused_envpool(spec, config, *env_spaces(spec), devices)


def test_envpool_fuses_on_one_platform_and_not_across_two():
    assert _decide("CartPole-v1", (CPU, CPU)) is True
    assert _decide("CartPole-v1", (GPU, CPU)) is False  # learner on the GPU, acting on the CPU
    assert _decide("CartPole-v1", (CPU, GPU)) is False


def test_a_jax_env_across_two_platforms_is_refused_naming_the_settings():
    assert _decide("rljax:CartPole-v1", (CPU, CPU)) is True
    with pytest.raises(ConfigError, match=r"learner's device \(gpu\).*num_gpus_per_env_runner=0"):
        _decide("rljax:CartPole-v1", (GPU, CPU))


def test_an_envpool_run_split_over_two_platforms_trains_on_a_runner_thread(monkeypatch):
    """Here both are the CPU; the decision sees the learner on a GPU, as on a GPU machine, and
    the run takes the host path: a runner thread acting on the runner device."""
    real = runner_build.fused_envpool

    def as_if_the_learner_were_on_a_gpu(spec, config, obs_space, act_space, devices=None):
        assert devices is not None and devices[1] == CPU
        return real(spec, config, obs_space, act_space, (GPU, devices[1]))

    monkeypatch.setattr(runner_build, "fused_envpool", as_if_the_learner_were_on_a_gpu)
    with _config("CartPole-v1").build_algo() as algo:
        assert not algo.fused and algo._runners is not None
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] == 32
        assert result["num_env_steps_sampled_lifetime"] == 32


@pytest.mark.slow  # a process with two host devices
def test_the_learner_on_one_device_and_acting_on_another_train_together():
    """Two CPU devices stand for the GPU and the CPU: the fused program failed there with
    "incompatible devices"; now a runner thread acts on cpu:0 and each batch moves to cpu:1."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "algorithms"))
    from test_multidevice import run_checks

    (out,), _ = run_checks(2, ("split_devices_check.py",))
    assert out["fused"] is False
    assert out["state_devices"] == ["cpu:1"] and out["batch_devices"] == ["cpu:1"]
    assert out["env_steps"] == [32, 32]
