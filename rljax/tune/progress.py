"""The live table of trials that ``Tuner.fit()`` shows with ``RunConfig(verbose=1)`` or more
(Ray Tune's status table).

One row per trial: its name, status, the searched values, how many results it reported, the
metric (when ``TuneConfig.metric`` is set) and its total time. On a terminal the table is
redrawn in place as trials report; otherwise (a log file, a pipe) it is printed at most every
``interval_s`` seconds, and once more at the end. ``TrialTable.render()`` gives the text alone.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from rljax.tune.stopper import flatten

MAX_ROWS = 20
_STATUS_ORDER = ("TERMINATED", "ERROR", "RUNNING", "PENDING")
_CELL = 24  # the widest a cell gets; longer text is cut, ending in "..."


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    text = str(value)
    return text if len(text) <= _CELL else text[: _CELL - 3] + "..."


def _heading(key: str) -> str:
    """A column's heading: a long ``/``-joined key by its last part (``episode_return_mean``),
    then cut."""
    if len(key) > _CELL and "/" in key:
        key = key.rsplit("/", 1)[1]
    return _cell(key)


def _lookup(tree: Any, path: Sequence[Any]) -> Any:
    value = tree
    try:
        for key in path:
            value = value[key]
    except (KeyError, IndexError, TypeError):
        return None
    return value


@dataclass
class _Row:
    name: str
    config: Any
    status: str = "PENDING"
    iterations: int = 0
    metric: Any = None
    time_s: float | None = None


@dataclass
class TrialTable:
    """The trials' rows and how they print.

    Args:
      searched: The key paths of the searched values (a column each, named by the path's keys
        joined with ``/``).
      metric: ``TuneConfig.metric`` (a ``/``-joined result key), shown as a column; None: no
        metric column.
      mode: ``"min"`` or ``"max"``: names the best trial above the table.
    """

    searched: Sequence[Sequence[Any]] = ()
    metric: str | None = None
    mode: str | None = None
    max_rows: int = MAX_ROWS
    rows: dict[str, _Row] = field(default_factory=dict)

    def add(self, trial_id: str, name: str, config: Any, status: str = "PENDING") -> None:
        """A trial, in the order the trials run."""
        self.rows[trial_id] = _Row(name, config, status)

    def set_status(self, trial_id: str, status: str) -> None:
        self.rows[trial_id].status = status

    def report(self, trial_id: str, result: Mapping[str, Any]) -> None:
        """A trial's newest result: its iteration, metric and time."""
        row = self.rows[trial_id]
        flat = flatten(result)
        row.iterations = int(flat.get("training_iteration", row.iterations + 1))
        if self.metric is not None and self.metric in flat:
            row.metric = flat[self.metric]
        if isinstance(flat.get("time_total_s"), (int, float)):
            row.time_s = float(flat["time_total_s"])

    def _best(self) -> _Row | None:
        if self.metric is None or self.mode is None:
            return None
        scored = [
            (float(r.metric), r)
            for r in self.rows.values()
            if isinstance(r.metric, (int, float)) and math.isfinite(float(r.metric))
        ]
        if not scored:
            return None
        pick = max if self.mode == "max" else min
        return pick(scored, key=lambda s: s[0])[1]

    def render(self, elapsed_s: float | None = None) -> str:
        """The status lines and the table, as text ending in a newline."""
        counts = {status: 0 for status in _STATUS_ORDER}
        for row in self.rows.values():
            counts[row.status] = counts.get(row.status, 0) + 1
        counts = {status: n for status, n in counts.items() if n}
        lines = [
            f"Trial status: {len(self.rows)} trials: "
            + " | ".join(f"{n} {status}" for status, n in counts.items())
        ]
        if elapsed_s is not None:
            lines.append(f"Total running time: {elapsed_s:.1f} s")
        best = self._best()
        if best is not None:
            lines.append(f"Current best trial: {best.name} with {self.metric}={_cell(best.metric)}")
        header = ["Trial name", "status", *("/".join(map(str, p)) for p in self.searched), "iter"]
        if self.metric is not None:
            header.append(self.metric)
        header.append("total time (s)")
        shown = list(self.rows.values())
        hidden = 0
        if len(shown) > self.max_rows:  # the running and newest trials stay in view
            hidden = len(shown) - self.max_rows
            running = [r for r in shown if r.status == "RUNNING"]
            others = [r for r in shown if r.status != "RUNNING"]
            shown = [
                r for r in shown if r in running or r in others[-(self.max_rows - len(running)) :]
            ]
        body = []
        for row in shown:
            cells = [row.name, row.status]
            cells += [_cell(_lookup(row.config, p)) for p in self.searched]
            cells.append(str(row.iterations))
            if self.metric is not None:
                cells.append(_cell(row.metric))
            cells.append("" if row.time_s is None else f"{row.time_s:.1f}")
            body.append([_cell(c) for c in cells])
        heads = [_heading(h) for h in header]
        widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(heads)]
        rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

        def line(cells: list[str]) -> str:
            left = 2  # names and statuses left-aligned, values right-aligned
            parts = [
                c.ljust(w) if i < left else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            ]
            return "| " + " | ".join(parts) + " |"

        lines += [rule, line(heads), rule, *(line(r) for r in body), rule]
        if hidden:
            lines.append(f"... {hidden} more trials not shown")
        return "\n".join(lines) + "\n"


