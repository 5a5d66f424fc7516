"""RLlib's example-script harness (``ray.rllib.utils.test_utils``): the command-line flags
RLlib's example scripts share, and the function that runs their experiment.

A script written against RLlib's harness runs here after its imports are rewritten
(``rljax port SCRIPT.py``)::

    parser = add_rllib_example_script_args(default_reward=450.0, default_timesteps=200_000)
    args = parser.parse_args()
    config = PPOConfig().environment("CartPole-v1")
    run_rllib_example_script_experiment(config, args)

``check(x, y)`` compares nested results as RLlib's tests and doc code do.

The flags keep RLlib's names and defaults. Those that set something rljax has (env runners,
learners, evaluation, checkpoints, stop criteria, W&B) do what they do in RLlib; those that
mean nothing on one host with JAX (``--framework``, ``--local-mode``, ``--num-cpus``,
``--ray-address``, ...) are accepted and said so once; ``--output`` records the sampled episodes (``offline_data(output=...)``).
"""

from __future__ import annotations

import argparse
import logging
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from rljax.utils.errors import ConfigError
from rljax.utils.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    EVALUATION_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
)

logger = logging.getLogger("rljax")

TRAINING_ITERATION = "training_iteration"

# Flags RLlib's harness has that change nothing here, and why.
_NO_EFFECT = {
    "framework": "the model runs in JAX whatever --framework says",
    "enable_new_api_stack": "rljax has only RLlib's new API stack",
    "local_mode": "there is no Ray cluster: everything runs in this process",
    "num_cpus": "runner threads share the host's cores",
    "ray_address": "there is no Ray cluster",
    "num_aggregator_actors_per_learner": "batches are formed on the learner's device",
    "num_cpus_per_learner": "the learner's update is one jitted program",
}


def _duration(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--evaluation-duration={value!r}: use a whole number or 'auto'"
        ) from None


def add_rllib_example_script_args(
    parser: argparse.ArgumentParser | None = None,
    default_reward: float = 100.0,
    default_timesteps: int = 100_000,
    default_iters: int = 200,
) -> argparse.ArgumentParser:
    """Adds RLlib's example-script flags to ``parser`` (a new one if None) and returns it.

    Args:
      parser: The parser to add to.
      default_reward: ``--stop-reward``'s default (also the ``--as-test`` threshold).
      default_timesteps: ``--stop-timesteps``' default (lifetime env steps sampled).
      default_iters: ``--stop-iters``' default.
    """
    if parser is None:
        parser = argparse.ArgumentParser()
    add = parser.add_argument
    # Algorithm and framework.
    add("--algo", type=str, default="PPO", help="The algorithm's name (get_trainable_cls).")
    add("--enable-new-api-stack", action="store_true", help="Always on: no effect.")
    add(
        "--framework",
        choices=["tf", "tf2", "torch", "jax"],
        default="torch",
        help="No effect: models run in JAX.",
    )
    add("--env", type=str, default=None, help="The env, unless the script sets one.")
    add("--num-env-runners", type=int, default=None, help="Runner threads (0: in the driver).")
    add("--num-envs-per-env-runner", type=int, default=None, help="Sub-envs per runner.")
    add("--num-agents", type=int, default=0, help="Agents in a multi-agent example env.")
    # Evaluation.
    add("--evaluation-num-env-runners", type=int, default=0)
    add("--evaluation-interval", type=int, default=0, help="0: no evaluation.")
    add("--evaluation-duration", type=_duration, default=10)
    add("--evaluation-duration-unit", choices=["episodes", "timesteps"], default="episodes")
    add("--evaluation-parallel-to-training", action="store_true")
    # Output, logging and tuning.
    add(
        "--output",
        type=str,
        default=None,
        help="Record the sampled episodes in this folder (offline_data(output=...)).",
    )
    add("--log-level", choices=["INFO", "DEBUG", "WARN", "ERROR"], default=None)
    add("--no-tune", action="store_true", help="Train with algo.train() in a loop, not Tune.")
    add("--num-samples", type=int, default=1)
    add("--max-concurrent-trials", type=int, default=None)
    add("--verbose", type=int, default=2)
    add("--checkpoint-freq", type=int, default=0)
    add("--checkpoint-at-end", action="store_true")
    add("--tune-max-report-freq", type=int, default=5, help="No effect: Tune reports each result.")
    add("--wandb-key", type=str, default=None)
    add("--wandb-project", type=str, default=None)
    add("--wandb-run-name", type=str, default=None)
    # Stop criteria and tests.
    add("--stop-reward", type=float, default=default_reward)
    add("--stop-iters", type=int, default=default_iters)
    add("--stop-timesteps", type=int, default=default_timesteps)
    add("--as-test", action="store_true", help="Raise unless --stop-reward is reached.")
    add("--as-release-test", action="store_true", help="As --as-test.")
    # Learners and resources.
    add("--num-learners", type=int, default=None)
    add("--num-cpus-per-learner", type=float, default=None, help="No effect here.")
    add("--num-gpus-per-learner", type=float, default=None)
    add("--num-aggregator-actors-per-learner", type=int, default=None)
    add("--num-cpus", type=int, default=0)
    add("--num-gpus", type=int, default=None, help="Deprecated: --num-gpus-per-learner.")
    add("--local-mode", action="store_true")
    add("--ray-address", type=str, default=None)
    add(
        "--old-api-stack",
        action="store_true",
        help="RLlib's old API stack: the algorithm's RLlib 1.x trainer (rljax.agents).",
    )
    return parser


