"""``TuneConfig``, ``RunConfig`` and ``CheckpointConfig``, with Ray Tune 2.x's names and defaults."""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rljax.tune.result_grid import check_mode
from rljax.tune.schedulers import TrialScheduler
from rljax.tune.search.searcher import Searcher
from rljax.tune.stopper import as_stopper
from rljax.utils import once
from rljax.utils.errors import ConfigError


def _check_number(name: str, value: Any, minimum: float, integer: bool) -> None:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < minimum:
        what = "an int" if integer else "a number"
        raise ConfigError(f"{name}={value!r}: use {what} >= {minimum}")


@dataclass
class CheckpointConfig:
    """When an algorithm trial saves checkpoints (Tune's ``CheckpointConfig``).

    ``checkpoint_frequency``: every that many training iterations (0: never);
    ``checkpoint_at_end``: once more when the trial stops (None, the default, as in Ray Tune:
    yes for algorithm and ``tune.Trainable`` trials, no for function trainables, which save
    through ``tune.report``); ``num_to_keep``: how many of a trial's checkpoints stay (None:
    all): its newest, or with ``checkpoint_score_attribute`` (a result key, ``/``-joined for a
    nested one) its best by that value (``checkpoint_score_order`` "max" or "min"), as Ray
    Tune's, whose newest checkpoint also stays. Checkpoints go to
    ``<trial dir>/checkpoint_NNNNNN`` (``algo.save_to_path``). Function trainables save by
    passing ``checkpoint=`` to ``tune.report``; ``num_to_keep`` applies to those too.
    """

    num_to_keep: int | None = None
    checkpoint_frequency: int = 0
    checkpoint_at_end: bool | None = None
    checkpoint_score_attribute: str | None = None
    checkpoint_score_order: str = "max"

    def __post_init__(self) -> None:
        if self.num_to_keep is not None:
            _check_number("CheckpointConfig.num_to_keep", self.num_to_keep, 1, True)
        attribute = self.checkpoint_score_attribute
        if attribute is not None and not (isinstance(attribute, str) and attribute):
            raise ConfigError(
                f"CheckpointConfig.checkpoint_score_attribute={attribute!r}: use a result key "
                "(a str, '/'-joined for a nested one, e.g. 'env_runners/episode_return_mean') "
                "or None"
            )
        if self.checkpoint_score_order not in ("max", "min"):
            raise ConfigError(
                f"CheckpointConfig.checkpoint_score_order={self.checkpoint_score_order!r}: use "
                "'max' or 'min'"
            )
        _check_number("CheckpointConfig.checkpoint_frequency", self.checkpoint_frequency, 0, True)
        if self.checkpoint_at_end is not None and not isinstance(self.checkpoint_at_end, bool):
            raise ConfigError(
                f"CheckpointConfig.checkpoint_at_end={self.checkpoint_at_end!r}: use True, "
                "False or None (Ray Tune's default: True for algorithm and tune.Trainable "
                "trials)"
            )

    @property
    def wanted(self) -> bool:
        """Whether checkpoints were asked for explicitly."""
        return bool(self.checkpoint_frequency) or self.checkpoint_at_end is True

    def resolved(self, function_trainable: bool) -> CheckpointConfig:
        """This config with ``checkpoint_at_end=None`` made Ray Tune's default for the kind
        of trainable: False for a function, True for an algorithm or a ``tune.Trainable``."""
        if self.checkpoint_at_end is not None:
            return self
        return dataclasses.replace(self, checkpoint_at_end=not function_trainable)


def note_no_effect(key: str, text: str) -> None:
    """Warns once per process that Tune's setting ``key`` has no effect here, and why."""
    if once.first_time("tune", key):
        warnings.warn(f"{key}: {text}", UserWarning, stacklevel=3)


@dataclass
class FailureConfig:
    """What happens when a trial raises (Tune's ``FailureConfig``).

    ``max_failures``: how many times a failed trial starts again, from its newest checkpoint
    if it saved one (an algorithm trial restores it; a function trainable finds it with
    ``tune.get_checkpoint()``), else from the start; -1: without limit; 0 (the default): it
    stays failed. ``fail_fast``: True ends the experiment at the first trial that fails for
    good (the running trials stop after their current result; the trials not started are left
    out of the ``ResultGrid``); ``"raise"`` does so and ``fit()`` raises that trial's exception.
    """

    max_failures: int = 0
    fail_fast: bool | str = False

    def __post_init__(self) -> None:
        _check_number("FailureConfig.max_failures", self.max_failures, -1, True)
        if not (isinstance(self.fail_fast, bool) or self.fail_fast == "raise"):
            raise ConfigError(
                f"FailureConfig.fail_fast={self.fail_fast!r}: use False, True or 'raise'"
            )

    def retries_left(self, failures: int) -> bool:
        """Whether a trial that has failed ``failures`` times starts again."""
        return self.max_failures < 0 or failures <= self.max_failures


