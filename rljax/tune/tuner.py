"""``Tuner``, ``tune.report`` and ``tune.run``: Ray Tune's API on one host.

A trainable is an algorithm name (``"PPO"``), an algorithm class, a config object, or a function
``train_fn(config)`` that calls ``tune.report(metrics)``. The trials are the variants of the
``param_space`` (``generate_variants``: every grid point x ``num_samples``), run in batches: the
trials of an algorithm that can share one program train as one population
(``rljax.execution.population``), the others one by one; batches run one after another in this
process or, when ``max_concurrent_trials`` leaves room, several at once in worker processes
(``rljax.tune.worker``). Each trial writes ``params.json``, ``result.json`` (a JSON line per result)
and ``progress.csv`` to ``storage_path/name/<trial dir>``, as Tune does; ``experiment_state.json``
at ``storage_path/name`` records each trial's status for ``Tuner.restore``. With
``RunConfig(verbose=1)`` (the default) a table of the trials is shown as they run
(``rljax.tune.progress``).

This module holds the ``Tuner`` (the trials' batches and their order) and ``tune.run``; one
trial's run and ``tune.report`` are in ``rljax.tune.trial_run``, populations in
``rljax.tune.population_run``, ``Tuner.restore``'s reading of an experiment in
``rljax.tune.restore``, RLlib 1.x's trainers as trainables in ``rljax.tune.old_api`` and
``tune.run``'s ``ExperimentAnalysis`` in ``rljax.tune.analysis``.

An algorithm trainable needs a stop criterion (``RunConfig(stop=...)``) or
``TuneConfig(time_budget_s=...)``: Ray Tune would call ``train()`` until interrupted, rljax
refuses to start instead. A function trainable ends when it returns.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rljax.tune import experiment_state as es
from rljax.tune.analysis import ExperimentAnalysis, TuneError
from rljax.tune.old_api import check_stop_keys, is_old_api_trainer, old_api_trainable
from rljax.tune.population_run import run_population
from rljax.tune.progress import ProgressReporter, TrialTable
from rljax.tune.restore import (
    base_config_data,
    base_config_from_data,
    restore_tuner,
    variants_over,
)
from rljax.tune.result_grid import ResultGrid, check_mode
from rljax.tune.stopper import as_stopper, flatten
from rljax.tune.trainables import search_space_of, trainable_parts
from rljax.tune.trial_run import (
    _Fit,
    _searcher_and_scheduler,
    _StopperFailed,
    _StopTrial,
    _TrialRun,
    get_checkpoint,
    report,
    to_json_data,
    trial_session,
)
from rljax.tune.tune_config import (
    CheckpointConfig,
    FailureConfig,
    ResumeConfig,
    RunConfig,
    SyncConfig,
    TuneConfig,
    default_storage_path,
)
from rljax.tune.variants import (
    MAX_VARIANTS,
    check_variant_count,
    find_search_spaces,
    generate_variants,
)
from rljax.tune.worker import MainModuleRerun
from rljax.utils.errors import ConfigError

if TYPE_CHECKING:
    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.tune.search.searcher import Searcher


def _dir_part(value: Any) -> str:
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return "".join(c if c.isalnum() or c in "-.=_" else "_" for c in text)[:20]


@dataclasses.dataclass(frozen=True)
class TrialInfo:
    """What ``TuneConfig(trial_dirname_creator=...)`` is given for a trial (Tune's ``Trial``'s
    fields it is usually asked for): ``trial_id``, ``trainable_name``, ``config`` (the trial's
    variant) and ``experiment_tag`` (its index and searched values)."""

    trial_id: str
    trainable_name: str
    config: dict[str, Any]
    experiment_tag: str

    def __str__(self) -> str:
        return f"{self.trainable_name}_{self.trial_id}"


def _dir_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot be a trial's directory inside the experiment's (None: it can)."""
    if not isinstance(name, str) or not name:
        return "use a non-empty str"
    if name in (".", "..") or "/" in name or os.sep in name or "\0" in name:
        return "use a name, not a path (no '/', '.' or '..')"
    if len(name.encode()) > 255:
        return "use a name of at most 255 bytes"
    return None


