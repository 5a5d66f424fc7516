"""Checkpoints without pickle, written atomically.

Layout of a checkpoint directory::

    path/
      LATEST                  # the name of the current version directory, replaced atomically
      v-000003/
        rljax_checkpoint.json # format version, rljax version, algorithm, config, spaces, counters
        state.msgpack         # the train state's arrays (msgpack: data only, nothing executable)
        runners.json          # optional: the env runners' mid-episode state (rljax.env.state)
      .rljax-lock             # the save lock: one save at a time per directory

A save writes a new version directory beside the old one, fsyncs it, then atomically replaces
``LATEST``; only then are versions beyond ``num_to_keep`` removed (each renamed away first). A
crash at any moment leaves ``LATEST`` naming a complete checkpoint, and every version directory
complete. A save removes only what saves write (``is_checkpoint_entry``): other files and
directories in ``path`` stay as they are.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import stat
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import flax.serialization
import jax
import numpy as np

from rljax.utils import safe_io
from rljax.utils.errors import CheckpointBusyError, CheckpointError

FORMAT_VERSION = 2  # 2: optimizer states carry the non-finite guard (rljax.utils.nonfinite)
META_FILE = "rljax_checkpoint.json"
STATE_FILE = "state.msgpack"
RUNNERS_FILE = "runners.json"
LATEST = "LATEST"
# The save lock (``_save_lock``): an empty-ish file that stays in the checkpoint directory.
LOCK_FILE = ".rljax-lock"
# RLlib's module directories (``<checkpoint>/learner_group/learner/rl_module/<policy_id>``),
# each with a note naming its policy: ``rljax.execution.checkpoints.write_module_paths``.
MODULE_DIRS = "learner_group"
# How long a save waits for another save to the same directory, in seconds.
SAVE_LOCK_TIMEOUT_S = 120.0
# Version directories: ``v-`` and 6 to 12 ASCII digits (``is_version_name``).
_VERSION_NAME = re.compile(r"v-([0-9]{6,12})", re.ASCII)
MAX_VERSION = 10**12 - 1
# A save's temporary entries (a new version being written, an old one being removed, LATEST's
# replacement): the prefix, the kind, the saving process's id, a random part, the version.
_TEMP_PREFIX = ".rljax-tmp-"
_TEMP_NAME = re.compile(
    r"\.rljax-tmp-(?:new|old|latest)-[0-9]{1,10}-[0-9a-f]{8}(?:-v-[0-9]{6,12})?", re.ASCII
)
# What interrupted saves of earlier rljax versions left: ``.tmp-v-000003-1a2b3c4d``,
# ``.tmp-old-v-000002-1a2b3c4d`` and ``.LATEST.1a2b3c4d``.
_LEGACY_TEMP_NAME = re.compile(
    r"\.tmp-(?:old-)?v-[0-9]{6,12}-[0-9a-f]{8}|\.LATEST\.[0-9a-f]{8}", re.ASCII
)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def write_json_atomically(path: Path, data: Any) -> None:
    """Writes ``data`` as JSON to ``path`` through a temporary file beside it and a rename: a
    reader sees the old file or the new one, never half of one."""
    tmp = path.with_name(_temp_name("note"))
    try:
        _write_file(tmp, json.dumps(data, indent=2, sort_keys=True).encode())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def is_version_name(name: str) -> bool:
    """Whether ``name`` is a version directory's name (``v-`` and 6 to 12 ASCII digits).

    The one rule of version names: the save numbers its new version after the highest such
    name, the cleaning removes only such directories (that hold a checkpoint), and ``LATEST``
    must name one. ``v-0.9-backup``, ``v-20241201123456`` or ``v-²`` are not versions: a save
    leaves them alone.
    """
    return _VERSION_NAME.fullmatch(name) is not None


def is_checkpoint_entry(name: str) -> bool:
    """Whether ``name`` is something a save writes into a checkpoint directory: ``LATEST``, the
    save lock, a version directory, RLlib's module directories (``MODULE_DIRS``), or a
    temporary entry of a save (an interrupted one's too)."""
    return (
        name in (LATEST, LOCK_FILE, MODULE_DIRS)
        or is_version_name(name)
        or _TEMP_NAME.fullmatch(name) is not None
        or _LEGACY_TEMP_NAME.fullmatch(name) is not None
    )


def _temp_name(kind: str, version: str = "") -> str:
    suffix = f"-{version}" if version else ""
    return f"{_TEMP_PREFIX}{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}{suffix}"


def _own_versions(root: Path) -> list[tuple[int, str]]:
    """The version directories in ``root`` that hold a checkpoint, oldest first: a directory
    named like a version but without a metadata file is not one a save wrote."""
    out = []
    for child in root.iterdir():
        match = _VERSION_NAME.fullmatch(child.name)
        if match is None or child.is_symlink() or not child.is_dir():
            continue
        meta = child / META_FILE
        if meta.is_symlink() or not meta.is_file():
            continue
        out.append((int(match.group(1)), child.name))
    return sorted(out)


@contextlib.contextmanager
def _save_lock(root: Path, timeout_s: float) -> Iterator[None]:
    """Holds ``root``'s save lock (``fcntl.flock`` on ``root/.rljax-lock``) for one save.

    Another save to ``root`` (another process, or another thread of this one) waits for it up
    to ``timeout_s`` seconds, then raises ``CheckpointBusyError``. The lock file stays (removing
    it would let two saves hold locks on two different files); it holds the last saver's pid.
    """
    path = root / LOCK_FILE
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        raise CheckpointError(
            f"cannot save to {root}: its save lock {path} cannot be opened ({e.strerror}); it "
            "must be a regular file (not a link), or absent"
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CheckpointError(
                f"cannot save to {root}: its save lock {path} is not a regular file"
            )
        deadline = time.monotonic() + timeout_s
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                    by = f" (pid {holder})" if holder.isascii() and holder.isdigit() else ""
                    raise CheckpointBusyError(
                        f"cannot save to {root}: another save{by} has held its lock {path} for "
                        f"{timeout_s:g} s; save to another directory, or once that save is done"
                    ) from None
                time.sleep(delay)
                delay = min(2 * delay, 0.01)
            except OSError as e:  # a filesystem without flock (some network filesystems)
                warnings.warn(
                    f"saving to {root} without a lock: this filesystem cannot lock {path} "
                    f"({e.strerror}); two processes saving there at once may fail",
                    RuntimeWarning,
                    stacklevel=3,
                )
                break
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def check_save_path(path: str | os.PathLike) -> Path:
    """The absolute directory a save to ``path`` writes to; raises ``CheckpointError`` if
    ``path`` is no str or path, or names something that is not a directory (a file)."""
    if not isinstance(path, (str, os.PathLike)):
        raise CheckpointError(f"a checkpoint path must be a str or path; got {type(path).__name__}")
    root = Path(path).expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise CheckpointError(
            f"cannot save to {str(path)!r}: it is a file, not a directory; give a new directory "
            "or one rljax saved to"
        )
    return root


def save_checkpoint(
    path: str | os.PathLike,
    metadata: dict[str, Any],
    state: Any,
    num_to_keep: int = 1,
    runners: Any = None,
    lock_timeout_s: float | None = None,
) -> Path:
    """Writes ``metadata`` (JSON) and ``state`` (a pytree of arrays) to ``path`` atomically;
    ``runners``: JSON data of the env runners' state, saved beside them when given. Returns the
    new version's directory.

    The newest ``num_to_keep`` versions stay (``LATEST`` names the newest; an older one loads
    by its own directory, ``path/v-000003``); older ones and leftovers of interrupted saves go.
    Nothing else in ``path`` is touched: only version directories (``is_version_name``) that
    hold a checkpoint, and temporary entries named as only a save names them, are removed.
    An older version that cannot be removed stays (a ``RuntimeWarning`` names it and the error;
    the next save tries again): the new checkpoint is complete by then.

    One save at a time per directory: a second one waits for the first (``_save_lock``) up to
    ``lock_timeout_s`` seconds (None: ``SAVE_LOCK_TIMEOUT_S``), then raises
    ``CheckpointBusyError``. ``path`` that is a file raises ``CheckpointError``, changing
    nothing.
    """
    if isinstance(num_to_keep, bool) or not isinstance(num_to_keep, int) or num_to_keep < 1:
        raise CheckpointError(f"num_to_keep={num_to_keep!r}; use an int >= 1")
    root = check_save_path(path)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CheckpointError(
            f"cannot save to {str(path)!r}: the directory cannot be created ({e.strerror})"
        ) from None
    timeout = SAVE_LOCK_TIMEOUT_S if lock_timeout_s is None else lock_timeout_s
    with _save_lock(root, timeout):
        return _save_locked(root, metadata, state, num_to_keep, runners)


def _save_locked(
    root: Path, metadata: dict[str, Any], state: Any, num_to_keep: int, runners: Any
) -> Path:
    # Temporary entries of saves that were killed: no save is running (this one holds the lock).
    for child in root.iterdir():
        if _TEMP_NAME.fullmatch(child.name) or _LEGACY_TEMP_NAME.fullmatch(child.name):
            _remove(child)
    # After the highest version name, whether or not LATEST got to name it (a crash between
    # the two leaves a complete v-N+1 that LATEST does not name; it must not block later saves),
    # and whether or not it is a checkpoint (a directory of the user's keeps its name).
    numbers = [int(m.group(1)) for c in root.iterdir() if (m := _VERSION_NAME.fullmatch(c.name))]
    counter = max(numbers, default=0) + 1
    if counter > MAX_VERSION:
        raise CheckpointError(
            f"cannot save to {root}: it holds v-{counter - 1}, the highest version a checkpoint "
            f"directory can have (v- and at most {len(str(MAX_VERSION))} digits); give a new "
            "directory"
        )
    name = f"v-{counter:06d}"
    tmp = root / _temp_name("new", name)
    tmp.mkdir()
    try:
        meta = dict(metadata, format_version=FORMAT_VERSION)
        _write_file(tmp / META_FILE, json.dumps(meta, indent=2, sort_keys=True).encode())
        state_dict = flax.serialization.to_state_dict(state)
        state_np = _to_numpy(state_dict)
        _write_file(tmp / STATE_FILE, flax.serialization.msgpack_serialize(state_np))
        if runners is not None:
            _write_file(tmp / RUNNERS_FILE, json.dumps(runners).encode())
        _fsync_dir(tmp)
        final = root / name
        os.replace(tmp, final)
    except BaseException:
        _remove(tmp)
        raise
    latest_tmp = root / _temp_name("latest")
    try:
        _write_file(latest_tmp, name.encode())
        os.replace(latest_tmp, root / LATEST)
    except BaseException:
        _remove(latest_tmp)
        raise
    _fsync_dir(root)
    versions = _own_versions(root)
    keep = {n for _, n in versions[-num_to_keep:]} | {name}
    for _, old in versions:
        if old in keep:
            continue
        child = root / old
        # Renamed first, so that every version directory is complete even if a crash stops the
        # removal halfway; the next save clears the leftover.
        doomed = root / _temp_name("old", old)
        try:
            os.replace(child, doomed)
        except OSError as e:
            # The new version is saved and LATEST names it: a stale old one is no reason to
            # fail the save. It stays complete, and the next save tries again.
            warnings.warn(
                f"checkpoint saved to {final}, but the old version {child} could not be "
                f"removed: {e}",
                RuntimeWarning,
                stacklevel=3,
            )
            continue
        _remove(doomed)
    return final


def _remove(path: Path) -> None:
    """Removes a save's own temporary entry (a directory, or a file), whatever it holds."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _to_numpy(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _to_numpy(v) for k, v in tree.items()}
    # An absent part of a state (a uniform replay buffer's min tree) stays absent (msgpack nil).
    return None if tree is None else np.asarray(tree)


# Caps on what a load reads, fixed here so that no file can raise them. The state file's cap
# comes from the arrays the loading algorithm expects (``load_state``).
MAX_LATEST_BYTES = 64
MAX_METADATA_BYTES = 4 << 20
# runners.json holds a few KB per sub-env; 64 MiB is far above any real one.
MAX_RUNNERS_BYTES = 64 << 20


def _inside(path: Path, root: Path) -> bool:
    real, real_root = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    return real == real_root or real_root in real.parents


def _read_latest(root: Path) -> str | None:
    latest = root / LATEST
    if not latest.exists() and not latest.is_symlink():
        return None
    name = safe_io.open_regular(latest, root, MAX_LATEST_BYTES).decode("ascii", "replace").strip()
    if not _VERSION_NAME.fullmatch(name):
        raise CheckpointError(
            f"{latest} is corrupt: it must name a version directory such as 'v-000001'"
        )
    return name


def load_metadata(path: str | os.PathLike) -> tuple[dict[str, Any], Path]:
    """Reads a checkpoint's metadata; raises ``CheckpointError`` if ``path`` is not one.

    ``path`` is the checkpoint directory (its ``LATEST`` version is read) or one version
    directory. Files are read as untrusted data (``rljax.utils.safe_io``): regular files inside
    the checkpoint directory only, sizes capped, JSON nesting bounded.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise CheckpointError(f"a checkpoint path must be a str or path; got {type(path).__name__}")
    root = Path(path).expanduser()
    name: str | None
    if not root.is_dir():
        if root.is_file():
            parent = root.parent
            hint = (
                f" {str(parent.parent)!r}"
                if _VERSION_NAME.fullmatch(parent.name)
                else f" {str(parent)!r}"
                if (parent / LATEST).exists()
                else ""
            )
            raise CheckpointError(
                f"{str(path)!r} is a file, not a checkpoint: give the checkpoint's directory"
                f"{hint} (what save_to_path returned)"
            )
        raise CheckpointError(f"{str(path)!r} is not a checkpoint: no such directory")
    if _VERSION_NAME.fullmatch(root.name) and (root / META_FILE).exists():
        root, name = root.parent, root.name  # one version of a checkpoint, named directly
    else:
        name = _read_latest(root)
    if name is None:
        raise CheckpointError(
            f"{str(path)!r} is not an rljax checkpoint: it has no {LATEST} file (write one with algo.save_to_path)"
        )
    version_dir = root / name
    if not version_dir.exists() and not version_dir.is_symlink():
        raise CheckpointError(
            f"{str(path)!r}: its {LATEST} file names version {name!r}, which is not there (a "
            "checkpoint directory copied in part?)"
        )
    if version_dir.is_symlink() or not version_dir.is_dir() or not _inside(version_dir, root):
        raise CheckpointError(
            f"{version_dir}: the version directory must be a real directory inside "
            f"{str(path)!r} (not a link)"
        )
    meta = safe_io.read_json(version_dir / META_FILE, version_dir, MAX_METADATA_BYTES)
    if not isinstance(meta, dict):
        raise CheckpointError(
            f"{version_dir / META_FILE}: expected a JSON object of metadata; got a "
            f"{type(meta).__name__}"
        )
    version = meta.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        written_by = meta.get("rljax_version", "?")
        shown_by = written_by[:20] if isinstance(written_by, str) else "?"
        shown = version if isinstance(version, int) and not isinstance(version, bool) else "?"
        raise CheckpointError(
            f"{str(path)!r} has checkpoint format {shown!r}; this rljax reads format "
            f"{FORMAT_VERSION} (written by rljax {shown_by})"
        )
    return meta, version_dir


def load_state(version_dir: Path, target: Any) -> Any:
    """Reads the state file and restores its arrays into a pytree shaped like ``target``.

    ``target`` may hold arrays or ``jax.ShapeDtypeStruct`` leaves (nothing is allocated for
    it). The file must hold exactly ``target``'s tree, with each array's shape and dtype; its
    size is capped by ``target``'s byte size (no file can raise the cap). Returns numpy arrays.
    """
    target_dict = flax.serialization.to_state_dict(target)
    leaves = jax.tree.leaves(target_dict)
    expected = sum(
        int(np.prod(np.shape(x), dtype=np.int64)) * np.dtype(x.dtype).itemsize for x in leaves
    )
    cap = expected + 4096 * (len(leaves) + 1) + (1 << 20)
    state_dict = safe_io.read_msgpack_tree(version_dir / STATE_FILE, version_dir, cap)
    _check_tree(target_dict, state_dict, "", version_dir / STATE_FILE)
    return flax.serialization.from_state_dict(target, state_dict)


def load_runners(version_dir: Path) -> Any:
    """The env runners' saved state (bounded JSON), or None when the checkpoint has none."""
    path = version_dir / RUNNERS_FILE
    if not path.exists() and not path.is_symlink():
        return None
    return safe_io.read_json(path, version_dir, MAX_RUNNERS_BYTES)


def _check_tree(target: Any, loaded: Any, where: str, path: Path | str) -> None:
    if isinstance(target, dict):
        if not isinstance(loaded, dict) or set(target) != set(loaded):
            found = (
                sorted(loaded)[:20] if isinstance(loaded, dict) else f"a {type(loaded).__name__}"
            )
            raise CheckpointError(
                f"{path}: the state does not match this algorithm at {where or '/'}: expected "
                f"keys {sorted(target)}, found {found}"
            )
        for k in target:
            _check_tree(target[k], loaded[k], f"{where}/{k}", path)
        return
    if target is None:
        if loaded is not None:
            raise CheckpointError(
                f"{path}: {where} holds a {type(loaded).__name__}; this algorithm has nothing there"
            )
        return
    if not isinstance(loaded, (np.ndarray, np.generic)):
        raise CheckpointError(
            f"{path}: {where} holds a {type(loaded).__name__}; this algorithm expects an array "
            f"of shape {tuple(np.shape(target))} and dtype {np.dtype(target.dtype)}"
        )
    if np.shape(target) != np.shape(loaded):
        raise CheckpointError(
            f"{path}: checkpoint array {where} has shape {np.shape(loaded)}; this algorithm "
            f"expects {tuple(np.shape(target))}"
        )
    if np.dtype(target.dtype) != loaded.dtype:
        raise CheckpointError(
            f"{path}: checkpoint array {where} has dtype {loaded.dtype}; this algorithm expects "
            f"{np.dtype(target.dtype)}"
        )


def count_non_finite_weights(state: Any) -> tuple[int, int]:
    """``(non-finite, all)`` numbers of the floating-point arrays under a key ending in
    ``params`` (the networks' weights and target copies, not optimizer moments or a replay
    buffer) of a state of host arrays, such as ``load_state`` returns."""
    bad = total = 0
    for path, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
        names = [str(getattr(k, "key", getattr(k, "name", ""))) for k in path]
        if not any(n.endswith("params") for n in names):
            continue
        arr = np.asarray(leaf)
        if arr.dtype.kind != "f" and arr.dtype.name != "bfloat16":
            continue
        total += arr.size
        bad += arr.size - int(np.count_nonzero(np.isfinite(arr)))
    return bad, total
