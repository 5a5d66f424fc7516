"""``MetricsLogger``: values logged by user code, reduced once per iteration as RLlib reduces them.

Callbacks log with ``metrics_logger.log_value(key, value, reduce=..., window=...)``; the
algorithm reduces its loggers when it builds each result, and the values appear there under
their (nested) keys: episode hooks' under ``env_runners``, ``on_train_result``'s and the other
algorithm-level hooks' at the top level of the next result.

The semantics are RLlib 2.60's (``ray.rllib.utils.metrics.metrics_logger``):

- no ``reduce``: ``"ema"`` (an exponential moving average, ``ema_coeff=0.01`` unless given,
  the first value starts it, kept across iterations); with a ``window``: ``"mean"``;
- ``"mean"``, ``"min"``, ``"max"``, ``"sum"``: over the values logged since the last reduction
  (the last ``window`` of them where a window is given); each reduction starts the key afresh,
  and an iteration that logged nothing reports NaN;
- ``"lifetime_sum"``: the sum over the whole run, kept;
- ``"item"``: the last value logged (any object) since the last reduction, else None;
- ``"item_series"``: the values logged since the last reduction (any objects: a video's
  frames), the last ``window`` of them;
- the first ``log_value`` of a key fixes how it reduces; later calls log into it whatever
  settings they pass, as RLlib's do. ``with_throughput=True`` (``"sum"``, ``"lifetime_sum"``)
  also tracks the key's rate: ``peek(key, throughput=True)`` is what was added since the last
  reduction, per second (for a ``"lifetime_sum"``, RLlib's dict of that rate and the rate
  since the logger's start).

Older RLlib forms: ``reduce="sum", clear_on_reduce=False`` is ``"lifetime_sum"`` and
``clear_on_reduce`` is otherwise ignored with a warning, as in RLlib 2.60; ``reduce="mean"``
with an ``ema_coeff`` and no window, which RLlib 2.60 refuses, is read as RLlib before 2.50
read it, an ``"ema"``. A logger's values live for the process: a checkpoint does not save them,
so a restored run's lifetime sums start again at 0.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import math
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from rljax.utils import once

logger = logging.getLogger("rljax")

REDUCTIONS = ("mean", "min", "max", "sum", "ema", "lifetime_sum", "item", "item_series")
SERIES = ("mean", "min", "max", "sum")
DEFAULT_EMA_COEFF = 0.01


def _key_path(key: Any) -> tuple[str, ...]:
    """``"a"`` -> ``("a",)``; ``("a", "b")`` stays; ``"a/b"`` is one key, as in RLlib."""
    path = (key,) if isinstance(key, str) else tuple(key) if isinstance(key, tuple | list) else None
    if not path or not all(isinstance(p, str) and p for p in path):
        raise ValueError(
            f"metrics key {key!r} must be a non-empty string or a tuple of non-empty strings"
        )
    return path


def _warn_once(key: str, text: str) -> None:
    if once.first_time("metrics_logger", key):
        logger.warning(text)


def resolve_reduce(
    reduce: str | None, window: Any, ema_coeff: Any, clear_on_reduce: bool | None
) -> str:
    """The reduction a ``log_value`` call asks for, RLlib 2.60's way (module docstring)."""
    if clear_on_reduce is not None:
        if reduce == "sum" and clear_on_reduce is False:
            return "lifetime_sum"
        _warn_once(
            "clear_on_reduce",
            "MetricsLogger: clear_on_reduce is RLlib's deprecated setting and is ignored: "
            "'mean', 'min', 'max', 'sum' and 'item_series' start afresh at each reduction, "
            "'ema' and 'lifetime_sum' keep their value",
        )
    if reduce is None:
        return "mean" if window is not None else "ema"
    if reduce == "mean" and ema_coeff is not None and window is None:
        return "ema"  # RLlib before 2.50: a mean with a coefficient was the moving average
    return reduce


