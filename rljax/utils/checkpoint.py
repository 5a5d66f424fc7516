"""Checkpoints without pickle, written atomically.

Layout of a checkpoint directory::

    path/
      LATEST                  # the name of the current version directory, replaced atomically
      v-000003/
        rljax_checkpoint.json # format version, rljax version, algorithm, config, spaces, counters
        state.msgpack         # the train state's arrays (msgpack: data only, nothing executable)
        runners.json          # optional: the env runners' mid-episode state (rljax.env.state)

A save writes a new version directory beside the old one, fsyncs it, then atomically replaces
``LATEST``; only then are versions beyond ``num_to_keep`` removed (each renamed away first). A
crash at any moment leaves ``LATEST`` naming a complete checkpoint, and every ``v-*`` directory
complete.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
import warnings
from pathlib import Path
from typing import Any

import flax.serialization
import jax
import numpy as np

from rljax.utils import safe_io
from rljax.utils.errors import CheckpointError

FORMAT_VERSION = 2  # 2: optimizer states carry the non-finite guard (rljax.utils.nonfinite)
META_FILE = "rljax_checkpoint.json"
STATE_FILE = "state.msgpack"
RUNNERS_FILE = "runners.json"
LATEST = "LATEST"


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


def save_checkpoint(
    path: str | os.PathLike,
    metadata: dict[str, Any],
    state: Any,
    num_to_keep: int = 1,
    runners: Any = None,
) -> Path:
    """Writes ``metadata`` (JSON) and ``state`` (a pytree of arrays) to ``path`` atomically;
    ``runners``: JSON data of the env runners' state, saved beside them when given.

    The newest ``num_to_keep`` versions stay (``LATEST`` names the newest; an older one loads
    by its own directory, ``path/v-000003``); older ones and leftovers of interrupted saves go.
    An older version that cannot be removed stays (a ``RuntimeWarning`` names it and the error;
    the next save tries again): the new checkpoint is complete by then.
    """
    if isinstance(num_to_keep, bool) or not isinstance(num_to_keep, int) or num_to_keep < 1:
        raise CheckpointError(f"num_to_keep={num_to_keep!r}; use an int >= 1")
    root = Path(path).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    # After the newest version directory, whether or not LATEST got to name it (a crash between
    # the two leaves a complete v-N+1 that LATEST does not name; it must not block later saves).
    numbers = [
        int(c.name[2:]) for c in root.iterdir() if c.name[2:].isdigit() and c.name.startswith("v-")
    ]
    counter = max(numbers, default=0) + 1
    name = f"v-{counter:06d}"
    tmp = root / f".tmp-{name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
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
    latest_tmp = root / f".{LATEST}.{uuid.uuid4().hex[:8]}"
    _write_file(latest_tmp, name.encode())
    os.replace(latest_tmp, root / LATEST)
    _fsync_dir(root)
    versions = sorted(c.name for c in root.iterdir() if c.name.startswith("v-") and c.is_dir())
    keep = set(versions[-num_to_keep:]) | {name}
    for child in root.iterdir():  # older versions and leftovers of interrupted saves
        if child.name.startswith("v-") and child.name not in keep:
            # Renamed first, so that every v-* directory is complete even if a crash stops the
            # removal halfway; the next save clears the leftover.
            doomed = root / f".tmp-old-{child.name}-{uuid.uuid4().hex[:8]}"
            try:
                os.replace(child, doomed)
            except OSError as e:
                # The new version is saved and LATEST names it: a stale old one is no reason to
                # fail the save. It stays complete, and the next save tries again.
                warnings.warn(
                    f"checkpoint saved to {final}, but the old version {child} could not be "
                    f"removed: {e}",
                    RuntimeWarning,
                    stacklevel=2,
                )
                continue
            shutil.rmtree(doomed, ignore_errors=True)
        elif child.name.startswith(".tmp-") and child != tmp:
            shutil.rmtree(child, ignore_errors=True)
    return final


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
_VERSION_NAME = re.compile(r"v-[0-9]{6,12}")


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


def _check_tree(target: Any, loaded: Any, where: str, path: Path) -> None:
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
