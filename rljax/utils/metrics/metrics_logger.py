"""``MetricsLogger``: values logged by user code, reduced once per iteration as RLlib reduces them.

Callbacks log with ``metrics_logger.log_value(key, value, reduce=..., window=...)``; the
algorithm reduces its loggers when it builds each result, and the values appear there under
their (nested) keys: episode hooks' under ``env_runners``, ``on_train_result``'s and the other
algorithm-level hooks' at the top level of the next result.

The semantics are RLlib's (``ray.rllib.utils.metrics.metrics_logger``):

- ``reduce="mean"`` with neither ``window`` nor ``ema_coeff``: an exponential moving average with
  ``ema_coeff=0.01`` (the first value starts it), kept across iterations;
- ``reduce="mean"`` with ``window=n``: the mean of the last ``n`` values; with ``ema_coeff=c``:
  the moving average with that coefficient;
- ``"min"``, ``"max"``, ``"sum"``: over the last ``window`` values, or every value so far when
  ``window`` is None (``"sum"`` then adds up over the whole run: a lifetime count);
- ``reduce=None``: the list of values logged since the last reduction;
- ``clear_on_reduce=True``: each reduction starts the key afresh, so that a result shows only
  the values logged during its own iteration (an empty key then reports NaN, or 0 for sums);
- RLlib's newer names: ``"ema"`` (``"mean"`` as a moving average), ``"lifetime_sum"`` (``"sum"``
  over the whole run), ``"item_series"`` (the values since the last reduction, any objects, the
  last ``window`` of them: a video's frames) and ``"item"`` (the last value, kept).
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

import numpy as np

REDUCTIONS = ("mean", "min", "max", "sum", None, "ema", "lifetime_sum", "item", "item_series")
DEFAULT_EMA_COEFF = 0.01


def _key_path(key: Any) -> tuple[str, ...]:
    """``"a"`` -> ``("a",)``; ``("a", "b")`` stays; ``"a/b"`` is one key, as in RLlib."""
    path = (key,) if isinstance(key, str) else tuple(key) if isinstance(key, tuple | list) else None
    if not path or not all(isinstance(p, str) and p for p in path):
        raise ValueError(
            f"metrics key {key!r} must be a non-empty string or a tuple of non-empty strings"
        )
    return path


class Stats:
    """One key's values and how they reduce (see the module docstring)."""

    def __init__(
        self,
        reduce: str | None = "mean",
        window: int | float | None = None,
        ema_coeff: float | None = None,
        clear_on_reduce: bool = False,
    ):
        if reduce not in REDUCTIONS:
            raise ValueError(
                f"reduce={reduce!r} is not a reduction; use one of 'mean', 'min', 'max', 'sum', "
                "'ema', 'lifetime_sum', 'item', 'item_series' or None"
            )
        self.name = reduce  # as logged; RLlib's newer names map onto the four below
        self._item = reduce == "item"
        if reduce == "ema":
            reduce = "mean"
        elif reduce == "lifetime_sum":
            reduce, window = "sum", None
        elif reduce in ("item", "item_series"):
            reduce = None
        if window is not None and not (
            (isinstance(window, int) and not isinstance(window, bool) and window >= 1)
            or window == float("inf")
        ):
            raise ValueError(f"window={window!r} must be an int >= 1, float('inf') or None")
        if window == float("inf"):
            window = None
        if ema_coeff is not None:
            if reduce != "mean":
                raise ValueError(f"ema_coeff={ema_coeff} needs reduce='mean', not {reduce!r}")
            if window is not None:
                raise ValueError("ema_coeff and window cannot both be set: choose one")
            if not (isinstance(ema_coeff, float | int) and 0 < ema_coeff <= 1):
                raise ValueError(f"ema_coeff={ema_coeff!r} must be in (0, 1]")
        elif reduce == "mean" and window is None:
            ema_coeff = DEFAULT_EMA_COEFF
        self.reduce_method = reduce
        self.window = window
        self.ema_coeff = ema_coeff
        self.clear_on_reduce = (clear_on_reduce or reduce is None) and not self._item
        self.values: collections.deque[Any] = collections.deque(
            maxlen=1 if self._item else window if isinstance(window, int) else None
        )
        self._ema: float | None = None
        self._total: float | None = None  # min/max/sum over every value so far (window None)

    def same_settings(self, reduce: Any, window: Any, ema_coeff: Any, clear: bool) -> bool:
        other = Stats(reduce, window, ema_coeff, clear)
        return (other.name, other.window, other.ema_coeff, other.clear_on_reduce) == (
            self.name,
            self.window,
            self.ema_coeff,
            self.clear_on_reduce,
        )

    def push(self, value: Any) -> None:
        if self.reduce_method is None:
            self.values.append(value)
            return
        x = float(np.asarray(value))
        if self.ema_coeff is not None:
            c = self.ema_coeff
            self._ema = x if self._ema is None else (1.0 - c) * self._ema + c * x
        elif self.window is None:
            if self._total is None:
                self._total = x
            elif self.reduce_method == "sum":
                self._total += x
            else:
                pick = min if self.reduce_method == "min" else max
                self._total = pick(self._total, x)
        else:
            self.values.append(x)

    def peek(self) -> Any:
        if self._item:
            return self.values[-1] if self.values else float("nan")
        if self.reduce_method is None:
            return list(self.values)
        if self.ema_coeff is not None:
            return float("nan") if self._ema is None else self._ema
        if self.window is None:
            empty = 0.0 if self.reduce_method == "sum" else float("nan")
            return empty if self._total is None else self._total
        if not self.values:
            return 0.0 if self.reduce_method == "sum" else float("nan")
        v = np.asarray(self.values, np.float64)
        if self.reduce_method == "mean":
            return float(v.mean())
        if self.reduce_method == "sum":
            return float(v.sum())
        return float(v.min() if self.reduce_method == "min" else v.max())

    def reduce(self) -> Any:
        out = self.peek()
        if self.clear_on_reduce:
            self.values.clear()
            self._ema = self._total = None
        return out