@dataclass
class ResumeConfig:
    """How a resumed experiment treats its trials by status (Tune's ``ResumeConfig``), given
    to ``tune.run(resume_config=...)``: ``unfinished`` (running or not started when it
    stopped) ``"resume"`` from their newest checkpoints or ``"skip"``; ``errored``
    ``"skip"``, ``"resume"`` or ``"restart"`` (their files removed); ``finished`` ``"skip"``
    only (kept as they are). ``ResumeConfig.ResumeType`` names the values."""

    class ResumeType:
        RESUME = "resume"
        RESTART = "restart"
        SKIP = "skip"

    finished: str = "skip"
    unfinished: str = "resume"
    errored: str = "skip"

    def __post_init__(self) -> None:
        allowed = {
            "finished": ("skip",),
            "unfinished": ("resume", "skip"),
            "errored": ("skip", "resume", "restart"),
        }
        for name, values in allowed.items():
            given = getattr(self, name)
            if given not in values:
                raise ConfigError(
                    f"ResumeConfig({name}={given!r}): use one of {list(values)} (rljax keeps "
                    "finished trials as they are and resumes or skips unfinished ones)"
                )

    def restore_flags(self) -> dict[str, bool]:
        """``Tuner.restore``'s flags for these choices."""
        return {
            "resume_unfinished": self.unfinished == "resume",
            "resume_errored": self.errored == "resume",
            "restart_errored": self.errored == "restart",
        }


@dataclass
class SyncConfig:
    """Tune's ``SyncConfig`` (uploading results to remote storage), accepted with its names:
    rljax writes every result, checkpoint and artifact straight to ``storage_path`` on this
    host, so there is nothing to sync and the settings have no effect."""

    sync_period: int = 300
    sync_timeout: int = 1800
    sync_artifacts: bool = False
    sync_artifacts_on_checkpoint: bool = True


