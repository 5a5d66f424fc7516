"""``SingleAgentEpisode``: one episode as episode callbacks see it (RLlib's accessors).

rljax samples whole fragments inside jitted code; an algorithm with episode hooks has the
steps handed to Python once per iteration and replays them, in order, through these objects
(``rljax.callbacks.episodes``). The data is RLlib's: ``get_observations()`` has one entry more
than the episode has steps (the first observation, then each step's next one), as does
``get_infos()`` (the reset info, then each step's); actions and rewards one per step.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import gymnasium as gym
import numpy as np


def _pick(items: list[Any], indices: Any, stack: bool) -> Any:
    if indices is None:
        picked = items
    elif isinstance(indices, int | np.integer):
        return items[int(indices)]
    elif isinstance(indices, slice):
        picked = items[indices]
    else:
        picked = [items[int(i)] for i in indices]
    if stack:
        return np.stack(picked) if picked else np.zeros((0,))
    return list(picked)


def _filled(items: list[Any], indices: Any, fill: Any) -> list[Any]:
    """RLlib's ``fill``: positions a slice or list asks for before the episode's start (or
    past its end) are ``fill`` values, so ``slice(-3, None)`` always gives three items."""
    n = len(items)
    if isinstance(indices, slice):
        if indices.step not in (None, 1):
            raise ValueError(f"fill= takes slices of step 1; got {indices!r}")
        start = 0 if indices.start is None else indices.start
        stop = n if indices.stop is None else indices.stop
        start = start + n if start < 0 else start
        stop = stop + n if stop < 0 else stop
        positions: Any = range(start, stop)
    else:
        positions = [int(i) + n if int(i) < 0 else int(i) for i in indices]
    return [items[i] if 0 <= i < n else fill for i in positions]


def _values(arr: np.ndarray) -> list[Any]:
    """An array's entries along its first axis as Python values (numbers as Python numbers,
    converted in one call)."""
    return arr.tolist() if arr.dtype.kind in "biuf" else list(arr)


# The key under which a host runner's first row carries the info of the reset before it (a
# same-step runner's first env step overwrites the reset's row; ``callbacks.episodes``).
RESET_INFO = "rljax_reset_info"


def split_infos(info: Any, width: int) -> list[dict[str, Any]]:
    """A vector env's info (gymnasium's dict of arrays with ``_key`` masks, or EnvPool's
    arrays) as one dict per row; entries not of a leading ``[width]`` are left out."""
    return info_rows(info, (width,))[0] if width else []


def info_rows(info: Any, shape: tuple[int, ...]) -> list[list[dict[str, Any]]]:
    """Info arrays of leading shape ``[T, K]`` (or ``[K]``: then T is 1) as ``T x K`` dicts,
    nested dicts kept nested, entries masked out by gymnasium's ``_key`` arrays left out."""
    rows, width = (1, shape[0]) if len(shape) == 1 else shape
    out: list[list[dict[str, Any]]] = [[{} for _ in range(width)] for _ in range(rows)]
    if not isinstance(info, dict):
        return out

    def fill(d: dict[str, Any], path: tuple[str, ...]) -> None:
        for key, value in d.items():
            if isinstance(key, str) and key.startswith("_"):
                continue
            if isinstance(value, dict):
                fill(value, (*path, key))
                continue
            arr = np.asarray(value)
            if arr.shape[: len(shape)] != tuple(shape):
                continue
            arr = arr.reshape(rows, width, *arr.shape[len(shape) :])
            mask = d.get(f"_{key}")
            keep = None if mask is None else np.asarray(mask, bool).reshape(rows, width)
            for t in range(rows):
                values = _values(arr[t])
                for k in range(width):
                    if keep is not None and not keep[t, k]:
                        continue
                    node = out[t][k]
                    for p in path:
                        node = node.setdefault(p, {})
                    node[key] = values[k]

    fill(info, ())
    return out


