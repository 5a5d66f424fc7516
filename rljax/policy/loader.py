"""``load_exported(dir)``: a policy that ``rljax export`` wrote, loaded with JAX and numpy alone.

Everything below this docstring runs without rljax, Flax or EnvPool installed: copy it into a
serving program as it is. It reads only the files ``policy.json`` names inside the directory,
by bare file name, regular files only (no links, FIFOs or devices), sizes capped; anything else
is an ``ExportedPolicyError`` naming the file and what is allowed, never its content.

An exported program is code: XLA runs it as it is written, and a crafted one can loop for ever
or allocate any amount of memory. Load exported policies only from whoever you would take code
from.
"""

import json
import os
import stat
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax import export

FORMAT_VERSION = 1  # of policy.json, which rljax export writes
MAX_POLICY_JSON_BYTES = 1 << 20  # policy.json: spaces and settings, a few KB
MAX_PROGRAM_BYTES = 1 << 30  # a program holds its weights: 1 GiB is 250M float32 numbers
NUMBER_KINDS = "biuf"  # observation dtypes: bool, ints, floats


class ExportedPolicyError(ValueError):
    """An exported policy's directory holds something other than what ``rljax export`` writes."""


def _read(root: str, name: Any, max_bytes: int) -> bytes:
    """The bytes of the regular file ``name`` (a bare name) in the directory ``root``."""
    seps = {os.sep, os.altsep or os.sep, "\0"}
    if not isinstance(name, str) or name in ("", ".", "..") or any(c in name for c in seps):
        raise ExportedPolicyError(
            f"{root}: policy.json names the file {str(name)[:80]!r}; files must be bare names "
            "of files in the policy's directory"
        )
    path = os.path.join(root, name)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_NOFOLLOW", 0)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):  # checked before opening: no device opens
            raise ExportedPolicyError(f"{path}: not a regular file (a link, FIFO or device)")
        fd = os.open(path, flags)
    except OSError as e:
        raise ExportedPolicyError(f"{path}: cannot be opened ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ExportedPolicyError(f"{path}: not a regular file (a link, FIFO or device)")
        if st.st_size > max_bytes:
            raise ExportedPolicyError(f"{path}: {st.st_size:,} bytes; at most {max_bytes:,}")
        os.set_blocking(fd, True)
        data = b"".join(iter(lambda: os.read(fd, 1 << 24), b""))  # to the end; checked below
        if len(data) > max_bytes:
            raise ExportedPolicyError(f"{path}: grew past {max_bytes:,} bytes while read")
        return data
    finally:
        os.close(fd)


def _dtypes(value: Any, where: str, depth: int = 0) -> Any:
    """policy.json's observation dtype: a dtype name, or a dict / list of them (Dict / Tuple)."""
    if depth > 8:
        raise ExportedPolicyError(f"{where}: observation_dtype is nested deeper than 8 levels")
    if isinstance(value, dict):
        return {str(k): _dtypes(v, where, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_dtypes(v, where, depth + 1) for v in value)
    try:
        dtype = np.dtype(value) if isinstance(value, str) else None
    except Exception:  # numpy reads some strings as Python literals: SyntaxError, ValueError
        dtype = None
    if dtype is None or dtype.kind not in NUMBER_KINDS:
        raise ExportedPolicyError(
            f"{where}: observation_dtype {str(value)[:40]!r} is not a dtype of numbers or booleans"
        )
    return dtype


def _as_input(obs: Any, dtype: Any) -> Any:
    if isinstance(dtype, dict):
        return {k: _as_input(obs[k], d) for k, d in dtype.items()}
    if isinstance(dtype, tuple):
        return tuple(_as_input(o, d) for o, d in zip(obs, dtype, strict=True))
    return np.asarray(obs, dtype)


def load_exported(
    path: str | os.PathLike[str], explore: bool = False, max_program_bytes: int = MAX_PROGRAM_BYTES
) -> Callable[..., np.ndarray]:
    """The policy exported to the directory ``path``: ``policy(obs) -> actions`` (greedy), or
    with ``explore=True`` ``policy(obs, key) -> actions`` (sampled; ``key`` a uint32[2] JAX
    PRNG key). ``obs`` is a batch of the env's observations (a dict / tuple of batches for a
    Dict / Tuple space); the actions are the env's, as numpy arrays.

    ``max_program_bytes`` caps the program file read (the weights are inside it).
    Raises ``ExportedPolicyError`` for a directory that is not such a policy.
    """
    root = os.fspath(path)
    if not os.path.isdir(root):
        raise ExportedPolicyError(f"{root}: not a directory (an exported policy is one)")
    where = os.path.join(root, "policy.json")
    try:
        meta = json.loads(_read(root, "policy.json", MAX_POLICY_JSON_BYTES))
    except (ValueError, RecursionError) as e:
        if isinstance(e, ExportedPolicyError):
            raise
        raise ExportedPolicyError(f"{where}: not valid JSON ({type(e).__name__})") from None
    version = meta.get("format_version") if isinstance(meta, dict) else None
    if isinstance(meta, dict) and (version != FORMAT_VERSION or isinstance(version, bool)):
        raise ExportedPolicyError(
            f"{where}: format_version {str(version)[:20]}; this loader reads {FORMAT_VERSION}"
        )
    files = meta.get("files") if isinstance(meta, dict) else None
    kind = "sample" if explore else "greedy"
    if not isinstance(files, dict) or kind not in files:
        raise ExportedPolicyError(
            f"{where}: expected an object whose 'files' names a {kind!r} file"
        )
    dtype = _dtypes(meta.get("observation_dtype"), where)
    blob = _read(root, files[kind], max_program_bytes)
    try:
        program = export.deserialize(blob)  # type: ignore[arg-type]  # bytes work
    except Exception as e:  # flatbuffers and JAX raise several types on bad data
        raise ExportedPolicyError(
            f"{os.path.join(root, files[kind])}: not a program jax.export wrote "
            f"({type(e).__name__})"
        ) from None
    if explore:
        return lambda obs, key: np.asarray(program.call(_batch(program, obs, dtype), key))
    return lambda obs: np.asarray(program.call(_batch(program, obs, dtype)))


def _batch(program: Any, obs: Any, dtype: Any) -> Any:
    """``obs`` as the program's input, checked to be a batch: each array one dimension more
    than one observation's (a ValueError naming the shapes, rather than XLA's rank error)."""
    inputs = _as_input(obs, dtype)
    for leaf, aval in zip(jax.tree.leaves(inputs), program.in_avals, strict=False):
        if np.ndim(leaf) != len(aval.shape):
            wanted = "(" + ", ".join(str(d) for d in aval.shape) + ")"
            raise ValueError(
                f"the policy takes a batch of observations, shape {wanted}; got shape "
                f"{np.shape(leaf)} (for one observation, pass obs[None])"
            )
    return inputs