@dataclass
class TuneConfig:
    """How trials are made and compared (Tune's ``TuneConfig``).

    ``metric``/``mode`` (``"min"`` or ``"max"``): the default for
    ``ResultGrid.get_best_result()``, and for a search algorithm's or scheduler's own.
    ``num_samples``: how many times the grid is repeated; with a ``search_alg``, how many trials
    it suggests (grid x ``num_samples`` at most ``rljax.tune.variants.MAX_VARIANTS``, 100,000,
    checked by ``Tuner``). ``search_alg``: a ``tune.search`` searcher (``OptunaSearch``) that suggests each
    trial's config instead of ``generate_variants``. ``scheduler``: a ``tune.schedulers``
    scheduler (``ASHAScheduler``, ``HyperBandScheduler``, ``MedianStoppingRule``,
    ``FIFOScheduler``) that may stop trials early. ``time_budget_s``: once this many seconds
    have passed, the running trial stops after its current result and no more trials start.
    ``seed``: the seed of the search spaces' draws without a ``search_alg`` (the same seed gives
    the same trials; a searcher has its own, ``OptunaSearch(seed=...)``). A
    ``tune.search.BasicVariantGenerator`` as ``search_alg`` is that default generator: its
    ``random_state`` becomes ``seed``, its ``max_concurrent`` bounds ``max_concurrent_trials``,
    and ``search_alg`` reads None.
    ``max_concurrent_trials``: how many trials train at once. Trials that can share one
    program train together as a population, at most this many (None: every such trial; 1:
    one at a time); batches that cannot share one (other shapes, or single trials) run at once,
    each in a worker process, as many as leave the total at most this many (None: one after
    another in this process); with a ``search_alg``, how many configs are asked at once (None:
    1). ``populations`` (rljax's own): False makes every trial a batch of its own.
    ``trial_dirname_creator``: ``(trial) -> str``, the name of each trial's directory, given a
    ``TrialInfo`` (``trial_id``, ``trainable_name``, ``config``, ``experiment_tag``); the
    default joins the trainable's name, the trial id and the searched values.
    ``trial_name_creator``: ``(trial) -> str``, each trial's name in the table of trials, given
    the same ``TrialInfo`` (default: ``<trainable>_<trial_id>``); results and directories
    still name trials by their ids.
    ``reuse_actors`` and ``chdir_to_trial_dir``: accepted as Tune's, with a warning that they
    have no effect here (trials run in this process or its workers, in the script's
    directory).
    """

    metric: str | None = None
    mode: str | None = None
    num_samples: int = 1
    search_alg: Any = None
    scheduler: Any = None
    max_concurrent_trials: int | None = None
    time_budget_s: float | None = None
    seed: int | None = None
    populations: bool = True
    reuse_actors: bool | None = None
    trial_name_creator: Callable[[Any], str] | None = None
    trial_dirname_creator: Callable[[Any], str] | None = None
    chdir_to_trial_dir: Any = None

    def __post_init__(self) -> None:
        if self.metric is not None and not isinstance(self.metric, str):
            raise ConfigError(f"TuneConfig.metric={self.metric!r}: use a result key (a string)")
        check_mode(self.mode, "TuneConfig.mode")
        _check_number("TuneConfig.num_samples", self.num_samples, 1, True)
        # Checked before a BasicVariantGenerator's seed and bound are folded into them.
        if self.max_concurrent_trials is not None:
            _check_number("TuneConfig.max_concurrent_trials", self.max_concurrent_trials, 1, True)
        if self.seed is not None:
            _check_number("TuneConfig.seed", self.seed, 0, True)
        self._fold_basic_variant_generator()
        if self.search_alg is not None and not isinstance(self.search_alg, Searcher):
            raise ConfigError(
                f"TuneConfig.search_alg={self.search_alg!r}: use a tune.search searcher "
                "(tune.search.optuna.OptunaSearch(...), tune.search.ConcurrencyLimiter(...)) "
                "or None for grid x num_samples random draws"
            )
        if self.scheduler is not None and not isinstance(self.scheduler, TrialScheduler):
            raise ConfigError(
                f"TuneConfig.scheduler={self.scheduler!r}: use a tune.schedulers scheduler "
                "(ASHAScheduler, AsyncHyperBandScheduler, HyperBandScheduler, "
                "MedianStoppingRule, FIFOScheduler) or None"
            )
        if not isinstance(self.populations, bool):
            raise ConfigError(f"TuneConfig.populations={self.populations!r}: use True or False")
        if self.time_budget_s is not None:
            _check_number("TuneConfig.time_budget_s", self.time_budget_s, 0, False)
            if self.time_budget_s <= 0:
                raise ConfigError(f"TuneConfig.time_budget_s={self.time_budget_s!r}: use > 0")
        for name in ("trial_name_creator", "trial_dirname_creator"):
            given = getattr(self, name)
            if given is not None and not callable(given):
                raise ConfigError(
                    f"TuneConfig.{name}={given!r}: use a function of the trial returning a str"
                )
        if self.reuse_actors:
            note_no_effect(
                "TuneConfig.reuse_actors",
                "rljax starts no actors; each trial builds its algorithm in this process or in "
                "a worker process",
            )
        if self.chdir_to_trial_dir is not None:
            note_no_effect(
                "TuneConfig.chdir_to_trial_dir",
                "trials run in the script's working directory (Result.path is the trial's)",
            )

    def _fold_basic_variant_generator(self) -> None:
        """A ``BasicVariantGenerator`` search_alg is the default generator: its seed and its
        concurrency bound go to ``seed`` and ``max_concurrent_trials``."""
        from rljax.tune.search.basic_variant import BasicVariantGenerator

        generator = self.search_alg
        if not isinstance(generator, BasicVariantGenerator):
            return
        if generator.seed is not None:
            if self.seed is not None and self.seed != generator.seed:
                raise ConfigError(
                    f"TuneConfig.seed={self.seed} and BasicVariantGenerator's random_state "
                    f"(seed {generator.seed}) differ: give one"
                )
            self.seed = generator.seed
        if generator.max_concurrent:
            limit = self.max_concurrent_trials
            self.max_concurrent_trials = (
                generator.max_concurrent if limit is None else min(limit, generator.max_concurrent)
            )
        self.search_alg = None


def default_storage_path() -> str:
    """``$RLJAX_RESULTS_DIR`` if set, else ``~/rljax_results`` (Tune's is ``~/ray_results``)."""
    return os.environ.get("RLJAX_RESULTS_DIR") or os.path.join(
        os.path.expanduser("~"), "rljax_results"
    )


