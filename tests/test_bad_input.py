"""Every misuse fails fast and plainly: one table of bad inputs.

Each row is a call a user could make, the error it must raise, and words the message must hold:
what was given, what is allowed or how to fix it. None of them may compile anything first (an
XLA compilation is counted through ``jax.monitoring``), so they fail in well under a second
instead of after a build; rows about a built algorithm use one built beforehand.
"""

from __future__ import annotations

import json

import flax.linen as nn
import gymnasium as gym
import jax
import numpy as np
import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.td3 import TD3Config
from rljax.core.rl_module import RLModuleSpec
from rljax.utils.errors import CheckpointError, ConfigError

COMPILES = {"n": 0}


def _count(event: str, duration: float, **kwargs) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILES["n"] += 1


jax.monitoring.register_event_duration_secs_listener(_count)


class DictObsEnv(gym.Env):
    observation_space = gym.spaces.Dict({"a": gym.spaces.Box(0.0, 1.0, (2,), np.float32)})
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        pass


class TextObsEnv(DictObsEnv):
    observation_space = gym.spaces.Dict({"a": gym.spaces.Text(5)})


class TupleActionEnv(DictObsEnv):
    observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
    # A Tuple of a Discrete (supported) and a MultiBinary (no distribution for it).
    action_space = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.MultiBinary(3)))


class DenseModule(nn.Module):
    num_outputs: int = 2

    @nn.compact
    def __call__(self, obs):
        return nn.Dense(self.num_outputs)(obs), nn.Dense(1)(obs)[..., 0]


class NoConfigEnv(gym.Env):
    observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)


def ppo():
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size_per_learner=256, minibatch_size=64)
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    algo = ppo().rl_module(model_config={"fcnet_hiddens": [8]}).build_algo()
    path = tmp_path_factory.mktemp("ckpt") / "c"
    algo.save_to_path(path)
    old = tmp_path_factory.mktemp("old") / "c"
    algo.save_to_path(old)
    meta_file = old / (old / "LATEST").read_text() / "rljax_checkpoint.json"
    meta = json.loads(meta_file.read_text())
    meta["format_version"], meta["rljax_version"] = 1, "0.0.9"
    meta_file.write_text(json.dumps(meta))
    yield {"algo": algo, "old": old, "not_a_checkpoint": tmp_path_factory.mktemp("empty")}
    algo.stop()


