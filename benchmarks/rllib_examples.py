"""Runs a directory of RLlib-style example scripts and reports which ran: rljax's own
(``rljax/examples``, the default) or RLlib's, rewritten by ``rljax port`` first.

    python benchmarks/rllib_examples.py                          # rljax/examples, --stop-iters=1
    python benchmarks/rllib_examples.py DIR --flags "--stop-iters=2 --no-tune" --timeout 300
    python benchmarks/rllib_examples.py DIR --rllib-python /path/to/rllib-venv/bin/python \
        --markdown table.md                                      # RLlib itself beside rljax

Every ``.py`` file under the directory that uses RLlib's harness
(``add_rllib_example_script_args``) or has a ``__main__`` block runs in its own process, one
after another, from its own folder, with the flags its docstring's "How to run this script"
names (``--num-agents=2``; ``--no-documented-flags`` leaves them out) and then ``--flags`` on its
command line; where the documented flags fail, it runs again with ``--flags`` alone, and the
entry keeps the first run's error under ``documented_flags_failed``. A script that
imports ``ray`` is ported first (``rljax.utils.port``; into a temporary folder, the original is
left alone), and the notes of the port are reported. Prints JSON: per script its exit status,
seconds, the port's notes and, for a failure, the last error line; and how many ran.

With ``--rllib-python`` each script also runs unported under that interpreter (one with
``ray[rllib]`` and torch), right after rljax's run of it, with the same flags; the entry's
``rllib`` holds its outcome, and ``--markdown`` writes the side-by-side table. ``--skip-rljax``
runs RLlib's side alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rljax.utils.port import port_source  # noqa: E402

_ERROR = re.compile(r"^[\w.]*(Error|Exception)\b")


def scripts_in(directory: Path) -> list[Path]:
    """The scripts under ``directory``, sorted: every ``.py`` file outside ``classes/`` and
    ``utils/`` and the folders inside ``_old_api_stack/`` (RLlib's helper modules: its
    ``models/`` and ``policy/``) but the harness itself, whether or not it uses the harness or
    a ``__main__`` guard. The old stack's own scripts (``_old_api_stack/*.py``) are included."""
    found = []
    for path in sorted(directory.rglob("*.py")):
        parts = path.relative_to(directory).parts
        folders = parts[:-1]
        in_old_stack_helpers = "_old_api_stack" in folders and folders[-1] != "_old_api_stack"
        if path.name.startswith("_") or {"classes", "utils"} & set(folders) or in_old_stack_helpers:
            continue
        if "def add_rllib_example_script_args" in path.read_text(errors="replace"):
            continue  # the harness itself
        found.append(path)
    return found


_HOW_TO_RUN = re.compile(r"`python \[script file name\]\.py([^`]*?)(?:`|\n\s*\n)", re.S)
_PLACEHOLDER_FLAG = re.compile(r"--[\w-]+(?:=|\s+)\[[^\]]*\]")
_OPTIONAL = re.compile(r"\[[^\]]*\]\??")


def documented_flags(text: str) -> list[str]:
    """The flags of the first command under a script's "How to run this script" (RLlib's
    examples write it as ``python [script file name].py --num-agents=2``): what its authors
    run it with, and some scripts refuse to run without (``--num-agents=2`` for the grouped
    two-step game). Flags whose value is a placeholder (``--env [env name ...]``), optional
    ones in brackets and WandB's are left out."""
    match = _HOW_TO_RUN.search(text)
    if match is None:
        return []
    command = _OPTIONAL.sub(" ", _PLACEHOLDER_FLAG.sub(" ", match.group(1)))
    try:
        tokens = shlex.split(command.replace("\\\n", " "))
    except ValueError:
        return []
    kept: list[str] = []
    skip_value = False
    for token in tokens:
        if skip_value and not token.startswith("--"):
            skip_value = False
            continue
        skip_value = token.startswith("--wandb") and "=" not in token
        if not token.startswith("--wandb"):
            kept.append(token)
    return kept


def run_process(cmd: list[str], cwd: Path, pythonpath: list[str], timeout: float) -> dict:
    """Runs ``cmd``; its status, seconds and, for a failure, the last error line."""
    start = time.perf_counter()
    entry: dict = {}
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            stdin=subprocess.DEVNULL,  # a script asking for input fails at once, never waits
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath)},
        )
        entry["returncode"] = proc.returncode
        output = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        entry["returncode"] = "timeout"
        output = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else ""
    entry["seconds"] = round(time.perf_counter() - start, 1)
    entry["ran"] = entry["returncode"] == 0
    if not entry["ran"]:
        lines = [line for line in output.splitlines() if _ERROR.match(line)]
        # The script's own PyTorch code, refused where it ran (a Tune trial's error, say),
        # is the cause even where a later line failed for it.
        torch = [line for line in output.splitlines() if "TorchClassError:" in line]
        lines = torch[:1] or lines
        last = lines[-1] if lines else (output.strip().splitlines() or [""])[-1]
        entry["error"] = last[:300]
    return entry


def run_rllib(path: Path, flags: list[str], timeout: float, python: str) -> dict:
    """``path`` as it is, under RLlib's interpreter."""
    return run_process([python, path.name, *flags], path.parent, [str(path.parent)], timeout)


