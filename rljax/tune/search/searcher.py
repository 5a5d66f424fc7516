"""``Searcher``, the interface ``Tuner`` calls, and ``ConcurrencyLimiter``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rljax.tune._optuna import MetricUser
from rljax.utils.errors import ConfigError


class Searcher(MetricUser):
    """What a search algorithm does for ``Tuner`` (Tune's ``Searcher`` interface).

    ``set_search_properties(metric, mode, config)`` gives it ``TuneConfig``'s metric and mode and
    the ``param_space``; ``suggest(trial_id)`` returns a trial's resolved config (None: no more
    trials); ``on_trial_result`` gets each intermediate result and ``on_trial_complete`` the last
    one. Results may be nested dicts; metric keys name nested values with ``/``.
    """

    FINISHED = "FINISHED"

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: Mapping[str, Any], **spec: Any
    ) -> bool:
        """Takes ``TuneConfig``'s metric and mode where the searcher has none, and the
        ``param_space`` (``config``). Returns True (Tune's signature); raises ``ConfigError``
        where Tune's ``Tuner`` would refuse the combination."""
        self._take_metric_mode(metric, mode)
        return True

    @property
    def searched_paths(self) -> list[tuple[Any, ...]]:
        """The key paths the searcher sets (they name the trials' directories)."""
        return []

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        """The config of a new trial, or None when the searcher has no more."""
        raise NotImplementedError(f"{type(self).__name__} must define suggest(trial_id)")

    def suggest_many(self, trial_ids: Sequence[str]) -> list[dict[str, Any]]:
        """Configs for several trials asked at once, before any of them reports (trials trained
        together). Stops early if the searcher has no more."""
        out: list[dict[str, Any]] = []
        for trial_id in trial_ids:
            config = self.suggest(trial_id)
            if config is None:
                break
            out.append(config)
        return out

    def on_trial_result(self, trial_id: str, result: Mapping[str, Any]) -> None:
        """An intermediate result of a running trial."""

    def on_trial_complete(
        self, trial_id: str, result: Mapping[str, Any] | None = None, error: bool = False
    ) -> None:
        """The trial ended: ``result`` is its last result (None if it reported none); ``error``:
        it raised."""


class ConcurrencyLimiter(Searcher):
    """Lets ``searcher`` have at most ``max_concurrent`` trials running (Tune's
    ``ConcurrencyLimiter``): ``suggest`` returns None while that many are live.

    rljax's ``Tuner`` runs trials one after another, so one trial at a time is live there; the
    limit matters for ``suggest_many`` (trials trained together), which asks at most the room
    left. ``batch=True`` (Tune's: wait for the whole batch to end before suggesting more) is
    accepted: with that, no trial is suggested until every live one completed.
    """

    def __init__(self, searcher: Searcher, max_concurrent: int, batch: bool = False):
        if not isinstance(searcher, Searcher):
            raise ConfigError(
                f"ConcurrencyLimiter(searcher={searcher!r}): use a tune searcher "
                "(tune.search.optuna.OptunaSearch)"
            )
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int):
            raise ConfigError(
                f"ConcurrencyLimiter(max_concurrent={max_concurrent!r}): use an int >= 1"
            )
        if max_concurrent < 1:
            raise ConfigError(
                f"ConcurrencyLimiter(max_concurrent={max_concurrent!r}): use an int >= 1"
            )
        super().__init__(searcher.metric, searcher.mode)
        self.searcher = searcher
        self.max_concurrent = max_concurrent
        self.batch = bool(batch)
        self._live: set[str] = set()

    @property
    def metric(self) -> str | None:
        return self.searcher.metric

    @property
    def mode(self) -> str | None:
        return self.searcher.mode

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: Mapping[str, Any], **spec: Any
    ) -> bool:
        return self.searcher.set_search_properties(metric, mode, config, **spec)

    @property
    def searched_paths(self) -> list[tuple[Any, ...]]:
        return self.searcher.searched_paths

    def _room(self) -> int:
        if self.batch and self._live:
            return 0
        return self.max_concurrent - len(self._live)

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        if self._room() <= 0:
            return None
        config = self.searcher.suggest(trial_id)
        if config is not None:
            self._live.add(trial_id)
        return config

    def suggest_many(self, trial_ids: Sequence[str]) -> list[dict[str, Any]]:
        ids = list(trial_ids)[: max(self._room(), 0)]
        configs = self.searcher.suggest_many(ids)
        self._live.update(ids[: len(configs)])
        return configs

    def on_trial_result(self, trial_id: str, result: Mapping[str, Any]) -> None:
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: Mapping[str, Any] | None = None, error: bool = False
    ) -> None:
        self._live.discard(trial_id)
        self.searcher.on_trial_complete(trial_id, result, error)


__all__ = ["ConcurrencyLimiter", "Searcher"]