@dataclass
class RunConfig:
    """Where results go and when trials stop (Tune's ``RunConfig``).

    ``name``: the experiment's directory under ``storage_path`` (default: the trainable's name
    and the start time); ``storage_path``: default ``default_storage_path()``; ``stop``: a dict
    of result keys to thresholds (``/`` for nested keys; a trial stops when any is reached), a
    function ``(trial_id, result) -> bool`` or a ``tune.Stopper``; ``checkpoint_config``: a
    ``CheckpointConfig``; ``verbose``: 0 silent, 1 the table of trials (``rljax.tune.progress``,
    redrawn in place on a terminal, printed once at the end otherwise), 2 a line per result too,
    3 also the table as the trials report when the output is not a terminal; ``callbacks``: a list of
    ``tune.Callback`` (``rljax.tune.callback``; not saved for ``Tuner.restore``, pass them
    again with ``restore(..., callbacks=...)``); ``progress_reporter``: a ``tune.CLIReporter``
    choosing the table's columns and how often it prints (with ``verbose`` >= 1; not saved for
    ``Tuner.restore``); ``failure_config``: a ``FailureConfig`` (retries and fail-fast);
    ``local_dir``: Tune's older name of ``storage_path``. ``sync_config`` (a ``SyncConfig``)
    and ``log_to_file`` are accepted with a warning that they have no effect here;
    ``storage_filesystem`` (a pyarrow filesystem) is refused: results go to a local path.
    """

    name: str | None = None
    storage_path: str | os.PathLike[str] | None = None
    stop: Any = None
    checkpoint_config: CheckpointConfig | None = None
    verbose: int = 1
    callbacks: Any = None
    progress_reporter: Any = None
    failure_config: FailureConfig | None = None
    sync_config: SyncConfig | None = None
    storage_filesystem: Any = None
    log_to_file: bool | str | tuple[str, str] = False
    local_dir: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        if self.local_dir is not None:  # Tune's older name of storage_path
            if self.storage_path is not None:
                raise ConfigError(
                    "RunConfig: give storage_path or local_dir (its old name), not both"
                )
            self.storage_path, self.local_dir = self.local_dir, None
        if self.failure_config is not None and not isinstance(self.failure_config, FailureConfig):
            raise ConfigError(
                f"RunConfig.failure_config={self.failure_config!r}: use a "
                "tune.FailureConfig(max_failures=..., fail_fast=...)"
            )
        if self.sync_config is not None:
            if not isinstance(self.sync_config, SyncConfig):
                raise ConfigError(
                    f"RunConfig.sync_config={self.sync_config!r}: use a tune.SyncConfig"
                )
            note_no_effect(
                "RunConfig.sync_config",
                "rljax writes every result, checkpoint and artifact straight to storage_path on "
                "this host; there is nothing to sync",
            )
        if self.storage_filesystem is not None:
            raise ConfigError(
                f"RunConfig.storage_filesystem={type(self.storage_filesystem).__name__}: rljax "
                "writes results to a local storage_path only; give a local path (or a mounted "
                "one) as storage_path and no filesystem"
            )
        if self.log_to_file is not False:
            note_no_effect(
                "RunConfig.log_to_file",
                "trials' output goes to this process's stdout and stderr (their results and "
                "errors are in each trial's directory)",
            )
        if self.name is not None and (
            not isinstance(self.name, str) or not self.name or os.sep in self.name
        ):
            raise ConfigError(
                f"RunConfig.name={self.name!r}: use a directory name without {os.sep}"
            )
        as_stopper(self.stop)  # a bad stop fails here, before any trial
        if self.checkpoint_config is not None and not isinstance(
            self.checkpoint_config, CheckpointConfig
        ):
            raise ConfigError(
                f"RunConfig.checkpoint_config={self.checkpoint_config!r}: use a "
                "tune.CheckpointConfig"
            )
        if self.verbose not in (0, 1, 2, 3):
            raise ConfigError(f"RunConfig.verbose={self.verbose!r}: use 0, 1, 2 or 3")
        if self.callbacks is not None:
            from rljax.tune.callback import Callback

            given = self.callbacks
            if not isinstance(given, (list, tuple)) or not all(
                isinstance(c, Callback) for c in given
            ):
                raise ConfigError(
                    f"RunConfig.callbacks={given!r}: use a list of tune.Callback instances "
                    "(tune.logger.TBXLoggerCallback(), or a subclass of tune.Callback)"
                )
            self.callbacks = list(given)
        if self.progress_reporter is not None:
            from rljax.tune.progress import CLIReporter

            if not isinstance(self.progress_reporter, CLIReporter):
                raise ConfigError(
                    f"RunConfig.progress_reporter={self.progress_reporter!r}: use a "
                    "tune.CLIReporter(metric_columns=..., max_report_frequency=...)"
                )


__all__ = [
    "CheckpointConfig",
    "FailureConfig",
    "ResumeConfig",
    "RunConfig",
    "SyncConfig",
    "TuneConfig",
    "default_storage_path",
]