class Stats:
    """One key's values and how they reduce (see the module docstring)."""

    def __init__(
        self,
        reduce: str = "ema",
        window: int | float | None = None,
        ema_coeff: float | None = None,
        with_throughput: bool = False,
    ):
        if reduce not in REDUCTIONS:
            raise ValueError(
                f"reduce={reduce!r} is not a reduction; use one of {', '.join(REDUCTIONS)}, or "
                "None (an EMA, or a mean with a window)"
            )
        if window is not None and not (
            (isinstance(window, int) and not isinstance(window, bool) and window >= 1)
            or window == float("inf")
        ):
            raise ValueError(f"window={window!r} must be an int >= 1, float('inf') or None")
        if window == float("inf"):
            window = None
        if reduce == "ema":
            if window is not None:
                raise ValueError(
                    "reduce='ema' takes no window (RLlib refuses both too); for the mean of "
                    "the last n values use reduce='mean', window=n"
                )
            if ema_coeff is None:
                ema_coeff = DEFAULT_EMA_COEFF
            if not (isinstance(ema_coeff, float | int) and 0 < ema_coeff <= 1):
                raise ValueError(f"ema_coeff={ema_coeff!r} must be in (0, 1]")
        elif ema_coeff is not None:
            raise ValueError(
                f"ema_coeff={ema_coeff} needs reduce='ema' (or 'mean' without a window), not "
                f"{reduce!r}"
            )
        if reduce in ("lifetime_sum", "item"):
            window = None
        if with_throughput and reduce not in ("sum", "lifetime_sum"):
            raise ValueError(
                f"with_throughput=True needs reduce='sum' or 'lifetime_sum', not {reduce!r}"
            )
        self.name = reduce
        self.window = window
        self.ema_coeff = ema_coeff
        self.with_throughput = bool(with_throughput)
        self.values: collections.deque[Any] = collections.deque(
            maxlen=window if isinstance(window, int) else None
        )
        self._ema = math.nan
        self._lifetime = 0.0
        self._since = 0.0  # lifetime_sum's increase since the last reduction (throughput)
        self._item: Any = None
        self._created_at = self._reduced_at = time.perf_counter()

    def push(self, value: Any) -> None:
        if self.name in ("item_series", *SERIES):
            self.values.append(value if self.name == "item_series" else float(np.asarray(value)))
        elif self.name == "item":
            self._item = value
        elif self.name == "lifetime_sum":
            x = float(np.asarray(value))
            self._lifetime += x
            self._since += x
        else:  # ema; a NaN leaves it as it is, as in RLlib
            x = float(np.asarray(value))
            if math.isnan(x):
                return
            c = float(self.ema_coeff or DEFAULT_EMA_COEFF)
            self._ema = x if math.isnan(self._ema) else (1.0 - c) * self._ema + c * x

    def peek(self) -> Any:
        if self.name == "ema":
            return self._ema
        if self.name == "lifetime_sum":
            return self._lifetime
        if self.name == "item":
            return self._item
        if self.name == "item_series":
            return list(self.values)
        if not self.values:
            return math.nan
        v = np.asarray(self.values, np.float64)
        if np.isnan(v).all():
            return math.nan
        if self.name == "mean":
            return float(np.nanmean(v))
        if self.name == "sum":
            return float(np.nansum(v))
        return float(np.nanmin(v) if self.name == "min" else np.nanmax(v))

    def throughput(self) -> float | dict[str, float]:
        """The key's rate per second since the last reduction (or since it was first logged):
        what was added since then, over the seconds since then, as RLlib's throughput is. A
        ``"lifetime_sum"`` gives RLlib's dict: that rate and the whole count's since the start."""
        now = time.perf_counter()

        def rate(grown: float, since: float) -> float:
            seconds = now - since
            return float(grown) / seconds if seconds > 0 and not math.isnan(grown) else math.nan

        if self.name == "lifetime_sum":
            return {
                "throughput_since_last_reduce": rate(self._since, self._reduced_at),
                "throughput_since_last_restore": rate(self._lifetime, self._created_at),
            }
        return rate(self.peek(), self._reduced_at)

    def reduce(self) -> Any:
        out = self.peek()
        self._reduced_at = time.perf_counter()
        self._since = 0.0
        if self.name in ("item_series", *SERIES):
            self.values.clear()
        elif self.name == "item":
            self._item = None
        return out


