"""Misuse and failures at run time: what a user gets instead of a crash or silent damage."""

import json
import os
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import rljax
from rljax.algorithms.ppo import PPOConfig
from rljax.utils import checkpoint as ckpt
from rljax.utils.errors import AlgorithmStoppedError

rljax.register_env("misuse-gym-cartpole", lambda cfg: gym.make("CartPole-v1"))


class _CountedEnv(gym.Wrapper):
    """CartPole that counts how many of its kind were built and closed."""

    made = 0
    closed = 0

    def __init__(self, config=None):
        super().__init__(gym.make("CartPole-v1"))
        type(self).made += 1

    def close(self):
        type(self).closed += 1
        super().close()


rljax.register_env("misuse-counted", _CountedEnv)


def _config(env="CartPole-v1"):
    return (
        PPOConfig()
        .environment(env)
        .env_runners(num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


@pytest.fixture(scope="module")
def algo():
    """A PPO on gymnasium sub-envs, never trained: inference needs no training."""
    algo = _config("misuse-gym-cartpole").build_algo()
    yield algo
    algo.stop()


def test_empty_batches_give_empty_typed_actions(algo):
    full = algo.compute_actions(np.zeros((3, 4), np.float32))
    assert full.shape == (3,) and full.dtype == np.int32
    empty = algo.compute_actions(np.zeros((0, 4)))
    assert empty.shape == (0,) and empty.dtype == full.dtype
    assert algo.compute_actions(np.zeros((0, 4)), explore=True).shape == (0,)
    assert algo.compute_actions({}) == {}
    out = algo.get_module().forward_inference({"obs": np.zeros((0, 4), np.float32)})
    assert (
        out["action_dist_inputs"].shape == (0, 2) and out["action_dist_inputs"].dtype == np.float32
    )
    assert out["actions"].shape == (0,) and out["actions"].dtype == np.int32
    # Shapes are still checked on an empty batch.
    with pytest.raises(ValueError, match=r"shape \(0, 3\)"):
        algo.compute_actions(np.zeros((0, 3)))


def test_an_empty_batch_compiles_nothing(algo):
    infer = algo._infer_fn(True)
    compiled = infer._cache_size()
    algo.compute_actions(np.zeros((0, 4), np.float32), explore=True)
    assert infer._cache_size() == compiled
    algo.compute_actions(np.zeros((5, 4), np.float32), explore=True)  # a new batch size compiles
    assert infer._cache_size() == compiled + 1


def test_a_build_interrupted_after_the_runners_were_made_closes_their_envs(monkeypatch):
    from rljax.execution.on_policy import OnPolicyLoop

    def interrupted(*args, **kwargs):  # Ctrl-C while the loop is built, after the runners were
        raise KeyboardInterrupt

    monkeypatch.setattr(OnPolicyLoop, "with_runners", interrupted)
    made, closed = _CountedEnv.made, _CountedEnv.closed
    with pytest.raises(KeyboardInterrupt):
        _config("misuse-counted").env_runners(num_env_runners=2).build_algo()
    # The spaces' probe env, then 2 runners x 2 sub-envs: every one closed.
    assert _CountedEnv.made - made == 5
    assert _CountedEnv.closed - closed == 5


def test_train_after_stop_raises_and_what_needs_no_runner_still_works(tmp_path):
    algo = _config().build_algo()  # EnvPool's fused rollout: train() used to run on the closed env
    algo.stop()
    algo.stop()  # twice: harmless
    with pytest.raises(AlgorithmStoppedError, match=r"train\(\) after stop\(\).*from_checkpoint"):
        algo.train()
    assert algo.iteration == 0
    assert algo.compute_actions(np.zeros((2, 4), np.float32)).shape == (2,)
    algo.config = algo.config.copy()  # the built one is read-only, as RLlib's
    algo.config.evaluation_duration = 1
    assert algo.evaluate()["env_runners"]["num_episodes"] == 1  # builds its own env
    algo.save_to_path(tmp_path / "c")
    meta = json.loads((tmp_path / "c" / "v-000001" / ckpt.META_FILE).read_text())
    assert meta["env_state_missing_because"] == "saved after stop(), which closed the env runners"


def test_an_old_version_that_cannot_be_removed_warns_and_the_save_stands(tmp_path, monkeypatch):
    path = tmp_path / "c"
    ckpt.save_checkpoint(path, {"i": 1}, {"w": np.ones(3)})
    real_replace = os.replace

    def replace(src, dst):
        if ".rljax-tmp-old-" in str(dst):  # the retention step renaming an old version away
            raise PermissionError(13, "Permission denied")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.warns(RuntimeWarning) as record:
        final = ckpt.save_checkpoint(path, {"i": 2}, {"w": np.full(3, 2.0)})
    message = str(record[0].message)
    assert str(path / "v-000001") in message and "Permission denied" in message
    assert final == path / "v-000002" and (path / "LATEST").read_text() == "v-000002"
    assert ckpt.load_metadata(path)[0]["i"] == 2
    # The old version stays complete, and the next save removes it.
    assert ckpt.load_metadata(path / "v-000001")[0]["i"] == 1
    monkeypatch.setattr(os, "replace", real_replace)
    ckpt.save_checkpoint(path, {"i": 3}, {"w": np.full(3, 3.0)})
    assert sorted(p.name for p in path.iterdir()) == [".rljax-lock", "LATEST", "v-000003"]


class _Env(gym.Env):
    """Follows gymnasium's API; the subclasses below each break it in one way."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(4, np.float32), 1.0, False, False, {}


class OldReset(_Env):
    def reset(self, *, seed=None, options=None):
        return super().reset()[0]


class FourValueStep(_Env):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or truncated, info


class WrongShape(_Env):
    def reset(self, *, seed=None, options=None):
        return np.zeros(3, np.float32), {}


class NoneRewardLater(_Env):
    def step(self, action):
        obs, _, terminated, truncated, info = super().step(action)
        return obs, (None if self.t == 3 else 1.0), terminated, truncated, info


class StringReward(_Env):
    def step(self, action):
        return (*super().step(action)[:1], "1", False, False, {})


RESET_API = "gymnasium's API is reset(seed=None, options=None) -> (obs, info)"
STEP_API = "gymnasium's API is step(action) -> (obs, reward, terminated, truncated, info)"


@pytest.mark.parametrize(
    "env_class, message",
    [
        (
            OldReset,
            "env 'OldReset': reset() returned a numpy.ndarray (old gym's reset() returned only "
            f"obs); {RESET_API}",
        ),
        (
            FourValueStep,
            "env 'FourValueStep': step() returned a tuple of 4 values (old gym's (obs, reward, "
            f"done, info)); {STEP_API}",
        ),
        (
            WrongShape,
            "env 'WrongShape': reset() returned an observation of shape (3,); its "
            f"observation_space Box(-1.0, 1.0, (4,), float32) has shape (4,); {RESET_API}",
        ),
        (
            NoneRewardLater,
            f"env 'NoneRewardLater': step() returned the reward None, a NoneType, not a number; {STEP_API}",
        ),
        (
            StringReward,
            f"env 'StringReward': step() returned the reward '1', a str, not a number; {STEP_API}",
        ),
    ],
)
def test_envs_that_break_gymnasiums_api_are_named(env_class, message):
    from rljax.env.vector import make_host_env, resolve_env
    from rljax.utils.errors import EnvAPIError

    env = make_host_env(resolve_env(env_class), 2, "SYNC", 0, None)
    try:
        with pytest.raises(EnvAPIError) as info:
            result = env.reset()
            for _ in range(4):
                result = env.step(np.zeros(2, np.int64), result.env_id)
        assert str(info.value) == message
    finally:
        env.close()


def test_the_api_check_is_not_part_of_a_saved_env_state():
    from rljax.env.api_check import ApiCheckedEnv
    from rljax.env.state import get_env_state, set_env_state

    checked = ApiCheckedEnv(gym.make("CartPole-v1"), "CartPole-v1")
    checked.reset(seed=1)
    checked.step(0)
    state = get_env_state(checked)
    assert state == get_env_state(checked.env) and "ApiCheckedEnv" not in json.dumps(state)
    plain = gym.make("CartPole-v1")  # as saved before the check existed
    plain.reset(seed=2)
    set_env_state(plain, state)
    np.testing.assert_array_equal(plain.step(1)[0], checked.step(1)[0])


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's /proc")
def test_env_worker_processes_outlive_a_terminals_ctrl_c():
    # Ctrl-C in a terminal reaches every process of the group; the training process decides what
    # happens and closes its workers, which must not die mid-step meanwhile.
    import re
    import signal

    from rljax.env.vector import make_host_env, resolve_env

    env = make_host_env(resolve_env("misuse-gym-cartpole"), 1, "ASYNC", 0, 1)  # first-ready
    try:
        pid = env._procs[0].pid
        status = Path(f"/proc/{pid}/status").read_text()
        blocked = int(re.search(r"SigBlk:\s*([0-9a-f]+)", status).group(1), 16)
        assert blocked & (1 << (signal.SIGINT - 1))
        os.kill(pid, signal.SIGINT)
        assert env.reset().obs.shape == (1, 4)  # it still answers
    finally:
        env.close()
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # ours: unblocked
