"""The package's import graph has no circles: no module imports a module that imports it back,
directly or through others, at module level or inside a function."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rljax"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(
    node: ast.Import | ast.ImportFrom, name: str, is_package: bool, modules: Iterable[str]
) -> set[str]:
    """The rljax modules one import statement of module ``name`` imports (a ``from a.b import c``
    names ``a.b.c`` when that is a module, else ``a.b``), among ``modules``."""
    targets: set[str] = set()
    if isinstance(node, ast.Import):
        targets.update(a.name for a in node.names if a.name.startswith("rljax"))
    else:
        if node.level:  # relative: resolve against this module's package
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        if not source.startswith("rljax"):
            return set()
        for alias in node.names:
            sub = f"{source}.{alias.name}"
            targets.add(sub if sub in modules else source)
    return {t for t in targets if t in modules and t != name}


def modules_by_name() -> dict[str, Path]:
    """Every rljax module's dotted name -> its file."""
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def import_graph() -> dict[str, set[str]]:
    """module -> the rljax modules it imports, anywhere in it (``imported_modules``)."""
    modules = modules_by_name()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets |= imported_modules(node, name, is_package, modules)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _is_package_to_child(a: str, b: str) -> bool:
    return b.startswith(a + ".")


def test_the_import_graph_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_module_imports_a_module_that_imports_it_back():
    graph = import_graph()
    # A package's __init__ re-exporting its own submodules is how Python packages are built;
    # a submodule importing its package's __init__ back is the circle that counts.
    for name in graph:
        graph[name] = {t for t in graph[name] if not _is_package_to_child(name, t)}
    assert cycles(graph) == []