class MetricsLogger:
    """Values logged under (nested) keys and reduced by ``reduce()`` (RLlib's API).

    ``root`` and ``stats_cls_lookup`` are RLlib's constructor arguments; one logger here is
    always its own root, and the reductions are the module docstring's.
    """

    def __init__(self, root: bool = True, stats_cls_lookup: Any = None) -> None:
        if stats_cls_lookup is not None:
            raise ValueError(
                "MetricsLogger(stats_cls_lookup=...): custom Stats classes are RLlib's; use "
                f"one of the reductions {', '.join(REDUCTIONS)}"
            )
        self._stats: dict[tuple[str, ...], Stats] = {}

    def log_value(
        self,
        key: str | tuple[str, ...],
        value: Any,
        *,
        reduce: str | None = None,
        window: int | float | None = None,
        ema_coeff: float | None = None,
        percentiles: Any = None,
        clear_on_reduce: bool | None = None,
        with_throughput: bool | None = None,
        **kwargs: Any,
    ) -> None:
        """Logs ``value`` under ``key``; the first call for a key fixes how it reduces.

        Raises:
          ValueError: For a bad key or reduction, or a value that is not one number where
            the reduction needs one (``"item"`` and ``"item_series"`` take any object).
        """
        path = _key_path(key)
        if percentiles:
            raise ValueError(
                f"log_value({key!r}, percentiles=...): RLlib's percentiles are not built here; "
                "log the values with reduce='item_series', window=n and compute them from the "
                "result"
            )
        stats = self._stats.get(path)
        if stats is None:
            name = resolve_reduce(reduce, window, ema_coeff, clear_on_reduce)
            for other in self._stats:
                if other[: len(path)] == path or path[: len(other)] == other:
                    raise ValueError(
                        f"metrics key {'/'.join(path)!r} clashes with {'/'.join(other)!r}: a key "
                        "cannot be both a value and a group of values"
                    )
            new = Stats(name, window, ema_coeff, bool(with_throughput))
        else:
            name = stats.name
        if name not in ("item", "item_series"):
            try:
                x = np.asarray(value)
                ok = x.shape == () and x.dtype.kind in "biuf"
            except Exception:  # noqa: BLE001
                ok = False
            if not ok:
                raise ValueError(
                    f"log_value({key!r}, {value!r}): a value reduced with {name!r} must be one "
                    "number; log other values with reduce='item' or 'item_series'"
                )
        if stats is None:
            stats = self._stats[path] = new
        stats.push(value)

    @contextlib.contextmanager
    def log_time(
        self,
        key: str | tuple[str, ...],
        *,
        reduce: str = "ema",
        window: int | float | None = None,
        ema_coeff: float | None = None,
        **kwargs: Any,
    ) -> Iterator[None]:
        """Logs the seconds a ``with`` block takes under ``key`` (RLlib's ``log_time``); a
        block that raises logs nothing."""
        start = time.perf_counter()
        yield  # a block that raises logs nothing, and its exception is not masked
        self.log_value(
            key, time.perf_counter() - start, reduce=reduce, window=window, ema_coeff=ema_coeff
        )

    def log_dict(
        self,
        stats_dict: dict[str, Any],
        *,
        key: Any = None,
        reduce: str | None = "mean",
        **kwargs: Any,
    ) -> None:
        """Logs every leaf of a nested dict (under ``key``, if given) with ``log_value``;
        ``reduce`` defaults to ``"mean"``, as RLlib's ``log_dict`` does."""
        prefix = () if key is None else _key_path(key)
        for path, value in _leaves(stats_dict, prefix):
            self.log_value(path, value, reduce=reduce, **kwargs)

    def aggregate(self, stats_dicts: list[dict[str, Any]], *, key: Any = None) -> None:
        """Merges the metrics of several loggers or runners into one and sets it under ``key``
        until the next ``reduce()``, as RLlib's ``aggregate`` merges parallel components'
        stats. Other loggers' ``reduce()`` dicts merge by each key's reduction (``"sum"`` and
        ``"lifetime_sum"`` add up, ``"max"`` / ``"min"`` take the max / min, the others
        average). Plain dicts (runners' ``get_metrics()``) merge by name: ``num_*`` counts add
        up, ``*_max`` / ``*_min`` take the max / min, and ``*_mean`` values are weighted by
        each dict's ``num_episodes`` where it has one (the mean over all the runners'
        episodes); other numbers are averaged."""
        prefix = () if key is None else _key_path(key)
        pooled: dict[tuple[str, ...], list[tuple[float, float | None]]] = {}
        how: dict[tuple[str, ...], str] = {}
        for d in stats_dicts:
            weight = d.get("num_episodes") if isinstance(d, dict) else None
            how.update(getattr(d, "reductions", {}))
            for path, value in _leaves(d, ()):
                pooled.setdefault(path, []).append((float(np.asarray(value)), weight))
        for path, items in pooled.items():
            reduction = _reduction_of(path[-1], how.get(path))
            stats = Stats(reduction, window=None if reduction == "sum" else 1)
            stats.push(_combined(path[-1], items, reduction))
            full = (*prefix, *path)
            for other in [p for p in self._stats if p != full]:
                if other[: len(full)] == full or full[: len(other)] == other:
                    del self._stats[other]  # the aggregate replaces what was there
            self._stats[full] = stats

    def pop_reduced(self, key: str | tuple[str, ...]) -> dict[str, Any]:
        """The reduced values under ``key`` (a nested dict, empty if none), removed from the
        logger."""
        path = _key_path(key)
        inside = [p for p in self._stats if p[: len(path)] == path and len(p) > len(path)]
        out = _nest({p[len(path) :]: self._stats.pop(p).reduce() for p in inside})
        return out

    def peek(
        self,
        key: str | tuple[str, ...],
        *,
        default: Any = None,
        compile: bool = True,
        throughput: bool = False,
    ) -> Any:
        """The reduced value of ``key`` now, without clearing it (``default`` if never logged);
        ``throughput=True``: its rate per second since the last reduction (a key logged with
        ``with_throughput=True``)."""
        path = _key_path(key)
        if throughput:
            stats = self._stats.get(path)
            if stats is None or not stats.with_throughput:
                if default is not None:
                    return default
                raise KeyError(
                    f"no throughput for {'/'.join(path)!r}: log it with reduce='sum' or "
                    "'lifetime_sum' and with_throughput=True"
                )
            return stats.throughput()
        if path in self._stats:
            return self._stats[path].peek()
        sub = {p[len(path) :]: s.peek() for p, s in self._stats.items() if p[: len(path)] == path}
        if not sub:
            if default is not None:
                return default
            raise KeyError(f"nothing was logged under {'/'.join(path)!r}")
        return _nest(sub)

    def reduce(self, compile: bool = True) -> ReducedMetrics:
        """Every key's reduced value as a nested dict (the module docstring says which keys
        start afresh); its ``reductions`` say how each key reduces, by which ``aggregate()``
        merges several loggers' dicts. ``compile`` is RLlib's and changes nothing here."""
        out = ReducedMetrics(_nest({path: stats.reduce() for path, stats in self._stats.items()}))
        out.reductions = {path: stats.name for path, stats in self._stats.items()}
        return out

    def __contains__(self, key: Any) -> bool:
        return _key_path(key) in self._stats

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return iter(self._stats)

    def __len__(self) -> int:
        return len(self._stats)


