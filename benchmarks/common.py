"""What every benchmark report records about the machine it ran on, and where it goes; a child
process driven one line at a time (``LineWorker``)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# --quick runs (smoke tests): XLA compiles about twice as fast with most of its optimisations off
# (JAX's ``JAX_DISABLE_MOST_OPTIMIZATIONS``: backend optimisation level 0, no expensive LLVM
# passes, set per compilation) and faster again with the CPU backend's older fusion emitters
# (``QUICK_XLA_FLAG``: SAC's and DQN's fused iterations compiled in 0.6x the time), and a quick
# run's figures mean nothing anyway. The test suite sets the same two, so a quick run's programs
# and the suite's share one persistent-cache key.
QUICK_ENV = {"JAX_DISABLE_MOST_OPTIMIZATIONS": "1"}
QUICK_XLA_FLAG = "--xla_cpu_use_fusion_emitters=false"


def quick_additions(env: Mapping[str, str]) -> dict[str, str]:
    """The variables a ``--quick`` run sets over ``env``: ``QUICK_ENV``, and ``QUICK_XLA_FLAG``
    appended to ``XLA_FLAGS`` unless those already name the option."""
    added = dict(QUICK_ENV)
    flags = env.get("XLA_FLAGS", "")
    if QUICK_XLA_FLAG.split("=")[0].lstrip("-") not in flags:
        added["XLA_FLAGS"] = f"{flags} {QUICK_XLA_FLAG}".strip()
    return added


def set_quick_compilation() -> None:
    """Compiles this process's later programs the quick way (``quick_additions``); call before
    JAX is imported."""
    os.environ.update(quick_additions(os.environ))


def quick_env() -> dict[str, str]:
    """The environment for a ``--quick`` run's child process: ``quick_additions`` applied."""
    return {**os.environ, **quick_additions(os.environ)}


def package_versions(names: list[str]) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def xla_pool_threads() -> int | None:
    """The threads of JAX's CPU client's pool in this process (XLA names them ``tf_XLAEigen``;
    0 before the client exists), from Linux's ``/proc``; None elsewhere."""
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return None
    names = []
    for task in tasks.iterdir():
        try:
            names.append((task / "comm").read_text().strip())
        except OSError:  # a thread that ended meanwhile
            continue
    return names.count("tf_XLAEigen")


def machine_info(packages: list[str]) -> dict[str, Any]:
    """CPU, platform, package versions, usable cores and the load average at the start."""
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "versions": package_versions(packages),
    }
    if hasattr(os, "sched_getaffinity"):
        info["cpus_usable"] = len(os.sched_getaffinity(0))
    if hasattr(os, "getloadavg"):
        info["load_average_at_start"] = list(os.getloadavg())
    return info


def save_report(
    report: dict[str, Any], out: str | os.PathLike[str] | None, name: str
) -> Path | None:
    """Prints ``report`` as JSON on stdout and, unless ``out`` is None, writes it as
    ``out/<name>.json`` (creating ``out``); returns the file's path (None: not written)."""
    text = json.dumps(report, indent=2)
    print(text)
    if out is None:
        return None
    path = Path(out) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    return path


class LineWorker:
    """A child process that answers each line written to its stdin with one ``RESULT <json>``
    line on its stdout (and one when it has started): so its calls take turns with the
    parent's in one run.

    Args:
      argv: The child's command line.
      env: Its environment (None: this process's).
      what: How errors name it.
    """

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, what: str = "child"):
        self.what = what
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=env
        )
        self.started = self.read()

    def read(self) -> dict[str, Any]:
        """The child's next ``RESULT`` line, decoded."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("RESULT "):
                return dict(json.loads(line[len("RESULT ") :]))
        raise RuntimeError(f"the {self.what} exited with status {self.proc.wait()}")

    def ask(self, line: str) -> dict[str, Any]:
        """Writes ``line`` and returns the child's answer."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.read()

    def stop(self, timeout: float = 120) -> None:
        """Closes the child's stdin (its cue to finish) and waits; kills it after ``timeout``."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