CASES = [
    # unknown names, with the closest one (or RLlib's new name) suggested
    (
        "setter keyword",
        lambda b: PPOConfig().training(lr_rate=1e-3),
        ConfigError,
        ["unknown keyword 'lr_rate'", "'lr'", "valid keywords"],
    ),
    (
        "dict key, old RLlib name misspelt",
        lambda b: PPOConfig.from_dict({"num_sgd_iterr": 3}),
        ConfigError,
        ["'num_sgd_iterr'", "'num_epochs'"],
    ),
    (
        "model key",
        lambda b: ppo().rl_module(model_config={"fcnet_hidens": [8]}),
        ConfigError,
        ["'fcnet_hidens'", "'fcnet_hiddens'"],
    ),
    (
        "env id",
        lambda b: PPOConfig().environment("CartPol-v1").validate(),
        ConfigError,
        ["unknown env 'CartPol-v1'", "'CartPole-v1'", "register_env"],
    ),
    # wrong types
    (
        "learning rate type",
        lambda b: ppo().training(lr="fast").validate(),
        ConfigError,
        ["lr='fast'", "number >= 0"],
    ),
    (
        "batch type",
        lambda b: ppo().training(train_batch_size_per_learner=256.5).validate(),
        ConfigError,
        ["256.5", "int >= 1"],
    ),
    (
        "env count type",
        lambda b: ppo().env_runners(num_envs_per_env_runner="4").validate(),
        ConfigError,
        ["'4'", "int >= 1"],
    ),
    (
        "bool knob type",
        lambda b: ppo().fault_tolerance(restart_failed_env_runners="yes").validate(),
        ConfigError,
        ["restart_failed_env_runners='yes'", "True or False"],
    ),
    (
        "ignore failures type",
        lambda b: ppo().fault_tolerance(ignore_env_runner_failures=1).validate(),
        ConfigError,
        ["ignore_env_runner_failures=1", "True or False"],
    ),
    (
        "probe timeout",
        lambda b: ppo().fault_tolerance(env_runner_health_probe_timeout_s=0).validate(),
        ConfigError,
        ["env_runner_health_probe_timeout_s", "0"],
    ),
    (
        "seed beyond the seed range",
        lambda b: ppo().debugging(seed=2**80).build_algo(),
        ConfigError,
        [f"seed={2**80} (int)", "[0, 2147483647]"],
    ),
    # impossible batch arithmetic
    (
        "minibatch larger than the batch",
        lambda b: ppo().training(minibatch_size=512).validate(),
        ConfigError,
        ["minibatch_size=512", "256", "lower minibatch_size"],
    ),
    (
        "batch that does not divide over learners",
        lambda b: (
            ppo()
            .env_runners(num_envs_per_env_runner=3, rollout_fragment_length=5)
            .learners(num_learners=2)
            .validate()
        ),
        ConfigError,
        ["does not divide", "num_learners=2"],
    ),
    (
        "ASYNC batch larger than the envs",
        lambda b: (
            ppo()
            .env_runners(
                gym_env_vectorize_mode="ASYNC", num_envs_per_env_runner=2, async_batch_size=4
            )
            .validate()
        ),
        ConfigError,
        ["async_batch_size=4", "num_envs_per_env_runner=2"],
    ),
    (
        "vectorize mode",
        lambda b: ppo().env_runners(gym_env_vectorize_mode="PARALLEL"),
        ConfigError,
        ["'PARALLEL'", "'SYNC', 'ASYNC'"],
    ),
    # devices that are not there: an error, never a hang
    (
        "learners beyond the devices",
        lambda b: ppo().learners(num_learners=64).build_algo(),
        ConfigError,
        ["64 devices", "JAX sees"],
    ),
    (
        "GPU per learner on a CPU",
        lambda b: ppo().learners(num_gpus_per_learner=1).build_algo(),
        ConfigError,
        ["num_gpus_per_learner=1", "GPU"],
    ),
    (
        "GPU per runner on a CPU",
        lambda b: ppo().env_runners(num_gpus_per_env_runner=1).build_algo(),
        ConfigError,
        ["num_gpus_per_env_runner"],
    ),
    # spaces an algorithm cannot handle
    (
        "text observations",
        lambda b: PPOConfig().environment(TextObsEnv).build_algo(),
        ConfigError,
        ["Text", "not supported by the default model"],
    ),
    (
        "dict observations for a custom module",
        lambda b: (
            PPOConfig()
            .environment(DictObsEnv)
            .rl_module(rl_module_spec=RLModuleSpec(module_class=DenseModule))
            .build_algo()
        ),
        ConfigError,
        ["Dict", "could not be built", "a dict"],
    ),
    (
        "tuple actions with a part rljax cannot sample",
        lambda b: PPOConfig().environment(TupleActionEnv).build_algo(),
        ConfigError,
        ["MultiBinary(3)", "action space", "Tuple / Dict spaces of them"],
    ),
    (
        "DQN on continuous actions",
        lambda b: DQNConfig().environment("Pendulum-v1").build_algo(),
        ConfigError,
        ["Discrete", "Box", "SAC or PPO"],
    ),
    (
        "TD3 on discrete actions",
        lambda b: TD3Config().environment("CartPole-v1").build_algo(),
        ConfigError,
        ["Box", "Discrete(2)", "DQN, SAC or PPO"],
    ),
    # inference on observations that do not fit
    (
        "observation shape",
        lambda b: b["algo"].compute_single_action(np.zeros(5, np.float32)),
        ValueError,
        ["shape (5,)", "expected shape (4,)"],
    ),
    (
        "observation dtype",
        lambda b: b["algo"].compute_single_action(np.array(["a"] * 4)),
        ValueError,
        ["dtype <U1", "float32"],
    ),
    (
        "batched observation shape",
        lambda b: b["algo"].get_module().forward_inference({"obs": np.zeros((3, 2), np.float32)}),
        ValueError,
        ["shape (3, 2)", "(None, 4)"],
    ),
    (
        "unknown policy id",
        lambda b: b["algo"].compute_single_action(np.zeros(4), policy_id="p9"),
        ValueError,
        ["unknown policy_id 'p9'"],
    ),
    (
        "explore as a string",
        lambda b: b["algo"].compute_single_action(np.zeros(4, np.float32), explore="no"),
        TypeError,
        ["explore='no' (str)", "True or False"],
    ),
    (
        "explore as an int",
        lambda b: b["algo"].compute_actions(np.zeros((2, 4), np.float32), explore=1),
        TypeError,
        ["explore=1 (int)", "True or False"],
    ),
    # checkpoints
    (
        "path that is not a checkpoint",
        lambda b: Algorithm.from_checkpoint(b["not_a_checkpoint"]),
        CheckpointError,
        ["not an rljax checkpoint", "save_to_path"],
    ),
    (
        "checkpoint of an incompatible version",
        lambda b: Algorithm.from_checkpoint(b["old"]),
        CheckpointError,
        ["format 1", "rljax 0.0.9", "format 2"],
    ),
]


@pytest.mark.parametrize("name, call, error, words", CASES, ids=[c[0] for c in CASES])
def test_bad_input_fails_plainly_before_compiling(built, name, call, error, words):
    before = COMPILES["n"]
    with pytest.raises(error) as info:
        call(built)
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)
    assert COMPILES["n"] == before, f"{name}: compiled before failing"