def run_one(path: Path, flags: list[str], timeout: float, workdir: Path, base: Path) -> dict:
    """Ports ``path`` if it imports ray, runs it with ``flags``; what happened, as a dict."""
    text = path.read_text(errors="replace")
    entry: dict = {"script": str(path.relative_to(base)), "ported": False}
    target = path
    if re.search(r"^\s*(from|import)\s+ray\b", text, re.M):
        try:
            ported = port_source(text)
        except SyntaxError as e:
            return {**entry, "ran": False, "returncode": None, "error": f"port: {e}"}
        target = workdir / path.relative_to(base)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(ported.source)
        entry.update(ported=True, port_notes=ported.notes)
    pythonpath = [str(ROOT), str(path.parent)]
    entry.update(
        run_process([sys.executable, target.name, *flags], target.parent, pythonpath, timeout)
    )
    return entry


def own_flags(text: str, flags: list[str]) -> list[str]:
    """``flags`` that a script with a parser of its own takes: all of them for one built on
    RLlib's harness (``add_rllib_example_script_args``, whose parser has the common flags),
    else those whose name its text holds (RLlib's old-stack scripts define ``--stop-iters`` but
    not ``--num-env-runners``, and argparse refuses a flag it does not know)."""
    if "add_rllib_example_script_args" in text:
        return flags
    kept: list[str] = []
    dropping = False  # the value token after a dropped "--flag value" goes with it
    for token in flags:
        if not token.startswith("--"):
            if not dropping:
                kept.append(token)
            continue
        name = token.split("=", 1)[0]
        dropping = f'"{name}"' not in text and f"'{name}'" not in text
        if not dropping:
            kept.append(token)
    return kept


def script_flags(path: Path, flags: list[str], documented: bool) -> list[str]:
    """The command line's flags for ``path``: its documented ones (``documented_flags``) first,
    where ``documented``, then ``flags`` (the later of a repeated flag wins), less those its own
    parser does not define (``own_flags``)."""
    text = path.read_text(errors="replace")
    flags = own_flags(text, flags)
    return [*documented_flags(text), *flags] if documented else flags


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", default=str(ROOT / "rljax" / "examples"))
    parser.add_argument("--flags", default="--stop-iters=1 --verbose=0", help="added to each")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per script")
    parser.add_argument("--only", default=None, help="a regex: run the scripts it matches")
    parser.add_argument("--rllib-python", default=None, help="also run each under RLlib")
    parser.add_argument("--skip-rljax", action="store_true", help="RLlib's side only")
    parser.add_argument("--markdown", default=None, help="write the table to this file")
    parser.add_argument(
        "--no-documented-flags",
        action="store_true",
        help="leave out the flags each script's 'How to run this script' names",
    )
    args = parser.parse_args(argv)
    if args.skip_rljax and not args.rllib_python:
        parser.error("--skip-rljax needs --rllib-python")
    base = Path(args.directory).resolve()
    if not base.is_dir():
        parser.error(f"{args.directory!r} is not a directory")
    scripts = scripts_in(base)
    if args.only:
        scripts = [s for s in scripts if re.search(args.only, s.as_posix())]
    flags = shlex.split(args.flags)
    start = time.perf_counter()
    entries = []
    with tempfile.TemporaryDirectory(prefix="rljax_port_") as work:
        for script in scripts:
            own = script_flags(script, flags, not args.no_documented_flags)
            # The run's flags this script takes (all of them, for RLlib's harness scripts).
            plain = own_flags(script.read_text(errors="replace"), flags)
            if args.skip_rljax:
                entry: dict = {"script": str(script.relative_to(base))}
            else:
                entry = run_one(script, own, args.timeout, Path(work), base)
                if not entry["ran"] and own != plain:
                    # Some scripts' documented command is stale (a flag their parser no longer
                    # takes, an env id gymnasium no longer registers by itself): run as before.
                    failed = entry.get("error", "")
                    entry = run_one(script, plain, args.timeout, Path(work), base)
                    entry["documented_flags_failed"] = {"flags": own, "error": failed}
                    own = plain
            entry["flags"] = own
            if args.rllib_python:
                entry["rllib"] = run_rllib(script, own, args.timeout, args.rllib_python)
            print(json.dumps(entry), file=sys.stderr, flush=True)
            entries.append(entry)
    report: dict = {
        "directory": str(base),
        "flags": flags,
        "num_scripts": len(entries),
        "seconds": round(time.perf_counter() - start, 1),
        "cpu_count": os.cpu_count(),
        "load_average_at_end": list(os.getloadavg()),
        "scripts": entries,
    }
    if not args.skip_rljax:
        report["num_ran"] = sum(e["ran"] for e in entries)
    if args.rllib_python:
        report["num_ran_rllib"] = sum(e["rllib"]["ran"] for e in entries)
        if not args.skip_rljax:
            report["rllib_ran_rljax_did_not"] = [
                e["script"] for e in entries if e["rllib"]["ran"] and not e["ran"]
            ]
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(entries))
    print(json.dumps(report, indent=2))
    return 0 if all(e.get("ran", True) for e in entries) else 1


def markdown_table(entries: list[dict]) -> str:
    """One row per script: whether rljax and RLlib ran it, and each one's error."""

    def cell(outcome: dict | None) -> str:
        if outcome is None:
            return "not run"
        return "ran" if outcome["ran"] else f"failed: {outcome.get('error', '')}".replace("|", "/")

    rows = ["| script | rljax | RLlib |", "| --- | --- | --- |"]
    for e in entries:
        rljax = e if "ran" in e else None
        rows.append(f"| `{e['script']}` | {cell(rljax)} | {cell(e.get('rllib'))} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.exit(main())
