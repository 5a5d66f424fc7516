"""``SingleAgentEpisode``: one episode of one agent, RLlib's class (``ray.rllib.env.
single_agent_episode``).

Scripts build them by hand (``add_env_reset``, ``add_env_step``, ``cut``, slices, lookback
buffers, ``to_numpy``), and episode callbacks receive them: rljax samples whole fragments
inside jitted code, and an algorithm with episode hooks has the steps handed to Python once per
iteration and replays them, in order, through these objects (``rljax.callbacks.episodes``).
The data is RLlib's: ``get_observations()`` has one entry more than the episode has steps (the
first observation, then each step's next one), as does ``get_infos()`` (the reset info, then
each step's); actions and rewards one per step. As in RLlib, the getters return lists until
``to_numpy()`` (callbacks see lists; ``env_runner.sample()`` returns numpy episodes).
"""

from __future__ import annotations

import builtins
import copy
import time
import uuid
from typing import Any

import gymnasium as gym
import numpy as np

from rljax.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from rljax.utils.serialization import gym_space_to_dict, space_of_state
from rljax.utils.spaces.space_utils import data_equal


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


# RLlib gives the reward column a float space, so a reward fill is a float.
_REWARD_SPACE = gym.spaces.Box(-np.inf, np.inf, (), np.float32)


