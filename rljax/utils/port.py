"""Rewrites a script written for RLlib's new API stack to run on rljax: the import rewrite the
README promises (``rljax port SCRIPT.py``).

What changes, and nothing else:

- ``ray.rllib`` -> ``rljax`` in imports and dotted names (``from ray.rllib.algorithms.ppo
  import PPOConfig`` -> ``from rljax.algorithms.ppo import PPOConfig``);
- ``ray.tune`` -> ``rljax.tune`` (``from ray import tune`` -> ``from rljax import tune``;
  ``ray.tune.registry.register_env`` is ``rljax.tune.registry.register_env``), and Ray AIR's
  and Ray Train's names for Tune's pieces: ``ray.air`` and ``ray.train`` -> ``rljax.tune``
  (``RunConfig``, ``CheckpointConfig``, ``FailureConfig``, ...), ``ray.air.constants`` ->
  ``rljax.tune.result``, ``ray.air.integrations.wandb`` -> ``rljax.tune.logger``;
- ``ray.init(...)`` and ``ray.shutdown()`` statements become ``pass``, and ``import ray``
  becomes ``import rljax`` when nothing else of ``ray`` is used.

- PyTorch initializers given to a model config's ``*_initializer`` setting (a keyword argument
  or a dict entry: ``fcnet_kernel_initializer=nn.init.xavier_uniform_``) become their names
  (``"xavier_uniform_"``), which rljax's model configs take, and the ``torch`` import that only
  served them is dropped: such a script runs without PyTorch installed. Other uses of
  ``nn.init`` (calls, ``functools.partial``) and of ``torch`` keep their code and import.

What is left of ``ray`` afterwards (``ray.air``, ``ray.data``, ``ray.remote``, ...) is listed in
the notes: rljax has no counterpart, and the script will fail there.

The rewrite rules are one table, ``_MODULES`` (Ray module -> rljax's, longest prefix first):
a new family of Ray names is one more row there.

The script is read as untrusted data (``read_script``): a regular file of at most
``MAX_SCRIPT_BYTES``, UTF-8 text, parsed within Python's own nesting limits; and the port is
written without replacing anything silently (``write_script``): an existing file only with
``force``, keeping its permission bits.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rljax.utils import safe_io
from rljax.utils.errors import ConfigError

# The largest script ``rljax port`` reads: RLlib's longest example scripts are ~30 KB.
MAX_SCRIPT_BYTES = 1 << 20

# ``ray.<name>`` in code, not inside another dotted name or a URL (docs.ray.io).
_RAY_NAME = re.compile(r"(?<![\w./])ray\.[A-Za-z_][\w.]*")


@dataclass
class Ported:
    """A ported script: its new text and what the port could not rewrite."""

    source: str
    notes: list[str] = field(default_factory=list)


# Ray module -> rljax's, longest prefix first (AIR's names for Tune's pieces): the rewrite rules
# for imports and for dotted names in code alike. A new rule is one more row.
_MODULES = (
    ("ray.air.integrations.wandb", "rljax.tune.logger"),
    ("ray.air.constants", "rljax.tune.result"),
    ("ray.air", "rljax.tune"),
    # Ray Train's names for the same pieces (RunConfig, CheckpointConfig, FailureConfig,
    # Checkpoint, report, get_checkpoint), as RLlib's scripts since Ray 2.7 import them.
    ("ray.train", "rljax.tune"),
    # RLlib 1.x's old API (PPOTrainer with a dict config): rljax.agents, and the modules its
    # scripts import beside it (rljax.models, rljax.evaluation.rollout_worker, ...).
    ("ray.rllib.agents", "rljax.agents"),
    ("ray.rllib", "rljax"),
    ("ray.tune", "rljax.tune"),
)
# A dotted name in code that starts with one of the table's modules (not inside another dotted
# name): the longest alternative first, as the table lists them.
_DOTTED_NAME = re.compile(
    r"(?<![\w.])(" + "|".join(re.escape(ray) for ray, _ in _MODULES) + r")(?![\w])"
)


def _module(name: str) -> str | None:
    """rljax's module for Ray's ``name``, or None where rljax has none."""
    for ray, ours in _MODULES:
        if name == ray or name.startswith(ray + "."):
            return ours + name[len(ray) :]
    return None


def _missing(module: str) -> bool:
    """Whether rljax has no module ``module`` (so the ported import would fail)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def _alias(name: str, asname: str | None) -> str:
    return f"{name} as {asname}" if asname else name


