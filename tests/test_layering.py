"""rljax's packages form layers, and a module imports only its own layer and those below it.

``LAYERS`` lists the layers from the bottom up; each holds top-level names under ``rljax/`` (a
package such as ``env``, or a module such as ``cli.py``; ``rljax`` is the package root's
``__init__.py``). A module-level import of a higher layer is a back-edge, and fails here with
the file, the line and both layers. Imports inside functions are not counted (a lazy import is
a choice made and commented at its place), nor those under ``if TYPE_CHECKING:`` (they never
run; they name a higher layer's class in an annotation only). ``test_import_graph`` forbids
circles among every import, lazy ones included.

Where the packages that exist at RLlib's paths sit, read from what they import and what imports
them:

- ``types``, ``ops``, ``utils`` and the package root are the bottom: data types, pure
  functions, helpers, the registry of names; ``_api`` (the public API as data: module names,
  importing nothing) too. ``distributed`` (the JAX process group: starting it, each
  process's share of envs and devices, joining and reducing across processes) is there too: at
  import it needs only ``utils``, and every layer that acts on data asks it about processes. ``utils`` holds RLlib-path modules too
  (``utils.metrics``: result-key names; ``utils.test_utils``: the example-script harness,
  whose one import of ``tune`` is lazy).
- ``callbacks`` (RLlib's callback classes, episode views) needs only ``env``; it sits with
  ``replay`` and ``connectors``, the data layers above ``env``.
- ``core`` (``ray.rllib.core``: model configs and module specs re-exported from ``networks``,
  ``Columns``, ``MultiRLModule``, ``RLModule``) sits right below ``algorithms``, which build
  from its specs; it needs nothing above ``networks``. ``models`` (the old ``ModelCatalog``)
  and ``policy`` (``PolicySpec``, export, the old ``Policy``) read ``core`` and are read by
  ``algorithms``.
- ``agents`` (RLlib 1.x's trainers) and ``evaluation`` (``RolloutWorker``) re-export
  ``algorithms`` and ``policy`` downward; only ``tune``, ``cli`` and ``examples`` sit above
  them. ``examples`` are scripts' building blocks, at the top with ``cli``.

``KNOWN_BACK_EDGES`` lists the back-edges that remain, as (importing file, imported file); each
is being removed, and the test fails when a listed edge no longer exists, so the list only
shrinks.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from test_import_graph import PACKAGE, imported_modules, modules_by_name

# From the bottom up; names in one layer may import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("rljax", "_api", "types", "ops", "utils", "distributed"),
    ("networks",),
    ("env",),
    ("replay", "connectors", "callbacks", "offline"),
    ("runners",),
    ("learners",),
    ("execution",),
    ("core",),
    ("models", "policy"),
    ("algorithms",),
    ("agents", "evaluation"),
    ("tune",),
    ("cli", "examples"),
)

# Back-edges still in the code, each being removed; (importing file, imported file).
KNOWN_BACK_EDGES: frozenset[tuple[str, str]] = frozenset()


def layer_of(module: str) -> str:
    """The top-level name under ``rljax`` that ``module`` (dotted) belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def rank(layers: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    return {name: i for i, layer in enumerate(layers) for name in layer}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported: at the top, or inside an
    ``if``/``try``/``with``/class body there, but not in a function or under TYPE_CHECKING."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, (ast.With, ast.For, ast.While, ast.ClassDef)):
                visit(node.body)
                visit(getattr(node, "orelse", []))

    visit(tree.body)
    return found


@functools.lru_cache(maxsize=1)
def module_level_edges() -> tuple[tuple[str, int, str], ...]:
    """(importing file, line, imported module) for every module-level import between rljax
    modules."""
    modules = modules_by_name()
    edges = []
    for name, path in sorted(modules.items()):
        is_package = path.name == "__init__.py"
        for node in module_level_imports(ast.parse(path.read_text())):
            for target in sorted(imported_modules(node, name, is_package, modules)):
                edges.append((_relative(path), node.lineno, target))
    return tuple(edges)


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix()


def back_edges(
    edges: tuple[tuple[str, int, str], ...],
    module_of_file: dict[str, str],
    layers: tuple[tuple[str, ...], ...],
) -> list[tuple[str, int, str, str, str]]:
    """(file, line, imported module, its layer, the file's layer) for each import of a higher
    layer."""
    ranks = rank(layers)
    found = []
    for file, line, target in edges:
        low, high = layer_of(module_of_file[file]), layer_of(target)
        if ranks[high] > ranks[low]:
            found.append((file, line, target, low, high))
    return found


def _file_of(module: str, modules: dict[str, Path]) -> str:
    return _relative(modules[module])


def _current_back_edges() -> tuple[list[tuple[str, int, str, str, str]], dict[str, Path]]:
    modules = modules_by_name()
    module_of_file = {_relative(p): m for m, p in modules.items()}
    return back_edges(module_level_edges(), module_of_file, LAYERS), modules


def test_the_layering_finds_a_planted_back_edge():
    layers = (("utils",), ("env",), ("algorithms",))
    module_of_file = {"a.py": "rljax.utils.a", "b.py": "rljax.env.b", "c.py": "rljax.algorithms.c"}
    edges = (
        ("b.py", 3, "rljax.utils.a"),  # down: fine
        ("c.py", 4, "rljax.env.b"),  # down: fine
        ("a.py", 7, "rljax.algorithms.c"),  # up two layers
        ("b.py", 9, "rljax.env.other"),  # same layer: fine
    )
    assert back_edges(edges, module_of_file, layers) == [
        ("a.py", 7, "rljax.algorithms.c", "utils", "algorithms")
    ]


def test_module_level_imports_skip_functions_and_type_checking():
    tree = ast.parse(
        "import rljax.a\n"
        "if TYPE_CHECKING:\n    import rljax.b\nelse:\n    import rljax.c\n"
        "try:\n    import rljax.d\nexcept ImportError:\n    import rljax.e\n"
        "def f():\n    import rljax.f\n"
        "class K:\n    import rljax.g\n"
    )
    names = [n.names[0].name for n in module_level_imports(tree)]
    assert names == ["rljax.a", "rljax.c", "rljax.d", "rljax.e", "rljax.g"]


def test_every_package_has_a_layer():
    placed = [name for layer in LAYERS for name in layer]
    assert len(placed) == len(set(placed)), "a name sits in two layers"
    present = {layer_of(m) for m in modules_by_name()}
    assert sorted(present - set(placed)) == [], "place these in LAYERS"
    assert sorted(set(placed) - present) == [], "these are in LAYERS but not under rljax/"


def test_no_module_imports_a_higher_layer_at_import():
    found, modules = _current_back_edges()
    new = [
        f"{file}:{line} imports {target} at module level: layer {low!r} imports the higher "
        f"layer {high!r}"
        for file, line, target, low, high in found
        if (file, _file_of(target, modules)) not in KNOWN_BACK_EDGES
    ]
    assert new == [], "\n".join(new)


def test_every_known_back_edge_still_exists():
    found, modules = _current_back_edges()
    existing = {(file, _file_of(target, modules)) for file, _, target, _, _ in found}
    gone = sorted(KNOWN_BACK_EDGES - existing)
    assert gone == [], f"these back-edges are gone: remove them from KNOWN_BACK_EDGES: {gone}"


def test_the_shared_types_import_nothing_of_rljax():
    """``rljax.types`` is data only: every layer reads it, so it reads no layer."""
    found = [(f, line, t) for f, line, t in module_level_edges() if f == "rljax/types.py"]
    assert found == []
    assert ("rljax/runners/acting.py", "rljax.types") in {
        (f, t) for f, _, t in module_level_edges()
    }
