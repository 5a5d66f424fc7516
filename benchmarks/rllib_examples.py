"""Runs a directory of RLlib-style example scripts and reports which ran: rljax's own
(``rljax/examples``, the default) or RLlib's, rewritten by ``rljax port`` first.

    python benchmarks/rllib_examples.py                          # rljax/examples, --stop-iters=1
    python benchmarks/rllib_examples.py DIR --flags "--stop-iters=2 --no-tune" --timeout 300

Every ``.py`` file under the directory that uses RLlib's harness
(``add_rllib_example_script_args``) or has a ``__main__`` block runs in its own process, one
after another, from its own folder, with ``--flags`` added to its command line. A script that
imports ``ray`` is ported first (``rljax.utils.port``; into a temporary folder, the original is
left alone), and the notes of the port are reported. Prints JSON: per script its exit status,
seconds, the port's notes and, for a failure, the last error line; and how many ran.
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
    """The runnable scripts under ``directory``, sorted."""
    found = []
    for path in sorted(directory.rglob("*.py")):
        text = path.read_text(errors="replace")
        if path.name.startswith("_") or "/envs/classes/" in path.as_posix():
            continue
        if "def add_rllib_example_script_args" in text:  # the harness itself
            continue
        if "add_rllib_example_script_args(" in text or '__name__ == "__main__"' in text:
            found.append(path)
    return found


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
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, target.name, *flags],
            cwd=target.parent,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(path.parent)])},
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
        last = lines[-1] if lines else (output.strip().splitlines() or [""])[-1]
        entry["error"] = last[:300]
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", default=str(ROOT / "rljax" / "examples"))
    parser.add_argument("--flags", default="--stop-iters=1 --verbose=0", help="added to each")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per script")
    parser.add_argument("--only", default=None, help="a regex: run the scripts it matches")
    args = parser.parse_args(argv)
    base = Path(args.directory).resolve()
    if not base.is_dir():
        parser.error(f"{args.directory!r} is not a directory")
    scripts = scripts_in(base)
    if args.only:
        scripts = [s for s in scripts if re.search(args.only, s.as_posix())]
    flags = shlex.split(args.flags)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rljax_port_") as work:
        entries = [run_one(s, flags, args.timeout, Path(work), base) for s in scripts]
    report = {
        "directory": str(base),
        "flags": flags,
        "num_scripts": len(entries),
        "num_ran": sum(e["ran"] for e in entries),
        "seconds": round(time.perf_counter() - start, 1),
        "cpu_count": os.cpu_count(),
        "scripts": entries,
    }
    print(json.dumps(report, indent=2))
    return 0 if report["num_ran"] == len(entries) else 1


if __name__ == "__main__":
    sys.exit(main())