def _char_offsets(source: str) -> Callable[[int, int], int]:
    """(1-based line, UTF-8 byte column) as ``ast`` gives them -> an index into ``source``.

    Linear in the script's size over all calls: an ASCII line's byte column is its character
    column, and another line's byte offsets are counted once, when it is first asked about.
    """
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    byte_ends: dict[int, list[int]] = {}

    def offset(lineno: int, col: int) -> int:
        index = lineno - 1
        line = lines[index] if index < len(lines) else ""
        if line.isascii():
            return starts[index] + min(col, len(line))
        if index not in byte_ends:
            ends, total = [], 0
            for ch in line:
                total += len(ch.encode("utf-8", "surrogatepass"))
                ends.append(total)
            byte_ends[index] = ends
        # Characters that end at or before byte ``col``.
        return starts[index] + bisect.bisect_right(byte_ends[index], col)

    return offset


def _parse(source: str, what: str) -> ast.Module:
    """``ast.parse``, with the parser's own limits as ``ConfigError`` (``SyntaxError`` stays)."""
    try:
        return ast.parse(source)
    except (RecursionError, MemoryError):
        raise ConfigError(
            f"{what} nests expressions deeper than Python's parser allows (a long chain like "
            "1+1+...+1, or deeply nested brackets); split it into several statements"
        ) from None
    except ValueError as e:  # a NUL character (Python 3.11)
        raise ConfigError(f"{what} is not Python source ({e})") from None


def _rewritten(node: ast.stmt, notes: list[str]) -> str | None:
    """The statement that replaces ``node``, or None to leave it as it is."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "ray"
            and func.attr in ("init", "shutdown")
        ):
            return "pass"  # no Ray to start or stop (no comment: code may follow on the line)
        return None
    if isinstance(node, ast.Import):
        if not any(a.name.startswith("ray.") for a in node.names):
            return None
        names = []
        for a in node.names:
            mapped = _module(a.name) if a.name.startswith("ray.") else None
            if a.name.startswith("ray.") and mapped is None:
                notes.append(f"line {node.lineno}: `import {a.name}` has no rljax counterpart")
            names.append(_alias(mapped or a.name, a.asname))
        return "import " + ", ".join(names)
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        if node.module == "ray":
            ours: list[str] = []
            out: list[str] = []
            kept: list[str] = []
            for a in node.names:
                if a.name in ("tune", "air", "train"):  # Tune's pieces under three names
                    ours.append(_alias("tune", a.asname or (a.name if a.name != "tune" else None)))
                elif a.name == "rllib":
                    out.append(f"import rljax as {a.asname or 'rllib'}")
                else:
                    kept.append(_alias(a.name, a.asname))
            if kept:
                notes.append(
                    f"line {node.lineno}: `from ray import {', '.join(kept)}` has no rljax "
                    "counterpart"
                )
                out.append(f"from ray import {', '.join(kept)}")
            if ours:
                out.insert(0, f"from rljax import {', '.join(ours)}")
            return "; ".join(out)
        if node.module.startswith("ray."):
            module = _module(node.module)
            if module is None:
                notes.append(f"line {node.lineno}: `{node.module}` has no rljax counterpart")
                return None
            listed = ", ".join(_alias(a.name, a.asname) for a in node.names)
            if _missing(module):
                notes.append(
                    f"line {node.lineno}: `{node.module}` -> `{module}`, which rljax does not have"
                )
            elif node.module.startswith("ray.rllib.agents"):
                notes.append(
                    f"line {node.lineno}: `{node.module}` is RLlib 1.x's old API: `{module}` "
                    "runs it on the new algorithms (old dict keys translated; see "
                    "rljax.agents.config_table.OLD_KEYS)"
                )
            return f"from {module} import {listed}"
    return None


def _statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Every statement of ``tree``, nested ones included, without visiting expressions."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            yield node
        stack.extend(
            child
            for child in ast.iter_child_nodes(node)
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case))
        )


# ``import torch`` / ``from torch import nn`` / ... : the torch module each form binds.
def _torch_bindings(node: ast.stmt) -> dict[str, str]:
    """The names ``node`` binds to torch modules (``{"nn": "torch.nn"}``), if it imports only
    torch modules; else {}."""
    if isinstance(node, ast.Import) and all(
        a.name == "torch" or a.name.startswith("torch.") for a in node.names
    ):
        return {
            a.asname or a.name.split(".")[0]: a.name if a.asname else "torch" for a in node.names
        }
    if (
        isinstance(node, ast.ImportFrom)
        and node.level == 0
        and node.module in ("torch", "torch.nn")
    ):
        return {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
    return {}


def _dotted(node: ast.expr) -> tuple[ast.Name, list[str]] | None:
    """``a.b.c`` as (the Name ``a``, ["b", "c"]); None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return (node, parts) if isinstance(node, ast.Name) else None


