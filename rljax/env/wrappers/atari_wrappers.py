"""RLlib's Atari preprocessing for gymnasium's ALE envs, at RLlib's import path, so that RLlib's
Atari scripts (``register_env("env", lambda cfg: wrap_atari_for_new_api_stack(gym.make(
"ale_py:ALE/Pong-v5", **cfg), framestack=4))``) run after the import rewrite.

``wrap_atari_for_new_api_stack`` applies, in RLlib's order: a 108,000-step time limit; frames
converted to grey and resized to ``dim x dim`` (``WarpFrame``); pixels scaled to [-1, 1]
(``NormalizedImageEnv``); each action repeated ``frameskip`` times, rewards summed and the last
two frames max-pooled (``MaxAndSkipEnv``); 1..``noop_max`` no-ops after a reset
(``NoopResetEnv``); a lost life ends the episode, but only a game over resets the game
(``EpisodicLifeEnv``); FIRE pressed after a reset in games that wait for it (``FireResetEnv``);
and the last ``framestack`` frames stacked on the last axis (``FrameStack``): observations are
``float32 [dim, dim, framestack]``. Rewards are not clipped here; ``ClipRewardEnv`` does it.

These run the game in Python (ale-py and OpenCV: ``pip install rljax[video]``). EnvPool's
Atari tasks (``"Pong-v5"``) do the same preprocessing in C++, much faster, with 84x84 uint8
frames stacked last.
"""

from __future__ import annotations

import collections
from typing import Any

import gymnasium as gym
import numpy as np


def is_atari(env: Any) -> bool:
    """Whether ``env`` (a gymnasium env, or an env id) is one of ALE's Atari games."""
    if isinstance(env, str):
        return env.startswith(("ALE/", "ale_py:ALE/"))
    return hasattr(getattr(env, "unwrapped", None), "ale")


def get_wrapper_by_cls(env: gym.Env, cls: type) -> Any:
    """The wrapper of class ``cls`` around ``env``'s game, or None."""
    current: Any = env
    while True:
        if isinstance(current, cls):
            return current
        if not isinstance(current, gym.Wrapper):
            return None
        current = current.env


def _action_meanings(env: gym.Env) -> list[str]:
    return list(env.unwrapped.get_action_meanings())  # type: ignore[attr-defined]


class WarpFrame(gym.ObservationWrapper):
    """RGB (or grey) frames as grey ``[dim, dim, 1]`` uint8, resized with OpenCV's area
    interpolation."""

    def __init__(self, env: gym.Env, dim: int = 84):
        super().__init__(env)
        import cv2

        self._cv2 = cv2
        self.dim = int(dim)
        self.observation_space = gym.spaces.Box(0, 255, (self.dim, self.dim, 1), np.uint8)

    def observation(self, frame: np.ndarray) -> np.ndarray:
        if frame.ndim == 3 and frame.shape[-1] == 3:
            frame = self._cv2.cvtColor(frame, self._cv2.COLOR_RGB2GRAY)
        size = (self.dim, self.dim)
        return self._cv2.resize(frame, size, interpolation=self._cv2.INTER_AREA)[:, :, None]


class NormalizedImageEnv(gym.ObservationWrapper):
    """uint8 pixels as float32 in [-1, 1]: ``x / 128 - 1``."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        shape = env.observation_space.shape
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape, np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return (np.asarray(observation, np.float32) / 128.0 - 1.0).astype(np.float32)


class MaxAndSkipEnv(gym.Wrapper):
    """Repeats each action ``skip`` times (stopping at an episode end), sums the rewards and
    returns the maximum of the last two frames."""

    def __init__(self, env: gym.Env, skip: int = 4):
        super().__init__(env)
        self._skip = int(skip)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        total, last = 0.0, collections.deque[Any](maxlen=2)
        terminated = truncated = False
        info: dict[str, Any] = {}
        for _ in range(self._skip):
            obs, reward, terminated, truncated, info = self.env.step(action)
            last.append(obs)
            total += float(reward)
            if terminated or truncated:
                break
        return np.max(np.stack(last), axis=0), total, terminated, truncated, info


class NoopResetEnv(gym.Wrapper):
    """After a reset, 1..``noop_max`` no-op actions (action 0, ``NOOP``), so that episodes
    start from varied states; a game that ends during them is reset again."""

    def __init__(self, env: gym.Env, noop_max: int = 30):
        super().__init__(env)
        self.noop_max = int(noop_max)
        if _action_meanings(env)[0] != "NOOP":
            raise ValueError(f"NoopResetEnv: action 0 of {env} is not NOOP")

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        noops = int(self.unwrapped.np_random.integers(1, self.noop_max + 1))
        for _ in range(noops):
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset()
        return obs, info


class FireResetEnv(gym.Wrapper):
    """Presses FIRE (then action 2) after a reset, for games that wait for it."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        meanings = _action_meanings(env)
        if len(meanings) < 3 or meanings[1] != "FIRE":
            raise ValueError(f"FireResetEnv: {env} has no FIRE action at index 1")

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self.env.reset(**kwargs)
        obs: Any = None
        info: dict[str, Any] = {}
        for action in (1, 2):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        return obs, info