# ---------------------------------------------------------------------- Tuner
class Tuner:
    """Runs the trials of a ``param_space`` (Ray Tune's ``Tuner``); see ``fit``.

    Args:
      trainable: An algorithm name (``"PPO"``, any of ``rljax.algorithms.registry``), an
        algorithm class, a config object, or a function ``train_fn(config)`` that reports with
        ``tune.report(metrics)``.
      param_space: A dict of values and search spaces, or a config object holding search
        spaces (``PPOConfig().training(lr=tune.grid_search([...]))``). With an algorithm
        trainable a dict's keys are the config's settings (RLlib's names), applied with
        ``update_from_dict``; a function trainable gets each resolved dict (or config) as its
        ``config``.
      tune_config: ``tune.TuneConfig``.
      run_config: ``tune.RunConfig``.

    Everything that can be checked is checked here, before any trial builds or compiles: the
    number of trials (grid sizes x ``num_samples``, counted before any variant is made; at
    most ``rljax.tune.variants.MAX_VARIANTS``), an unknown trainable name, an unknown setting, a bad search space, a bad mode, settings that
    are not built yet, and an algorithm trainable without a stop criterion or time budget; a
    search algorithm's or scheduler's metric and mode (theirs or ``TuneConfig``'s) and the search
    space it can search (``OptunaSearch`` refuses ``grid_search``, naming the key).
    """

    def __init__(
        self,
        trainable: Any,
        param_space: Mapping[str, Any] | AlgorithmConfig | None = None,
        tune_config: TuneConfig | None = None,
        run_config: RunConfig | None = None,
    ):
        from rljax.tune.worker import refuse_in_worker

        refuse_in_worker()  # a worker importing a script without the __main__ guard again
        # An algorithm name with a dict that asks for RLlib's old API stack trains RLlib 1.x's
        # trainer, which serves that stack's config (custom models by ModelCatalog name).
        from rljax.algorithms.algorithm_config import AlgorithmConfig as _Config

        # A config object asking for the old stack (api_stack(...=False)), as param_space or as
        # the trainable: its trainer trains each trial's copy of it.
        old_base = next(
            (c for c in (param_space, trainable) if isinstance(c, _Config) and c.is_old_api_stack),
            None,
        )
        self._old_api_base = old_base.copy() if old_base is not None else None
        trainable = old_api_trainable(
            trainable, old_base if old_base is not None else param_space, old_keys=False
        )
        self.tune_config = tune_config if tune_config is not None else TuneConfig()
        self.run_config = run_config if run_config is not None else RunConfig()
        if not isinstance(self.tune_config, TuneConfig):
            raise ConfigError(f"tune_config={tune_config!r}: use a tune.TuneConfig")
        if not isinstance(self.run_config, RunConfig):
            raise ConfigError(f"run_config={run_config!r}: use a tune.RunConfig")
        base, self._function, self.trainable_name = trainable_parts(trainable)
        # The search space, and how a variant becomes a trial's config.
        base, self._config_base, space = search_space_of(
            param_space, base, self._function, self.trainable_name
        )
        root = "param_space" if base is None else type(base).__name__
        self._base = base
        # A config object (as param_space, or as the trainable with a dict of searched values
        # over it: rljax tune's files) is shown whole in each trial's results.
        given_config = (
            isinstance(param_space, _Config)
            or isinstance(trainable, _Config)
            or self._old_api_base is not None
        )
        self._whole_config = (
            self._config_dict
            if given_config
            and (self._old_api_base is not None or not is_old_api_trainer(trainable))
            else None
        )
        self._restored: tuple[es.ExperimentState, es.ResumeFlags] | None = None
        self._results: ResultGrid | None = None  # the last fit()'s
        self._dir_names: dict[str, str] = {}  # trial_dirname_creator's names: their trial ids
        self._searched = [p for p, _ in find_search_spaces(space)]
        searcher, scheduler = self.tune_config.search_alg, self.tune_config.scheduler
        # Counted before anything is drawn, made or asked of a searcher (10^9 variants hang).
        if searcher is not None and self.tune_config.num_samples > MAX_VARIANTS:
            raise ConfigError(
                f"TuneConfig.num_samples={self.tune_config.num_samples:,}: a search algorithm "
                f"suggests at most {MAX_VARIANTS:,} trials in one experiment"
            )
        check_variant_count(space, 1 if searcher else self.tune_config.num_samples, root)
        metric, mode = self.tune_config.metric, self.tune_config.mode
        if scheduler is not None:
            scheduler.set_search_properties(metric, mode)
        if searcher is not None:  # trials are suggested in fit(); one draw checks the keys
            searcher.set_search_properties(metric, mode, space, root=root)
            self._searched = searcher.searched_paths or self._searched
        self._variants = generate_variants(
            space, 1 if searcher else self.tune_config.num_samples, self.tune_config.seed, root=root
        )
        self._algo_base = base
        self._algo_configs: list[AlgorithmConfig] | None = None
        # RLlib 1.x's trainers (rljax.agents) read each variant as an old dict config; their
        # trials train one by one, through train(), whose results carry the old keys.
        self._old_api = trainable if is_old_api_trainer(trainable) else None
        if self._old_api is not None and self.tune_config.populations:
            self.tune_config = dataclasses.replace(self.tune_config, populations=False)
        if self._function is None:
            assert base is not None
            check_stop_keys(self.run_config.stop, old_api=self._old_api is not None)
            self._algo_configs = [self._variant_config(v) for v in self._variants]
            # Each trial's settings on their own (types and ranges; nothing is built), so a bad
            # grid value fails before the first trial trains rather than when its trial starts.
            for index, config in enumerate(self._algo_configs):
                try:
                    config.copy()._check_settings()
                except ConfigError as e:
                    shown = str(self._variants[index])[:200]
                    raise ConfigError(f"trial {index} ({shown}): {e}") from None
            if (
                self.run_config.stop is None
                and self.tune_config.time_budget_s is None
                and not (scheduler is not None and scheduler.stops_every_trial)
            ):
                raise ConfigError(
                    f"trainable {self.trainable_name!r} trains until stopped: give a stop "
                    "criterion (tune.RunConfig(stop={'training_iteration': 20}) or a "
                    "tune.Stopper), tune.TuneConfig(time_budget_s=...) or a scheduler with max_t "
                    "(tune.schedulers.ASHAScheduler(max_t=...)); Ray Tune would train "
                    "forever"
                )
        elif (
            self.run_config.checkpoint_config
            and self.run_config.checkpoint_config.wanted
            and getattr(self._function, "class_trainable", None) is None  # a Trainable saves
        ):
            raise ConfigError(
                f"{self.run_config.checkpoint_config!r}: checkpoint_frequency and "
                "checkpoint_at_end are for algorithm and tune.Trainable trainables; a function "
                "trainable saves with "
                "tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(dir))"
            )
        if searcher is not None:
            self._variants = []
        self._check_pbt()

    def _shown(self, variant: dict[str, Any]) -> dict[str, Any]:
        """A trial's config as its results show it: ``_whole_config``'s, else the variant."""
        return variant if self._whole_config is None else self._whole_config(variant)

    def _config_dict(self, variant: dict[str, Any]) -> dict[str, Any]:
        """With a config object as ``param_space``: the trial's whole config as a dict (its
        ``to_dict()`` with the variant's values), as Ray Tune turns ``param_space`` into
        ``param_space.to_dict()``; a trial's ``Result.config`` then has every setting."""
        base = self._old_api_base or self._algo_base or self._config_base
        assert base is not None
        data = base.copy().update_from_dict(variant).to_dict()
        data.pop("algo", None)
        return dict(to_json_data(data))

    def _variant_config(self, variant: dict[str, Any]) -> AlgorithmConfig:
        """A trial's config: the base updated by the variant (an old-API trainer's: the
        variant read as its dict config)."""
        if self._old_api is not None:
            given: Any = variant
            if self._old_api_base is not None:  # an old-stack config object's trial
                given = self._old_api_base.copy().update_from_dict(variant)
            config: AlgorithmConfig = self._old_api.to_config(given)
            return config
        assert self._algo_base is not None
        return self._algo_base.copy().update_from_dict(variant)

    def _check_pbt(self) -> None:
        """PBT runs inside populations: refused, saying why, for trials that cannot form one."""
        from rljax.tune.pbt import PopulationBasedTraining

        scheduler = self.tune_config.scheduler
        if not isinstance(scheduler, PopulationBasedTraining):
            return
        if self._algo_configs is None:
            raise ConfigError(
                "PopulationBasedTraining trains rljax algorithms as one population; a function "
                "trainable cannot exchange its state"
            )
        if self.tune_config.search_alg is not None:
            raise ConfigError(
                "PopulationBasedTraining explores the settings itself; give no search_alg"
            )
        if not self.tune_config.populations:
            raise ConfigError("PopulationBasedTraining needs TuneConfig(populations=True)")
        from rljax.execution.population import population_refusal

        algo = self._algo_configs[0].algo_class
        scheduler.check_settings(getattr(algo, "population_settings", ()), self.trainable_name)
        why = population_refusal(self._algo_configs)
        if why is None and len(self._algo_configs) < 2:
            why = "PBT needs at least 2 trials (num_samples or a grid)"
        limit = self.tune_config.max_concurrent_trials
        if why is None and limit is not None and limit < len(self._algo_configs):
            why = f"max_concurrent_trials={limit} splits the {len(self._algo_configs)} trials"
        if why is not None:
            raise ConfigError(f"PopulationBasedTraining needs every trial in one population: {why}")

    @property
    def num_trials(self) -> int:
        if self.tune_config.search_alg is not None:
            return self.tune_config.num_samples
        return len(self._variants)

    def _trial_dir_name(self, trial_id: str, index: int, variant: dict[str, Any]) -> str:
        tail = self._searched_tail(variant)
        creator = self.tune_config.trial_dirname_creator
        if creator is None:
            return f"{self.trainable_name}_{trial_id}_{index}" + (f"_{tail}" if tail else "")
        name = creator(self._trial_info(trial_id, index, variant))
        bad = _dir_name_problem(name)
        if bad is None and name in self._dir_names:
            owner = self._dir_names[name]
            bad = f"trial {owner} has that directory already (include trial.trial_id)"
        if bad is not None:
            raise ConfigError(
                f"TuneConfig.trial_dirname_creator gave {name!r} for trial {trial_id}: {bad}"
            )
        self._dir_names[name] = trial_id
        return name

    def _trial_info(self, trial_id: str, index: int, variant: dict[str, Any]) -> TrialInfo:
        """What the name creators are given for a trial (Tune's ``Trial``'s fields)."""
        tail = self._searched_tail(variant)
        return TrialInfo(trial_id, self.trainable_name, variant, f"{index}_{tail}".rstrip("_"))

    def _trial_name(self, trial_id: str, index: int, variant: dict[str, Any]) -> str:
        """The trial's name in the table of trials (Tune's ``str(trial)``):
        ``TuneConfig.trial_name_creator``'s, given a ``TrialInfo``, or
        ``<trainable>_<trial_id>``."""
        creator = self.tune_config.trial_name_creator
        if creator is None:
            return f"{self.trainable_name}_{trial_id}"
        name = creator(self._trial_info(trial_id, index, variant))
        if not isinstance(name, str) or not name:
            raise ConfigError(
                f"TuneConfig.trial_name_creator gave {name!r} for trial {trial_id}: use a "
                "non-empty str"
            )
        return name

    def _searched_tail(self, variant: dict[str, Any]) -> str:
        """The searched values of ``variant`` as ``key=value`` parts, for directory names."""
        parts = []
        for path in self._searched:
            value: Any = variant
            try:
                for key in path:
                    value = value[key]
            except (KeyError, IndexError, TypeError):
                continue
            parts.append(f"{_dir_part(path[-1])}={_dir_part(value)}")
        return ",".join(parts)[:80]

    def fit(self) -> ResultGrid:
        """Runs every trial and returns their results (in the order of the trials).

        Trials of an algorithm trainable that differ only in values the update reads (the
        algorithm's population settings, e.g. PPO's ``lr``, ``entropy_coeff``, ``gamma``, and
        the seed) train together as one population, one vmapped program
        (``rljax.execution.population``), at most ``max_concurrent_trials`` at a time when that
        is set; ``TuneConfig(populations=False)`` runs every trial alone. The batches (a
        population or one trial) run one after another in this process, or, when
        ``max_concurrent_trials`` leaves room for more than one (an algorithm trainable, no
        ``PopulationBasedTraining``), several at once, each in a worker process started for it
        (``rljax.tune.worker``; a batch whose configs cannot be pickled runs here), while this
        process records every result and makes every decision. With a search algorithm,
        ``max_concurrent_trials`` configs are asked at once (one by default) and trained
        together where they can be.

        A trial that raises is recorded (``Result.error``, ``ResultGrid.errors``, ``error.txt``)
        and the next one starts. A stop key missing from a trial's results ends ``fit()`` with
        ``ConfigError`` naming it (as Tune's ``TuneError``), as does a search algorithm's or
        scheduler's metric missing. Each result goes to the searcher, then to the scheduler
        unless a stop criterion stopped the trial; a scheduler's STOP ends the trial after that
        result, with a normal ``Result``. Once ``time_budget_s`` has passed, or a ``Stopper``'s
        ``stop_all()`` says so, the running trials stop after their current result and the
        trials not started are left out of the ``ResultGrid``.

        ``experiment_state.json`` at the experiment's root records every trial's status as it
        changes, so that ``Tuner.restore`` can continue an interrupted run. After a restore,
        the trials that finished are loaded from their files rather than run again.
        """
        run = self.run_config
        experiment = self._experiment_path()
        experiment.mkdir(parents=True, exist_ok=True)
        budget = self.tune_config.time_budget_s
        state, flags = self._restored or (self._new_state(experiment), None)
        fit = _Fit(
            state=state,
            stopper=as_stopper(run.stop),
            checkpoint_config=(run.checkpoint_config or CheckpointConfig()).resolved(
                function_trainable=self._function is not None
                and getattr(self._function, "class_trainable", None) is None
            ),
            deadline=None if budget is None else time.monotonic() + budget,
            progress=self._progress(state) if run.verbose >= 1 else None,
            callbacks=list(run.callbacks or []),
        )
        try:
            try:
                fit.callback(
                    "setup",
                    stop=run.stop,
                    num_samples=self.tune_config.num_samples,
                    total_num_samples=len(self._variants),
                )
            except _StopperFailed as e:
                raise ConfigError(str(e)) from e.__cause__
            todo: list[tuple[int, str]] = []
            for index, variant in enumerate(self._variants):
                entry = state.trials[index]
                action = flags.action(entry["status"]) if flags is not None else "start"
                if action == "keep":  # finished (or left as it is) before the restore
                    fit.results[index] = es.load_result(
                        experiment / entry["dir"], entry, self._shown(variant)
                    )
                else:
                    todo.append((index, action))
            self._run_batches(fit, self._batches(todo))
            searcher = self.tune_config.search_alg
            if searcher is not None and self._restored is None:
                while not (fit.stopped or fit.past_deadline()):
                    indices = self._suggest(fit, searcher)
                    if not indices:
                        break
                    self._run_batches(fit, self._batches([(i, "start") for i in indices]))
        finally:
            if fit.progress is not None:
                fit.progress.close()
            with contextlib.suppress(_StopperFailed):  # the error that ended fit() counts
                fit.callback("on_experiment_end", trials=list(fit.trials))
        self._results = ResultGrid(
            [fit.results[i] for i in sorted(fit.results)],
            str(experiment),
            metric=self.tune_config.metric,
            mode=self.tune_config.mode,
        )
        return self._results

    def get_results(self) -> ResultGrid:
        """The results without running anything (Ray Tune's ``get_results``): the last
        ``fit()``'s, or, for a ``Tuner.restore``-d experiment not fitted since, every started
        trial's as its files hold them (its results, newest checkpoint and error), in the order
        of the trials; trials never started are left out, as ``fit()`` leaves them out.

        Raises:
          RuntimeError: a ``Tuner`` (not restored) whose ``fit()`` has not returned.
        """
        if self._results is not None:
            return self._results
        if self._restored is None:
            raise RuntimeError(
                "Tuner.get_results(): no fit() of this Tuner has returned; call fit(), or "
                "Tuner.restore(path, trainable) to read an experiment's results from its files"
            )
        state = self._restored[0]
        results = [
            es.load_result(state.root / entry["dir"], entry, self._shown(variant))
            for entry, variant in zip(state.trials, self._variants, strict=False)
            if entry["status"] != es.PENDING
        ]
        return ResultGrid(
            results, str(state.root), metric=self.tune_config.metric, mode=self.tune_config.mode
        )

    # ------------------------------------------------------------------ fit's parts
    def _suggest(self, fit: _Fit, searcher: Searcher) -> list[int]:
        """Asks the searcher for the next ``max_concurrent_trials`` (default 1) trials, at most
        ``num_samples`` in all; records them as PENDING and returns their indices."""
        room = self.tune_config.num_samples - len(self._variants)
        k = min(room, self.tune_config.max_concurrent_trials or 1)
        if k <= 0:
            return []
        tag = self._tag
        first = len(self._variants)
        ids = [f"{tag}_{first + j:05d}" for j in range(k)]
        variants = searcher.suggest_many(ids)
        indices = []
        for trial_id, variant in zip(ids, variants, strict=False):
            index = len(self._variants)
            data = to_json_data(variant)
            fit.state.add_trial(
                trial_id, self._trial_dir_name(trial_id, index, variant), data, data == variant
            )
            self._variants.append(variant)
            if self._algo_configs is not None:
                assert self._algo_base is not None
                self._algo_configs.append(self._variant_config(variant))
            if fit.progress is not None:
                name = self._trial_name(trial_id, index, variant)
                fit.progress.table.add(trial_id, name, variant)
            indices.append(index)
        return indices

    def _batches(self, todo: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
        """The trials to run, as batches run one after another: a population (trials of an
        algorithm that can share one program, at most ``max_concurrent_trials``) or one trial.
        A batch runs when its first trial's turn comes."""
        if self._algo_configs is None or not self.tune_config.populations:
            return [[item] for item in todo]
        from rljax.execution.population import population_key, population_refusal

        groups: dict[str, list[tuple[int, str]]] = {}
        for item in todo:
            groups.setdefault(population_key(self._algo_configs[item[0]]), []).append(item)
        limit = self.tune_config.max_concurrent_trials or len(todo)
        batches: list[list[tuple[int, str]]] = []
        for group in groups.values():
            chunks = [group[i : i + limit] for i in range(0, len(group), limit)]
            for chunk in chunks:
                configs = [self._algo_configs[i] for i, _ in chunk]
                if len(chunk) > 1 and population_refusal(configs) is None:
                    batches.append(chunk)
                else:
                    batches += [[item] for item in chunk]
        return sorted(batches, key=lambda b: b[0][0])

    def _open_trial(self, fit: _Fit, index: int, action: str) -> _TrialRun:
        """Marks trial ``index`` RUNNING and returns its run (resumed from its files when
        ``action`` is ``"resume"``, its files removed for ``"restart"``)."""
        entry = fit.state.trials[index]
        trial_id, trial_path = entry["trial_id"], fit.state.root / entry["dir"]
        es.check_trial_dir(fit.state.root, trial_path)  # never written through a link
        resume = es.resume_point(trial_path) if action == "resume" else None
        if action == "restart":
            es.start_over(trial_path)
        fit.state.set_status(index, es.RUNNING)
        if fit.progress is not None:
            fit.progress.status(trial_id, es.RUNNING)
        trial = _TrialRun(
            trial_id,
            trial_path,
            self._variants[index],
            fit.stopper,
            fit.checkpoint_config,
            fit.deadline,
            self.run_config.verbose,
            resume=resume,
            progress=fit.progress,
            lock=fit.lock,
            halt=lambda: fit.aborted,
            describe=self._whole_config,
        )
        searcher, scheduler = self.tune_config.search_alg, self.tune_config.scheduler
        if searcher is not None or scheduler is not None:
            trial.on_result = _searcher_and_scheduler(trial_id, searcher, scheduler)
        if scheduler is not None:
            scheduler.on_trial_add(trial_id)
        fit.trials.append(trial)
        variant = self._variants[index]
        trial.trainable_name = self.trainable_name
        trial.metric = self.tune_config.metric
        trial.experiment_tag = self._trial_info(trial_id, index, variant).experiment_tag
        trial.name = self._trial_name(trial_id, index, variant)
        if fit.callbacks:
            trial.notify = fit.trial_result
            trial.notify_checkpoint = fit.trial_checkpoint
            fit.callback(
                "on_trial_start", iteration=fit.iteration, trials=list(fit.trials), trial=trial
            )
        return trial

    def _close_trial(
        self, fit: _Fit, index: int, trial: _TrialRun, error: BaseException | None
    ) -> None:
        fit.results[index] = trial.result(error)
        status = es.ERROR if error is not None else es.TERMINATED
        fit.state.set_status(index, status)
        trial.status = status
        last = flatten(trial.history[-1]) if trial.history else None
        searcher, scheduler = self.tune_config.search_alg, self.tune_config.scheduler
        if searcher is not None:
            searcher.on_trial_complete(trial.trial_id, last, error=error is not None)
        if scheduler is not None and error is not None:
            scheduler.on_trial_error(trial.trial_id)
        elif scheduler is not None:
            scheduler.on_trial_complete(trial.trial_id, last)
        hook = "on_trial_error" if error is not None else "on_trial_complete"
        fit.callback(hook, iteration=fit.iteration, trials=list(fit.trials), trial=trial)
        if fit.progress is not None:
            fit.progress.status(trial.trial_id, status)
            if error is not None:
                fit.progress.log(f"Trial {trial.trial_id} ERROR: {type(error).__name__}: {error}")
        fit.stopped = fit.stopped or trial.stop_all or trial.out_of_time
        if error is not None and self._failure_config.fail_fast:
            # The first trial to fail for good ends the experiment (Tune's fail_fast).
            fit.stopped = fit.aborted = True

    def _parallel(self, batches: list[list[tuple[int, str]]]) -> bool:
        """Whether ``batches`` run at once, each in a worker process: when
        ``max_concurrent_trials`` leaves room for more than one of them, the trainable is an
        algorithm, and no ``PopulationBasedTraining`` needs every trial in this process."""
        from rljax.tune.pbt import PopulationBasedTraining

        cap = self.tune_config.max_concurrent_trials
        return (
            cap is not None
            and len(batches) > 1
            and self._algo_configs is not None
            and not isinstance(self.tune_config.scheduler, PopulationBasedTraining)
            and len(batches[0]) + len(batches[1]) <= cap
        )

    def _run_batches(self, fit: _Fit, batches: list[list[tuple[int, str]]]) -> None:
        """Runs ``batches`` in order: one after another in this process, or (``_parallel``)
        as many at once as ``max_concurrent_trials`` trials allow, each in a worker process
        driven by a thread of this one. No batch starts once ``time_budget_s`` has passed or a
        ``Stopper`` said ``stop_all``; an error that ends ``fit()`` (a failing stop criterion)
        ends the running trials after their current result, and Ctrl-C ends the workers at once
        (their trials stay RUNNING, for ``Tuner.restore``)."""
        if not self._parallel(batches):
            for batch in batches:
                if fit.stopped or fit.past_deadline():
                    break
                self._run_batch(fit, batch)
            return
        from rljax.tune.worker import Worker

        cap = self.tune_config.max_concurrent_trials
        assert cap is not None
        pending = list(batches)
        running: dict[int, int] = {}  # a batch's thread's number: its number of trials
        finished: queue.Queue[tuple[int, BaseException | None]] = queue.Queue()
        failure: BaseException | None = None

        def drive(number: int, batch: list[tuple[int, str]]) -> None:
            error: BaseException | None = None
            try:
                self._run_batch(fit, batch, True)
            except BaseException as e:
                error = e
            finished.put((number, error))

        # Daemon threads, not a ThreadPoolExecutor: the interpreter joins an executor's
        # threads when it exits, so after Ctrl-C one thread still blocked (on its killed
        # worker, or on a future's lock: concurrent.futures.wait() takes its futures' locks
        # one by one, and a KeyboardInterrupt between two leaves one held) kept the script
        # from ending. The workers are killed; nothing is left for these threads to finish.
        started = 0
        try:
            while pending or running:
                while pending and failure is None and not (fit.stopped or fit.past_deadline()):
                    if running and sum(running.values()) + len(pending[0]) > cap:
                        break
                    batch = pending.pop(0)
                    running[started] = len(batch)
                    threading.Thread(
                        target=drive, args=(started, batch), name=f"trial-{started}", daemon=True
                    ).start()
                    started += 1
                if not running:
                    break
                number, error = finished.get()
                del running[number]
                if error is not None and failure is None:
                    failure, fit.aborted = error, True
        except BaseException:
            fit.interrupted = fit.aborted = True
            Worker.kill_all()
            raise
        if failure is not None:
            raise failure

    def _run_batch(self, fit: _Fit, batch: list[tuple[int, str]], remote: bool = False) -> None:
        """Runs one batch to its end: a population, or one trial; in a worker process when
        ``remote`` and its configs can be sent there (else here). A failing stop criterion or
        callback ends ``fit()`` with ``ConfigError``."""
        try:
            self._run_batch_inner(fit, batch, remote)
        except _StopperFailed as e:
            raise ConfigError(str(e)) from e.__cause__

    def _run_batch_inner(self, fit: _Fit, batch: list[tuple[int, str]], remote: bool) -> None:
        with fit.lock:
            trials = {index: self._open_trial(fit, index, action) for index, action in batch}
        errors: dict[int, BaseException | None] = dict.fromkeys(trials)
        payload = self._payload(trials) if remote else None
        if len(batch) > 1:
            assert self._algo_configs is not None
            failures = run_population(
                [self._algo_configs[i] for i in trials],
                list(trials.values()),
                self.tune_config.scheduler,
                payload,
            )
            errors = dict(zip(trials, failures, strict=True))
        else:
            ((index, trial),) = trials.items()
            errors[index] = self._run_trial(index, trial, payload)
        for index, trial in trials.items():
            errors[index] = self._retried(fit, index, trial, errors[index], remote)
        if fit.interrupted:  # Ctrl-C ended the workers: the trials stay RUNNING
            return
        with fit.lock:
            for index, trial in trials.items():
                self._close_trial(fit, index, trial, errors[index])
        fail_fast = self._failure_config.fail_fast
        failed = [e for e in errors.values() if e is not None]
        if fail_fast == "raise" and failed:
            raise failed[0]

    @property
    def _failure_config(self) -> FailureConfig:
        return self.run_config.failure_config or FailureConfig()

    def _retried(
        self, fit: _Fit, index: int, trial: _TrialRun, error: BaseException | None, remote: bool
    ) -> BaseException | None:
        """A failed trial run again (``FailureConfig.max_failures``), alone, from its newest
        checkpoint if it saved one, else from the start, until it ends without an error or
        has no retries left; returns its last error (None: it ended well). A population's
        failed member is retried alone too."""
        failures = 0
        policy = self._failure_config
        while (
            error is not None
            and policy.retries_left(failures := failures + 1)
            and not (fit.aborted or fit.interrupted or fit.stopped)
        ):
            if fit.progress is not None:
                fit.progress.log(
                    f"Trial {trial.trial_id} failed ({type(error).__name__}: {error}); "
                    f"starting it again (failure {failures} of "
                    f"{'unlimited' if policy.max_failures < 0 else policy.max_failures})"
                )
            payload = self._payload({index: trial}) if remote else None
            error = self._run_trial(index, trial, payload)
        return error

    def _payload(self, trials: dict[int, _TrialRun]) -> bytes | None:
        """What a worker process needs to build ``trials`` (by index) from their newest
        checkpoints (``worker.picklable_payload``); None: they run in this process."""
        from rljax.tune.worker import picklable_payload

        assert self._algo_configs is not None, "only algorithm trials run in workers"
        return picklable_payload(
            [self._algo_configs[i] for i in trials],
            [t.latest_checkpoint for t in trials.values()],
        )

    def _run_trial(
        self, index: int, trial: _TrialRun, payload: bytes | None = None
    ) -> BaseException | None:
        """Runs one trial to its end (an algorithm's in a worker process with ``payload``);
        returns its exception, if it raised."""
        variant = self._variants[index]
        try:
            if self._function is not None:
                given: Any = variant
                if self._config_base is not None:
                    given = self._config_base.copy().update_from_dict(variant)
                try:
                    with trial_session(trial):
                        returned = self._function(given)
                    if isinstance(returned, Mapping):  # Tune 1.x: a returned dict is a result
                        trial.record(dict(returned))
                except _StopTrial:
                    pass
            else:
                assert self._algo_configs is not None
                self._run_algorithm(self._algo_configs[index], trial, payload)
        except (_StopperFailed, MainModuleRerun):
            raise
        except Exception as e:
            return e
        return None

    def _experiment_path(self) -> Path:
        if self._restored is not None:
            return self._restored[0].root
        run = self.run_config
        name = run.name or f"{self.trainable_name}_{time.strftime('%Y-%m-%d_%H-%M-%S')}"
        storage = Path(os.fspath(run.storage_path or default_storage_path())).expanduser()
        return storage / name

    def _new_state(self, experiment: Path) -> es.ExperimentState:
        """The state of a new run: every trial PENDING, written at once."""
        tag = self._tag = uuid.uuid4().hex[:5]
        ids = [f"{tag}_{index:05d}" for index in range(len(self._variants))]
        variants = to_json_data(self._variants)
        base = self._base if self._base is not None else self._config_base
        state = es.ExperimentState(
            root=experiment,
            trainable=self.trainable_name,
            kind="function" if self._function is not None else "algorithm",
            base_config=base_config_data(base),
            variants=variants,
            variants_exact=variants == self._variants,
            searched=[list(p) for p in self._searched],
            tune_config={
                **es.tune_config_data(self.tune_config),
                # Whether results show whole configs, which a restore keeps (it is given the
                # base config as param_space either way).
                "whole_config": self._whole_config is not None,
            },
            run_config=es.run_config_data(self.run_config),
            trials=[
                {
                    "trial_id": trial_id,
                    "dir": self._trial_dir_name(trial_id, index, variant),
                    "status": es.PENDING,
                }
                for index, (trial_id, variant) in enumerate(zip(ids, self._variants, strict=True))
            ],
        )
        state.save()
        return state

    def _progress(self, state: es.ExperimentState) -> ProgressReporter:
        chosen = self.run_config.progress_reporter
        if chosen is not None:
            table = chosen.table(self._searched, self.tune_config.metric, self.tune_config.mode)
        else:
            table = TrialTable(self._searched, self.tune_config.metric, self.tune_config.mode)
        for index, (entry, variant) in enumerate(zip(state.trials, self._variants, strict=True)):
            table.add(
                entry["trial_id"], self._trial_name(entry["trial_id"], index, variant), variant
            )
            if self._restored is not None and entry["status"] != es.PENDING:
                table.set_status(entry["trial_id"], entry["status"])
                history = es.read_history(state.root / entry["dir"])
                if history:
                    table.report(entry["trial_id"], history[-1])
        verbose = self.run_config.verbose
        if chosen is not None:
            return chosen.reporter(table, verbose=verbose)
        # Off a terminal the table prints once, at the end, unless verbose=3 asks for more.
        return ProgressReporter(table, intermediate=True if verbose >= 3 else None)

    @classmethod
    def can_restore(cls, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is an experiment directory ``Tuner.restore`` can continue (it holds
        an ``experiment_state.json``)."""
        return (Path(os.fspath(path)).expanduser() / es.STATE_FILE).is_file()

    @classmethod
    def restore(
        cls,
        path: str | os.PathLike[str],
        trainable: Any,
        param_space: Mapping[str, Any] | AlgorithmConfig | None = None,
        resume_unfinished: bool = True,
        resume_errored: bool = False,
        restart_errored: bool = False,
        *,
        stop: Any = None,
        callbacks: list[Any] | None = None,
        scheduler: Any = None,
    ) -> Tuner:
        """A ``Tuner`` that continues the experiment at ``path`` (Ray Tune's
        ``Tuner.restore``); call ``fit()`` on it.

        Its ``fit()`` loads the trials that finished from their files (not run again) and
        returns a ``ResultGrid`` of all trials. A trial that was running or not started yet
        (``resume_unfinished``), or that raised (``resume_errored``), continues from its latest
        checkpoint (``checkpoint_NNNNNN``: an algorithm trial is rebuilt and
        ``restore_from_path``-ed, a function trial finds it with ``tune.get_checkpoint()``),
        its results up to that checkpoint kept and the next ones appended; without a
        checkpoint it starts over. ``restart_errored`` starts the trials that raised over, their
        files removed. Trials not resumed are returned as they were.

        Args:
          path: The experiment directory (``storage_path/name``) ``fit()`` wrote; it may have
            been moved.
          trainable: The trainable again: functions are not saved. An algorithm name or class
            rebuilds the base config from the saved settings; a config object replaces them.
          param_space: Needed only when the variants held values JSON cannot (objects,
            tuples): then the same ``param_space`` as the original, whose searched values are
            replaced by each trial's saved ones. A config object gives the base settings.
          resume_unfinished, resume_errored, restart_errored: Tune's flags, as above.
          stop: ``RunConfig.stop`` again when it was a function or a ``Stopper`` (not saved).
          callbacks: ``RunConfig.callbacks`` again (objects, not saved).
          scheduler: ``TuneConfig.scheduler`` again (an object, not saved); needed to go on
            when it was what stopped the trials (``max_t``) and there is no stop criterion.

        The directory is read as untrusted data before anything in it changes: every trial
        directory must be a plain directory inside it (not a link, to another run say; nor
        its ``checkpoint_NNNNNN`` directories), and every file read back (``experiment_state
        .json``, each trial's ``result.json`` and ``error.txt``) a regular file inside its
        directory, within a size cap (64 MiB, 256 MiB, 1 MiB) and nested at most 64 levels.
        Nothing is read, written or deleted through a link.

        Raises:
          ConfigError: no experiment state at ``path``, a trial directory or file that breaks
            the rules above (naming it and the rule, never its content), a trainable of
            another kind or algorithm than the experiment's, or something above that must be
            given again.
        """
        return restore_tuner(
            cls,
            path,
            trainable,
            param_space,
            resume_unfinished,
            resume_errored,
            restart_errored,
            stop,
            callbacks,
            scheduler,
        )

    @staticmethod
    def _run_algorithm(
        config: AlgorithmConfig, trial: _TrialRun, payload: bytes | None = None
    ) -> None:
        from rljax.tune.worker import RemoteAlgorithm

        if payload is not None:  # built, and restored from the checkpoint, in the worker
            trial.train(RemoteAlgorithm(payload), restore=False)
        else:
            trial.train(config.build_algo())


# ---------------------------------------------------------------------- tune.run
_RESUME_HEADS = ("AUTO", "LOCAL", "REMOTE", "PROMPT")
# Tune's suffixes, as ``Tuner.restore``'s flags.
_RESUME_SUFFIXES: dict[str, dict[str, bool]] = {
    "ERRORED": {"resume_errored": True},
    "RESTART_ERRORED": {"restart_errored": True},
    "ERRORED_ONLY": {"resume_errored": True, "resume_unfinished": False},
    "RESTART_ERRORED_ONLY": {"restart_errored": True, "resume_unfinished": False},
}


def _resumed_tuner(
    resume: bool | str | None,
    trainable: Any,
    config: Any,
    run_config: RunConfig,
    resume_config: ResumeConfig | None = None,
) -> Tuner | None:
    """``tune.run(resume=...)``: the ``Tuner`` restored from ``storage_path/name``, or None
    for a new run. Tune's values: True, ``"LOCAL"``, ``"REMOTE"`` and ``"PROMPT"`` resume the
    experiment (which must exist), ``"AUTO"`` resumes it if it exists; a suffix ``+ERRORED``,
    ``+RESTART_ERRORED``, ``+ERRORED_ONLY`` or ``+RESTART_ERRORED_ONLY`` (or one of those
    alone) sets ``Tuner.restore``'s flags; so does a ``resume_config`` (which alone means
    ``"AUTO"``)."""
    if resume_config is not None:
        if not isinstance(resume_config, ResumeConfig):
            raise ConfigError(f"tune.run(resume_config={resume_config!r}): use a tune.ResumeConfig")
        if isinstance(resume, str) and "+" in resume:
            raise ConfigError(
                f"tune.run(resume={resume!r}, resume_config=...): give the suffixes or a "
                "ResumeConfig, not both"
            )
        resume = "AUTO" if resume in (None, False) else resume
    if resume is None or resume is False:
        return None
    parts = ["LOCAL"] if resume is True else str(resume).upper().split("+")
    if parts[0] in _RESUME_SUFFIXES:  # "ERRORED_ONLY" alone: resume the experiment so
        parts = ["LOCAL", *parts]
    head, suffixes = parts[0], parts[1:]
    if (
        not isinstance(resume, (bool, str))
        or head not in _RESUME_HEADS
        or any(p not in _RESUME_SUFFIXES for p in suffixes)
    ):
        raise ConfigError(
            f"tune.run(resume={resume!r}): use True, False, 'AUTO' or 'LOCAL', optionally with "
            f"{', '.join('+' + k for k in _RESUME_SUFFIXES)}"
        )
    if run_config.name is None:
        raise ConfigError(
            f"tune.run(resume={resume!r}) needs the experiment's name=... (and its "
            "storage_path) to find it"
        )
    path = Path(os.fspath(run_config.storage_path or default_storage_path())).expanduser()
    path = path / run_config.name
    if not Tuner.can_restore(path):
        if head == "AUTO":
            return None
        raise ConfigError(f"tune.run(resume={resume!r}): no experiment to resume at {path}")
    flags: dict[str, bool] = {} if resume_config is None else resume_config.restore_flags()
    for suffix in suffixes:
        flags.update(_RESUME_SUFFIXES[suffix])
    return Tuner.restore(
        str(path),
        trainable,
        param_space=config,
        stop=run_config.stop,
        callbacks=run_config.callbacks,
        **flags,
    )


def run(
    run_or_experiment: Any,
    config: Mapping[str, Any] | AlgorithmConfig | None = None,
    stop: Any = None,
    num_samples: int = 1,
    metric: str | None = None,
    mode: str | None = None,
    name: str | None = None,
    storage_path: str | os.PathLike[str] | None = None,
    verbose: int = 1,
    time_budget_s: float | None = None,
    checkpoint_config: CheckpointConfig | None = None,
    seed: int | None = None,
    raise_on_failed_trial: bool = True,
    *,
    local_dir: str | os.PathLike[str] | None = None,
    checkpoint_freq: int = 0,
    checkpoint_at_end: bool = False,
    keep_checkpoints_num: int | None = None,
    checkpoint_score_attr: str | None = None,
    resources_per_trial: Any = None,
    search_alg: Any = None,
    scheduler: Any = None,
    max_concurrent_trials: int | None = None,
    callbacks: Any = None,
    progress_reporter: Any = None,
    max_failures: int = 0,
    fail_fast: bool | str = False,
    trial_name_creator: Callable[[Any], str] | None = None,
    trial_dirname_creator: Callable[[Any], str] | None = None,
    reuse_actors: bool | None = None,
    sync_config: SyncConfig | None = None,
    storage_filesystem: Any = None,
    log_to_file: bool | str | tuple[str, str] = False,
    chdir_to_trial_dir: Any = None,
    export_formats: Any = None,
    restore: str | os.PathLike[str] | None = None,
    resume: bool | str | None = None,
    resume_config: Any = None,
) -> ExperimentAnalysis:
    """Tune's older entry point, run through ``Tuner``: ``tune.run(trainable, config=...,
    stop=..., num_samples=..., metric=..., mode=...)`` returns an ``ExperimentAnalysis`` with
    ``best_config``, ``best_result``, ``results``, ``results_df`` and ``trials``.

    Tune's other arguments go where ``Tuner`` has them: ``search_alg``, ``scheduler``,
    ``max_concurrent_trials``, ``trial_name_creator``, ``trial_dirname_creator`` and
    ``reuse_actors`` to ``TuneConfig``; ``callbacks``, ``progress_reporter``, ``sync_config``,
    ``storage_filesystem`` and ``log_to_file`` to ``RunConfig``; ``max_failures`` and
    ``fail_fast`` to its ``FailureConfig``. Ray 1.x's are taken too: ``local_dir``
    (``storage_path``), ``checkpoint_freq``, ``checkpoint_at_end`` and ``keep_checkpoints_num``
    (a ``CheckpointConfig``), and ``resources_per_trial`` (no effect: trials share the host).
    ``resume`` (True, ``"AUTO"``, ``"LOCAL"``, ``"ERRORED_ONLY"``, ...: Tune's flags) continues
    the experiment at ``storage_path/name`` through ``Tuner.restore`` when it exists
    (``"AUTO"``: else starts it); a ``resume_config`` (``tune.ResumeConfig``) sets the same
    flags by status. ``restore`` (a checkpoint to start every trial from),
    ``checkpoint_score_attr`` and ``export_formats`` are refused with the way to do it here.
    An algorithm name with a dict ``config`` that uses RLlib 1.x's keys
    (``tune.run("PPO", config={"num_workers": 2, "sgd_minibatch_size": 64, ...})``) trains
    RLlib 1.x's trainer (``rljax.agents``), whose results have the old keys
    (``episode_reward_mean``).

    Raises:
      TuneError: ``raise_on_failed_trial`` (the default, as Tune's) and a trial raised.
      ConfigError: an argument rljax cannot honour, saying what to do instead.
    """
    check_mode(mode)
    for given, argument, instead in (
        (restore, "restore", "build the algorithm and call algo.restore_from_path(path)"),
        (checkpoint_score_attr, "checkpoint_score_attr", "keep_checkpoints_num keeps the newest"),
        (export_formats, "export_formats", "export with algo.export_policy(dir) after fit()"),
    ):
        if given is not None:
            raise ConfigError(f"tune.run({argument}={given!r}) is not supported: {instead}")
    if local_dir is not None:
        if storage_path is not None:
            raise ConfigError("tune.run(): give storage_path or local_dir (its old name), not both")
        storage_path = local_dir
    if checkpoint_freq or checkpoint_at_end or keep_checkpoints_num is not None:
        if checkpoint_config is not None:
            raise ConfigError(
                "tune.run(): give checkpoint_config or checkpoint_freq / checkpoint_at_end / "
                "keep_checkpoints_num, not both"
            )
        checkpoint_config = CheckpointConfig(
            num_to_keep=keep_checkpoints_num,
            checkpoint_frequency=checkpoint_freq,
            # False is the parameter's default: as in Ray, it leaves Tune's own (None).
            checkpoint_at_end=checkpoint_at_end or None,
        )
    if resources_per_trial is not None:
        from rljax.agents.config_table import note

        note(
            "resources_per_trial",
            "tune.run(resources_per_trial=...) has no effect: trials share the host",
        )
    run_or_experiment = old_api_trainable(run_or_experiment, config)
    tune_config = TuneConfig(
        metric=metric,
        mode=mode,
        num_samples=num_samples,
        time_budget_s=time_budget_s,
        seed=seed,
        search_alg=search_alg,
        scheduler=scheduler,
        max_concurrent_trials=max_concurrent_trials or None,  # Tune's 0: no limit
        trial_name_creator=trial_name_creator,
        trial_dirname_creator=trial_dirname_creator,
        reuse_actors=reuse_actors,
        chdir_to_trial_dir=chdir_to_trial_dir,
    )
    run_config = RunConfig(
        name=name,
        storage_path=storage_path,
        stop=stop,
        checkpoint_config=checkpoint_config,
        verbose=verbose,
        callbacks=callbacks,
        progress_reporter=progress_reporter,
        failure_config=FailureConfig(max_failures=max_failures, fail_fast=fail_fast),
        sync_config=sync_config,
        storage_filesystem=storage_filesystem,
        log_to_file=log_to_file,
    )
    tuner = _resumed_tuner(resume, run_or_experiment, config, run_config, resume_config)
    if tuner is None:
        tuner = Tuner(
            run_or_experiment, param_space=config, tune_config=tune_config, run_config=run_config
        )
    grid = tuner.fit()
    if raise_on_failed_trial and grid.num_errors:
        failed = [f"{r.trial_id} ({type(r.error).__name__}: {r.error})" for r in grid if r.error]
        raise TuneError(f"trials did not complete: {', '.join(failed)}")
    return ExperimentAnalysis(grid, metric, mode)


__all__ = [
    "ExperimentAnalysis",
    "TuneError",
    "Tuner",
    "get_checkpoint",
    "report",
    "run",
    "to_json_data",
]

# The trial loop's parts, restore and the old-API bridge live in their own modules
# (trial_run, population_run, restore, old_api, analysis); their names stay importable here.
_run_population = run_population
_old_api_trainable = old_api_trainable
_is_old_api_trainer = is_old_api_trainer
_check_stop_keys = check_stop_keys
_base_config_data = base_config_data
_base_config_from_data = base_config_from_data
_variants_over = variants_over
