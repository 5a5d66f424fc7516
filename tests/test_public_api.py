"""The public surface is declared in one place (``rljax/_api.py``), documented, and rendered in
the site's API reference.

A public name is rendered when a ``::: path`` directive of ``docs/reference/*.md`` renders it:
the directive's own path, a name its ``members:`` list names, or, for a module rendered with its
members (``filters: public``: the names of its ``__all__``), each of those that has a docstring
(mkdocstrings leaves out the members without one; a constant's docstring is the string under
its assignment in the module). A name is also rendered when the same object is rendered at
another public path. Mentioning a name in the text does not render it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rljax._api import NOT_API, PUBLIC_MODULES

ROOT = Path(__file__).parents[1]
REFERENCE = ROOT / "docs" / "reference"
_DIRECTIVE = re.compile(r"^::: ([\w.]+)\n((?:    .*\n|\n(?=    ))*)", re.M)


def _packages_declaring_all() -> set[str]:
    """Every package under ``rljax`` (no ``_``-prefixed part) whose ``__init__.py`` assigns
    ``__all__``, read from the sources: nothing is imported."""
    found = set()
    for init in (ROOT / "rljax").rglob("__init__.py"):
        parts = init.parent.relative_to(ROOT).parts
        if any(part.startswith("_") for part in parts):
            continue
        if _assigns_all(init):
            found.add(".".join(parts))
    return found


def _assigned(node: ast.stmt) -> list[str]:
    """The names a top-level statement assigns."""
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _assigns_all(source: Path) -> bool:
    return any("__all__" in _assigned(node) for node in ast.parse(source.read_text()).body)


def _source_of(module_name: str) -> Path:
    path = ROOT.joinpath(*module_name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _public_names() -> list[tuple[str, str, object]]:
    names = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            names.append((module_name, name, getattr(module, name)))
    return names


def _directives(text: str | None = None) -> list[tuple[str, dict[str, Any], str]]:
    """Each ``::: path`` directive of the reference pages (or of ``text``): its path, its
    options and its page."""
    pages = (
        [("text", text)]
        if text is not None
        else [(page.name, page.read_text()) for page in sorted(REFERENCE.glob("*.md"))]
    )
    found = []
    for page, content in pages:
        for m in _DIRECTIVE.finditer(content):
            block = (
                yaml.safe_load(inspect.cleandoc("\n" + m.group(2))) if m.group(2).strip() else None
            )
            found.append((m.group(1), (block or {}).get("options") or {}, page))
    return found


def _resolve(path: str) -> object:
    """The object at a dotted path: each part an attribute of the one before it, else its
    submodule."""
    first, *rest = path.split(".")
    obj: object = importlib.import_module(first)
    for i, part in enumerate(rest, start=1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
        elif inspect.ismodule(obj):
            obj = importlib.import_module(".".join([first, *rest[:i]]))
        else:
            raise AttributeError(f"{path}: {'.'.join([first, *rest[:i]])} does not exist")
    return obj


def _is_constant(obj: object) -> bool:
    return not (inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj))


def _own_doc(obj: object) -> str:
    doc = vars(obj).get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    return (doc or "").strip()


def _documented_constants(module: Any) -> set[str]:
    """The names ``module`` assigns at its top level with a docstring (a string under the
    assignment), as mkdocstrings reads them."""
    body = ast.parse(Path(module.__file__).read_text()).body
    found = set()
    for node, after in zip(body, body[1:], strict=False):
        if (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            found.update(_assigned(node))
    return found


def _rendered(text: str | None = None) -> tuple[set[str], set[int]]:
    """The dotted paths the reference (or ``text``) renders, and the ids of the (non-constant)
    objects at them."""
    paths = set()
    for path, options, _ in _directives(text):
        paths.add(path)
        members = options.get("members")
        if isinstance(members, list):
            paths.update(f"{path}.{member}" for member in members)
        elif members is not False:
            obj = _resolve(path)
            if inspect.ismodule(obj):
                constants = _documented_constants(obj)
                for name in getattr(obj, "__all__", ()):
                    member = getattr(obj, name)
                    documented = name in constants if _is_constant(member) else _own_doc(member)
                    if documented:
                        paths.add(f"{path}.{name}")
    objects = {id(obj) for obj in map(_resolve, paths) if not _is_constant(obj)}
    return paths, objects


def test_every_package_declaring_all_is_public_or_said_why_not():
    public, not_api = set(PUBLIC_MODULES), set(NOT_API)
    assert len(public) == len(PUBLIC_MODULES), "PUBLIC_MODULES names a module twice"
    assert not public & not_api, f"both public and not API: {sorted(public & not_api)}"
    declaring = _packages_declaring_all()
    undeclared = declaring - public - not_api
    assert not undeclared, (
        f"packages defining __all__ in neither rljax/_api.py list: {sorted(undeclared)}"
    )
    assert not_api <= declaring, f"NOT_API names no such package: {sorted(not_api - declaring)}"
    assert all(reason.strip() for reason in NOT_API.values())
    for module_name in PUBLIC_MODULES:
        source = _source_of(module_name)
        assert source.is_file() and _assigns_all(source), f"{module_name} declares no __all__"


def test_the_declaration_check_finds_packages_that_declare_all():
    declaring = _packages_declaring_all()
    assert {"rljax", "rljax.tune", "rljax.tune.search", "rljax.replay"} <= declaring
    assert "rljax.connectors" not in declaring  # a package without __all__


def test_every_public_name_has_a_docstring():
    missing = [m for m in PUBLIC_MODULES if not (importlib.import_module(m).__doc__ or "").strip()]
    for module_name, name, obj in _public_names():
        if _is_constant(obj):
            continue  # ids and version strings: documented in their module's docstring
        if not _own_doc(obj):
            missing.append(f"{module_name}.{name}")
    assert not missing, f"public modules and names without a docstring: {missing}"


def test_public_docstrings_have_no_rst_literal_blocks():
    """``Example::`` and ``text::`` are RST: mkdocstrings renders the colons as they are. A
    Google ``Example:`` section with a fenced block is rendered as code."""
    objects = [importlib.import_module(m) for m in PUBLIC_MODULES]
    objects += [obj for _, _, obj in _public_names() if not _is_constant(obj)]
    found = [repr(obj) for obj in objects if re.search(r"::\n", _own_doc(obj))]
    assert not found, f"RST literal blocks in the docstrings of {found}"


def test_every_public_name_is_rendered_in_the_api_reference():
    paths, objects = _rendered()
    missing = []
    for module_name, name, obj in _public_names():
        path = f"{module_name}.{name}"
        if path in paths:
            continue
        if not _is_constant(obj) and id(obj) in objects:
            continue  # rendered at another public path of the same object
        missing.append(path)
    assert not missing, f"public names no ::: directive of docs/reference/ renders: {missing}"


def test_what_counts_as_rendered():
    page = """