def _initializer_values(tree: ast.Module) -> Iterator[ast.Attribute]:
    """The attributes given as a model config's initializer: the value of a keyword argument
    or of a string dict key named ``*_initializer`` (``fcnet_kernel_initializer=nn.init.X``,
    ``{"fcnet_kernel_initializer": nn.init.X}``); not calls or other uses of ``nn.init``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and (node.arg or "").endswith("_initializer"):
            if isinstance(node.value, ast.Attribute):
                yield node.value
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                    and key.value.endswith("_initializer")
                    and isinstance(value, ast.Attribute)
                ):
                    yield value


def _torch_initializers(tree: ast.Module, notes: list[str]) -> list[tuple[ast.AST, str]]:
    """The edits that turn ``nn.init.<name>`` (any spelling of ``torch.nn.init.<name>``) given
    as a model config's initializer into the name as a string, and drop each torch import
    left unused by that."""
    imports = [(n, names) for n in _statements(tree) if (names := _torch_bindings(n))]
    bound = {name: module for _, names in imports for name, module in names.items()}
    if not bound:
        return []
    edits: list[tuple[ast.AST, str]] = []
    replaced: set[int] = set()  # the Name nodes inside replaced attributes
    for node in _initializer_values(tree):
        dotted = _dotted(node)
        if dotted is None or dotted[0].id not in bound:
            continue
        name, parts = dotted
        full = ".".join([bound[name.id], *parts]).split(".")
        if len(full) == 4 and full[:3] == ["torch", "nn", "init"]:
            edits.append((node, repr(full[3])))
            replaced.update(id(n) for n in ast.walk(node))
            notes.append(
                f"line {node.lineno}: `{ast.unparse(node)}` -> {full[3]!r} (rljax's model "
                "configs take initializers by name)"
            )
    if not edits:
        return []
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in replaced}
    for statement, names in imports:
        if not set(names) & used:
            edits.append((statement, "pass"))
    return edits


_TORCH_GUARD = """try:
    import torch