class ProgressReporter:
    """Shows a ``TrialTable`` on a stream as the trials run.

    On a terminal (``tty``, default: ``stream.isatty()``) each ``update()`` redraws the table in
    place, at most every ``redraw_s`` seconds; elsewhere it prints the table at most every
    ``interval_s`` seconds. ``close()`` prints it once more. ``log(line)`` prints a line above
    the table. The stream defaults to ``sys.stdout`` as it is at each write.
    """

    def __init__(
        self,
        table: TrialTable,
        stream: TextIO | None = None,
        tty: bool | None = None,
        interval_s: float = 5.0,
        redraw_s: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.table = table
        self._stream = stream
        self._tty = tty
        self.interval_s, self.redraw_s = interval_s, redraw_s
        self._clock = clock
        self._start = clock()
        self._last: float | None = None
        self._drawn_lines = 0  # lines of the table now on a terminal's screen

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stdout

    @property
    def tty(self) -> bool:
        if self._tty is not None:
            return self._tty
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def _erase(self) -> None:
        if self._drawn_lines:
            # Up to the table's first line, then clear to the end of the screen.
            self.stream.write(f"\x1b[{self._drawn_lines}F\x1b[J")
            self._drawn_lines = 0

    def _draw(self) -> None:
        text = self.table.render(self._clock() - self._start)
        if self.tty:
            self._erase()
            self._drawn_lines = text.count("\n")
        else:
            text += "\n"
        self.stream.write(text)
        self.stream.flush()
        self._last = self._clock()

    def update(self, force: bool = False) -> None:
        """Draws the table if it is due (or ``force``)."""
        wait = self.redraw_s if self.tty else self.interval_s
        if force or self._last is None or self._clock() - self._last >= wait:
            self._draw()

    def result(self, trial_id: str, result: Mapping[str, Any]) -> None:
        """A trial's new result: into the table, which is drawn if due."""
        self.table.report(trial_id, result)
        self.update()

    def status(self, trial_id: str, status: str) -> None:
        """A trial's new status: into the table, which is drawn if due."""
        self.table.set_status(trial_id, status)
        self.update()

    def log(self, line: str) -> None:
        """Prints ``line``; on a terminal above the table, which is drawn again below it."""
        if self.tty and self._drawn_lines:
            self._erase()
            self.stream.write(line + "\n")
            self._draw()
        else:
            self.stream.write(line + "\n")
            self.stream.flush()

    def close(self) -> None:
        """The table as it ends."""
        self._draw()
        self._drawn_lines = 0


__all__ = ["ProgressReporter", "TrialTable"]