The `rljax.distributed.initialize` function, mentioned only.

::: rljax.tune.ray_train
    options:
      filters: public

::: rljax.env
    options:
      members: false

::: rljax.core
    options:
      members:
        - ALL_MODULES

::: rljax.utils.metrics
    options:
      filters: public
"""
    paths, objects = _rendered(page)
    from rljax.tune.ray_train import train_with_jax_trainer

    assert "rljax.distributed.initialize" not in paths  # a mention renders nothing
    assert "rljax.tune.ray_train.train_with_jax_trainer" in paths  # a member of its module
    assert "rljax.tune.ray_train.CHECKPOINT_SUBDIR" in paths  # a constant with a docstring
    assert "rljax.utils.metrics.NUM_EPISODES" not in paths  # a constant without one
    assert "rljax.env" in paths and "rljax.env.MultiAgentEnv" not in paths  # members: false
    assert "rljax.core.ALL_MODULES" in paths and "rljax.core.Columns" not in paths  # listed
    assert id(train_with_jax_trainer) in objects


def test_modules_rendered_with_their_members_render_their_all_only():
    for path, options, page in _directives():
        if options.get("members") in (None, True) and inspect.ismodule(_resolve(path)):
            assert options.get("filters") == "public", (
                f"{page}: ::: {path} renders every documented name of the module; "
                "filters: public renders its __all__"
            )


def test_the_reference_renders_only_names_that_exist():
    directives = _directives()
    assert len(directives) > 80
    for path, options, page in directives:
        obj = _resolve(path)  # raises for a name that does not exist
        for member in options.get("members") or []:
            assert hasattr(obj, member), f"{page}: ::: {path} lists no such member {member!r}"


def test_the_config_reference_tables_every_setting_of_every_algorithm():
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        hooks = pytest.importorskip("rljax_docs", reason="the docs extra (mkdocs) is not installed")
    finally:
        sys.path.pop(0)
    from rljax.algorithms import AlgorithmConfig
    from rljax.algorithms.ppo import PPOConfig
    from rljax.algorithms.settings import declared_settings

    every = hooks.settings_table("rljax.algorithms.AlgorithmConfig")
    for setting in declared_settings(AlgorithmConfig).values():
        assert f"| `{setting.setter_keyword}`" in every, setting.name
    ppo = hooks.settings_table("rljax.algorithms.ppo.PPOConfig")
    assert "| `clip_param` | `0.3` |" in ppo  # PPO's own setting, RLlib's default
    assert "| `lr` | `5e-05` |" in ppo  # declared anew with PPO's default
    assert "`num_env_runners`" not in ppo  # AlgorithmConfig's, in its table only
    text = (REFERENCE / "configs.md").read_text()
    for module in ("ppo", "impala", "appo", "dqn", "sac", "td3"):
        assert f"<!-- settings: rljax.algorithms.{module}." in text
    assert PPOConfig.clip_param.default == 0.3


def test_version_flag_prints_the_version():
    import rljax

    out = subprocess.run(
        [sys.executable, "-m", "rljax.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.strip() == f"rljax {rljax.__version__}"
