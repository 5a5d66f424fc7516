"""The live table of trials that ``Tuner.fit()`` shows with ``RunConfig(verbose=1)`` or more
(Ray Tune's status table).

One row per trial: its name, status, the searched values, how many results it reported, the
metric (when ``TuneConfig.metric`` is set) and its total time. On a terminal the table is
redrawn in place as trials report; otherwise (a log file, a pipe) it is printed once, at the end,
unless intermediate tables are asked for (``RunConfig(verbose=3)``, or a ``CLIReporter`` given
``max_report_frequency`` or ``print_intermediate_tables=True``): then it is printed at most every
``interval_s`` seconds, and once more at the end. ``TrialTable.render()`` gives the text alone.
``CLIReporter`` (given as ``RunConfig(progress_reporter=...)``) chooses the columns and how often
the table prints.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from rljax.tune.stopper import flatten
from rljax.utils.errors import ConfigError

MAX_ROWS = 20
DEFAULT_REPORT_FREQUENCY_S = 5.0  # CLIReporter's max_report_frequency when not given
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
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrialTable:
    """The trials' rows and how they print.

    Args:
      searched: The key paths of the searched values (a column each, named by the path's keys
        joined with ``/``).
      metric: ``TuneConfig.metric`` (a ``/``-joined result key), shown as a column; None: no
        metric column.
      mode: ``"min"`` or ``"max"``: names the best trial above the table.
      columns: Result keys (``/``-joined for nested ones) to their headings: when given, these
        are the columns after the searched values, in place of the iteration, the metric and the
        time.
      headings: Headings of the searched values' columns, by position (default: the paths).
      sort_by_metric: Rows ordered by the metric, best first (needs ``metric`` and ``mode``).
    """

    searched: Sequence[Sequence[Any]] = ()
    metric: str | None = None
    mode: str | None = None
    max_rows: int = MAX_ROWS
    rows: dict[str, _Row] = field(default_factory=dict)
    columns: Mapping[str, str] | None = None
    headings: Sequence[str] | None = None
    sort_by_metric: bool = False

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
        for key in self.columns or ():
            if key in flat:
                row.values[key] = flat[key]

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
        searched = list(self.headings or ("/".join(map(str, p)) for p in self.searched))
        if self.columns is not None:
            header = ["Trial name", "status", *searched, *self.columns.values()]
        else:
            header = ["Trial name", "status", *searched, "iter"]
            if self.metric is not None:
                header.append(self.metric)
            header.append("total time (s)")
        shown = list(self.rows.values())
        if self.sort_by_metric and best is not None:
            sign = -1.0 if self.mode == "max" else 1.0

            def score(row: _Row) -> float:
                if isinstance(row.metric, (int, float)) and math.isfinite(float(row.metric)):
                    return sign * float(row.metric)
                return math.inf

            shown.sort(key=score)
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
            if self.columns is not None:
                cells += [_cell(row.values.get(key)) for key in self.columns]
                body.append([_cell(c) for c in cells])
                continue
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
    place, at most every ``redraw_s`` seconds; elsewhere (a log file, a pipe) ``update()`` prints
    nothing, and the table is printed once, by ``close()``, unless ``intermediate``.
    ``close()`` draws the final table on either. ``log(line)`` prints a line (above the table on
    a terminal). The stream defaults to ``sys.stdout`` as it is at each write.

    Args:
      table: The trials' rows.
      stream: Where the table goes (None: ``sys.stdout`` at each write).
      tty: Whether the stream is a terminal (None: ``stream.isatty()``).
      interval_s: Off a terminal, with ``intermediate``, the least seconds between two tables.
      redraw_s: On a terminal, the least seconds between two redraws.
      clock: Seconds, for the intervals and the running time.
      intermediate: Tables as the trials report, before the final one: None (default) on a
        terminal only; True on any stream too (off a terminal at most every ``interval_s``);
        False on none (the final table alone, on a terminal too).
    """

    def __init__(
        self,
        table: TrialTable,
        stream: TextIO | None = None,
        tty: bool | None = None,
        interval_s: float = DEFAULT_REPORT_FREQUENCY_S,
        redraw_s: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
        intermediate: bool | None = None,
    ):
        self.table = table
        self.intermediate = intermediate
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

    def _intermediate(self) -> bool:
        return self.tty if self.intermediate is None else self.intermediate

    def update(self, force: bool = False) -> None:
        """Draws the table if intermediate tables are shown and one is due, or if ``force``."""
        if force:
            self._draw()
            return
        if not self._intermediate():
            return
        wait = self.redraw_s if self.tty else self.interval_s
        if self._last is None or self._clock() - self._last >= wait:
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


