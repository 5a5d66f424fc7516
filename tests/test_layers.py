"""Packages import in one direction: the algorithms (and their configs) sit below ``rljax.tune``
and ``rljax.agents``, the search-space primitives below the configs; the modules split from the
config and the tuner stay small; and the names that moved are the same objects where they
were."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rljax"
MAX_LINES = 1200


def _imports(path: Path) -> set[str]:
    """Every rljax module ``path`` names in an import, at module level or inside a function
    (``from a import b`` names ``a`` and ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {name for name in found if name.startswith("rljax")}


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _config_modules() -> list[Path]:
    algorithms = PACKAGE / "algorithms"
    return [algorithms / "algorithm_config.py", *sorted(algorithms.glob("config_*.py"))]


def test_the_import_scan_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from rljax.agents import trainer_path\n")
    assert _imports(module) == {"rljax.agents", "rljax.agents.trainer_path"}


def test_the_algorithms_import_nothing_from_the_old_api_package():
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(
            n for n in _imports(path) if _under(n, "rljax.agents")
        )
        for path in (PACKAGE / "algorithms").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_config_imports_nothing_from_tune():
    modules = _config_modules()
    assert len(modules) >= 7  # algorithm_config and the six modules split from it
    offenders = {
        path.name: sorted(n for n in _imports(path) if _under(n, "rljax.tune")) for path in modules
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_search_space_primitives_import_only_utils():
    names = _imports(PACKAGE / "utils" / "search_space.py")
    assert names and all(_under(n, "rljax.utils") for n in names), names


@pytest.mark.parametrize(
    "path",
    [*_config_modules(), *sorted((PACKAGE / "tune").glob("*.py"))],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_split_modules_stay_under_the_line_limit(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines"


def test_moved_names_are_the_same_objects_where_they_were():
    from rljax import agents, tune
    from rljax.algorithms import algorithm_config, config_io, config_names
    from rljax.tune import sample, variants
    from rljax.utils import old_api_trainers, search_space

    for name in ("grid_search", "choice", "uniform", "Domain", "GridSearch", "sample_from"):
        assert getattr(tune, name) is getattr(sample, name) is getattr(search_space, name)
    for name in ("find_search_spaces", "check_search_spaces", "key_path"):
        assert getattr(variants, name) is getattr(search_space, name)
    assert tune.find_search_spaces is search_space.find_search_spaces
    assert agents.trainer_path is old_api_trainers.trainer_path
    assert agents.TRAINERS is old_api_trainers.TRAINERS
    assert agents.trainer_path("PPO") == "rljax.agents.ppo.PPOTrainer"
    assert agents.trainer_path("BC") is None
    assert algorithm_config.RENAMED is config_names.RENAMED
    assert algorithm_config.RENAMED["num_workers"] == "num_env_runners"
    assert algorithm_config.read_config_file is config_io.read_config_file
    assert algorithm_config.check_loaded_env_settings is config_io.check_loaded_env_settings
    assert algorithm_config.MAX_CONFIG_FILE_BYTES == 64 << 10


def test_the_setters_still_find_a_search_space_without_tune():
    # The config recognises the primitives it imports; the ones users get from rljax.tune are
    # the same classes.
    from rljax import tune
    from rljax.algorithms.ppo import PPOConfig

    config = PPOConfig().training(lr=tune.grid_search([1e-3, 1e-4]))
    assert list(config.search_space()) == ["lr"]
    assert config.search_space()["lr"].values == [1e-3, 1e-4]
