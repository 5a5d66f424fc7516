"""The public surface is declared (``__all__``), documented, and in the site's API reference."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
REFERENCE = ROOT / "docs" / "reference"
# The public packages: each declares its names in ``__all__``, at the import path users write.
PUBLIC_MODULES = [
    "rljax",
    "rljax.algorithms",
    "rljax.algorithms.ppo",
    "rljax.algorithms.impala",
    "rljax.algorithms.appo",
    "rljax.algorithms.dqn",
    "rljax.algorithms.sac",
    "rljax.algorithms.td3",
    "rljax.tune",
    "rljax.callbacks",
    "rljax.connectors.env_to_module",
    "rljax.env",
    "rljax.core",
    "rljax.core.rl_module",
    "rljax.policy",
    "rljax.utils.errors",
]


def _public_names() -> list[tuple[str, str, object]]:
    names = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        assert hasattr(module, "__all__"), f"{module_name} declares no __all__"
        for name in module.__all__:
            names.append((module_name, name, getattr(module, name)))
    return names


def _reference() -> tuple[set[str], set[int], str]:
    """The paths the reference pages render (``::: path``), the objects they resolve to, and
    the pages' text."""
    text = "\n".join(p.read_text() for p in sorted(REFERENCE.glob("*.md")))
    paths = set(re.findall(r"^::: ([\w.]+)$", text, re.M))
    return paths, {id(_resolve(path)) for path in paths}, text


def _resolve(path: str) -> object:
    """The object at a dotted public path: a module's attribute, else a module."""
    module_name, _, name = path.rpartition(".")
    if module_name:
        module = importlib.import_module(module_name)
        if hasattr(module, name):
            return getattr(module, name)
    return importlib.import_module(path)


def _is_constant(obj: object) -> bool:
    return not (inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj))


def test_every_public_name_has_a_docstring():
    missing = []
    for module_name, name, obj in _public_names():
        if _is_constant(obj):
            continue  # ids and version strings: documented in their module's docstring
        doc = vars(obj).get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
        if not (doc or "").strip():
            missing.append(f"{module_name}.{name}")
    assert not missing, f"public names without a docstring: {missing}"


def test_every_public_name_is_in_the_api_reference():
    paths, objects, text = _reference()
    missing = []
    for module_name, name, obj in _public_names():
        path = f"{module_name}.{name}"
        if path in paths or f"`{path}`" in text:
            continue
        if not _is_constant(obj) and id(obj) in objects:
            continue  # rendered at another public path of the same object
        missing.append(path)
    assert not missing, f"public names missing from docs/reference/: {missing}"


def test_the_reference_renders_only_names_that_exist():
    paths, _, _ = _reference()
    assert len(paths) > 80
    for path in paths:
        _resolve(path)  # raises for a name that does not exist


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