class SingleAgentEpisode:
    """One episode of one sub-env.

    Attributes:
      id_: A unique id (hex string).
      env_index: The sub-env within its runner.
      custom_data: A dict for the user's own data, kept from ``on_episode_start`` to
        ``on_episode_end``.
      is_terminated: The episode ended in a terminal state.
      is_truncated: The episode was cut (time limit).
      t_started: The env step (of this sub-env) the episode started at (0 here).
    """

    def __init__(self, observation: Any, info: dict[str, Any], env_index: int = 0):
        self.id_ = uuid.uuid4().hex
        self.env_index = env_index
        self.observations: list[Any] = [observation]
        self.infos: list[dict[str, Any]] = [info]
        self.actions: list[Any] = []
        self.rewards: list[float] = []
        self.custom_data: dict[str, Any] = {}
        self.is_terminated = False
        self.is_truncated = False
        self.t_started = 0
        self.agent_id = None
        self.module_id = None
        # The env's spaces where known (RLlib's attributes; connectors read and set them).
        self.observation_space: gym.Space | None = None
        self.action_space: gym.Space | None = None
        self.is_numpy = False  # RLlib's flag: observations are still a list here
        self._start_time = time.perf_counter()
        self._end_time: float | None = None

    def add_env_step(
        self,
        observation: Any,
        action: Any,
        reward: float,
        info: dict[str, Any],
        terminated: bool = False,
        truncated: bool = False,
    ) -> None:
        """Appends one step: the action taken, its reward and next observation and info."""
        self.observations.append(observation)
        self.actions.append(action)
        self.rewards.append(float(reward))
        self.infos.append(info)
        self.is_terminated = bool(terminated)
        self.is_truncated = bool(truncated) and not self.is_terminated
        if self.is_done:
            self._end_time = time.perf_counter()

    @property
    def is_done(self) -> bool:
        return self.is_terminated or self.is_truncated

    @property
    def t(self) -> int:
        return len(self.actions)

    def __len__(self) -> int:
        return len(self.actions)

    def len(self) -> int:
        return len(self.actions)

    def env_steps(self) -> int:
        """Env steps in this episode (chunk): RLlib's ``env_steps()``."""
        return len(self.actions)

    def agent_steps(self) -> int:
        """Agent steps: the env steps, for one agent (RLlib's ``agent_steps()``)."""
        return len(self.actions)

    def get_return(self) -> float:
        return float(sum(self.rewards))

    def get_duration_s(self) -> float:
        end = self._end_time if self._end_time is not None else time.perf_counter()
        return end - self._start_time

    def get_observations(self, indices: Any = None, *, fill: Any = None, **kwargs: Any) -> Any:
        """Observations, stacked (``len(self) + 1`` of them); an int index gives one. With
        ``fill`` (RLlib's), a slice or list reaching before the first observation is padded
        with observations of that value (``fill=0.0``: zeros of the observation's shape)."""
        if fill is None or indices is None or isinstance(indices, int | np.integer):
            return _pick(self.observations, indices, stack=True)
        like = np.asarray(self.observations[-1])
        pad = np.full(like.shape, fill, like.dtype)
        return np.stack(_filled(self.observations, indices, pad))

    def set_observations(self, *, new_data: Any, at_indices: Any = -1, **kwargs: Any) -> None:
        """Replaces the observation at ``at_indices`` (an int; RLlib's default ``-1``, the
        latest) with ``new_data``, as RLlib's env-to-module connectors do."""
        if not isinstance(at_indices, int | np.integer):
            raise ValueError(f"set_observations takes one int index here; got {at_indices!r}")
        self.observations[int(at_indices)] = new_data

    def get_actions(
        self,
        indices: Any = None,
        *,
        fill: Any = None,
        one_hot_discrete: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Actions (one per step). ``fill`` pads a slice reaching before the first step (an
        action of that value); ``one_hot_discrete`` one-hots the actions of a ``Discrete``
        ``action_space``, after filling, as RLlib does."""
        if fill is not None and indices is not None and not isinstance(indices, int | np.integer):
            # A fill action of the actions' shape (a Box's array; a Discrete's number).
            if self.actions:
                like = np.asarray(self.actions[-1])
            elif self.action_space is not None and self.action_space.shape is not None:
                like = np.zeros(self.action_space.shape, self.action_space.dtype)
            else:
                like = np.asarray(0)
            pad = np.full(like.shape, fill, like.dtype)
            picked: Any = np.stack([np.asarray(a) for a in _filled(self.actions, indices, pad)])
        else:
            picked = _pick(self.actions, indices, stack=True)
        if one_hot_discrete and isinstance(self.action_space, gym.spaces.Discrete):
            n = int(self.action_space.n)
            picked = np.eye(n, dtype=np.float32)[
                np.asarray(picked, np.int64) - self.action_space.start
            ]
        return picked

    def get_rewards(self, indices: Any = None, *, fill: Any = None, **kwargs: Any) -> Any:
        if isinstance(indices, int | np.integer):
            return self.rewards[int(indices)]
        if fill is not None and indices is not None:
            return np.asarray(_filled(self.rewards, indices, float(fill)), np.float32)
        return np.asarray(_pick(self.rewards, indices, stack=False), np.float32)

    def get_infos(self, indices: Any = None) -> Any:
        """Info dicts (``len(self) + 1`` of them: the reset info first)."""
        return _pick(self.infos, indices, stack=False)

    def __repr__(self) -> str:
        return (
            f"SingleAgentEpisode(id_={self.id_[:8]}, len={len(self)}, "
            f"return={self.get_return():.3g}, done={self.is_done})"
        )


__all__ = ["SingleAgentEpisode"]