def _said_once(args: argparse.Namespace) -> None:
    """Logs, once per run, each given flag that changes nothing here."""
    given = {
        "framework": args.framework not in ("torch", "jax"),
        "enable_new_api_stack": args.enable_new_api_stack,
        "local_mode": args.local_mode,
        "num_cpus": bool(args.num_cpus),
        "ray_address": args.ray_address is not None,
        "num_aggregator_actors_per_learner": args.num_aggregator_actors_per_learner is not None,
        "num_cpus_per_learner": args.num_cpus_per_learner is not None,
    }
    for flag, on in given.items():
        if on:
            logger.warning("--%s has no effect here: %s", flag.replace("_", "-"), _NO_EFFECT[flag])


def _apply_args(config: Any, args: argparse.Namespace) -> Any:
    """RLlib's harness's changes to the config from the flags (unless ``keep_config``)."""
    if args.output is not None:  # the sampled episodes, recorded (rljax.offline)
        config.offline_data(output=args.output)
    if args.old_api_stack:  # RLlib 1.x's trainer of the algorithm (AlgorithmConfig.api_stack)
        config.api_stack(
            enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False
        )
    if args.num_gpus:
        raise ConfigError(
            f"--num-gpus={args.num_gpus} is not supported on the new API stack: use "
            "--num-gpus-per-learner=1 and --num-learners=<GPUs to use>"
        )
    if args.env is not None and config.env is None:
        config.environment(args.env)
    if args.num_env_runners is not None:
        config.env_runners(num_env_runners=args.num_env_runners)
    if args.num_envs_per_env_runner is not None:
        config.env_runners(num_envs_per_env_runner=args.num_envs_per_env_runner)
    if args.num_learners is not None:
        config.learners(num_learners=args.num_learners)
    if args.num_gpus_per_learner is not None:
        config.learners(num_gpus_per_learner=args.num_gpus_per_learner)
    if args.evaluation_interval > 0:
        config.evaluation(
            evaluation_num_env_runners=args.evaluation_num_env_runners,
            evaluation_interval=args.evaluation_interval,
            evaluation_duration=args.evaluation_duration,
            evaluation_duration_unit=args.evaluation_duration_unit,
            evaluation_parallel_to_training=args.evaluation_parallel_to_training,
        )
    if args.log_level is not None:
        config.debugging(log_level=args.log_level)
    return config


def _value_at(result: Mapping[str, Any], key: str) -> float | None:
    """``result``'s number at the ``/``-joined ``key``, or None where it has none."""
    value: Any = result
    for part in key.split("/"):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _reached(value: float | None, threshold: float) -> bool:
    return value is not None and value >= threshold


def _print_iteration(i: int, results: Mapping[str, Any]) -> None:
    line = f"iter={i}"
    mean = _value_at(results, f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}")
    line += f" R={mean}"
    if EVALUATION_RESULTS in results:
        line += f" R(eval)={_value_at(results, f'{EVALUATION_RESULTS}/{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}')}"
    print(line)


