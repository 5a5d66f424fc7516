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
import shutil
import uuid
import warnings
from pathlib import Path
from typing import Any

import flax.serialization
import numpy as np

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
    return np.asarray(tree)


def _read_latest(root: Path) -> str | None:
    latest = root / LATEST
    if not latest.is_file():
        return None
    name = latest.read_text().strip()
    if not name.startswith("v-") or "/" in name:
        raise CheckpointError(f"{latest} is corrupt: {name!r}")
    return name


def load_metadata(path: str | os.PathLike) -> tuple[dict[str, Any], Path]:
    """Reads a checkpoint's metadata; raises ``CheckpointError`` if ``path`` is not one."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise CheckpointError(f"{str(path)!r} is not a checkpoint: no such directory")
    if (root / META_FILE).is_file() and root.name.startswith("v-"):
        root, name = root.parent, root.name  # one version of a checkpoint, named directly
    else:
        name = _read_latest(root)
    if name is None:
        raise CheckpointError(
            f"{str(path)!r} is not an rljax checkpoint: it has no {LATEST} file (write one with algo.save_to_path)"
        )
    version_dir = root / name
    try:
        meta = json.loads((version_dir / META_FILE).read_text())
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{str(path)!r}: cannot read {META_FILE}: {e}") from e
    if meta.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{str(path)!r} has checkpoint format {meta.get('format_version')!r}; this rljax reads format "
            f"{FORMAT_VERSION} (written by rljax {meta.get('rljax_version', '?')})"
        )
    return meta, version_dir


def load_state(version_dir: Path, target: Any) -> Any:
    """Restores arrays into a pytree shaped like ``target``; shapes must match exactly."""
    raw = (version_dir / STATE_FILE).read_bytes()
    if raw[:1] == b"\x80" and raw[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):  # PROTO 2-5
        raise CheckpointError(
            f"{version_dir / STATE_FILE} holds a Python pickle, which rljax never loads (unpickling "
            "can run code); rljax checkpoints are msgpack only. Was it written by another program?"
        )
    try:
        state_dict = flax.serialization.msgpack_restore(raw)
    except Exception as e:  # msgpack raises several types on bad data
        raise CheckpointError(f"{version_dir / STATE_FILE} is not a valid state file: {e}") from e
    target_dict = flax.serialization.to_state_dict(target)
    _check_shapes(target_dict, state_dict, "")
    return flax.serialization.from_state_dict(target, state_dict)


def load_runners(version_dir: Path) -> Any:
    """The env runners' saved state, or None when the checkpoint has none."""
    path = version_dir / RUNNERS_FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path} is not valid JSON: {e}") from e


def _check_shapes(target: Any, loaded: Any, where: str) -> None:
    if isinstance(target, dict):
        if not isinstance(loaded, dict) or set(target) != set(loaded):
            raise CheckpointError(
                f"checkpoint state does not match this algorithm at {where or '/'}: expected keys "
                f"{sorted(target) if isinstance(target, dict) else target}, found "
                f"{sorted(loaded) if isinstance(loaded, dict) else type(loaded).__name__}"
            )
        for k in target:
            _check_shapes(target[k], loaded[k], f"{where}/{k}")
        return
    t_shape = np.shape(target)
    l_shape = np.shape(loaded)
    if t_shape != l_shape:
        raise CheckpointError(
            f"checkpoint array {where} has shape {l_shape}; this algorithm expects {t_shape}"
        )
