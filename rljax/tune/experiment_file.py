"""An experiment described in a YAML (or JSON) file, as ``rljax tune --config FILE`` runs it.

The file, read as untrusted data (``rljax.utils.safe_io.read_yaml``: PyYAML's safe loader
without aliases, at most 64 KiB, nested at most 64 levels)::

    algo: PPO                      # or trainable: PPO; an rljax algorithm name
    param_space:                   # settings by RLlib's names: values or search spaces
      env: CartPole-v1
      lr: {grid_search: [0.001, 0.0003]}
      entropy_coeff: {uniform: [0.0, 0.01]}
      model_config:
        fcnet_hiddens: {choice: [[32], [64, 64]]}
    tune_config:                   # tune.TuneConfig's settings
      metric: env_runners/episode_return_mean
      mode: max
      num_samples: 1
      seed: 0
      time_budget_s: 600
    run_config:                    # tune.RunConfig's settings
      name: tune_ppo_cartpole
      storage_path: ~/rljax_results
      stop: {training_iteration: 20}
      checkpoint_config: {checkpoint_frequency: 5, checkpoint_at_end: true, num_to_keep: 2}
      failure_config: {max_failures: 2}   # tune.FailureConfig's settings
      verbose: 1

A search space is a mapping with one key, its kind, whose value lists the arguments of
``rljax.tune``'s function of that name (or maps them by name): ``{grid_search: [v1, v2]}``,
``{choice: [v1, v2]}``, ``{uniform: [lower, upper]}``, ``{quniform: [lower, upper, q]}``,
``{loguniform: [lower, upper]}`` (or ``[lower, upper, base]``), ``{randint: [lower, upper]}``,
``{qrandint: [lower, upper, q]}``, ``{randn: [mean, sd]}``, ``{qloguniform: [lower, upper,
q]}``, ``{lograndint: [lower, upper]}``, ``{qlograndint: [lower, upper, q]}``, ``{qrandn:
[mean, sd, q]}``. One may sit at any depth of a
setting's value, and inside a grid's values or a choice's categories.

Nothing is built before everything is checked: the keys at every level, the algorithm, the
number of trials (grid sizes x ``num_samples``, counted before any is made: at most
``rljax.tune.variants.MAX_VARIANTS``), each search space (through ``generate_variants``), each searched key (a setting of the algorithm),
and every trial's resolved settings through ``AlgorithmConfig.from_dict``, the checks any config
file gets (so code a file names is imported only under ``allow_imports``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rljax.tune import sample
from rljax.tune.tune_config import CheckpointConfig, FailureConfig, RunConfig, TuneConfig
from rljax.tune.tuner import Tuner
from rljax.tune.variants import check_search_spaces, check_variant_count, find_search_spaces
from rljax.utils import safe_io
from rljax.utils.errors import ConfigError, best_match, closest

MAX_FILE_BYTES = 64 << 10
TOP_KEYS = ("algo", "trainable", "param_space", "tune_config", "run_config")
TUNE_CONFIG_KEYS = ("metric", "mode", "num_samples", "seed", "time_budget_s")
RUN_CONFIG_KEYS = ("name", "storage_path", "stop", "checkpoint_config", "failure_config", "verbose")
CHECKPOINT_CONFIG_KEYS = (
    "num_to_keep",
    "checkpoint_frequency",
    "checkpoint_at_end",
    "checkpoint_score_attribute",
    "checkpoint_score_order",
)
FAILURE_CONFIG_KEYS = ("max_failures", "fail_fast")
# Each kind, its function and how its arguments are written.
SEARCH_KINDS: dict[str, tuple[Any, str]] = {
    "grid_search": (sample.grid_search, "[value, ...]"),
    "choice": (sample.choice, "[category, ...]"),
    "uniform": (sample.uniform, "[lower, upper]"),
    "quniform": (sample.quniform, "[lower, upper, q]"),
    "loguniform": (sample.loguniform, "[lower, upper] or [lower, upper, base]"),
    "randint": (sample.randint, "[lower, upper]"),
    "qrandint": (sample.qrandint, "[lower, upper, q]"),
    "randn": (sample.randn, "[mean, sd]"),
    "qloguniform": (sample.qloguniform, "[lower, upper, q]"),
    "lograndint": (sample.lograndint, "[lower, upper]"),
    "qlograndint": (sample.qlograndint, "[lower, upper, q]"),
    "qrandn": (sample.qrandn, "[mean, sd, q]"),
}
# Tune's kinds a file cannot use: functions.
_OTHER_TUNE_KINDS = ("sample_from", "func")


def _where(path: tuple[Any, ...]) -> str:
    return "param_space" + "".join(f"[{k!r}]" for k in path)


def _kinds_allowed() -> str:
    return ", ".join(f"{{{k}: {args}}}" for k, (_, args) in SEARCH_KINDS.items())


def _unknown_kind(value: Any) -> str | None:
    """The key of a one-key mapping that looks like a search space of a kind there is not (a
    near-miss of a kind, or one of Tune's that files cannot use); None otherwise."""
    if not isinstance(value, dict) or len(value) != 1:
        return None
    (key,) = value
    if not isinstance(key, str) or key in SEARCH_KINDS:
        return None
    if key in _OTHER_TUNE_KINDS:
        return key
    if isinstance(value[key], (list, dict)) and best_match(key, SEARCH_KINDS):
        return key
    return None


def search_spaces_from_data(tree: Any, path: tuple[Any, ...] = ()) -> Any:
    """``tree`` (plain data from a file) with its ``{kind: arguments}`` mappings turned into
    ``rljax.tune`` search spaces, at any depth.

    Raises:
      ConfigError: a kind there is not (naming the key path and the kinds allowed), or
        arguments that do not fit the kind.
    """
    if isinstance(tree, dict) and len(tree) == 1:
        ((kind, args),) = tree.items()
        if kind in SEARCH_KINDS:
            function, shape = SEARCH_KINDS[kind]
            where = _where(path)
            if kind in ("grid_search", "choice"):
                if not isinstance(args, list):
                    raise ConfigError(
                        f"{where}: {{{kind}: {args!r}}}: give a list, {{{kind}: {shape}}}"
                    )
                values = [search_spaces_from_data(v, (*path, kind, i)) for i, v in enumerate(args)]
                return function(values)
            try:
                if isinstance(args, list):
                    return function(*args)
                if isinstance(args, dict) and all(isinstance(k, str) for k in args):
                    return function(**args)
            except TypeError:
                pass
            raise ConfigError(
                f"{where}: {{{kind}: {args!r}}}: write its arguments as {{{kind}: {shape}}}"
            )
        odd = _unknown_kind(tree)
        if odd is not None:
            match = best_match(odd, SEARCH_KINDS)
            hint = f"; did you mean {match!r}?" if match and odd not in _OTHER_TUNE_KINDS else ""
            raise ConfigError(
                f"{_where(path)}: {odd!r} is not a search-space kind a file can use{hint}; "
                f"allowed: {_kinds_allowed()}"
            )
    if isinstance(tree, dict):
        return {k: search_spaces_from_data(v, (*path, k)) for k, v in tree.items()}
    if isinstance(tree, list):
        return [search_spaces_from_data(v, (*path, i)) for i, v in enumerate(tree)]
    return tree


def read_experiment_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The file's mapping (see the module's docstring); its keys checked.

    Raises:
      ConfigError: the file cannot be read, is not a mapping, or has a key that is not one of
        ``TOP_KEYS``.
    """
    data = safe_io.read_yaml(Path(os.fspath(path)), MAX_FILE_BYTES, ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: an experiment file is a mapping with keys {list(TOP_KEYS)}; got a "
            f"{type(data).__name__}"
        )
    _check_keys(data, TOP_KEYS, str(path))
    return data


def _check_keys(data: Mapping[Any, Any], allowed: Iterable[str], where: str) -> None:
    allowed = list(allowed)
    for key in data:
        if not isinstance(key, str) or key not in allowed:
            hint = closest(key, allowed) if isinstance(key, str) else ""
            raise ConfigError(f"{where}: unknown key {key!r}{hint}; allowed: {allowed}")


def _section(data: Mapping[str, Any], key: str, allowed: Iterable[str]) -> dict[str, Any]:
    section = data.get(key)
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(f"{key}: give a mapping; got {section!r} ({type(section).__name__})")
    _check_keys(section, allowed, key)
    return dict(section)


def algorithm_config_class(name: Any) -> Any:
    """The config class of the algorithm ``name`` (any case).

    Raises:
      ConfigError: not an rljax algorithm (with the closest name and the list).
    """
    from rljax.algorithms import registry

    names = registry.algorithm_names()
    if not isinstance(name, str) or name.upper() not in names:
        hint = closest(name.upper(), names) if isinstance(name, str) else ""
        raise ConfigError(
            f"unknown algorithm {name!r}{hint}; available: {', '.join(names)} (a file names an "
            "algorithm; a function trainable runs from Python: tune.Tuner(fn, ...))"
        )
    return registry.config_class(name.upper())


def tuner_from_data(
    data: Mapping[str, Any],
    *,
    storage_path: str | None = None,
    name: str | None = None,
    num_samples: int | None = None,
    verbose: int | None = None,
    allow_imports: Iterable[str] | None = None,
    restore: bool = False,
) -> Tuner:
    """The ``Tuner`` an experiment file describes, every input checked; nothing built yet.

    The keyword arguments override the file's (``rljax tune``'s flags). ``restore``: when the
    experiment directory holds an interrupted run of it (``Tuner.can_restore``), a Tuner that
    continues it (``Tuner.restore``); otherwise a new one.

    Raises:
      ConfigError: anything that cannot work, naming the key, what was given and what is
        allowed.
    """
    _check_keys(data, TOP_KEYS, "experiment file")
    algo = data.get("algo")
    if "trainable" in data:
        if algo is not None and data["trainable"] != algo:
            raise ConfigError(
                f"algo={algo!r} and trainable={data['trainable']!r}: give one of them"
            )
        algo = data["trainable"]
    if algo is None:
        raise ConfigError("an experiment file names its algorithm: algo: PPO (or trainable: PPO)")
    cls = algorithm_config_class(algo)
    raw_space = data.get("param_space") or {}
    if not isinstance(raw_space, dict):
        raise ConfigError(
            f"param_space: give a mapping of settings (RLlib's names); got a "
            f"{type(raw_space).__name__}"
        )
    space = search_spaces_from_data(raw_space)
    check_search_spaces(space)  # an empty grid, bad bounds ..., named as param_space[...]
    fixed = {k: v for k, v in space.items() if not find_search_spaces(v)}
    searched = {k: v for k, v in space.items() if k not in fixed}
    allow = list(allow_imports or [])
    base = cls.from_dict(fixed, allow_imports=allow)

    tune_kwargs = _section(data, "tune_config", TUNE_CONFIG_KEYS)
    if num_samples is not None:
        tune_kwargs["num_samples"] = num_samples
    run_kwargs = _section(data, "run_config", RUN_CONFIG_KEYS)
    for key, value in (("storage_path", storage_path), ("name", name), ("verbose", verbose)):
        if value is not None:
            run_kwargs[key] = value
    if "stop" in run_kwargs and not isinstance(run_kwargs["stop"], (dict, type(None))):
        raise ConfigError(
            f"run_config.stop={run_kwargs['stop']!r}: give a mapping of result keys to "
            "thresholds, e.g. {training_iteration: 20}"
        )
    if isinstance(run_kwargs.get("storage_path"), str):
        run_kwargs["storage_path"] = os.path.expanduser(run_kwargs["storage_path"])
    for key, keys, section_class in (
        ("checkpoint_config", CHECKPOINT_CONFIG_KEYS, CheckpointConfig),
        ("failure_config", FAILURE_CONFIG_KEYS, FailureConfig),
    ):
        given = run_kwargs.get(key)
        if given is not None:
            if not isinstance(given, dict):
                raise ConfigError(
                    f"run_config.{key}={given!r}: give a mapping with keys {list(keys)}"
                )
            _check_keys(given, keys, f"run_config.{key}")
            run_kwargs[key] = section_class(**given)
    tune_config = TuneConfig(**tune_kwargs)
    check_variant_count(space, tune_config.num_samples)  # named as the file names it
    run_config = RunConfig(**run_kwargs)

    tuner = Tuner(base, param_space=searched, tune_config=tune_config, run_config=run_config)
    # Every trial's settings get a config file's checks (a searched env_config, env ...).
    for index, variant in enumerate(tuner._variants):
        try:
            cls.from_dict({**fixed, **variant}, allow_imports=allow)
        except ConfigError as e:
            raise ConfigError(f"trial {index} ({variant}): {e}") from None
    if restore:
        if run_config.name is None:
            raise ConfigError(
                "--resume continues the experiment at storage_path/name: give run_config.name "
                "(or --name)"
            )
        experiment = Path(tuner._experiment_path())
        if Tuner.can_restore(experiment):
            restored = Tuner.restore(experiment, trainable=base, stop=run_config.stop)
            if [list(p) for p in restored._searched] != [list(p) for p in tuner._searched] or len(
                restored._variants
            ) != len(tuner._variants):
                raise ConfigError(
                    f"--resume: {experiment} holds an experiment of {len(restored._variants)} "
                    f"trials searching {[list(p) for p in restored._searched]}, not this file's "
                    f"{len(tuner._variants)} searching {[list(p) for p in tuner._searched]}; "
                    "give another name (--name) to start a new one"
                )
            if verbose is not None:
                restored.run_config = dataclasses.replace(restored.run_config, verbose=verbose)
            return restored
    return tuner


__all__ = [
    "SEARCH_KINDS",
    "algorithm_config_class",
    "read_experiment_file",
    "search_spaces_from_data",
    "tuner_from_data",
]


def print_fit_summary(summary: Mapping[str, Any], problem: str) -> int:
    """Prints a finished experiment's ``summary`` (``rljax tune``'s JSON, local or on a Ray
    cluster) on stdout, and on stderr why there is no best trial (``problem``) and how many
    trials failed; returns the command's exit status (1 when either happened)."""
    print(json.dumps(summary, indent=2))
    if problem:
        print(f"rljax: no best trial: {problem}", file=sys.stderr)
    num_errors = summary["num_errors"]
    if num_errors:
        print(f"rljax: {num_errors} of {summary['num_trials']} trials failed", file=sys.stderr)
    return 1 if problem or num_errors else 0
