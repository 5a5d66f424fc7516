"""Rewrites a script written for RLlib's new API stack to run on rljax: the import rewrite the
README promises (``rljax port SCRIPT.py``).

What changes, and nothing else:

- ``ray.rllib`` -> ``rljax`` in imports and dotted names (``from ray.rllib.algorithms.ppo
  import PPOConfig`` -> ``from rljax.algorithms.ppo import PPOConfig``);
- ``ray.tune`` -> ``rljax.tune`` (``from ray import tune`` -> ``from rljax import tune``;
  ``ray.tune.registry.register_env`` is ``rljax.tune.registry.register_env``), and Ray AIR's
  names for Tune's pieces: ``ray.air`` -> ``rljax.tune``, ``ray.air.constants`` ->
  ``rljax.tune.result``, ``ray.air.integrations.wandb`` -> ``rljax.tune.logger``;
- ``ray.init(...)`` and ``ray.shutdown()`` statements become ``pass``, and ``import ray``
  becomes ``import rljax`` when nothing else of ``ray`` is used.

What is left of ``ray`` afterwards (``ray.air``, ``ray.data``, ``ray.remote``, ...) is listed in
the notes: rljax has no counterpart, and the script will fail there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field

_DOTTED = re.compile(r"\bray\.(rllib|tune)\b")
# Ray AIR's names for Tune's pieces, longest first: module -> rljax's.
_AIR = {
    "ray.air.integrations.wandb": "rljax.tune.logger",
    "ray.air.constants": "rljax.tune.result",
    "ray.air": "rljax.tune",
}
# ``ray.<name>`` in code, not inside another dotted name or a URL (docs.ray.io).
_RAY_NAME = re.compile(r"(?<![\w./])ray\.[A-Za-z_][\w.]*")


@dataclass
class Ported:
    """A ported script: its new text and what the port could not rewrite."""

    source: str
    notes: list[str] = field(default_factory=list)


# Ray module -> rljax's, longest prefix first (AIR's names for Tune's pieces).
_MODULES = (
    ("ray.air.integrations.wandb", "rljax.tune.logger"),
    ("ray.air.constants", "rljax.tune.result"),
    ("ray.air", "rljax.tune"),
    # RLlib 1.x's old API (PPOTrainer with a dict config): rljax.agents, and the modules its
    # scripts import beside it (rljax.models, rljax.evaluation.rollout_worker, ...).
    ("ray.rllib.agents", "rljax.agents"),
    ("ray.rllib", "rljax"),
    ("ray.tune", "rljax.tune"),
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
    """(1-based line, UTF-8 byte column) as ``ast`` gives them -> an index into ``source``."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(lineno: int, col: int) -> int:
        line = lines[lineno - 1] if lineno - 1 < len(lines) else ""
        return starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))

    return offset


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
                if a.name in ("tune", "air"):
                    ours.append(_alias("tune", a.asname or ("air" if a.name == "air" else None)))
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


def port_source(source: str) -> Ported:
    """The script ``source`` with RLlib's imports rewritten to rljax's (see the module doc)."""
    notes: list[str] = []
    tree = ast.parse(source)
    offset = _char_offsets(source)
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        new = _rewritten(node, notes)
        if new is not None:
            assert node.end_lineno is not None and node.end_col_offset is not None
            span = (
                offset(node.lineno, node.col_offset),
                offset(node.end_lineno, node.end_col_offset),
            )
            edits.append((span, new))
    text = source
    for (start, end), new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    # Ray's dotted names in code (``ray.rllib.algorithms.ppo.PPOConfig``).
    text = _DOTTED.sub(lambda m: "rljax" if m.group(1) == "rllib" else "rljax.tune", text)
    for air, ours in _AIR.items():
        text = re.sub(rf"(?<![\w.]){re.escape(air)}\b", ours, text)
    # `import ray` alone: becomes `import rljax` (which `ray.rllib.X` names now need) when no
    # `ray.` is left.
    if not _RAY_NAME.search(re.sub(r"^\s*import ray\s*$", "", text, flags=re.M)):
        text = re.sub(r"^(\s*)import ray\s*$", r"\1import rljax  # (rljax port)", text, flags=re.M)
    ast.parse(text)  # the port must leave valid Python
    for m in _RAY_NAME.finditer(text):
        lineno = text.count("\n", 0, m.start()) + 1
        note = f"line {lineno}: `{m.group(0)}` has no rljax counterpart"
        if not any(n.startswith(f"line {lineno}:") for n in notes):
            notes.append(note)
    return Ported(text, sorted(set(notes), key=lambda n: (int(n.split()[1][:-1]), n)))


__all__ = ["Ported", "port_source"]