except ImportError:  # rljax port: without PyTorch, a stand-in that names each use
    from rljax.utils.framework import MissingTorch as _MissingTorch

    torch = _MissingTorch()"""


def _torch_import_guard(
    tree: ast.Module, edited: set[int], notes: list[str]
) -> list[tuple[ast.AST, str]]:
    """A top-level ``import torch`` (not otherwise edited) imports PyTorch where it is
    installed and binds ``rljax.utils.framework.MissingTorch`` where it is not, so a script
    that uses torch only in a part it does not run (RLlib's self-play examples' human play)
    runs without PyTorch, and a use names itself (``TorchClassError``)."""
    edits: list[tuple[ast.AST, str]] = []
    # A statement sharing its line (``import torch; import numpy as np``) is left as it is:
    # the guard's lines would take the other statement into its ``except``.
    lines = [n.lineno for n in tree.body] + [n.end_lineno for n in tree.body]
    for node in tree.body:
        if (
            isinstance(node, ast.Import)
            and [(a.name, a.asname) for a in node.names] == [("torch", None)]
            and node.col_offset == 0
            and id(node) not in edited
            and lines.count(node.lineno) == 2  # its own start and end only
        ):
            edits.append((node, _TORCH_GUARD))
            notes.append(
                f"line {node.lineno}: `import torch` -> PyTorch where installed, else a "
                "stand-in that raises TorchClassError where the script uses it"
            )
    return edits


def port_source(source: str) -> Ported:
    """The script ``source`` with RLlib's imports rewritten to rljax's (see the module doc).

    Raises:
      SyntaxError: ``source`` is not valid Python.
      ConfigError: it nests deeper than Python's parser allows, or holds a NUL character.
    """
    notes: list[str] = []
    tree = _parse(source, "the script")
    offset = _char_offsets(source)
    edits = []
    replacements: list[tuple[ast.AST, str]] = []
    for statement in _statements(tree):
        new = _rewritten(statement, notes)
        if new is not None:
            replacements.append((statement, new))
    replacements += _torch_initializers(tree, notes)
    replacements += _torch_import_guard(tree, {id(n) for n, _ in replacements}, notes)
    for node, new in replacements:
        assert isinstance(node, ast.stmt | ast.expr)
        assert node.end_lineno is not None and node.end_col_offset is not None
        span = (
            offset(node.lineno, node.col_offset),
            offset(node.end_lineno, node.end_col_offset),
        )
        edits.append((span, new))
    # The rewritten statements and expressions never overlap (none holds another): joined in
    # order.
    pieces, done = [], 0
    for (start, end), new in sorted(edits):
        pieces += [source[done:start], new]
        done = end
    text = "".join([*pieces, source[done:]])
    # Ray's dotted names in code (``ray.rllib.algorithms.ppo.PPOConfig``).
    text = _DOTTED_NAME.sub(lambda m: _module(m.group(1)) or m.group(1), text)
    # `import ray` alone: becomes `import rljax` (which `ray.rllib.X` names now need) when no
    # `ray.` is left.
    if not _RAY_NAME.search(re.sub(r"^\s*import ray\s*$", "", text, flags=re.M)):
        text = re.sub(r"^(\s*)import ray\s*$", r"\1import rljax  # (rljax port)", text, flags=re.M)
    _parse(text, "the ported script")  # the port must leave valid Python
    noted = {int(n.split()[1][:-1]) for n in notes}
    newlines = [m.start() for m in re.finditer("\n", text)]
    for m in _RAY_NAME.finditer(text):
        lineno = bisect.bisect_left(newlines, m.start()) + 1
        if lineno not in noted:
            noted.add(lineno)
            notes.append(f"line {lineno}: `{m.group(0)}` has no rljax counterpart")
    return Ported(text, sorted(set(notes), key=lambda n: (int(n.split()[1][:-1]), n)))


def read_script(path: str | os.PathLike[str]) -> str:
    """The text of the script at ``path``, read as untrusted data.

    Only a regular file of at most ``MAX_SCRIPT_BYTES`` is read (a FIFO is refused without
    waiting for a writer, ``/dev`` and ``/proc`` are never opened: ``safe_io.open_regular``),
    and it must be UTF-8 text (a leading byte-order mark is dropped), as Python reads a
    script by default.

    Raises:
      ConfigError: naming the path and what is wrong, never quoting the file.
    """
    data = safe_io.open_regular(Path(path), None, MAX_SCRIPT_BYTES, ConfigError)
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{path}: is not UTF-8 text (an undecodable byte at offset {e.start:,}); rljax port "
            "reads Python scripts in UTF-8"
        ) from None


def default_file_mode() -> int:
    """The permission bits a new file gets from ``open(path, "w")``: 0o666 less the umask."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_script(path: str | os.PathLike[str], text: str, *, force: bool = False) -> None:
    """Writes ``text`` to ``path`` atomically (a reader sees the old file or the new one).

    A new file gets the mode a plain write would give it (``default_file_mode``); an existing
    file is replaced only with ``force``, and keeps its permission bits.

    Raises:
      ConfigError: ``path`` is a directory or not a regular file, exists without ``force``,
        or its directory cannot be written.
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise ConfigError(f"-o {path}: cannot be examined ({e.strerror or e})") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError(f"-o {path} is a directory; name the file to write")
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(
                f"-o {path} is not a regular file (a link, FIFO or device); name a regular "
                "file, or leave out -o to write to stdout"
            )
        if not force:
            raise ConfigError(
                f"-o {path} exists; pass --force to replace it, or choose another path"
            )
    mode = stat.S_IMODE(st.st_mode) if st is not None else default_file_mode()
    try:
        safe_io.write_atomic(path, text, mode=mode)
    except OSError as e:
        raise ConfigError(f"-o {path}: cannot write there ({e.strerror or e})") from None


__all__ = ["MAX_SCRIPT_BYTES", "Ported", "port_source", "read_script", "write_script"]