class ReducedMetrics(dict):
    """``MetricsLogger.reduce()``'s nested dict of values; ``reductions`` maps each leaf's key
    path to how the key reduces (``"sum"``, ``"max"``, ...), which ``aggregate()`` merges by."""

    reductions: dict[tuple[str, ...], str]


def _reduction_of(name: str, reduction: str | None) -> str:
    """How a merged key keeps reducing (so that merging merged loggers adds their sums): its
    loggers' reduction, else the one its name says (``num_*`` a sum, ``*_max`` / ``*_min``)."""
    if reduction in ("sum", "lifetime_sum") or (reduction is None and name.startswith("num_")):
        return "sum"
    if reduction == "max" or (reduction is None and name.endswith("_max")):
        return "max"
    if reduction == "min" or (reduction is None and name.endswith("_min")):
        return "min"
    return "mean"


def _combined(name: str, items: list[tuple[float, float | None]], reduction: str) -> float:
    """One value of several loggers' or runners' ``name`` by its ``reduction``
    (``_reduction_of``; see ``MetricsLogger.aggregate``): a ``*_mean`` is weighted by each
    dict's ``num_episodes`` where every dict has one."""
    values = np.asarray([v for v, _ in items], np.float64)
    finite = ~np.isnan(values)
    if reduction == "sum":
        return float(values[finite].sum())
    if not finite.any():
        return float("nan")
    if reduction == "max":
        return float(values[finite].max())
    if reduction == "min":
        return float(values[finite].min())
    weights = [w for _, w in items]
    if name.endswith("_mean") and all(w is not None for w in weights):
        w = np.asarray(weights, np.float64)[finite]
        if w.sum() > 0:
            return float((values[finite] * w).sum() / w.sum())
    return float(values[finite].mean())


def _leaves(d: dict[str, Any], prefix: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _leaves(v, (*prefix, k))
        else:
            yield (*prefix, k), v


def _nest(flat: dict[tuple[str, ...], Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, value in flat.items():
        node = out
        for p in path[:-1]:
            node = node.setdefault(p, {})
        node[path[-1]] = value
    return out


def merge_into(result: dict[str, Any], logged: dict[str, Any], where: str) -> None:
    """Puts ``logged`` (a reduced logger) into ``result``; a user key that would replace one of
    rljax's own values raises, naming it (``where`` says which part of the result)."""
    for k, v in logged.items():
        if k in result and not (isinstance(result[k], dict) and isinstance(v, dict)):
            raise ValueError(
                f"a callback logged {where}{k}, which is one of rljax's own result keys; "
                "log it under another name"
            )
        if isinstance(v, dict) and isinstance(result.get(k), dict):
            merge_into(result[k], v, f"{where}{k}/")
        else:
            result[k] = v


__all__ = ["MetricsLogger", "ReducedMetrics", "Stats", "merge_into"]
