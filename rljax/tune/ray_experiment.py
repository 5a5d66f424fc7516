"""An experiment file run by Ray Tune on a Ray cluster: ``rljax tune --config X --ray-address A``.

The same file as ``rljax tune`` runs on one host (``rljax.tune.experiment_file``), with every
check that gets: it is read and checked by ``tuner_from_data`` first, so a bad file fails
before Ray is contacted. Then Ray Tune runs it: each ``{kind: arguments}`` search space becomes
Ray Tune's function of the same name, ``tune_config`` and ``run_config`` Ray Tune's own
(``seed`` as ``BasicVariantGenerator(random_state=seed)``), and the trainable is
``ray_trainable(algo)``, whose trials ask the cluster for what their knobs name, with
``reuse_actors=True`` (a finished trial's process starts the next). Ray is imported only here,
when this runs.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from rljax.tune.experiment_file import (
    SEARCH_KINDS,
    algorithm_config_class,
    print_fit_summary,
    tuner_from_data,
)
from rljax.utils.errors import ConfigError


def ray_search_spaces(tree: Any, ray_tune: Any) -> Any:
    """``tree`` (a file's ``param_space``, already checked) with each ``{kind: arguments}``
    mapping turned into Ray Tune's search space of that kind, at any depth."""
    if isinstance(tree, dict) and len(tree) == 1:
        ((kind, args),) = tree.items()
        if kind in SEARCH_KINDS:
            function = getattr(ray_tune, kind)
            if kind in ("grid_search", "choice"):
                return function([ray_search_spaces(v, ray_tune) for v in args])
            return function(**args) if isinstance(args, dict) else function(*args)
    if isinstance(tree, dict):
        return {k: ray_search_spaces(v, ray_tune) for k, v in tree.items()}
    if isinstance(tree, list):
        return [ray_search_spaces(v, ray_tune) for v in tree]
    return tree


def ray_tuner_from_data(data: Mapping[str, Any], **kwargs: Any) -> Any:
    """Ray Tune's ``Tuner`` for an experiment file (run it after ``ray.init``).

    The keyword arguments are ``tuner_from_data``'s (``rljax tune``'s flags);
    ``restore=True`` continues the experiment at ``storage_path/name`` (Ray's
    ``Tuner.restore``, errored trials too) when there is one there, else starts it.

    Raises:
      ConfigError: anything ``tuner_from_data`` refuses (checked before Ray is used).
      ImportError: Ray Tune is not installed.
    """
    return _ray_tuner(data, **kwargs)[0]


def _ray_tuner(
    data: Mapping[str, Any],
    *,
    storage_path: str | None = None,
    name: str | None = None,
    num_samples: int | None = None,
    verbose: int | None = None,
    allow_imports: Iterable[str] | None = None,
    restore: bool = False,
) -> tuple[Any, str | None, str | None]:
    """(Ray Tune's Tuner, metric, mode); see ``ray_tuner_from_data``."""
    from rljax.tune.ray_integration import _import_ray_tune, ray_trainable

    local = tuner_from_data(
        data,
        storage_path=storage_path,
        name=name,
        num_samples=num_samples,
        verbose=verbose,
        allow_imports=allow_imports,
    )
    ray_tune = _import_ray_tune()
    from ray.tune.search import BasicVariantGenerator

    algo = data.get("algo", data.get("trainable"))
    algo_name = algorithm_config_class(algo)().algo_name
    trainable = ray_trainable(algo_name)
    tc, rc = local.tune_config, local.run_config
    tune_kwargs: dict[str, Any] = {
        "metric": tc.metric,
        "mode": tc.mode,
        "num_samples": tc.num_samples,
        "time_budget_s": tc.time_budget_s,
        # A finished trial's process starts the next one (reset_config): no process start,
        # imports and compilation per trial.
        "reuse_actors": True,
    }
    if tc.seed is not None:
        tune_kwargs["search_alg"] = BasicVariantGenerator(random_state=tc.seed)
    run_kwargs: dict[str, Any] = {
        "name": rc.name,
        "storage_path": None if rc.storage_path is None else os.fspath(rc.storage_path),
        "stop": rc.stop,
        "verbose": rc.verbose,
    }
    checkpoint = rc.checkpoint_config
    if checkpoint is not None:
        run_kwargs["checkpoint_config"] = ray_tune.CheckpointConfig(
            num_to_keep=checkpoint.num_to_keep,
            checkpoint_frequency=checkpoint.checkpoint_frequency,
            checkpoint_at_end=checkpoint.checkpoint_at_end,
            checkpoint_score_attribute=checkpoint.checkpoint_score_attribute,
            checkpoint_score_order=checkpoint.checkpoint_score_order,
        )
    if restore:
        if rc.name is None:
            raise ConfigError(
                "--resume continues the experiment at storage_path/name: give run_config.name "
                "(or --name)"
            )
        root = run_kwargs["storage_path"] or os.path.expanduser("~/ray_results")
        path = os.path.join(root, rc.name)
        if ray_tune.Tuner.can_restore(path):
            tuner = ray_tune.Tuner.restore(path, trainable=trainable, resume_errored=True)
            return tuner, tc.metric, tc.mode
    tuner = ray_tune.Tuner(
        trainable,
        param_space=ray_search_spaces(dict(data.get("param_space") or {}), ray_tune),
        tune_config=ray_tune.TuneConfig(**tune_kwargs),
        run_config=ray_tune.RunConfig(**run_kwargs),
    )
    return tuner, tc.metric, tc.mode


def run_on_ray(config_path: str, data: Mapping[str, Any], address: str, **kwargs: Any) -> int:
    """Connects to the Ray cluster at ``address`` (``ray.init(address=...)``: ``auto``,
    ``HOST:PORT``, ``ray://HOST:PORT`` or ``local``), runs the experiment there and prints
    ``rljax tune``'s JSON summary. Returns ``rljax tune``'s exit status.

    ``kwargs`` are ``ray_tuner_from_data``'s.
    """
    from rljax.tune.ray_integration import _import_ray_tune
    from rljax.tune.stopper import flatten
    from rljax.tune.tuner import to_json_data

    try:
        _import_ray_tune()
    except ImportError as e:
        raise ConfigError(f"--ray-address {address}: {e}") from None
    import ray

    try:
        tuner, metric, mode = _ray_tuner(data, **kwargs)
    except (ConfigError, NotImplementedError) as e:
        raise ConfigError(f"{config_path}: {e}") from None
    connected = ray.is_initialized()  # a caller already connected: its connection stays
    if not connected:
        ray.init(address=address, log_to_driver=False)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            grid = tuner.fit()
    finally:
        if not connected:
            ray.shutdown()
    best: dict[str, Any] | None = None
    problem = ""
    if metric is not None and mode is not None:
        try:
            result = grid.get_best_result()
        except RuntimeError as e:
            problem = str(e)
        else:
            best = {
                "trial_id": result.metrics.get("trial_id"),
                "config": to_json_data(result.config),
                metric: to_json_data(flatten(result.metrics).get(metric)),
                "training_iteration": result.metrics.get("training_iteration"),
                "node_id": result.metrics.get("node_id"),
                "path": result.path,
                "checkpoint": str(result.checkpoint.path) if result.checkpoint else None,
            }
    errors = {
        str(r.metrics.get("trial_id", i)): f"{type(r.error).__name__}: {r.error}"
        for i, r in enumerate(grid)
        if r.error
    }
    summary = {
        "experiment_path": grid.experiment_path,
        "ray_address": address,
        "num_trials": len(grid),
        "num_terminated": grid.num_terminated,
        "num_errors": grid.num_errors,
        "errors": errors,
        "metric": metric,
        "mode": mode,
        "best_trial": best,
    }
    return print_fit_summary(summary, problem)


__all__ = ["ray_search_spaces", "ray_tuner_from_data", "run_on_ray"]
