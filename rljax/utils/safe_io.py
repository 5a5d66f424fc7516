"""Bounded reading of files that may come from someone else: checkpoints and config files.

Every reader here treats the file as untrusted data:

- only regular files are opened, and none whose real path leaves the directory it was looked up
  in (a symlink to ``/dev/zero`` or to another directory is refused; a FIFO is refused without
  waiting for a writer);
- the size is capped before anything is read, by a cap the file itself cannot raise;
- JSON is scanned for nesting depth and element count before it is parsed (Python's parser
  recurses, so a deep file would raise ``RecursionError``);
- msgpack is decoded with length limits and a fixed set of array dtypes, nothing else;
- YAML is loaded with PyYAML's safe loader, without aliases (a small file of nested aliases
  expands to billions of elements) and with the same depth and element limits.

Every failure is ``error_type(f"{path}: ...")``: a message naming the file and what was wrong,
and never the file's content beyond the field names the caller adds.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from rljax.utils.errors import CheckpointError

MAX_DEPTH = 64
MAX_ELEMENTS = 1_000_000
_PSEUDO_FILESYSTEMS = ("/proc", "/sys", "/dev")
# Bytes scanned at a time for nesting: the scan's temporary arrays are a few times this.
_SCAN_CHUNK = 1 << 20
# Array dtypes a state file may hold: numbers and booleans of fixed size, nothing that needs
# Python objects to represent.
ARRAY_DTYPES = frozenset(
    np.dtype(t).str
    for t in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
    )
) | {"bfloat16"}


def _fail(error_type: type[Exception], path: Path | str, why: str) -> Exception:
    return error_type(f"{path}: {why}")


def open_regular(
    path: Path,
    root: Path | None,
    max_bytes: int,
    error_type: type[Exception] = CheckpointError,
    outside: str = (
        "is a link that leads outside its directory; checkpoint files must lie inside the "
        "checkpoint directory"
    ),
) -> bytes:
    """The bytes of ``path``, a regular file of at most ``max_bytes`` inside ``root``.

    Args:
      path: The file to read.
      root: Its real path must lie inside this directory's real path (None: no containment
        check, for a file the caller named itself).
      max_bytes: Larger files are refused before reading (and a file that grows while read).
      error_type: The exception raised, with a message naming ``path``.
      outside: What the message says of a ``path`` that resolves outside ``root``.
    """
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError) as e:  # ValueError: a NUL byte in the path
        why = e.strerror if isinstance(e, OSError) else None
        raise _fail(error_type, path, f"cannot resolve the path ({why or e})") from None
    if root is not None:
        real_root = Path(os.path.realpath(root))
        if real != real_root and real_root not in real.parents:
            raise _fail(error_type, path, outside)
    if any(real == Path(p) or Path(p) in real.parents for p in _PSEUDO_FILESYSTEMS):
        # Files there report a regular type and size 0, and reading some blocks for ever.
        raise _fail(error_type, path, "leads into /proc, /sys or /dev, which are never read")
    try:
        # Checked before opening, so that no device is ever opened (opening one can act).
        if not stat.S_ISREG(os.lstat(real).st_mode):
            raise _fail(error_type, path, "is not a regular file (a FIFO, device or directory)")
        # O_NONBLOCK: a FIFO swapped in after the check must not wait for a writer (fstat
        # below refuses it); O_NOCTTY: nor may a terminal become ours.
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(real, flags)
    except FileNotFoundError:
        raise _fail(error_type, path, "no such file") from None
    except OSError as e:
        raise _fail(error_type, path, f"cannot open ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _fail(error_type, path, "is not a regular file (a FIFO, device or directory)")
        if st.st_size > max_bytes:
            raise _fail(
                error_type,
                path,
                f"is {st.st_size:,} bytes; at most {max_bytes:,} are read for this file",
            )
        os.set_blocking(fd, True)
        chunks = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise _fail(error_type, path, f"grew past {max_bytes:,} bytes while being read")
        return data
    except OSError as e:
        raise _fail(error_type, path, f"cannot be read ({e.strerror or e})") from None
    finally:
        os.close(fd)


def check_nesting(
    text: bytes,
    path: Path | str,
    error_type: type[Exception] = CheckpointError,
    max_depth: int = MAX_DEPTH,
    max_elements: int = MAX_ELEMENTS,
) -> None:
    """Refuses JSON (or flow-style YAML) nested deeper than ``max_depth`` or with more than
    ``max_elements`` containers and separators, without recursing: a vectorised scan over
    chunks of bytes (carrying the nesting depth, whether a string is open and a run of
    backslashes from one chunk to the next), so its memory stays small for any file size."""
    depth, in_string, backslashes, elements = 0, False, 0, 0
    for start in range(0, len(text), _SCAN_CHUNK):
        arr = np.frombuffer(text, np.uint8, count=min(_SCAN_CHUNK, len(text) - start), offset=start)
        backslash = arr == ord("\\")
        positions = np.arange(arr.size)
        # Backslashes just before each byte: a run from the previous chunk counts at its start.
        last_other = np.maximum.accumulate(np.where(backslash, -1, positions))
        run_through = np.where(last_other < 0, positions + 1 + backslashes, positions - last_other)
        run_before = np.concatenate(([backslashes], run_through[:-1]))
        real_quote = (arr == ord('"')) & (run_before % 2 == 0)
        quotes_before = np.cumsum(real_quote) - real_quote
        open_string = (quotes_before % 2 == 1) ^ in_string
        structural = ~open_string & ~real_quote
        step = np.zeros(arr.size, np.int32)
        step[structural & ((arr == ord("[")) | (arr == ord("{")))] = 1
        step[structural & ((arr == ord("]")) | (arr == ord("}")))] = -1
        levels = depth + np.cumsum(step, dtype=np.int64)
        if levels.size and int(levels.max()) > max_depth:
            raise _fail(error_type, path, f"is nested deeper than {max_depth} levels")
        elements += int((step == 1).sum()) + int((structural & (arr == ord(","))).sum())
        if elements > max_elements:
            raise _fail(error_type, path, f"has more than {max_elements:,} elements")
        depth = int(levels[-1]) if levels.size else depth
        in_string = bool((int(real_quote.sum()) % 2 == 1) ^ in_string)
        backslashes = int(run_through[-1]) if backslash[-1] else 0


def read_json(
    path: Path,
    root: Path | None,
    max_bytes: int,
    error_type: type[Exception] = CheckpointError,
) -> Any:
    """A bounded, regular JSON file (see ``open_regular`` and ``check_nesting``)."""
    data = open_regular(path, root, max_bytes, error_type)
    check_nesting(data, path, error_type)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as e:
        raise _fail(error_type, path, f"is not valid JSON ({type(e).__name__}: {e})") from None


class _AliasRefused(Exception):
    """A YAML alias met while loading (its message is rljax's own, holding no file text)."""


class _NoAliasLoader:
    """Built lazily: PyYAML's SafeLoader that refuses anchors and aliases."""

    cls: Any = None

    @classmethod
    def get(cls) -> Any:
        if cls.cls is None:
            import yaml

            class Loader(yaml.SafeLoader):
                def compose_node(self, parent: Any, index: Any) -> Any:
                    if self.check_event(yaml.AliasEvent):
                        event = self.peek_event()
                        raise _AliasRefused(
                            f"YAML aliases (*name) are not accepted in rljax config files (line "
                            f"{event.start_mark.line + 1}); write the value out"
                        )
                    return super().compose_node(parent, index)

            cls.cls = Loader
        return cls.cls


def no_alias_loader() -> Any:
    """PyYAML's SafeLoader without anchors and aliases (for YAML from a file or a flag)."""
    return _NoAliasLoader.get()


def read_yaml(path: Path, max_bytes: int, error_type: type[Exception]) -> Any:
    """A bounded YAML file of plain data: safe loader, no aliases, depth and size limits."""
    import yaml

    data = open_regular(path, None, max_bytes, error_type)
    check_nesting(data, path, error_type)
    try:
        loaded = yaml.load(data, Loader=_NoAliasLoader.get())  # noqa: S506 - a SafeLoader
    except _AliasRefused as e:
        raise _fail(error_type, path, str(e)) from None
    except yaml.MarkedYAMLError as e:
        # The problem and where, never str(e): it quotes the file's text around the problem.
        mark = e.problem_mark or e.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise _fail(
            error_type, path, f"is not valid YAML: {e.problem or e.context}{where}"
        ) from None
    except (yaml.YAMLError, RecursionError, ValueError) as e:
        raise _fail(error_type, path, f"is not valid YAML ({type(e).__name__})") from None
    _check_tree(loaded, path, error_type)
    return loaded


def _check_tree(tree: Any, path: Path | str, error_type: type[Exception]) -> None:
    """Depth and size limits on loaded data (block-style YAML nests without brackets)."""
    stack = [(tree, 0)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if depth > MAX_DEPTH:
            raise _fail(error_type, path, f"is nested deeper than {MAX_DEPTH} levels")
        if count > MAX_ELEMENTS:
            raise _fail(error_type, path, f"has more than {MAX_ELEMENTS:,} elements")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
            stack.extend((k, depth + 1) for k in node)
        elif isinstance(node, (list, tuple)):
            stack.extend((v, depth + 1) for v in node)


_EXT_NDARRAY, _EXT_COMPLEX, _EXT_SCALAR = 1, 2, 3
_CHUNKED = "__msgpack_chunked_array__"


def _array_from_ext(data: bytes, path: Path, error_type: type[Exception]) -> np.ndarray:
    try:
        shape, dtype_name, buffer = msgpack.unpackb(
            data, raw=True, max_array_len=64, max_map_len=0, max_bin_len=len(data)
        )
        name = dtype_name.decode() if isinstance(dtype_name, bytes) else str(dtype_name)
    except Exception as e:  # msgpack raises several types on bad data
        raise _fail(error_type, path, f"holds a malformed array ({e})") from None
    return _checked_array(name, shape, buffer, path, error_type)


def _checked_array(
    name: Any, shape: Any, buffer: Any, where: Path | str, error_type: type[Exception]
) -> np.ndarray:
    """The array of dtype ``name``, ``shape`` and bytes ``buffer``, each checked: an allowed
    dtype (numbers and booleans), a shape of non-negative ints, as many bytes as they need. A
    view of ``buffer`` (read-only)."""
    if name == "bfloat16":
        import ml_dtypes

        dtype = np.dtype(ml_dtypes.bfloat16)
    else:
        try:
            dtype = np.dtype(name) if isinstance(name, str) else None
        except TypeError:
            dtype = None
        if dtype is None or dtype.str not in ARRAY_DTYPES:
            raise _fail(
                error_type,
                where,
                f"holds an array of dtype {str(name)[:40]!r}; allowed: numbers and booleans",
            )
    if not isinstance(shape, (list, tuple)) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise _fail(error_type, where, "holds an array with a malformed shape")
    if not isinstance(buffer, bytes):
        raise _fail(error_type, where, "holds an array without a byte buffer")
    count = math.prod(shape)  # Python ints: a crafted shape cannot wrap around
    if count * dtype.itemsize != len(buffer):
        raise _fail(
            error_type,
            where,
            f"holds an array of shape {tuple(shape)} and dtype {dtype} whose data is "
            f"{len(buffer)} bytes, not {count * dtype.itemsize}",
        )
    return np.frombuffer(buffer, dtype).reshape(shape)


def read_msgpack_tree(
    path: Path,
    root: Path | None,
    max_bytes: int,
    error_type: type[Exception] = CheckpointError,
) -> Any:
    """A bounded msgpack file of nested string-keyed maps with array leaves (as Flax writes
    them), decoded with length limits and allow-listed dtypes; pickles are refused by name."""
    raw = open_regular(path, root, max_bytes, error_type)
    if raw[:1] == b"\x80" and raw[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):  # PROTO 2-5
        raise _fail(
            error_type,
            path,
            "holds a Python pickle, which rljax never loads (unpickling can run code); rljax "
            "checkpoints are msgpack only. Was it written by another program?",
        )

    def ext_hook(code: int, data: bytes) -> Any:
        if code == _EXT_NDARRAY:
            return _array_from_ext(data, path, error_type)
        if code == _EXT_SCALAR:
            return _array_from_ext(data, path, error_type)[()]
        raise _fail(
            error_type, path, f"holds msgpack extension type {code}, which rljax never writes"
        )

    try:
        tree = msgpack.unpackb(
            raw,
            ext_hook=ext_hook,
            raw=False,
            strict_map_key=True,
            max_str_len=1 << 16,
            max_bin_len=len(raw),
            max_array_len=MAX_ELEMENTS,
            max_map_len=MAX_ELEMENTS,
            max_ext_len=len(raw),
        )
    except error_type:
        raise
    except Exception as e:  # msgpack raises several types (StackError for deep nesting)
        raise _fail(
            error_type, path, f"is not a valid state file ({type(e).__name__}: {e})"
        ) from None
    return _unchunk(tree, path, error_type, 0)


class _Refused(Exception):
    """Carries a decoding hook's error out of msgpack, whose own errors are ``ValueError``s."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


def _from_msgpack_numpy(obj: dict[Any, Any], where: str, error_type: type[Exception]) -> Any:
    """One map of msgpack-numpy's encoding (``{b"nd": ..., b"type": ..., b"data": ...}``) as the
    array or number it encodes; other maps as they are. Object arrays (which msgpack-numpy
    pickles) and structured dtypes are refused."""
    if b"complex" in obj and obj.get(b"complex") is True:
        text = obj.get(b"data")
        try:
            return complex(text.decode() if isinstance(text, bytes) else str(text))
        except ValueError:
            raise _fail(error_type, where, "holds a malformed complex number") from None
    if b"nd" not in obj:
        return obj
    kind = obj.get(b"kind", b"")
    if kind == b"O":
        raise _fail(
            error_type,
            where,
            "holds an array of Python objects, which msgpack-numpy pickles and rljax never "
            "loads (unpickling can run code)",
        )
    name = obj.get(b"type")
    name = name.decode() if isinstance(name, bytes) else name
    if kind == b"V":  # a structured dtype (a list of fields)
        name = "structured"
    if obj[b"nd"] is not True:  # a numpy scalar
        return _checked_array(name, (), obj.get(b"data"), where, error_type)[()]
    array = _checked_array(name, obj.get(b"shape"), obj.get(b"data"), where, error_type)
    return array.copy()  # writable, as msgpack-numpy's arrays are not: they share the message


def unpack_msgpack_numpy(data: bytes, where: str, error_type: type[Exception] = ValueError) -> Any:
    """One msgpack message as msgpack-numpy writes it (RLlib's recorded episodes: each a
    ``SingleAgentEpisode.get_state()``), decoded without pickle: maps, lists, strings, numbers
    and arrays of numbers, with length limits. ``where`` names the data in errors."""
    if not isinstance(data, bytes):
        raise _fail(error_type, where, f"is {type(data).__name__}, not msgpack bytes")

    def hook(obj: dict[Any, Any]) -> Any:
        try:
            return _from_msgpack_numpy(obj, where, error_type)
        except error_type as e:
            raise _Refused(e) from None

    try:
        tree = msgpack.unpackb(
            data,
            object_hook=hook,
            raw=False,
            # Keys of numbers too (an env's infos may have them); never unhashable ones.
            strict_map_key=False,
            max_str_len=len(data),
            max_bin_len=len(data),
            max_array_len=MAX_ELEMENTS,
            max_map_len=MAX_ELEMENTS,
            max_ext_len=0,
        )
    except _Refused as r:
        raise r.error from None
    except Exception as e:  # msgpack raises several types (StackError for deep nesting)
        raise _fail(
            error_type, where, f"is not valid msgpack ({type(e).__name__}: {str(e)[:80]})"
        ) from None
    _check_tree(tree, where, error_type)  # depth (code that walks it recurses) and size
    return tree


def _unchunk(tree: Any, path: Path, error_type: type[Exception], depth: int) -> Any:
    """Arrays that Flax split into chunks (over 1 GiB) joined again, with their sizes checked."""
    if depth > MAX_DEPTH:
        raise _fail(error_type, path, f"is nested deeper than {MAX_DEPTH} levels")
    if not isinstance(tree, dict):
        return tree
    if _CHUNKED in tree:
        shape, chunks = tree.get("shape"), tree.get("chunks")
        if not isinstance(shape, dict) or not isinstance(chunks, dict):
            raise _fail(error_type, path, "holds a malformed chunked array")
        dims = [shape[k] for k in sorted(shape, key=_int_key)]
        parts = [chunks[k] for k in sorted(chunks, key=_int_key)]
        if (
            not parts
            or not all(type(d) is int and d >= 0 for d in dims)
            or not all(isinstance(p, np.ndarray) and p.ndim == 1 for p in parts)
        ):
            raise _fail(error_type, path, "holds a malformed chunked array")
        if len({p.dtype for p in parts}) > 1 or sum(p.size for p in parts) != math.prod(dims):
            raise _fail(error_type, path, "holds a chunked array whose chunks do not fit its shape")
        return np.concatenate(parts).reshape(dims)
    return {k: _unchunk(v, path, error_type, depth + 1) for k, v in tree.items()}


def _int_key(k: str) -> int:
    return int(k) if k.isdigit() else -1


def write_atomic(path: Path, text: str, mode: int | None = None) -> None:
    """Writes ``text`` to ``path`` so that a reader sees the old file or the new one, never a
    part: a temporary file beside it, flushed to disk, then renamed over it.

    ``mode``: the file's permission bits (None: the temporary file's, 0o600)."""
    write_atomic_bytes(path, text.encode("utf-8"), mode)


def write_atomic_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """``write_atomic`` for bytes."""
    import tempfile

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