class EpisodicLifeEnv(gym.Wrapper):
    """A lost life ends the episode (``terminated``); the reset after it continues the game
    with a no-op step, and only a game over resets the game."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.lives = 0
        self.was_real_done = True

    def _lives(self) -> int:
        return int(self.env.unwrapped.ale.lives())  # type: ignore[attr-defined]

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.was_real_done = terminated or truncated
        lives = self._lives()
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, float(reward), terminated, truncated, info

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        if self.was_real_done:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, _, _, info = self.env.step(0)
        self.lives = self._lives()
        return obs, info


class ClipRewardEnv(gym.RewardWrapper):
    """Rewards as their sign: -1, 0 or 1."""

    def reward(self, reward: Any) -> float:
        return float(np.sign(reward))


class FrameStack(gym.Wrapper):
    """The last ``num_stack`` observations concatenated on the last axis (the first
    observation after a reset fills the stack)."""

    def __init__(self, env: gym.Env, num_stack: int):
        super().__init__(env)
        self.num_stack = int(num_stack)
        self.frames: collections.deque = collections.deque(maxlen=self.num_stack)
        space = env.observation_space
        low = np.repeat(space.low, self.num_stack, axis=-1)  # type: ignore[attr-defined]
        high = np.repeat(space.high, self.num_stack, axis=-1)  # type: ignore[attr-defined]
        self.observation_space = gym.spaces.Box(low, high, dtype=space.dtype)  # type: ignore[arg-type]

    def _obs(self) -> np.ndarray:
        return np.concatenate(list(self.frames), axis=-1)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        for _ in range(self.num_stack):
            self.frames.append(obs)
        return self._obs(), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.frames.append(obs)
        return self._obs(), float(reward), terminated, truncated, info


def wrap_atari_for_new_api_stack(
    env: gym.Env,
    dim: int = 64,
    frameskip: int = 4,
    framestack: int | None = None,
    noop_max: int = 30,
) -> gym.Env:
    """RLlib's Atari preprocessing of a gymnasium ALE env (see the module docstring), with
    RLlib's arguments and defaults: ``dim`` x ``dim`` grey frames in [-1, 1], ``frameskip``
    frames per action (give the ALE env ``frameskip=1``, as RLlib's scripts do), ``framestack``
    frames stacked last (None: one), ``noop_max`` no-ops after a reset."""
    if not is_atari(env):
        raise ValueError(f"wrap_atari_for_new_api_stack: {env} is not an ALE (Atari) env")
    env = gym.wrappers.TimeLimit(env, max_episode_steps=108_000)
    env = WarpFrame(env, dim=dim)
    env = NormalizedImageEnv(env)
    if frameskip > 1:
        env = MaxAndSkipEnv(env, skip=frameskip)
    env = NoopResetEnv(env, noop_max=noop_max)
    env = EpisodicLifeEnv(env)
    if "FIRE" in _action_meanings(env):
        env = FireResetEnv(env)
    if framestack:
        env = FrameStack(env, num_stack=framestack)
    return env


__all__ = [
    "ClipRewardEnv",
    "EpisodicLifeEnv",
    "FireResetEnv",
    "FrameStack",
    "MaxAndSkipEnv",
    "NoopResetEnv",
    "NormalizedImageEnv",
    "WarpFrame",
    "get_wrapper_by_cls",
    "is_atari",
    "wrap_atari_for_new_api_stack",
]
