"""Offline data as Parquet files: written by ``offline_data(output=...)``, read by
``offline_data(input_=...)`` (BC, MARWIL, CQL, IQL). Two layouts, both RLlib 2.60's; the reader
tells them apart by their columns, file by file.

Episodes (``output_write_episodes=True``, RLlib's default): one row per episode in one column,
``item``, each the episode's ``SingleAgentEpisode.get_state()`` packed with msgpack, its arrays
as msgpack-numpy encodes them (``rljax.utils.serialization``). RLlib reads them with
``input_read_episodes=True``, and rljax reads RLlib's, never unpickling (an array of Python
objects, which msgpack-numpy pickles, is refused).

Env steps (``output_write_episodes=False``): one row per step, with RLlib's column names:
``eps_id`` (the episode's id, a string), ``t`` (the step within the episode), ``obs``,
``actions``, ``rewards``, ``new_obs``, ``terminateds``, ``truncateds``. Box observations and
actions are stored flat, as fixed-size lists of numbers of the space's dtype (uint8 frames stay
uint8), and get their shape back from the env's spaces when read; a Discrete value is an
integer of the env's range (``start`` included). Files without a ``t`` column (RLlib's row
writer adds none) are read with each episode's rows in file order; Box columns may also be
Ray Data's tensor columns or variable-size lists, as RLlib's writer leaves them. Parquet compresses every
column (zstd), so RLlib's ``output_compress_columns`` needs nothing more. Nothing in a file is
code: a file holds numbers and strings only, and is read as such.

Files are written whole or not at all (a temporary name, then a rename), named
``<run>-<index>.parquet`` with a random ``run`` per writer, so two runs writing to one folder
never overwrite each other's files, and nothing in the folder is ever deleted.

Needs pyarrow (``pip install "rljax[offline]"``; Ray brings it too).
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from rljax.utils.errors import ConfigError
from rljax.utils.serialization import pack_msgpack_numpy

COLUMNS = ("eps_id", "t", "obs", "actions", "rewards", "new_obs", "terminateds", "truncateds")
"""The columns of a row (one env step), RLlib's names."""

SUFFIX = ".parquet"


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ImportError(
            'offline data needs pyarrow: pip install "rljax[offline]" (or pyarrow)'
        ) from e
    return pa, pq


def local_path(name: str, value: Any) -> Path:
    """A folder or file path from ``value``: a path, or RLlib's ``local://`` URI; other URI
    schemes (``s3://``, ``gs://``) are refused, naming what was given."""
    if not isinstance(value, str | os.PathLike):
        raise ConfigError(f"{name}={value!r}: expected a path (str) to a local folder or file")
    text = os.fspath(value)
    if text.startswith("local://"):
        text = text[len("local://") :]
    elif "://" in text:
        raise ConfigError(
            f"{name}={text!r}: rljax reads and writes offline data on the local filesystem "
            "only (a path, or local:///path); copy remote data to a local folder first"
        )
    if not text:
        raise ConfigError(f"{name}={value!r}: the path is empty")
    return Path(text).expanduser()


def _check_space(name: str, space: Any, what: str) -> None:
    if not isinstance(space, spaces.Box | spaces.Discrete):
        raise ConfigError(
            f"{name}: offline data holds Box or Discrete {what}s; this env's {what} space is "
            f"{space}"
        )


def _flat_width(space: Any) -> int | None:
    """The number of values of one row of ``space`` (None: a Discrete scalar)."""
    if isinstance(space, spaces.Discrete):
        return None
    return int(np.prod(space.shape, dtype=np.int64))


def _as_column(space: Any, values: Sequence[Any]) -> np.ndarray:
    """Rows of ``space`` as an array: ``[n, width]`` of the Box's dtype, or ``[n]`` int64."""
    if isinstance(space, spaces.Discrete):
        return np.asarray(values, np.int64).reshape(len(values))
    return np.asarray(values, space.dtype).reshape(len(values), -1)