def run_rllib_example_script_experiment(
    base_config: Any,
    args: argparse.Namespace | None = None,
    *,
    stop: dict[str, Any] | None = None,
    success_metric: dict[str, float] | None = None,
    trainable: Any = None,
    tune_callbacks: list[Any] | None = None,
    keep_config: bool = False,
    keep_ray_up: bool = False,
    scheduler: Any = None,
    progress_reporter: Any = None,
) -> Any:
    """Runs an example script's experiment as RLlib's harness does.

    The stop criteria are ``stop``, or from the flags: ``env_runners/episode_return_mean``
    reaching ``--stop-reward``, ``env_runners/num_env_steps_sampled_lifetime`` reaching
    ``--stop-timesteps``, or ``--stop-iters`` iterations. With ``--no-tune`` the algorithm
    trains in a loop until one is met and the last result dict is returned; otherwise
    ``rljax.tune.Tuner`` runs ``--num-samples`` trials and its ``ResultGrid`` is returned.
    With ``--as-test`` (or ``--as-release-test``) a run whose best ``success_metric``
    (default: the mean return against ``--stop-reward``) falls short raises ``ValueError``.

    Args:
      base_config: The algorithm's config; the flags' settings are applied to it unless
        ``keep_config``.
      args: The parsed flags (None: parsed from the command line).
      stop: The stop criteria (``/``-joined result keys to thresholds).
      success_metric: ``{key: threshold}`` that ``--as-test`` checks.
      trainable: What Tune trains (default: the config's algorithm).
      tune_callbacks: ``tune.Callback`` instances for the Tuner.
      keep_config: Leave ``base_config`` as given.
      keep_ray_up: Accepted for RLlib's signature (there is no Ray to shut down).
      scheduler: A Tune trial scheduler.
      progress_reporter: A ``tune.CLIReporter`` for the table of trials (None: the default
        columns).
    """
    if args is None:
        args = add_rllib_example_script_args().parse_args()
    if args.as_release_test:
        args.as_test = True
    if args.as_test:
        args.verbose = 1
    _said_once(args)
    if stop is None:
        stop = {
            f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}": args.stop_reward,
            f"{ENV_RUNNER_RESULTS}/{NUM_ENV_STEPS_SAMPLED_LIFETIME}": args.stop_timesteps,
            TRAINING_ITERATION: args.stop_iters,
        }
    config = base_config if keep_config else _apply_args(base_config, args)
    if success_metric is None:
        success_metric = {f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}": args.stop_reward}
    if len(success_metric) != 1:
        raise ConfigError(f"success_metric={success_metric!r}: use one key and its threshold")

    if args.no_tune:
        algo = config.build_algo()
        results: dict[str, Any] = {}
        best: float | None = None
        try:
            for i in range(int(stop.get(TRAINING_ITERATION, args.stop_iters))):
                results = algo.train()
                _print_iteration(i, results)
                value = _value_at(results, next(iter(success_metric)))
                if value is not None:
                    best = value if best is None else max(best, value)
                met = [k for k, t in stop.items() if _reached(_value_at(results, k), t)]
                if met:
                    print(f"Stop criterium ({met[0]}={stop[met[0]]}) fulfilled!")
                    break
        finally:
            algo.stop()
        if args.as_test:
            _check_success(success_metric, [best] if best is not None else [])
        return results

    # Upward on purpose: this harness sits at RLlib's path under utils, but it runs whole
    # experiments (Tuner), the top of the stack; imported only when a script runs one.
    from rljax import tune

    callbacks = list(tune_callbacks or [])
    if args.wandb_key is not None or args.wandb_project is not None:
        callbacks.append(
            tune.logger.WandbLoggerCallback(
                api_key=args.wandb_key,
                project=args.wandb_project or "rljax",
                group=args.wandb_run_name,
            )
        )
    tuner = tune.Tuner(
        trainable if trainable is not None else config.algo_class,
        param_space=config,
        run_config=tune.RunConfig(
            # As RLlib's harness: the first trial to fail ends the run and fit() raises its error.
            failure_config=tune.FailureConfig(max_failures=0, fail_fast="raise"),
            stop=stop,
            verbose=min(args.verbose, 3),
            callbacks=callbacks or None,
            checkpoint_config=tune.CheckpointConfig(
                checkpoint_frequency=args.checkpoint_freq,
                checkpoint_at_end=args.checkpoint_at_end,
            ),
            progress_reporter=progress_reporter,
        ),
        tune_config=tune.TuneConfig(
            num_samples=args.num_samples,
            max_concurrent_trials=args.max_concurrent_trials,
            scheduler=scheduler,
        ),
    )
    grid = tuner.fit()
    if args.as_test:
        key = next(iter(success_metric))
        values = [_value_at(r, key) for result in grid for r in result.history]
        _check_success(success_metric, [v for v in values if v is not None])
    return grid