class MetricsLogger:
    """Values logged under (nested) keys and reduced by ``reduce()`` (RLlib's API)."""

    def __init__(self) -> None:
        self._stats: dict[tuple[str, ...], Stats] = {}

    def log_value(
        self,
        key: str | tuple[str, ...],
        value: Any,
        *,
        reduce: str | None = "mean",
        window: int | float | None = None,
        ema_coeff: float | None = None,
        clear_on_reduce: bool = False,
        with_throughput: bool = False,
    ) -> None:
        """Logs ``value`` under ``key``; the first call for a key fixes how it reduces.

        Raises:
          ValueError: For a bad key or reduction, a value that is not a finite-or-NaN number
            (unless ``reduce=None``), or settings that differ from the key's first call.
        """
        del with_throughput  # RLlib's throughput side-stat: not reported here
        path = _key_path(key)
        if reduce not in (None, "item", "item_series"):
            try:
                x = np.asarray(value)
                ok = x.shape == () and x.dtype.kind in "biuf"
            except Exception:  # noqa: BLE001
                ok = False
            if not ok:
                raise ValueError(
                    f"log_value({key!r}, {value!r}): a value reduced with {reduce!r} must be one "
                    "number; log other values with reduce=None"
                )
        stats = self._stats.get(path)
        if stats is None:
            for other in self._stats:
                if other[: len(path)] == path or path[: len(other)] == other:
                    raise ValueError(
                        f"metrics key {'/'.join(path)!r} clashes with {'/'.join(other)!r}: a key "
                        "cannot be both a value and a group of values"
                    )
            stats = self._stats[path] = Stats(reduce, window, ema_coeff, clear_on_reduce)
        elif not stats.same_settings(reduce, window, ema_coeff, clear_on_reduce):
            raise ValueError(
                f"metrics key {'/'.join(path)!r} was first logged with reduce="
                f"{stats.name!r}, window={stats.window!r}, ema_coeff="
                f"{stats.ema_coeff!r}, clear_on_reduce={stats.clear_on_reduce}; log it the same "
                "way each time"
            )
        stats.push(value)

    def log_dict(self, stats_dict: dict[str, Any], *, key: Any = None, **kwargs: Any) -> None:
        """Logs every leaf of a nested dict (under ``key``, if given) with ``log_value``."""
        prefix = () if key is None else _key_path(key)
        for path, value in _leaves(stats_dict, prefix):
            self.log_value(path, value, **kwargs)

    def aggregate(self, stats_dicts: list[dict[str, Any]], *, key: Any = None) -> None:
        """Merges the metrics of several runners (their ``get_metrics()`` dicts) into one and
        sets it under ``key`` until the next ``reduce()``, as RLlib's ``aggregate`` merges
        runners' stats: ``num_*`` counts add up, ``*_max`` / ``*_min`` take the max / min, and
        ``*_mean`` values are weighted by each dict's ``num_episodes`` where it has one (the
        mean over all the runners' episodes); other numbers are averaged."""
        prefix = () if key is None else _key_path(key)
        pooled: dict[tuple[str, ...], list[tuple[float, float | None]]] = {}
        for d in stats_dicts:
            weight = d.get("num_episodes") if isinstance(d, dict) else None
            for path, value in _leaves(d, ()):
                pooled.setdefault(path, []).append((float(np.asarray(value)), weight))
        for path, items in pooled.items():
            stats = Stats("mean", window=1, clear_on_reduce=True)
            stats.push(_combined(path[-1], items))
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

    def peek(self, key: str | tuple[str, ...], *, default: Any = None) -> Any:
        """The reduced value of ``key`` now, without clearing it (``default`` if never logged)."""
        path = _key_path(key)
        if path in self._stats:
            return self._stats[path].peek()
        sub = {p[len(path) :]: s.peek() for p, s in self._stats.items() if p[: len(path)] == path}
        if not sub:
            if default is not None:
                return default
            raise KeyError(f"nothing was logged under {'/'.join(path)!r}")
        return _nest(sub)

    def reduce(self) -> dict[str, Any]:
        """Every key's reduced value as a nested dict (keys with ``clear_on_reduce`` start
        afresh)."""
        return _nest({path: stats.reduce() for path, stats in self._stats.items()})

    def __contains__(self, key: Any) -> bool:
        return _key_path(key) in self._stats

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return iter(self._stats)

    def __len__(self) -> int:
        return len(self._stats)


def _combined(name: str, items: list[tuple[float, float | None]]) -> float:
    """One value of several runners' ``name`` (see ``MetricsLogger.aggregate``)."""
    values = np.asarray([v for v, _ in items], np.float64)
    finite = ~np.isnan(values)
    if name.startswith("num_"):
        return float(values[finite].sum())
    if not finite.any():
        return float("nan")
    if name.endswith("_max"):
        return float(values[finite].max())
    if name.endswith("_min"):
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


__all__ = ["MetricsLogger", "Stats", "merge_into"]
