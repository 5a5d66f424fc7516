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
_FROM_RAY = re.compile(r"^(\s*)from\s+ray\s+import\s+(.+?)\s*$")


@dataclass
class Ported:
    """A ported script: its new text and what the port could not rewrite."""

    source: str
    notes: list[str] = field(default_factory=list)


def _statement_spans(tree: ast.Module) -> list[tuple[int, int, int]]:
    """(first line, last line, column) of each ``ray.init(...)`` / ``ray.shutdown(...)``
    statement, 1-based lines."""
    spans = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "ray"
            and func.attr in ("init", "shutdown")
        ):
            end = node.end_lineno if node.end_lineno is not None else node.lineno
            spans.append((node.lineno, end, node.col_offset))
    return spans


def _from_rljax(name: str) -> str:
    """One name of ``from ray import ...`` as rljax's: ``air`` is ``tune`` (AIR's RunConfig
    and the rest are Tune's), ``rllib`` the package itself."""
    base, _, alias = name.partition(" as ")
    base = base.strip()
    if base == "air":
        return f"tune as {alias.strip() or 'air'}"
    if base == "rllib":
        return f"{'rljax as ' + alias.strip() if alias else 'rljax as rllib'}"
    return name


def _from_ray(line: str, notes: list[str], lineno: int) -> str:
    """``from ray import tune[, air, ...]``: tune from rljax, the rest noted."""
    m = _FROM_RAY.match(line)
    if m is None:
        return line
    indent, names = m.group(1), m.group(2)
    names = names.strip("()")
    parts = [p.strip() for p in names.split(",") if p.strip()]
    kept = [p for p in parts if p.split(" as ")[0].strip() in ("tune", "rllib", "air")]
    other = [p for p in parts if p not in kept]
    if other:
        notes.append(
            f"line {lineno}: `from ray import {', '.join(other)}` has no rljax counterpart"
        )
    if not kept:
        return line
    out = f"{indent}from rljax import {', '.join(_from_rljax(p) for p in kept)}"
    if other:
        out += f"\n{indent}from ray import {', '.join(other)}"
    return out


def port_source(source: str) -> Ported:
    """The script ``source`` with RLlib's imports rewritten to rljax's (see the module doc)."""
    notes: list[str] = []
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for first, last, col in sorted(_statement_spans(tree), reverse=True):
        ending = "\n" if lines[last - 1].endswith("\n") else ""
        lines[first - 1 : last] = [
            " " * col + "pass  # (rljax port) no Ray to start or stop" + ending
        ]
    out = []
    for i, line in enumerate(lines, 1):
        newline = "\n" if line.endswith("\n") else ""
        body = line[: len(line) - len(newline)]
        body = re.sub(r"^(\s*)import\s+ray\.(rllib|tune)\b", r"\1import rljax.\2", body)
        body = body.replace("import rljax.rllib", "import rljax")
        body = _from_ray(body, notes, i)
        body = _DOTTED.sub(lambda m: "rljax" if m.group(1) == "rllib" else "rljax.tune", body)
        for air, ours in _AIR.items():
            body = re.sub(rf"(?<![\w.]){re.escape(air)}\b", ours, body)
        out.append(body + newline)
    text = "".join(out)
    # `import ray` alone: becomes `import rljax` (which `ray.rllib.X` names now need) when no
    # `ray.` is left.
    if not _RAY_NAME.search(re.sub(r"^\s*import ray\s*$", "", text, flags=re.M)):
        text = re.sub(r"^(\s*)import ray\s*$", r"\1import rljax  # (rljax port)", text, flags=re.M)
    ast.parse(text)  # the port must leave valid Python
    for m in _RAY_NAME.finditer(text):
        lineno = text.count("\n", 0, m.start()) + 1
        notes.append(f"line {lineno}: `{m.group(0)}` has no rljax counterpart")
    return Ported(text, notes)


__all__ = ["Ported", "port_source"]