def check_learning_achieved(
    tune_results: Any,
    min_value: float,
    evaluation: bool | None = None,
    metric: str = f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}",
) -> None:
    """Raises ``ValueError`` unless ``metric`` reached ``min_value`` in some result of
    ``tune_results`` (a ``ResultGrid``, or one result dict); ``evaluation=True`` reads the
    metric under ``evaluation/`` (RLlib's helper of the same name)."""
    if evaluation:
        metric = f"{EVALUATION_RESULTS}/{metric}"
    if isinstance(tune_results, Mapping):
        values = [_value_at(tune_results, metric)]
    else:
        values = [_value_at(r, metric) for result in tune_results for r in result.history]
    _check_success({metric: min_value}, [v for v in values if v is not None])


def _check_success(success_metric: Mapping[str, float], values: list[float]) -> None:
    ((key, threshold),) = success_metric.items()
    best = max(values, default=None)
    if best is None or best < threshold:
        raise ValueError(f"`{key}` of {threshold} not reached (best: {best})!")
    print(f"`{key}` of {threshold} reached ({best})!")


def _numeric(value: Any) -> Any:
    """JAX arrays and metric stats (anything with ``peek()``) as numpy values."""
    if hasattr(value, "peek") and callable(value.peek):
        value = value.peek()
    if hasattr(value, "__array__") and not isinstance(value, np.ndarray):
        value = np.asarray(value)
    return value


def _textual(value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    return isinstance(value, bytes) or (dtype is not None and dtype.kind in "OUS")


def check(
    x: Any,
    y: Any,
    decimals: int = 5,
    atol: float | None = None,
    rtol: float | None = None,
    false: bool = False,
) -> None:
    """Asserts that ``x`` matches the expected ``y`` (RLlib's ``test_utils.check``): dicts by
    their keys, lists and tuples item by item, booleans, None, strings and int pairs exactly,
    anything else numerically (numpy and JAX arrays included) to ``decimals`` places, or
    within ``atol`` / ``rtol`` where either is given (their defaults then 0 and 1e-7).
    ``false=True`` asserts that they differ instead.

    Raises:
      AssertionError: naming the first mismatch.
    """
    kw: dict[str, Any] = {"decimals": decimals, "atol": atol, "rtol": rtol, "false": false}
    if isinstance(x, dict):
        assert isinstance(y, dict), f"ERROR: x is a dict, y is {type(y).__name__}: {y!r}"
        for key, value in x.items():
            assert key in y, f"ERROR: y has no key {key!r} of x; y={y!r}"
            check(value, y[key], **kw)
        extra = [k for k in y if k not in x]
        assert not extra, f"ERROR: y has keys {extra!r} that x does not have; y={y!r}"
        return
    if isinstance(x, list | tuple):
        assert isinstance(y, list | tuple), f"ERROR: x is a {type(x).__name__}, y is {y!r}"
        assert len(x) == len(y), f"ERROR: x has {len(x)} items, y {len(y)}"
        for a, b in zip(x, y, strict=True):
            check(a, b, **kw)
        return
    if isinstance(x, bool | np.bool_):
        same = bool(x) is bool(y)
        assert same != false, f"ERROR: x ({x}) {'is' if false else 'is not'} y ({y})"
        return
    if x is None or y is None or isinstance(x, str) or (isinstance(x, int) and isinstance(y, int)):
        same = x == y
        assert same != false, f"ERROR: x ({x!r}) {'is' if false else 'is not'} y ({y!r})"
        return
    x, y = _numeric(x), _numeric(y)
    try:
        if _textual(x) or _textual(y):
            np.testing.assert_array_equal(x, y)
        elif atol is None and rtol is None:
            np.testing.assert_almost_equal(x, y, decimal=decimals)
        else:
            np.testing.assert_allclose(
                x, y, atol=0.0 if atol is None else atol, rtol=1e-7 if rtol is None else rtol
            )
    except AssertionError:
        if not false:
            raise
    else:
        assert not false, f"ERROR: x ({x}) is the same as y ({y})"


__all__ = [
    "add_rllib_example_script_args",
    "check",
    "check_learning_achieved",
    "run_rllib_example_script_experiment",
]
