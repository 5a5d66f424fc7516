"""MkDocs hooks of rljax's site (``hooks:`` in mkdocs.yml).

- ``<!-- settings: rljax.algorithms.ppo.PPOConfig -->`` in a page becomes the table of that
  config class's settings: each ``Setting`` declaration's name, setter, default and doc, read
  from the class itself, so the reference cannot drift from the declarations.
- ``CHANGELOG.md`` (at the repository's root) becomes the page ``changelog.md``.
- ``notebooks/*.ipynb`` become pages ``notebooks/<name>.md``: markdown cells as they are, code
  cells as Python blocks (the notebooks are stored without outputs; ``tests/test_notebooks.py``
  executes them).
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
_SETTINGS = re.compile(r"<!-- settings: ([\w.]+) -->")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_table(path: str) -> str:
    """The markdown table of the settings the config class at ``path`` declares.

    For a subclass of ``AlgorithmConfig``: the settings it adds or declares anew (a default of
    its own), the others being ``AlgorithmConfig``'s table.
    """
    from rljax.algorithms import AlgorithmConfig
    from rljax.algorithms.settings import declared_settings

    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    base = {} if cls is AlgorithmConfig else declared_settings(AlgorithmConfig)
    sections: dict[str, list[str]] = {}
    for setting in declared_settings(cls).values():
        if base.get(setting.name) is setting:
            continue
        default = repr(setting.default)
        if len(default) > 48:
            default = default[:45] + "..."
        per_module = " *Per policy.*" if setting.per_module else ""
        keyword = setting.setter_keyword
        name = f"`{keyword}`" if keyword == setting.name else f"`{keyword}` (`{setting.name}`)"
        sections.setdefault(setting.section, []).append(
            f"| {name} | `{_cell(default)}` | {_cell(setting.doc)}{per_module} |"
        )
    out = []
    for section, rows in sections.items():
        out += [f"`.{section}(...)`", "", "| setting | default | what it does |"]
        out += ["| --- | --- | --- |", *rows, ""]
    return "\n".join(out)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return _SETTINGS.sub(lambda m: settings_table(m.group(1)), markdown)


def notebook_markdown(path: Path) -> str:
    """A notebook as a page: its markdown cells, and its code cells as Python blocks."""
    nb = json.loads(path.read_text())
    note = (
        f"!!! note\n    This page is `notebooks/{path.name}`, rendered without outputs; run it "
        'with `pip install -e ".[notebooks]"` and `jupyter lab notebooks/`.\n'
    )
    parts = []
    for cell in nb["cells"]:
        source = "".join(cell["source"]).strip("\n")
        if not source:
            continue
        parts.append(source if cell["cell_type"] == "markdown" else f"```python\n{source}\n```")
    # The note goes under the notebook's title (its first cell), or first when it has none.
    at = 1 if parts and parts[0].startswith("# ") else 0
    parts.insert(at, note)
    return "\n\n".join(parts) + "\n"


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    files.append(
        File.generated(config, "changelog.md", content=(ROOT / "CHANGELOG.md").read_text())
    )
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        files.append(
            File.generated(config, f"notebooks/{path.stem}.md", content=notebook_markdown(path))
        )
    return files