class OfflineWriter:
    """Writes episodes into Parquet files of ``max_rows_per_file`` rows: rows of env steps
    (``add_episode``), or with ``episodes`` RLlib's recorded episodes, one row each
    (``add_episode_state``: an ``item`` column of msgpack'd ``SingleAgentEpisode.get_state()``).

    Args:
      directory: The folder (made if missing).
      observation_space, action_space: The env's (one agent's); Box or Discrete.
      max_rows_per_file: Rows per file; None: one file per ``flush``.
      episodes: Write whole episodes (RLlib's ``output_write_episodes=True``), not env steps.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        observation_space: Any,
        action_space: Any,
        max_rows_per_file: int | None = None,
        episodes: bool = False,
    ):
        _check_space("offline_data(output=...)", observation_space, "observation")
        _check_space("offline_data(output=...)", action_space, "action")
        self._pa, self._pq = _pyarrow()
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise ConfigError(f"offline_data(output={str(directory)!r}) is a file, not a folder")
        self.directory.mkdir(parents=True, exist_ok=True)
        self.observation_space, self.action_space = observation_space, action_space
        self.max_rows_per_file = max_rows_per_file
        self._run = uuid.uuid4().hex[:12]
        self._index = 0
        self.episodes = episodes
        self._columns = ("item",) if episodes else COLUMNS
        self._rows: dict[str, list[Any]] = {c: [] for c in self._columns}
        self.files: list[Path] = []
        self.rows_written = 0

    @property
    def pending_rows(self) -> int:
        """Rows added and not yet written."""
        return len(self._rows[self._columns[0]])

    def add_episode_state(self, state: dict[str, Any]) -> None:
        """Adds one episode, ``SingleAgentEpisode.get_state()``, as one row (``episodes``
        writers only); writes the file that became full.

        Raises:
          ValueError: the state holds something msgpack cannot write (names its type).
        """
        if not self.episodes:
            raise ValueError("add_episode_state() needs OfflineWriter(..., episodes=True)")
        self._rows["item"].append(pack_msgpack_numpy(state))
        if self.max_rows_per_file is not None and self.pending_rows >= self.max_rows_per_file:
            self._write(self.max_rows_per_file)

    def add_episode(
        self,
        observations: Sequence[Any],
        actions: Sequence[Any],
        rewards: Sequence[float],
        terminated: bool,
        truncated: bool,
        eps_id: str | None = None,
    ) -> None:
        """Adds a finished episode's steps: ``len(observations) == len(actions) + 1``, the
        actions as the env took them (a Discrete one in the env's range, ``start`` included);
        the last step carries ``terminated`` / ``truncated``. Writes the files that became
        full."""
        if self.episodes:
            raise ValueError("an episodes writer takes add_episode_state(), not rows")
        n = len(actions)
        if len(observations) != n + 1 or len(rewards) != n:
            raise ValueError(
                f"an episode of {n} actions needs {n + 1} observations and {n} rewards; got "
                f"{len(observations)} and {len(rewards)}"
            )
        if n == 0:
            return
        eps = eps_id or uuid.uuid4().hex
        obs = _as_column(self.observation_space, observations)
        act = _as_column(self.action_space, actions)
        rows = self._rows
        rows["eps_id"].extend([eps] * n)
        rows["t"].extend(range(n))
        rows["obs"].extend(obs[:-1])
        rows["new_obs"].extend(obs[1:])
        rows["actions"].extend(act)
        rows["rewards"].extend(float(r) for r in rewards)
        rows["terminateds"].extend([False] * (n - 1) + [bool(terminated)])
        rows["truncateds"].extend([False] * (n - 1) + [bool(truncated)])
        limit = self.max_rows_per_file
        while limit is not None and self.pending_rows >= limit:
            self._write(limit)

    def record_episodes(
        self, env: Any, policy: Callable[[Any], Any], episodes: int, seed: int = 0
    ) -> list[float]:
        """Runs ``episodes`` episodes of ``policy`` (observation -> the action the env takes)
        in the gymnasium ``env``, reset with seeds ``seed, seed + 1, ...``, and adds each one
        (``add_episode``): a scripted controller's data. Returns the episodes' returns; call
        ``flush()`` to write the rows of the last file."""
        returns = []
        for episode in range(episodes):
            o, _ = env.reset(seed=seed + episode)
            obs, actions, rewards = [o], [], []
            terminated = truncated = False
            while not (terminated or truncated):
                a = policy(o)
                o, r, terminated, truncated, _ = env.step(a)
                obs.append(o)
                actions.append(a)
                rewards.append(float(r))
            returns.append(sum(rewards))
            self.add_episode(obs, actions, rewards, terminated, truncated)
        return returns

    def flush(self) -> None:
        """Writes every pending row (RLlib's ``output_write_remaining_data``)."""
        if self.pending_rows:
            self._write(self.pending_rows)

    def _write(self, n: int) -> None:
        pa, pq = self._pa, self._pq
        take = {c: self._rows[c][:n] for c in self._columns}
        if self.episodes:
            table = pa.table({"item": pa.array(take["item"], pa.binary())})
        else:
            table = self._rows_table(take)
        path = self.directory / f"{self._run}-{self._index:06d}{SUFFIX}"
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        # The rows leave the buffer once their file is in place (a failed write keeps them).
        self._rows = {c: self._rows[c][n:] for c in self._columns}
        self._index += 1
        self.files.append(path)
        self.rows_written += n

    def _rows_table(self, take: dict[str, list[Any]]) -> Any:
        pa = self._pa

        def values(space: Any, rows: list[Any]) -> Any:
            if isinstance(space, spaces.Discrete):
                return pa.array(np.asarray(rows, np.int64))
            flat = pa.array(np.concatenate(rows))
            return pa.FixedSizeListArray.from_arrays(flat, _flat_width(space))

        return pa.table(
            {
                "eps_id": pa.array(take["eps_id"], pa.string()),
                "t": pa.array(take["t"], pa.int64()),
                "obs": values(self.observation_space, take["obs"]),
                "actions": values(self.action_space, take["actions"]),
                "rewards": pa.array(take["rewards"], pa.float32()),
                "new_obs": values(self.observation_space, take["new_obs"]),
                "terminateds": pa.array(take["terminateds"], pa.bool_()),
                "truncateds": pa.array(take["truncateds"], pa.bool_()),
            }
        )


@dataclasses.dataclass(frozen=True)
class OfflineData:
    """Offline data as arrays, rows in file order (each episode's steps in order).

    Attributes:
      obs, new_obs: ``[N, *observation_space.shape]`` of the space's dtype (``[N]`` int64
        for a Discrete space).
      actions: ``[N]`` int32, the policy's index (Discrete), or ``[N, *action_space.shape]`` of
        the space's dtype.
      rewards: ``[N]`` float32.
      terminateds, truncateds: ``[N]`` bool.
      episode_index: ``[N]`` int32, the row's episode (0, 1, ... in order of first row).
      files: The files read.
    """

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    new_obs: np.ndarray
    terminateds: np.ndarray
    truncateds: np.ndarray
    episode_index: np.ndarray
    files: tuple[str, ...]

    @property
    def num_rows(self) -> int:
        """The number of rows (env steps)."""
        return int(self.rewards.shape[0])

    def returns_to_go(self, gamma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: the discounted sum of the rewards from it to its episode's last row in the
        data, ``gamma ** (rows to that end)`` where the episode did not terminate there (its
        value is then bootstrapped from that row's ``new_obs``; 0 where it terminated), and the
        index of that last row: GAE's value target with ``lambda_ = 1``."""
        n = self.num_rows
        ret = np.zeros(n, np.float64)
        discount = np.zeros(n, np.float64)
        last = np.zeros(n, np.int64)
        running, scale, end = 0.0, 0.0, n - 1
        for i in range(n - 1, -1, -1):
            closes = i == n - 1 or self.episode_index[i + 1] != self.episode_index[i]
            if closes or self.terminateds[i] or self.truncateds[i]:
                running, end = 0.0, i
                scale = 0.0 if self.terminateds[i] else 1.0
            running = float(self.rewards[i]) + gamma * running
            scale *= gamma
            ret[i], discount[i], last[i] = running, scale, end
        return ret.astype(np.float32), discount.astype(np.float32), last


def _files_of(paths: Sequence[Path]) -> list[Path]:
    """The Parquet files at ``paths`` (folders searched, hidden files and folders skipped),
    each once."""
    files: dict[Path, None] = {}
    for p in paths:
        if p.is_dir():
            found = sorted(
                f
                for f in p.rglob(f"*{SUFFIX}")
                if not any(part.startswith(".") for part in f.relative_to(p).parts)
            )
            if not found:
                raise ConfigError(f"offline_data(input_=...): the folder {p} holds no *.parquet")
            files.update((f.resolve(), None) for f in found)
        elif p.is_file():
            files[p.resolve()] = None
        else:
            raise ConfigError(f"offline_data(input_=...): {p} does not exist")
    return list(files)


def _in_range(where: Path | str, kind: str, values: np.ndarray, space: Any) -> np.ndarray:
    """Discrete ``values`` as int64, each checked to lie in ``space``."""
    values = values.astype(np.int64)
    bad = (values < space.start) | (values >= space.start + space.n)
    if bad.any():
        raise ConfigError(
            f"offline_data(input_=...): {where}: {kind} {int(values[bad][0])} is outside the "
            f"env's {kind} space {space}"
        )
    return values


def _column(pa: Any, f: Path, name: str, col: Any, space: Any) -> np.ndarray:
    """Column ``name`` of file ``f`` as rows of ``space`` (checked against it)."""
    kind = "action" if name == "actions" else "observation"
    if isinstance(space, spaces.Discrete):
        if not pa.types.is_integer(col.type):
            raise ConfigError(
                f"offline_data(input_=...): {f}: column {name!r} is {col.type}, expected "
                f"integers for the env's {kind} space {space}"
            )
        return _in_range(f, kind, col.to_numpy(zero_copy_only=False), space)
    width = int(np.prod(space.shape, dtype=np.int64))
    values = _list_numbers(pa, col)
    if values is None or values.size != len(col) * width:
        raise ConfigError(
            f"offline_data(input_=...): {f}: column {name!r} is {col.type}, expected "
            f"lists of {width} numbers for the env's {kind} space (fixed-size, variable-size "
            "or Ray Data's tensor columns, as RLlib writes them)"
        )
    return values.astype(space.dtype).reshape(len(col), *space.shape)


def _list_numbers(pa: Any, col: Any) -> np.ndarray | None:
    """The numbers of a column of (nested) lists, flat, where every row has the same number of
    them at each level; None otherwise. Ray Data's tensor columns (an extension type over a
    list, which RLlib's recordings hold) are read by their storage."""
    import pyarrow.compute as pc

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if isinstance(col.type, pa.ExtensionType):
        col = col.storage
    if not _is_list(pa, col.type):
        return None
    while _is_list(pa, col.type):
        if not pa.types.is_fixed_size_list(col.type):
            lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
            if len(lengths) and (lengths != lengths[0]).any():
                return None  # rows of different sizes
        col = col.flatten()
    if not (
        pa.types.is_integer(col.type)
        or pa.types.is_floating(col.type)
        or pa.types.is_boolean(col.type)
    ):
        return None
    out: np.ndarray = col.to_numpy(zero_copy_only=False)
    return out


def _is_list(pa: Any, kind: Any) -> bool:
    return bool(
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    )


def _stacked(where: str, kind: str, values: list[Any], space: Any) -> np.ndarray:
    """An episode's ``values`` (RLlib's episode states hold one array or number per step) as
    rows of ``space``, checked against it."""
    try:
        array = np.asarray(values)
    except ValueError:
        array = np.asarray(values, dtype=object)
    if array.dtype.kind not in "biuf":
        raise ConfigError(
            f"offline_data(input_=...): {where}: its {kind}s are not numbers of one shape, "
            f"as the env's {kind} space {space} needs"
        )
    if isinstance(space, spaces.Discrete):
        if array.ndim != 1 or array.dtype.kind not in "biu":
            raise ConfigError(
                f"offline_data(input_=...): {where}: its {kind}s are {array.dtype} of shape "
                f"{array.shape[1:]}, expected integers for the env's {kind} space {space}"
            )
        return _in_range(where, kind, array, space)
    if array.shape[1:] != space.shape:
        raise ConfigError(
            f"offline_data(input_=...): {where}: its {kind}s have shape {array.shape[1:]}, "
            f"the env's {kind} space {space.shape}"
        )
    return array.astype(space.dtype)


def _episode_rows(
    f: Path, items: list[Any], observation_space: Any, action_space: Any
) -> dict[str, np.ndarray]:
    """The rows of RLlib's recorded episodes (``output_write_episodes=True``: one msgpack'd
    ``SingleAgentEpisode.get_state()`` per row of an ``item`` column), decoded without pickle."""
    from rljax.env.single_agent_episode import SingleAgentEpisode
    from rljax.utils.safe_io import unpack_msgpack_numpy

    parts: dict[str, list[np.ndarray]] = {c: [] for c in COLUMNS}
    for i, item in enumerate(items):
        where = f"{f}: episode {i}"
        state = unpack_msgpack_numpy(item, where, ConfigError)
        try:
            # The rows are checked against the env's spaces: the file's own are not built
            # (each Box bound may be large), and the flags must be booleans.
            state = {**state, "_observation_space": None, "_action_space": None}
            for key in ("observations", "actions", "rewards", "infos"):
                state[key] = {**state[key], "space": None}
            state["extra_model_outputs"] = None
            for flag in ("is_terminated", "is_truncated"):
                if not isinstance(state[flag], bool | np.bool_):
                    raise TypeError(f"{flag} is {type(state[flag]).__name__}, not a bool")
            episode = SingleAgentEpisode.from_state(state)
            obs = list(episode.get_observations())
            actions = list(episode.get_actions())
            rewards = np.asarray(episode.get_rewards(), np.float32)
            terminated, truncated = bool(episode.is_terminated), bool(episode.is_truncated)
            eps_id, t0 = str(episode.id_), int(episode.t_started)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as e:
            raise ConfigError(
                f"offline_data(input_=...): {where} is not an episode's state "
                f"({type(e).__name__}: {str(e)[:80]})"
            ) from None
        n = len(actions)  # the episode checked its observations and rewards against it
        if rewards.shape != (n,):
            raise ConfigError(
                f"offline_data(input_=...): {where}: its rewards have shape {rewards.shape}, "
                f"expected one number per step ({n},)"
            )
        if t0 < 0:
            raise ConfigError(f"offline_data(input_=...): {where}: t_started={t0} is negative")
        if n == 0:
            continue
        observations = _stacked(where, "observation", obs, observation_space)
        done = np.zeros(n, bool)
        parts["eps_id"].append(np.full(n, eps_id, dtype=object))
        parts["t"].append(np.arange(t0, t0 + n))
        parts["obs"].append(observations[:-1])
        parts["new_obs"].append(observations[1:])
        parts["actions"].append(_stacked(where, "action", actions, action_space))
        parts["rewards"].append(rewards)
        parts["terminateds"].append(np.concatenate([done[:-1], [terminated]]))
        parts["truncateds"].append(np.concatenate([done[:-1], [truncated]]))
    if not parts["t"]:
        return {}
    return {c: np.concatenate(v) for c, v in parts.items()}


def read_offline_data(paths: Any, observation_space: Any, action_space: Any) -> OfflineData:
    """Reads the Parquet files at ``paths`` (a path or a list; folders are searched for
    ``*.parquet``; a file named twice is read once), of env steps or of episodes, into arrays
    shaped by the env's spaces.

    Raises:
      ConfigError: a path is missing or holds no data, a column is missing or has the wrong
        type or width for the spaces, a Discrete value is out of range, an episode's step
        appears twice, an episode's item is not an episode's state.
    """
    _check_space("offline_data(input_=...)", observation_space, "observation")
    _check_space("offline_data(input_=...)", action_space, "action")
    pa, pq = _pyarrow()
    given = paths if isinstance(paths, list | tuple) else [paths]
    if not given:
        raise ConfigError("offline_data(input_=[]): name at least one file or folder")
    files = _files_of([local_path("offline_data(input_=...)", p) for p in given])
    spaces_of = {"obs": observation_space, "new_obs": observation_space, "actions": action_space}
    required = [c for c in COLUMNS if c != "t"]
    parts: dict[str, list[np.ndarray]] = {c: [] for c in COLUMNS}
    for f in files:
        try:
            names = set(pq.read_schema(f).names)
            episodes = names == {"item"}  # RLlib's output_write_episodes=True
            table = pq.read_table(
                f, columns=["item"] if episodes else [c for c in COLUMNS if c in names]
            )
        except Exception as e:  # not a Parquet file, or a damaged one
            raise ConfigError(
                f"offline_data(input_=...): {f} could not be read as Parquet: {type(e).__name__}"
            ) from None
        if episodes:
            steps = _episode_rows(
                f, table.column("item").to_pylist(), observation_space, action_space
            )
            for c, values in steps.items():
                parts[c].append(values)
            continue
        missing = [c for c in required if c not in names]
        if missing:
            raise ConfigError(
                f"offline_data(input_=...): {f} has no column {', '.join(missing)}; offline "
                f"data rows have {', '.join(COLUMNS)} (t optional), or RLlib's recorded "
                "episodes one column, item"
            )
        for c in required:
            col = table.column(c).combine_chunks()
            if c in spaces_of:
                parts[c].append(_column(pa, f, c, col, spaces_of[c]))
            else:
                parts[c].append(col.to_numpy(zero_copy_only=False))
        # No t (RLlib's row writer): each episode's rows in file order.
        parts["t"].append(
            table.column("t").to_numpy() if "t" in names else np.full(table.num_rows, -1)
        )
    if not parts["t"]:
        raise ConfigError(
            f"offline_data(input_=...): {', '.join(str(f) for f in files)[:200]} hold no env steps"
        )
    cat = {c: np.concatenate(parts[c]) for c in COLUMNS}
    eps = cat["eps_id"].astype(str)
    # Episodes by order of first appearance (an id may span files: one episode, one index),
    # each one's rows in order of t.
    _, first, inverse = np.unique(eps, return_index=True, return_inverse=True)
    episode = np.argsort(np.argsort(first))[inverse].astype(np.int32)
    t = cat["t"].astype(np.int64)
    if (t < 0).any():  # the row's place within its episode, in order of reading
        order = np.argsort(episode, kind="stable")
        starts = np.searchsorted(episode[order], episode[order])
        counts = np.empty_like(t)
        counts[order] = np.arange(len(order)) - starts
        t = np.where(t < 0, counts, t)
    rows = np.lexsort((t, episode))
    twice = (episode[rows][1:] == episode[rows][:-1]) & (t[rows][1:] == t[rows][:-1])
    if twice.any():
        i = rows[1:][twice][0]
        raise ConfigError(
            f"offline_data(input_=...): step t={int(t[i])} of episode {str(eps[i])!r} appears "
            "twice (the same rows in two files?)"
        )
    actions = cat["actions"]
    if isinstance(action_space, spaces.Discrete):  # the policy's index
        actions = (actions - int(action_space.start)).astype(np.int32)
    return OfflineData(
        obs=cat["obs"][rows],
        actions=actions[rows],
        rewards=cat["rewards"].astype(np.float32)[rows],
        new_obs=cat["new_obs"][rows],
        terminateds=cat["terminateds"].astype(bool)[rows],
        truncateds=cat["truncateds"].astype(bool)[rows],
        episode_index=episode[rows],
        files=tuple(str(f) for f in files),
    )


__all__ = ["COLUMNS", "OfflineData", "OfflineWriter", "local_path", "read_offline_data"]