class SingleAgentEpisode:
    """One episode (or a chunk of one) of one agent in one sub-env, as RLlib's class.

    Built empty (``SingleAgentEpisode()``, then ``add_env_reset`` and ``add_env_step``) or
    from data: ``observations`` (one more than ``actions`` and ``rewards``), ``infos``
    (default empty dicts), ``extra_model_outputs`` (dict of per-step lists), with the first
    ``len_lookback_buffer`` steps of them a lookback part before the episode's step 0
    (``"auto"``: all the given steps; see ``InfiniteLookbackBuffer``). The getters take
    RLlib's ``indices``, ``neg_index_as_lookback``, ``fill`` and ``one_hot_discrete``; they
    return lists until ``to_numpy()`` and arrays after it.

    Args:
      id_: The episode's id (default: a new hex string); chunks of one episode share it.
      observations, infos, actions, rewards: The data (lists, or ``InfiniteLookbackBuffer``).
      observation_space, action_space: The spaces (for ``fill`` and one-hot vectors).
      terminated, truncated: How the episode ended, if it did.
      extra_model_outputs: Per-step model outputs by name.
      t_started: The env step this chunk started at (0 for a whole episode).
      len_lookback_buffer: How many given steps are lookback (``"auto"``: all of them).
      agent_id, module_id, multi_agent_episode_id: In a multi-agent episode: the agent, its
        policy and the multi-agent episode.

    Attributes:
      id_: The episode's id.
      env_index: The sub-env within its runner (rljax's; 0 for an episode built by hand).
      t_started: The env step this chunk started at.
      t: The env step after the last one added (``t_started + len(self)``).
      is_terminated: The episode ended in a terminal state.
      is_truncated: The episode was cut (time limit).
    """

    def __init__(
        self,
        id_: str | None = None,
        *,
        observations: list[Any] | InfiniteLookbackBuffer | None = None,
        observation_space: gym.Space | None = None,
        infos: list[dict[str, Any]] | InfiniteLookbackBuffer | None = None,
        actions: list[Any] | InfiniteLookbackBuffer | None = None,
        action_space: gym.Space | None = None,
        rewards: list[Any] | InfiniteLookbackBuffer | None = None,
        terminated: bool = False,
        truncated: bool = False,
        extra_model_outputs: dict[str, Any] | None = None,
        t_started: int | None = None,
        len_lookback_buffer: int | str = "auto",
        agent_id: Any = None,
        module_id: str | None = None,
        multi_agent_episode_id: str | None = None,
    ):
        if id_ is not None and not isinstance(id_, str):
            raise TypeError(
                f"SingleAgentEpisode's first argument is its id_ (a str); got {id_!r}. Pass "
                "the data by keyword (observations=..., actions=..., rewards=...), or build "
                "it empty and call add_env_reset(observation, infos)"
            )
        self.id_ = id_ or uuid.uuid4().hex
        self.env_index = 0
        self.agent_id = agent_id
        self.module_id = module_id
        self.multi_agent_episode_id = multi_agent_episode_id
        n_rewards = len(rewards) if rewards is not None else 0
        if len_lookback_buffer == "auto" or int(len_lookback_buffer) > n_rewards:
            len_lookback_buffer = n_rewards
        lookback = int(len_lookback_buffer)
        if not infos:  # RLlib's: empty dicts, one per observation
            infos = [{} for _ in range(len(observations or []))]

        def column(data: Any, space: gym.Space | None = None) -> InfiniteLookbackBuffer:
            if isinstance(data, InfiniteLookbackBuffer):
                return data
            return InfiniteLookbackBuffer(
                list(data) if isinstance(data, tuple) else data, lookback, space
            )

        self.observations = column(observations)
        self.infos = column(infos)
        self.actions = column(actions)
        self.rewards = column(rewards, _REWARD_SPACE)
        self._observation_space: gym.Space | None = None
        self._action_space: gym.Space | None = None
        self.observation_space = observation_space
        self.action_space = action_space
        self.is_terminated = bool(terminated)
        self.is_truncated = bool(truncated)
        self.extra_model_outputs: dict[str, InfiniteLookbackBuffer] = {
            k: column(v) for k, v in (extra_model_outputs or {}).items()
        }
        self.t_started = int(t_started or 0)
        self.t = len(self.rewards) + self.t_started
        self._custom_data: dict[str, Any] = {}
        self._start_time: float | None = None
        self._last_step_time: float | None = None
        self.validate()

    # -- spaces --------------------------------------------------------------------------------

    @property
    def observation_space(self) -> gym.Space | None:
        """The observations' space (also the observation buffer's)."""
        return self._observation_space

    @observation_space.setter
    def observation_space(self, value: gym.Space | None) -> None:
        self._observation_space = self.observations.space = value

    @property
    def action_space(self) -> gym.Space | None:
        """The actions' space (also the action buffer's)."""
        return self._action_space

    @action_space.setter
    def action_space(self, value: gym.Space | None) -> None:
        self._action_space = self.actions.space = value

    # -- adding data ---------------------------------------------------------------------------

    def add_env_reset(self, observation: Any, infos: dict[str, Any] | None = None) -> None:
        """Starts the episode with the reset's observation and info.

        Raises:
          RuntimeError: the episode already has observations.
        """
        if self.is_reset or self.is_done:
            raise RuntimeError(
                "add_env_reset() on an episode that already has its first observation "
                f"({len(self)} steps, t={self.t}); build a new SingleAgentEpisode"
            )
        self.observations.append(observation)
        self.infos.append(infos or {})
        self.validate()
        self._start_time = time.perf_counter()

    def add_env_step(
        self,
        observation: Any,
        action: Any,
        reward: Any,
        infos: dict[str, Any] | None = None,
        *,
        terminated: bool = False,
        truncated: bool = False,
        extra_model_outputs: dict[str, Any] | None = None,
    ) -> None:
        """Adds one step: the action taken, its reward, the next observation and info.

        Raises:
          RuntimeError: the episode is done, or has no reset observation yet.
        """
        if self.is_done:
            raise RuntimeError(
                "add_env_step() on an episode that is done (terminated or truncated): no "
                "data can be added to it"
            )
        if not self.is_reset:
            raise RuntimeError("add_env_step() before add_env_reset(): the episode is empty")
        self.observations.append(observation)
        self.actions.append(action)
        self.rewards.append(reward)
        self.infos.append(infos or {})
        self.t += 1
        for key, value in (extra_model_outputs or {}).items():
            if key in self.extra_model_outputs:
                self.extra_model_outputs[key].append(value)
            else:
                self.extra_model_outputs[key] = InfiniteLookbackBuffer([value])
        self.is_terminated = bool(terminated)
        self.is_truncated = bool(truncated)
        self._last_step_time = time.perf_counter()
        if self._start_time is None:
            self._start_time = self._last_step_time

    def validate(self) -> None:
        """Checks the columns' lengths: as many infos as observations and, once reset, one
        observation more than actions, rewards and each model output.

        Raises:
          ValueError: they disagree.
        """
        n_obs, n_infos = len(self.observations), len(self.infos)
        n_act, n_rew = len(self.actions), len(self.rewards)
        extra = {k: len(v) for k, v in self.extra_model_outputs.items()}
        steps = n_obs - 1 if n_obs else 0
        if (
            n_obs != n_infos
            or n_act != steps
            or n_rew != steps
            or any(n != steps for n in extra.values())
        ):
            raise ValueError(
                f"SingleAgentEpisode's data disagree: {n_obs} observations, {n_infos} infos, "
                f"{n_act} actions, {n_rew} rewards, model outputs {extra} (after the "
                "lookback part); an episode has as many infos as observations and one "
                "observation more than actions, rewards and each model output"
            )

    # -- state ---------------------------------------------------------------------------------

    @property
    def custom_data(self) -> dict[str, Any]:
        """A dict for the user's own data, kept from ``on_episode_start`` to
        ``on_episode_end`` (and copied into a ``cut()`` chunk)."""
        return self._custom_data

    @property
    def is_reset(self) -> bool:
        """The episode has its first observation."""
        return len(self.observations) > 0

    @property
    def is_numpy(self) -> bool:
        """``to_numpy()`` was called: the getters return arrays."""
        return self.rewards.finalized

    @property
    def is_done(self) -> bool:
        """Terminated or truncated."""
        return self.is_terminated or self.is_truncated

    def to_numpy(self) -> SingleAgentEpisode:
        """Converts observations, actions, rewards and model outputs to arrays (infos stay
        dicts); returns the episode."""
        self.validate()
        self.observations.finalize()
        if len(self) > 0:
            self.actions.finalize()
            self.rewards.finalize()
            for buffer in self.extra_model_outputs.values():
                buffer.finalize()
        return self

    def concat_episode(self, other: SingleAgentEpisode) -> None:
        """Appends ``other``, the next chunk of this episode (same ``id_``, starting at this
        one's ``t``, its first observation this one's last).

        Raises:
          ValueError: ``other`` does not continue this episode.
        """
        if other.id_ != self.id_ or self.is_done or other.t_started != self.t:
            raise ValueError(
                f"concat_episode: the other chunk (id_ {other.id_}, t_started "
                f"{other.t_started}) does not continue this one (id_ {self.id_}, t {self.t}, "
                f"done {self.is_done})"
            )
        if not data_equal(other.get_observations(0), self.get_observations(-1)):
            raise ValueError(
                "concat_episode: the other chunk's first observation is not this one's last"
            )
        self.observations.pop()
        self.infos.pop()
        self.observations.extend(other.get_observations())
        self.actions.extend(other.get_actions())
        self.rewards.extend(other.get_rewards())
        self.infos.extend(other.get_infos())
        self.t = other.t
        if other.is_terminated:
            self.is_terminated = True
        elif other.is_truncated:
            self.is_truncated = True
        for key in other.extra_model_outputs:
            if key not in self.extra_model_outputs:
                raise ValueError(f"concat_episode: model output {key!r} is not in this chunk")
            self.extra_model_outputs[key].extend(other.get_extra_model_outputs(key))
        self.custom_data.update(other.custom_data)
        self.validate()

    def cut(self, len_lookback_buffer: int = 0) -> SingleAgentEpisode:
        """The chunk that continues this (unfinished) episode: same ``id_``, starting at this
        one's ``t`` from its last observation, with this one's last ``len_lookback_buffer``
        steps as its lookback part and a copy of its ``custom_data``.

        Raises:
          ValueError: the episode is done, or ``len_lookback_buffer`` is negative.
        """
        if self.is_done or len_lookback_buffer < 0:
            raise ValueError(
                f"cut(len_lookback_buffer={len_lookback_buffer}): only an unfinished episode "
                f"is cut (done: {self.is_done}), with a lookback of 0 or more"
            )
        obs_part = slice(-len_lookback_buffer - 1, None)
        rest = slice(-len_lookback_buffer, None) if len_lookback_buffer > 0 else slice(None, 0)
        chunk = SingleAgentEpisode(
            id_=self.id_,
            observations=self.get_observations(obs_part),
            observation_space=self.observation_space,
            infos=self.get_infos(obs_part),
            actions=self.get_actions(rest),
            action_space=self.action_space,
            rewards=self.get_rewards(rest),
            extra_model_outputs={
                k: self.get_extra_model_outputs(k, rest) for k in self.extra_model_outputs
            },
            t_started=self.t,
            len_lookback_buffer="auto",
            agent_id=self.agent_id,
            module_id=self.module_id,
            multi_agent_episode_id=self.multi_agent_episode_id,
        )
        chunk.env_index = self.env_index
        chunk._custom_data = copy.deepcopy(self.custom_data)
        return chunk

    # -- reading -------------------------------------------------------------------------------

    def get_observations(
        self,
        indices: int | slice | list[int] | None = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
    ) -> Any:
        """Observations (``len(self) + 1``: the reset's, then each step's next one); see
        ``InfiniteLookbackBuffer.get`` for the arguments."""
        return self.observations.get(
            indices,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=fill,
            one_hot_discrete=one_hot_discrete,
        )

    def get_infos(
        self,
        indices: int | slice | list[int] | None = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
    ) -> Any:
        """Info dicts (``len(self) + 1``: the reset's first)."""
        return self.infos.get(indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill)

    def get_actions(
        self,
        indices: int | slice | list[int] | None = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
    ) -> Any:
        """Actions (one per step); ``one_hot_discrete`` one-hots ``Discrete`` parts of the
        ``action_space``."""
        return self.actions.get(
            indices,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=fill,
            one_hot_discrete=one_hot_discrete,
        )

    def get_rewards(
        self,
        indices: int | slice | list[int] | None = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: float | None = None,
    ) -> Any:
        """Rewards (one per step)."""
        return self.rewards.get(indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill)

    def get_extra_model_outputs(
        self,
        key: str,
        indices: int | slice | list[int] | None = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
    ) -> Any:
        """The model output ``key`` (one per step).

        Raises:
          KeyError: no model output of that name.
        """
        if key not in self.extra_model_outputs:
            raise KeyError(
                f"no model output {key!r} in this episode; it has "
                f"{sorted(self.extra_model_outputs)}"
            )
        return self.extra_model_outputs[key].get(
            indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill
        )

    def set_observations(
        self,
        *,
        new_data: Any,
        at_indices: int | slice | list[int] | None = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        """Overwrites observations (``at_indices`` None: all after the lookback part), as
        env-to-module connectors do."""
        self.observations.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_actions(
        self,
        *,
        new_data: Any,
        at_indices: int | slice | list[int] | None = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        """Overwrites actions."""
        self.actions.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_rewards(
        self,
        *,
        new_data: Any,
        at_indices: int | slice | list[int] | None = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        """Overwrites rewards."""
        self.rewards.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_extra_model_outputs(
        self,
        *,
        key: str,
        new_data: Any,
        at_indices: int | slice | list[int] | None = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        """Overwrites the model output ``key``.

        Raises:
          KeyError: no model output of that name.
        """
        if key not in self.extra_model_outputs:
            raise KeyError(f"no model output {key!r} in this episode")
        self.extra_model_outputs[key].set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def slice(self, slice_: slice, *, len_lookback_buffer: int | None = None) -> SingleAgentEpisode:
        """Steps ``slice_`` of this episode as a new episode (same ``id_``; also
        ``episode[a:b]``). Its lookback part is ``len_lookback_buffer`` steps (default: this
        episode's lookback), as far as this episode's data reach back; it is done only if the
        slice runs to this episode's end."""
        n = len(self)
        start = (
            0 if slice_.start is None else (n + slice_.start if slice_.start < 0 else slice_.start)
        )
        stop = n if slice_.stop is None else (n + slice_.stop if slice_.stop < 0 else slice_.stop)
        step = 1 if slice_.step is None else slice_.step
        keep_done = stop == n

        def part(buffer: InfiniteLookbackBuffer, extra: int, space: Any) -> InfiniteLookbackBuffer:
            lb = buffer.lookback if len_lookback_buffer is None else len_lookback_buffer
            if start >= 0 and start - lb < 0 and buffer.lookback < lb - start:
                lb = buffer.lookback + start
            data = buffer.get(slice(start - lb, stop + extra, step), neg_index_as_lookback=True)
            return InfiniteLookbackBuffer(data, lookback=lb, space=space)

        episode = SingleAgentEpisode(
            id_=self.id_,
            observations=part(self.observations, 1, self.observation_space),
            observation_space=self.observation_space,
            infos=part(self.infos, 1, None),
            actions=part(self.actions, 0, self.action_space),
            action_space=self.action_space,
            rewards=part(self.rewards, 0, None),
            extra_model_outputs={k: part(v, 0, None) for k, v in self.extra_model_outputs.items()},
            terminated=self.is_terminated and keep_done,
            truncated=self.is_truncated and keep_done,
            t_started=self.t_started + start,
            agent_id=self.agent_id,
            module_id=self.module_id,
            multi_agent_episode_id=self.multi_agent_episode_id,
        )
        episode.env_index = self.env_index
        return episode

    def __getitem__(self, item: builtins.slice) -> SingleAgentEpisode:
        if not isinstance(item, slice):
            raise TypeError(
                f"an episode is indexed by a slice only (episode[a:b]); got {item!r}. Read "
                "single steps with get_observations(i), get_actions(i), get_rewards(i)"
            )
        return self.slice(item)

    def get_data_dict(self) -> dict[str, Any]:
        """The steps as RLlib's columns: ``obs`` (each step's observation), ``actions``,
        ``rewards``, ``infos``, ``terminateds``/``truncateds`` (the last step's flags),
        ``t``, ``eps_id`` and each model output."""
        n = len(self)
        data: dict[str, Any] = {
            "terminateds": [False] * (n - 1) + [self.is_terminated] if n else [],
            "truncateds": [False] * (n - 1) + [self.is_truncated] if n else [],
            "t": list(range(self.t_started, self.t)),
            "eps_id": [self.id_] * n,
        }
        if self.is_numpy:
            data = {k: np.asarray(v) for k, v in data.items()}
        data.update(
            obs=self.get_observations(slice(None, -1)),
            infos=self.get_infos(slice(None, -1)),
            actions=self.get_actions(),
            rewards=self.get_rewards(),
        )
        data.update({k: self.get_extra_model_outputs(k) for k in self.extra_model_outputs})
        return data

    def get_return(self) -> float:
        """The sum of the rewards (after the lookback part)."""
        rewards = self.get_rewards()
        return float(np.sum(np.asarray(rewards, np.float64))) if len(rewards) else 0.0

    def get_duration_s(self) -> float:
        """Seconds from the reset to the last step added (0.0 before a step)."""
        if self._last_step_time is None or self._start_time is None:
            return 0.0
        return self._last_step_time - self._start_time

    def env_steps(self) -> int:
        """Env steps in this episode (chunk)."""
        return len(self)

    def agent_steps(self) -> int:
        """Agent steps: the env steps, for one agent."""
        return len(self)

    def __len__(self) -> int:
        return self.t - self.t_started

    def len(self) -> int:
        """``len(episode)``."""
        return len(self)

    def get_state(self) -> dict[str, Any]:
        """The episode as a dict (``from_state`` rebuilds it): its columns' states, flags,
        counters, spaces (as RLlib writes them: ``gym_space_to_dict``) and ``custom_data``."""
        return {
            "id_": self.id_,
            "env_index": self.env_index,
            "agent_id": self.agent_id,
            "module_id": self.module_id,
            "multi_agent_episode_id": self.multi_agent_episode_id,
            "observations": self.observations.get_state(),
            "actions": self.actions.get_state(),
            "rewards": self.rewards.get_state(),
            "infos": self.infos.get_state(),
            "extra_model_outputs": {k: v.get_state() for k, v in self.extra_model_outputs.items()},
            "is_terminated": self.is_terminated,
            "is_truncated": self.is_truncated,
            "t_started": self.t_started,
            "t": self.t,
            "_observation_space": gym_space_to_dict(self.observation_space),
            "_action_space": gym_space_to_dict(self.action_space),
            "_start_time": self._start_time,
            "_last_step_time": self._last_step_time,
            "custom_data": self.custom_data,
        }

    @staticmethod
    def from_state(state: dict[str, Any]) -> SingleAgentEpisode:
        """The episode ``get_state`` described."""
        episode = SingleAgentEpisode(
            id_=state["id_"],
            observations=InfiniteLookbackBuffer.from_state(state["observations"]),
            infos=InfiniteLookbackBuffer.from_state(state["infos"]),
            actions=InfiniteLookbackBuffer.from_state(state["actions"]),
            rewards=InfiniteLookbackBuffer.from_state(state["rewards"]),
            extra_model_outputs={
                k: InfiniteLookbackBuffer.from_state(v)
                for k, v in (state.get("extra_model_outputs") or {}).items()
            },
            observation_space=space_of_state(state.get("_observation_space")),
            action_space=space_of_state(state.get("_action_space")),
            terminated=state["is_terminated"],
            truncated=state["is_truncated"],
            t_started=state["t_started"],
            agent_id=state.get("agent_id"),
            module_id=state.get("module_id"),
            multi_agent_episode_id=state.get("multi_agent_episode_id"),
        )
        episode.env_index = int(state.get("env_index", 0))
        episode.t = int(state["t"])
        episode._start_time = state.get("_start_time")
        episode._last_step_time = state.get("_last_step_time")
        episode._custom_data = dict(state.get("custom_data") or {})
        return episode

    def __repr__(self) -> str:
        try:
            ret = f"{self.get_return():.3g}"
        except (TypeError, ValueError):
            ret = "?"
        return f"SAEps(len={len(self)} done={self.is_done} R={ret} id_={self.id_})"


def start_episode(
    observation: Any,
    infos: dict[str, Any] | None = None,
    env_index: int = 0,
    *,
    observation_space: gym.Space | None = None,
    action_space: gym.Space | None = None,
) -> SingleAgentEpisode:
    """A new episode of sub-env ``env_index`` that starts with a reset's ``observation`` and
    ``infos``."""
    episode = SingleAgentEpisode(observation_space=observation_space, action_space=action_space)
    episode.env_index = env_index
    episode.add_env_reset(observation, infos)
    return episode


__all__ = ["SingleAgentEpisode", "start_episode"]