def _columns(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = [(key, key) for key in value]
    else:
        raise ConfigError(
            f"CLIReporter({where}={value!r}): use a list of keys or a dict of keys to headings"
        )
    for key, heading in items:
        if not isinstance(key, str) or not isinstance(heading, str):
            raise ConfigError(
                f"CLIReporter({where}): key {key!r} and heading {heading!r} must be strings"
            )
    return dict(items)


class CLIReporter:
    """The trial table's columns and how often it prints (Tune's ``CLIReporter``), given as
    ``RunConfig(progress_reporter=CLIReporter(...))``.

    Args:
      metric_columns: Result keys to show, ``/``-joined for nested ones
        (``"env_runners/episode_return_mean"``): a list (the key is the heading) or a dict of key
        to heading. None: the default columns (iterations, ``TuneConfig.metric``, total time).
      parameter_columns: The config keys to show (``/``-joined), a list or a dict of key to
        heading. None: the searched values.
      max_progress_rows: At most this many trials' rows (the running and newest kept in view).
      max_report_frequency: Print the table at most every this many seconds (default 5; on a
        terminal it is redrawn in place at that rate). Given, it asks for intermediate tables off
        a terminal too (a log file, a pipe), where by default only the final table is printed.
      print_intermediate_tables: Tables as the trials report, before the final one: True on any
        stream, False on none (the final table alone, on a terminal too); None (default): on a
        terminal, and off one when ``max_report_frequency`` is given or with
        ``RunConfig(verbose=3)``.
      metric, mode: The metric and mode naming the best trial (default ``TuneConfig``'s).
      sort_by_metric: Order the rows by the metric, best first.
      total_samples, max_error_rows, max_column_length, infer_limit: Tune's layout options,
        accepted and not used (cells are cut at 24 characters, errors are printed as lines above
        the table).
    """

    def __init__(
        self,
        *,
        metric_columns: Sequence[str] | Mapping[str, str] | None = None,
        parameter_columns: Sequence[str] | Mapping[str, str] | None = None,
        total_samples: int | None = None,
        max_progress_rows: int = MAX_ROWS,
        max_error_rows: int = 20,
        max_column_length: int = 20,
        max_report_frequency: float | None = None,
        infer_limit: int = 3,
        print_intermediate_tables: bool | None = None,
        metric: str | None = None,
        mode: str | None = None,
        sort_by_metric: bool = False,
    ):
        self._metric_columns = _columns(metric_columns, "metric_columns")
        self._parameter_columns = _columns(parameter_columns, "parameter_columns")
        if (
            isinstance(max_progress_rows, bool)
            or not isinstance(max_progress_rows, int)
            or max_progress_rows < 1
        ):
            raise ConfigError(
                f"CLIReporter(max_progress_rows={max_progress_rows!r}): use an int >= 1"
            )
        self._frequency_given = max_report_frequency is not None
        if max_report_frequency is None:
            max_report_frequency = DEFAULT_REPORT_FREQUENCY_S
        if (
            isinstance(max_report_frequency, bool)
            or not isinstance(max_report_frequency, (int, float))
            or max_report_frequency < 0
        ):
            raise ConfigError(
                f"CLIReporter(max_report_frequency={max_report_frequency!r}): use seconds >= 0"
            )
        if print_intermediate_tables not in (None, True, False):
            raise ConfigError(
                f"CLIReporter(print_intermediate_tables={print_intermediate_tables!r}): use "
                "True, False or None"
            )
        if mode not in (None, "min", "max"):
            raise ConfigError(f"CLIReporter(mode={mode!r}): use 'min', 'max' or None")
        self.max_progress_rows = max_progress_rows
        self.max_report_frequency = float(max_report_frequency)
        self.metric, self.mode = metric, mode
        self.sort_by_metric = bool(sort_by_metric)
        self.total_samples, self.max_error_rows = total_samples, max_error_rows
        self.max_column_length, self.infer_limit = max_column_length, infer_limit
        self.print_intermediate_tables = print_intermediate_tables

    @property
    def metric_columns(self) -> dict[str, str] | None:
        """Result key to heading (None: the default columns)."""
        return None if self._metric_columns is None else dict(self._metric_columns)

    @property
    def parameter_columns(self) -> dict[str, str] | None:
        """Config key to heading (None: the searched values)."""
        return None if self._parameter_columns is None else dict(self._parameter_columns)

    def add_metric_column(self, metric: str, representation: str | None = None) -> None:
        """One more result column (Tune's method); a key shown already raises ``ValueError``."""
        columns = self._metric_columns if self._metric_columns is not None else {}
        if metric in columns:
            raise ValueError(f"column {metric!r} is already shown")
        columns[metric] = representation or metric
        self._metric_columns = columns

    def add_parameter_column(self, parameter: str, representation: str | None = None) -> None:
        """One more config column (Tune's method); a key shown already raises ``ValueError``."""
        columns = self._parameter_columns if self._parameter_columns is not None else {}
        if parameter in columns:
            raise ValueError(f"column {parameter!r} is already shown")
        columns[parameter] = representation or parameter
        self._parameter_columns = columns

    def table(
        self, searched: Sequence[Sequence[Any]], metric: str | None, mode: str | None
    ) -> TrialTable:
        """The ``TrialTable`` these settings make, for the searched paths and ``TuneConfig``'s
        metric and mode."""
        params = self._parameter_columns
        return TrialTable(
            searched=searched if params is None else [tuple(k.split("/")) for k in params],
            metric=self.metric or metric,
            mode=self.mode or mode,
            max_rows=self.max_progress_rows,
            columns=self._metric_columns,
            headings=None if params is None else list(params.values()),
            sort_by_metric=self.sort_by_metric,
        )

    def reporter(self, table: TrialTable, verbose: int = 1) -> ProgressReporter:
        """The ``ProgressReporter`` that shows ``table`` at this reporter's frequency.

        Args:
          table: The trials' rows.
          verbose: ``RunConfig.verbose``: 3 asks for intermediate tables off a terminal too,
            unless ``print_intermediate_tables`` says otherwise.

        Returns:
          The reporter, its ``intermediate`` resolved from ``print_intermediate_tables``,
          whether ``max_report_frequency`` was given, and ``verbose``.
        """
        every = self.max_report_frequency
        intermediate = self.print_intermediate_tables
        if intermediate is None and (self._frequency_given or verbose >= 3):
            intermediate = True
        return ProgressReporter(table, interval_s=every, redraw_s=every, intermediate=intermediate)

    def __repr__(self) -> str:
        return (
            f"CLIReporter(metric_columns={self._metric_columns!r}, "
            f"max_report_frequency={self.max_report_frequency})"
        )


class JupyterNotebookReporter(CLIReporter):
    """Tune's notebook reporter: the same table and arguments as ``CLIReporter``.
    ``overwrite`` is accepted as Tune's: a notebook cell is not a terminal, so the table prints
    once at the end unless intermediate tables are asked for (``max_report_frequency``,
    ``print_intermediate_tables``)."""

    def __init__(self, *, overwrite: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.overwrite = bool(overwrite)


__all__ = ["CLIReporter", "JupyterNotebookReporter", "ProgressReporter", "TrialTable"]
