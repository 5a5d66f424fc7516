"""Every Python block of the README and of the documentation site runs, so the docs cannot drift
from the code.

A block's mark is an HTML comment on the line before it, ``<!-- docs-test: MARK -->``:

- no mark: the block runs here, in the slow tier (it builds or trains, with a small budget);
- ``fast``: the block runs here in the fast tier (it builds nothing);
- ``asserted (tests/FILE.py)``: the block runs in that test file, which also checks what it
  prints or returns; here it is compiled, and the file must exist and name the block's page;
- ``illustrative (why)``: the block needs what a test cannot have (Ray, a user's files); it is
  compiled only.

Every block runs in a directory of its own; ``"/tmp/...`` paths in it are moved there. A block may
use ``config``, a small PPO CartPole config, as the guides' fragments do
(``config.callbacks(...)``).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import types
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_BLOCK = re.compile(r"(?:<!-- docs-test: (?P<mark>[^>]*?) -->\n)?```python\n(?P<code>.*?)```", re.S)
_MARKS = ("fast", "asserted", "illustrative")


@dataclasses.dataclass(frozen=True)
class Block:
    page: Path
    line: int
    mark: str  # "slow", "fast", "asserted" or "illustrative"
    note: str  # the mark's parenthesis: the asserting test file, or why it is illustrative
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for m in _BLOCK.finditer(text):
            raw = (m.group("mark") or "slow").strip()
            mark, _, note = raw.partition(" ")
            line = text.count("\n", 0, m.start("code"))
            found.append(Block(page, line, mark, note.strip("() "), m.group("code")))
    return found


BLOCKS = blocks()


def test_the_pages_have_blocks_and_every_mark_is_known():
    assert len(BLOCKS) >= 12 and any(b.page.name == "README.md" for b in BLOCKS)
    for block in BLOCKS:
        assert block.mark in ("slow", *_MARKS), f"{block.name}: unknown mark {block.mark!r}"


def test_the_front_page_lists_every_guide():
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    guides = next(entry["Guides"] for entry in nav if isinstance(entry, dict) and "Guides" in entry)
    pages = [page for entry in guides for page in entry.values()]
    assert len(pages) >= 19 and "beyond-one-machine.md" in pages
    index = (ROOT / "docs" / "index.md").read_text()
    start = index[index.index("## Where to start") :]
    missing = [page for page in pages if f"]({page})" not in start]
    assert not missing, (
        f"guides in the nav that docs/index.md's Where to start leaves out: {missing}"
    )


def test_every_block_compiles():
    for block in BLOCKS:
        compile(block.code, block.name, "exec")


def test_asserted_blocks_are_run_by_the_test_they_name():
    for block in (b for b in BLOCKS if b.mark == "asserted"):
        test_file = ROOT / block.note
        assert test_file.is_file(), f"{block.name}: no test file {block.note!r}"
        page = block.page.relative_to(ROOT).as_posix()
        assert page in test_file.read_text() or block.page.name in test_file.read_text(), (
            f"{block.name}: {block.note} does not read {page}"
        )


def test_illustrative_blocks_say_why():
    for block in (b for b in BLOCKS if b.mark == "illustrative"):
        assert block.note, f"{block.name}: an illustrative block says why it cannot run"


def _run(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    from rljax.algorithms.algorithm import Algorithm
    from rljax.algorithms.ppo import PPOConfig

    monkeypatch.chdir(tmp_path)
    code = block.code.replace('"/tmp/', f'"{tmp_path}/')
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=16)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
    )
    # A module of its own in sys.modules: Flax modules (dataclasses) defined in a block look
    # their module up there.
    module = types.ModuleType("rljax_docs_block")
    module.config = config  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = vars(module)
    try:
        exec(compile(code, block.name, "exec"), namespace)
    finally:
        for value in list(namespace.values()):
            if isinstance(value, Algorithm):
                value.stop()
    return namespace


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.mark == "fast"], ids=lambda b: b.name)
def test_fast_block_runs(block, tmp_path, monkeypatch):
    _run(block, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in BLOCKS if b.mark == "slow"], ids=lambda b: b.name)
def test_block_runs(block, tmp_path, monkeypatch):
    _run(block, tmp_path, monkeypatch)
