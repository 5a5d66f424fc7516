"""``rljax train``, ``rljax evaluate`` and ``rljax tune``."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import math
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, NoReturn

import yaml

from rljax import distributed
from rljax.algorithms.algorithm_config import AlgorithmConfig, read_config_file
from rljax.utils import checkpoint, safe_io
from rljax.utils.errors import CheckpointError, ConfigError, closest


def _algorithms() -> dict[str, type[AlgorithmConfig]]:
    from rljax.algorithms import registry

    return {name: registry.config_class(name) for name in registry.algorithm_names()}


def _config_class(name: str) -> type[AlgorithmConfig]:
    algos = _algorithms()
    key = name.upper()
    if key not in algos:
        raise ConfigError(
            f"unknown algorithm {name!r}{closest(key, algos)}; available: {', '.join(algos)}"
        )
    return algos[key]


def build_config(args: argparse.Namespace) -> Any:
    """The config from ``--config`` (if given) with the command-line flags on top."""
    algo_name = args.algo
    data: dict[str, Any] = {}
    if args.config:
        data = read_config_file(args.config)
        file_algo = data.pop("algo", None)
        if algo_name is None:
            algo_name = file_algo
        elif file_algo is not None and file_algo.upper() != algo_name.upper():
            raise ConfigError(f"--algo {algo_name} but {args.config} is a {file_algo} config")
    cls = _config_class(algo_name or "PPO")
    for item in getattr(args, "set", None) or []:
        _apply_setting(data, item)
    config = cls.from_dict(data, allow_imports=args.allow_import)
    if args.env is not None:
        config.environment(args.env)
    runners = {
        "num_env_runners": args.num_env_runners,
        "num_envs_per_env_runner": args.num_envs_per_env_runner,
        "gym_env_vectorize_mode": args.vectorize_mode,
    }
    config.env_runners(**{k: v for k, v in runners.items() if v is not None})
    if args.num_learners is not None:
        config.learners(num_learners=args.num_learners)
    if args.seed is not None:
        config.debugging(seed=args.seed)
    return config


def _apply_setting(data: dict[str, Any], item: str) -> None:
    """One ``--set key=value`` into the file's settings: ``value`` is read as a YAML value
    (``0.001``, ``true``, ``[64, 64]``, ``{fcnet_hiddens: [64]}``; no aliases, no tags), and a
    dotted key sets one entry of a dict setting (``model_config.fcnet_hiddens=[64]``). The result
    goes through ``from_dict`` with the file's settings: the same checks and did-you-mean hints."""
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set {item!r}; use --set key=value, e.g. --set lr=0.0005")
    if len(text) > 4096:
        raise ConfigError(f"--set {key}=...: the value is {len(text)} characters; at most 4096")
    try:
        value = yaml.load(text, Loader=safe_io.no_alias_loader()) if text.strip() else None  # noqa: S506
    except Exception as e:  # PyYAML raises several types; an alias is refused by the loader
        raise ConfigError(f"--set {key}={text!r}: not a YAML value ({type(e).__name__})") from None
    head, dot, rest = key.partition(".")
    if not dot:
        data[key] = value
        return
    if "." in rest:
        raise ConfigError(f"--set {key}: one level of nesting is supported (setting.entry)")
    inner = data.get(head)
    if inner is None:
        inner = {}
    elif hasattr(inner, "to_dict"):
        inner = inner.to_dict()
    if not isinstance(inner, dict):
        raise ConfigError(f"--set {key}: {head!r} is not a dict setting")
    data[head] = {**inner, rest: value}


def _fmt(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1f}"


class TrainProgressBar:
    """``rljax train``'s progress bar: the env steps sampled (of ``--stop-timesteps`` when
    given), the time since it appeared, and after each iteration its number, the mean return
    (per policy too) and one throughput figure, ``steps/s``.

    ``steps/s`` is the env steps sampled per second of ``train()`` time, summed over every
    iteration of this run but the first: the result dict's ``num_env_steps_sampled`` over its
    ``time_this_iter_s``, so it is the result dict's ``num_env_steps_sampled_per_second`` taken
    over those iterations together. The first iteration of a run compiles the programs, which
    takes most of its time, so it is left out; the figure appears from the second iteration on.
    tqdm's own rate (and the time left, which it derives from that rate) is not shown: it would
    be a second figure, counting compilation and the time between iterations.

    Args:
      total: The env steps the run stops at (``--stop-timesteps``); None: no bar, the count only.
      disable: Show nothing (``--no-progress``, or a process other than the writing one).
      file: Where the bar is drawn.
    """

    def __init__(self, total: int | None, disable: bool = False, file: Any = None):
        from tqdm import tqdm

        if total is None:
            layout = "{n_fmt}{unit} [{elapsed}{postfix}]"
        else:
            layout = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"
        self._bar = tqdm(
            total=total,
            unit="steps",
            bar_format=layout,
            disable=disable,
            dynamic_ncols=True,
            file=file if file is not None else sys.stderr,
        )
        self._seen_first = False
        self._steps = 0  # env steps of the iterations after the first
        self._seconds = 0.0  # and their train() time

    def steps_per_second(self) -> float | None:
        """Env steps per second of the iterations after this run's first; None before the
        second iteration (or when those took no measurable time)."""
        return self._steps / self._seconds if self._seconds > 0 else None

    def update(self, result: dict[str, Any]) -> None:
        """Shows an iteration's result (``Algorithm.train()``'s dict)."""
        er = result["env_runners"]
        if self._seen_first:
            self._steps += int(er["num_env_steps_sampled"])
            self._seconds += float(result["time_this_iter_s"])
        self._seen_first = True
        per_policy = er.get("module_episode_returns_mean")
        parts = [
            f"iter={result['training_iteration']}",
            f"return={_fmt(er['episode_return_mean'])}",
            *(f"{p}={_fmt(r)}" for p, r in (per_policy or {}).items()),
        ]
        rate = self.steps_per_second()
        if rate is not None:
            parts.append(f"steps/s={rate:,.0f}")
        # The count and the figures in one draw (update() would draw the new count beside the
        # last iteration's figures first).
        self._bar.set_postfix_str(" ".join(parts), refresh=False)
        self._bar.n = int(result["num_env_steps_sampled_lifetime"])
        self._bar.refresh()

    def close(self) -> None:
        """Leaves the bar's last line on the screen."""
        self._bar.close()


def check_train_flags(args: argparse.Namespace) -> None:
    """Raises ``ConfigError`` for ``rljax train`` flags that cannot work.

    Called before the algorithm is built: a bad ``--checkpoint-dir`` would otherwise surface at
    the first save, possibly after the whole run.
    """
    if args.stop_iters < 1:
        raise ConfigError(f"--stop-iters {args.stop_iters}; use a positive number of iterations")
    if args.stop_timesteps is not None and args.stop_timesteps <= 0:
        raise ConfigError(f"--stop-timesteps {args.stop_timesteps}; use a positive number")
    if args.stop_reward is not None and not math.isfinite(args.stop_reward):
        raise ConfigError(f"--stop-reward {args.stop_reward}; use a finite number")
    if args.checkpoint_freq < 0:
        raise ConfigError(
            f"--checkpoint-freq {args.checkpoint_freq}; use a positive number of iterations, or 0 "
            "to save only at the end"
        )
    if args.checkpoint_num_to_keep < 1:
        raise ConfigError(
            f"--checkpoint-num-to-keep {args.checkpoint_num_to_keep}; use a positive number"
        )
    if args.checkpoint_freq and not args.checkpoint_dir:
        raise ConfigError(
            f"--checkpoint-freq {args.checkpoint_freq} without --checkpoint-dir; add "
            "--checkpoint-dir DIR (where to save)"
        )
    if args.checkpoint_dir:
        _check_checkpoint_dir(args.checkpoint_dir, args.force)
    if args.wandb_project and not args.logdir:
        raise ConfigError(
            f"--wandb-project {args.wandb_project} without --logdir; add --logdir DIR (where the "
            "TensorBoard, CSV and JSON logs and W&B's files go)"
        )
    if args.logdir:
        _check_logdir(args.logdir, getattr(args, "force", False))
    if args.wandb_project:
        from rljax.utils.result_loggers import import_wandb

        import_wandb()


# The files ``rljax train --logdir`` writes afresh (TensorBoard's event files get new names).
LOG_FILES = ("progress.csv", "result.json", "learning_curve.png")


def _check_logdir(value: str, force: bool = False) -> None:
    """Raises ``ConfigError`` unless ``value`` is (or can be made) a writable directory that
    holds no earlier run's logs (``LOG_FILES``), or ``force`` allows replacing them."""
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--logdir {value}: a file is there; name a directory")
    earlier = [name for name in LOG_FILES if os.path.lexists(path / name)]
    if earlier and not force:
        raise ConfigError(
            f"--logdir {value} holds an earlier run's {', '.join(earlier)}; pass --force to "
            "replace them, or choose another path"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".rljax-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"--logdir {value}: cannot write there ({e.strerror or e})") from None


def _check_checkpoint_dir(value: str, force: bool = False) -> None:
    """Raises ``ConfigError`` unless rljax can save checkpoints to ``value``: a new run's saves
    would replace an earlier run's checkpoint there (``--checkpoint-num-to-keep`` versions are
    kept), so a directory holding one is refused unless ``force``.

    Creates nothing that stays: writability is proven by creating and removing an empty
    directory in ``value`` or, when it does not exist yet, in its nearest existing ancestor.
    """
    flag = f"--checkpoint-dir {value}"
    path = Path(value).expanduser()
    if os.path.lexists(path) and not path.is_dir():
        raise ConfigError(f"{flag} is a file; give a new directory or one rljax saved to")
    existing = path
    while not os.path.lexists(existing):
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{flag} cannot be created: {existing} is a file")
    if existing == path:
        try:
            foreign = sorted(
                c.name for c in path.iterdir() if not checkpoint.is_checkpoint_entry(c.name)
            )
        except OSError as e:
            raise ConfigError(f"{flag} cannot be read: {e.strerror}") from e
        if foreign:
            # A checkpoint directory holds what saves write (rljax.utils.checkpoint's one rule
            # of names): refuse to mix checkpoints with other files.
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise ConfigError(
                f"{flag} holds files that are not part of an rljax checkpoint ({shown}); give a "
                "new or empty directory, or one rljax saved to"
            )
        if os.path.lexists(path / checkpoint.LATEST) and not force:
            raise ConfigError(
                f"{flag} holds an earlier run's checkpoint, which this run's saves would "
                "replace; pass --force to replace it, or choose another directory (load it "
                "with Algorithm.from_checkpoint, or rljax evaluate / export)"
            )
    try:
        probe = tempfile.mkdtemp(prefix=".tmp-rljax-probe-", dir=existing)
    except OSError as e:
        where = "" if existing == path else f" (nothing can be created in {existing})"
        raise ConfigError(f"{flag} is not writable{where}: {e.strerror}") from e
    os.rmdir(probe)


# The exit status of an interrupted run: what a shell reports for a process that SIGINT ended.
EXIT_INTERRUPTED = 130


def _in_gc_callback(frame: Any) -> bool:
    """Whether ``frame`` runs inside a ``gc.callbacks`` function."""
    codes = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


class _Interrupt:
    """Ctrl-C (SIGINT) during ``rljax train``, as a context manager that installs the handler.

    Until ``deferred`` is set, Ctrl-C raises ``KeyboardInterrupt`` at once (building, compiling,
    the first iteration, or a run with nowhere to save: nothing would be lost). Once it is set (an
    iteration finished and there is a checkpoint directory), the first Ctrl-C is only recorded:
    the iteration in flight ends and is saved, since one cut short could leave the algorithm's
    state and counters apart; a second Ctrl-C raises at once. During ``shielded`` (the shutdown)
    Ctrl-C is ignored, so that runner threads and env processes are always closed.

    The training loop also checks ``requested`` after the build and after every iteration, so
    that a ``KeyboardInterrupt`` caught by code in between (a broad ``except``) still stops it.
    """

    def __init__(self) -> None:
        self.requested = False
        self.deferred = False
        self.shielded = False
        self._previous: Any = None

    def __enter__(self) -> _Interrupt:
        previous = signal.getsignal(signal.SIGINT)
        # Only the main thread can set a handler, and a SIGINT its caller ignores stays ignored
        # (a shell starts background jobs that way).
        if threading.current_thread() is threading.main_thread() and previous is not signal.SIG_IGN:
            self._previous = previous
            signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.shielded:
            return
        first = not self.requested
        self.requested = True
        if _in_gc_callback(frame):
            # Python ignores (and prints) an exception raised in a garbage-collection callback
            # (JAX registers one): the request stands, and the loop's check stops the run.
            return
        if first and self.deferred:
            # os.write, not print: the handler may run in the middle of a write to sys.stderr
            # (the progress bar's), and a buffered stream refuses a reentrant write.
            os.write(
                2,
                b"\nrljax: interrupted; saving a checkpoint when this iteration ends "
                b"(Ctrl-C again to stop at once)\n",
            )
            return
        raise KeyboardInterrupt


def _launches_processes(args: argparse.Namespace) -> bool:
    """``--num-processes N`` (N > 1) in the launching process, not in one it started."""
    n = args.num_processes
    if n is not None and n < 1:
        raise ConfigError(f"--num-processes {n}; use a positive number of processes")
    return n is not None and n > 1 and not distributed.is_launched_process()


def _train_in_processes(args: argparse.Namespace) -> int:
    """Runs this command line in ``--num-processes`` local processes (``launch_local``): each
    one JAX process, process 0 printing the progress, logs and summary."""
    distributed.launch_local([sys.executable, "-m", "rljax.cli", *args.argv], args.num_processes)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    check_train_flags(args)
    if _launches_processes(args):
        return _train_in_processes(args)
    config = build_config(args)
    start = time.perf_counter()
    stop_ts = args.stop_timesteps
    result: dict[str, Any] = {}
    reason = "stop-iters"
    algo = None
    bar: TrainProgressBar | None = None
    saved: int | None = None  # the iteration of the newest checkpoint this run saved
    doing = "while building the algorithm"  # for the message when Ctrl-C stops the run
    loggers: list[Any] = []
    history: list[dict[str, Any]] = []
    with _Interrupt() as interrupt:
        try:
            algo = config.build_algo()
            if interrupt.requested:  # its KeyboardInterrupt was caught inside the build
                raise KeyboardInterrupt
            writer = distributed.is_writer()  # across processes, process 0 logs
            if args.logdir and writer:
                from rljax.utils.result_loggers import make_loggers

                loggers = make_loggers(args.logdir, args.wandb_project, config.to_dict())
            bar = TrainProgressBar(stop_ts, disable=args.no_progress or not writer)
            for _ in range(args.stop_iters):
                doing = f"in iteration {algo.iteration + 1}"
                result = algo.train()
                doing = f"after iteration {algo.iteration}"
                interrupt.deferred = bool(args.checkpoint_dir)
                history.append(result)
                for sink in loggers:
                    sink.log(result)
                er = result["env_runners"]
                steps = result["num_env_steps_sampled_lifetime"]
                bar.update(result)
                if args.checkpoint_freq and algo.iteration % args.checkpoint_freq == 0:
                    doing = f"while saving the checkpoint of iteration {algo.iteration}"
                    algo.save_to_path(args.checkpoint_dir, num_to_keep=args.checkpoint_num_to_keep)
                    saved = algo.iteration
                    doing = f"after iteration {algo.iteration}"
                if interrupt.requested:
                    reason = "interrupt"
                    break
                ret = er["episode_return_mean"]
                if args.stop_reward is not None and not math.isnan(ret) and ret >= args.stop_reward:
                    reason = "stop-reward"
                    break
                if stop_ts is not None and steps >= stop_ts:
                    reason = "stop-timesteps"
                    break
            bar.close()
            # Not again when the last iteration was just saved: a second copy would also push a
            # distinct older version out of the --checkpoint-num-to-keep newest.
            if args.checkpoint_dir and saved != algo.iteration:
                doing = f"while saving the checkpoint of iteration {algo.iteration}"
                algo.save_to_path(args.checkpoint_dir, num_to_keep=args.checkpoint_num_to_keep)
                saved = algo.iteration
        except KeyboardInterrupt:
            if bar is not None:
                bar.close()
            if not args.checkpoint_dir:
                kept = ""
            elif saved is None:
                kept = "; no checkpoint was saved"
            else:
                kept = f"; {args.checkpoint_dir} holds the checkpoint of iteration {saved}"
            print(f"rljax: interrupted {doing}{kept}", file=sys.stderr)
            return EXIT_INTERRUPTED
        finally:
            interrupt.shielded = True
            if algo is not None:
                algo.stop()
            if args.logdir and distributed.is_writer():
                _finish_logs(args.logdir, loggers, history, config)
    er = result.get("env_runners", {})
    summary = {
        "stopped_by": reason,
        "training_iteration": result.get("training_iteration"),
        "episode_return_mean": er.get("episode_return_mean"),
        **(
            {"module_episode_returns_mean": er["module_episode_returns_mean"]}
            if "module_episode_returns_mean" in er
            else {}
        ),
        "num_env_steps_sampled_lifetime": result.get("num_env_steps_sampled_lifetime"),
        "time_total_s": result.get("time_total_s"),
        "wall_time_s": time.perf_counter() - start,
        # The progress bar's figure (train() time of the iterations after the first, which
        # compiles); None when the run stopped after one iteration.
        "env_steps_per_s": bar.steps_per_second() if bar is not None else None,
        "checkpoint": str(args.checkpoint_dir) if args.checkpoint_dir else None,
        "logdir": str(args.logdir) if args.logdir else None,
    }
    if distributed.is_writer():
        print(json.dumps(summary, indent=2))
    if reason == "interrupt":
        kept = f"; saved its checkpoint to {args.checkpoint_dir}" if args.checkpoint_dir else ""
        print(
            f"rljax: interrupted after iteration {result['training_iteration']}{kept}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if args.stop_reward is not None and reason != "stop-reward":
        print(
            f"rljax: return {_fmt(er.get('episode_return_mean'))} did not reach --stop-reward {args.stop_reward}",
            file=sys.stderr,
        )
        return 1
    return 0


def _finish_logs(
    logdir: str, loggers: list[Any], history: list[dict[str, Any]], config: Any
) -> None:
    """Closes the log sinks, draws the learning curve and says where everything is."""
    for sink in loggers:
        sink.close()
    plot = ""
    if history:
        from rljax.utils.plots import plot_learning_curve

        env = config.env if isinstance(config.env, str) else getattr(config.env, "__name__", "")
        path = Path(logdir).expanduser() / "learning_curve.png"
        plot = ", learning curve " + plot_learning_curve(history, path, f"{config.algo_name} {env}")
    print(
        f"rljax: logs in {logdir} (progress.csv, result.json, TensorBoard: tensorboard "
        f"--logdir {logdir}{plot})",
        file=sys.stderr,
    )


def cmd_evaluate(args: argparse.Namespace) -> int:
    from rljax.algorithms.algorithm import Algorithm

    if args.episodes <= 0:
        raise ConfigError(f"--episodes {args.episodes}; use a positive number")
    if args.video is not None:
        from rljax.execution.video import check_video_dir

        check_video_dir(args.video)
    algo = Algorithm.from_checkpoint(args.checkpoint, allow_imports=args.allow_import)
    try:
        config = algo.config.copy()  # the algorithm's own is read-only, as RLlib's
        config.evaluation_duration, config.evaluation_duration_unit = args.episodes, "episodes"
        config.freeze()
        algo.config = config
        evaluation = algo.evaluate(record_video=args.video)
        out = evaluation["env_runners"]
    finally:
        algo.stop()
    print(
        json.dumps(
            {
                "checkpoint": args.checkpoint,
                "episodes": out["num_episodes"],
                "episode_return_mean": out["episode_return_mean"],
                "episode_len_mean": out["episode_len_mean"],
                **(
                    {"module_episode_returns_mean": out["module_episode_returns_mean"]}
                    if "module_episode_returns_mean" in out
                    else {}
                ),
                **({"videos": evaluation["videos"]} if "videos" in evaluation else {}),
            },
            indent=2,
        )
    )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from rljax.algorithms.algorithm import Algorithm
    from rljax.policy.export import check_export_dir

    start = time.perf_counter()
    check_export_dir(args.out)  # before the checkpoint is loaded
    algo = Algorithm._for_inference(args.checkpoint, allow_imports=args.allow_import)
    try:
        out = algo.export_policy(args.out, args.policy_id)
    except ValueError as e:  # a policy id the checkpoint lacks, a recurrent policy
        raise ConfigError(f"{args.checkpoint}: {e}") from None
    print(
        json.dumps(
            {
                "checkpoint": args.checkpoint,
                "exported": out,
                "files": sorted(os.listdir(out)),
                "seconds": round(time.perf_counter() - start, 3),
            },
            indent=2,
        )
    )
    return 0


def cmd_port(args: argparse.Namespace) -> int:
    """Rewrites an RLlib script's imports to rljax's (``rljax.utils.port``): the new script to
    ``-o FILE`` (or stdout), and what could not be rewritten to stderr. The script is read as
    untrusted data (``read_script``); an existing ``-o`` file is replaced only with ``--force``."""
    from rljax.utils.port import port_source, read_script, write_script

    try:
        source = read_script(args.script)
    except ConfigError as e:
        raise ConfigError(f"rljax port: {e}") from None
    try:
        ported = port_source(source)
    except SyntaxError as e:
        raise ConfigError(f"rljax port: {args.script!r} is not valid Python: {e}") from None
    except ConfigError as e:
        raise ConfigError(f"rljax port: {args.script}: {e}") from None
    if args.output:
        try:
            write_script(args.output, ported.source, force=args.force)
        except ConfigError as e:
            raise ConfigError(f"rljax port: {e}") from None
    else:
        sys.stdout.write(ported.source)
    for note in ported.notes:
        print(f"rljax port: {args.script}: {note}", file=sys.stderr)
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    """Runs the experiment file's trials (``Tuner(...).fit()``) and prints, as JSON on stdout,
    where the results are and the best trial's config and metric. The live table of trials
    goes to stderr, so that stdout holds the JSON alone."""
    from rljax.tune.experiment_file import (
        print_fit_summary,
        read_experiment_file,
        tuner_from_data,
    )

    data = read_experiment_file(args.config)
    if args.ray_address is not None:
        from rljax.tune.ray_experiment import run_on_ray

        return run_on_ray(
            args.config,
            data,
            args.ray_address,
            storage_path=args.storage_path,
            name=args.name,
            num_samples=args.num_samples,
            verbose=args.verbose,
            allow_imports=args.allow_import,
            restore=args.resume,
        )
    try:
        tuner = tuner_from_data(
            data,
            storage_path=args.storage_path,
            name=args.name,
            num_samples=args.num_samples,
            verbose=args.verbose,
            allow_imports=args.allow_import,
            restore=args.resume,
        )
    except (ConfigError, NotImplementedError) as e:
        raise ConfigError(f"{args.config}: {e}") from None
    with contextlib.redirect_stdout(sys.stderr):
        grid = tuner.fit()
    metric, mode = tuner.tune_config.metric, tuner.tune_config.mode
    best: dict[str, Any] | None = None
    problem = ""
    if metric is not None and mode is not None:
        try:
            result = grid.get_best_result()
        except ConfigError as e:
            problem = str(e)
        else:
            from rljax.tune.stopper import flatten
            from rljax.tune.tuner import to_json_data

            best = {
                "trial_id": result.trial_id,
                "config": to_json_data(result.config),
                metric: to_json_data(flatten(result.metrics).get(metric)),
                "training_iteration": result.metrics.get("training_iteration"),
                "path": result.path,
                "checkpoint": str(result.checkpoint.path) if result.checkpoint else None,
            }
    summary = {
        "experiment_path": grid.experiment_path,
        "num_trials": len(grid),
        "num_terminated": grid.num_terminated,
        "num_errors": grid.num_errors,
        "errors": {r.trial_id: f"{type(r.error).__name__}: {r.error}" for r in grid if r.error},
        "metric": metric,
        "mode": mode,
        "best_trial": best,
    }
    return print_fit_summary(summary, problem)


_TUNE_HELP = """\
Run a hyperparameter search described in a YAML (or JSON) file: every variant of its
param_space is one trial, run one after another (tune.Tuner(...).fit()). Prints JSON on
stdout: experiment_path, the numbers of trials and errors, and the best trial's config,
metric, path and checkpoint (when tune_config names a metric and mode). The live table of
trials goes to stderr. Exit status: 0 done, 1 a trial failed or no trial reported the metric,
2 bad input (found before anything is built), 130 Ctrl-C (rerun with --resume to continue).

The file:

  algo: PPO                        # or trainable: PPO (an rljax algorithm)
  param_space:                     # settings by RLlib's names
    env: CartPole-v1
    lr: {grid_search: [0.001, 0.0003]}
    entropy_coeff: {uniform: [0.0, 0.01]}
    model_config: {fcnet_hiddens: {choice: [[32], [64, 64]]}}
  tune_config: {metric: env_runners/episode_return_mean, mode: max, num_samples: 1,
                seed: 0, time_budget_s: 600}
  run_config:
    name: ppo_sweep                # storage_path/name holds the results
    storage_path: ~/rljax_results
    stop: {training_iteration: 20} # required, or tune_config.time_budget_s
    checkpoint_config: {checkpoint_frequency: 5, checkpoint_at_end: true, num_to_keep: 2}
    failure_config: {max_failures: 1}   # a failed trial starts again from its checkpoint

Search spaces, at any depth of a setting (rljax.tune's functions, arguments as a list or by
name): {grid_search: [v, ...]}, {choice: [v, ...]}, {uniform: [lower, upper]},
{quniform: [lower, upper, q]}, {loguniform: [lower, upper]}, {randint: [lower, upper]}
(upper excluded), {qrandint: [lower, upper, q]} (upper included), {randn: [mean, sd]},
{qloguniform: [lower, upper, q]}, {lograndint: [lower, upper]}, {qlograndint: [lower, upper,
q]}, {qrandn: [mean, sd, q]}.
The file is read as data (YAML's safe loader, no aliases); code it names is imported only
under --allow-import.
"""


def _add_allow_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-import",
        action="append",
        default=[],
        metavar="PREFIX",
        help="let the config or checkpoint import code from modules under PREFIX (repeatable); "
        "files never import the code they name otherwise",
    )


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rljax", description="Train, evaluate and tune RL algorithms with rljax."
    )
    from rljax import __version__

    p.add_argument("--version", action="version", version=f"rljax {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train an algorithm with a live progress bar")
    t.add_argument(
        "--algo", default=None, help="algorithm name (default: PPO, or the --config file's)"
    )
    t.add_argument("--env", default=None, help="EnvPool task id, gymnasium id, or registered name")
    t.add_argument("--config", default=None, help="YAML file of config keys (RLlib names)")
    _add_allow_import(t)
    t.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any setting by its RLlib name, the value in YAML (repeatable; over --config, under "
        "the flags above): --set lr=0.0005 --set model_config.fcnet_hiddens=[64,64]",
    )
    t.add_argument("--num-env-runners", type=int, default=None)
    t.add_argument("--num-envs-per-env-runner", type=int, default=None)
    t.add_argument("--vectorize-mode", default=None, help="SYNC or ASYNC")
    t.add_argument("--num-learners", type=int, default=None)
    t.add_argument(
        "--num-processes",
        type=int,
        default=None,
        help="train in N local JAX processes (jax.distributed), the learners across them; "
        "under srun/mpirun leave it out: JAX detects the processes",
    )
    t.add_argument("--seed", type=int, default=None)
    t.add_argument(
        "--stop-reward", type=float, default=None, help="stop when episode_return_mean reaches this"
    )
    t.add_argument(
        "--stop-timesteps", type=int, default=None, help="stop after this many env steps"
    )
    t.add_argument("--stop-iters", type=int, default=10_000, help="stop after this many iterations")
    t.add_argument(
        "--checkpoint-dir",
        default=None,
        help="save a checkpoint here at the end, or when Ctrl-C stops the run after an iteration",
    )
    t.add_argument("--checkpoint-freq", type=int, default=0, help="also save every N iterations")
    t.add_argument(
        "--checkpoint-num-to-keep",
        type=int,
        default=1,
        help="keep the newest N checkpoints in --checkpoint-dir (older ones: DIR/v-NNNNNN)",
    )
    t.add_argument(
        "--logdir",
        default=None,
        help="write every result here: TensorBoard event files, progress.csv, result.json, and "
        "the learning curve (learning_curve.png) at the end",
    )
    t.add_argument(
        "--wandb-project",
        default=None,
        help="also log to this Weights & Biases project (needs wandb and --logdir; "
        "WANDB_MODE=offline logs without an account)",
    )
    t.add_argument(
        "--force",
        action="store_true",
        help=f"replace the logs of an earlier run in --logdir ({', '.join(LOG_FILES)}) and "
        "the checkpoint of an earlier run in --checkpoint-dir",
    )
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train)
    e = sub.add_parser("evaluate", help="evaluate a checkpoint with the greedy policy")
    e.add_argument("checkpoint")
    e.add_argument("--episodes", type=int, default=10)
    e.add_argument(
        "--video",
        default=None,
        metavar="DIR",
        help="record each episode as an MP4 into DIR (needs imageio-ffmpeg: pip install "
        "rljax[video])",
    )
    _add_allow_import(e)
    e.set_defaults(func=cmd_evaluate)
    x = sub.add_parser(
        "export",
        help="export a checkpoint's policy for serving with JAX alone (StableHLO and a JSON)",
    )
    x.add_argument("checkpoint")
    x.add_argument("out", help="the directory to write (policy.json and two .stablehlo files)")
    x.add_argument("--policy-id", default=None, help="which policy of a multi-agent checkpoint")
    _add_allow_import(x)
    x.set_defaults(func=cmd_export)
    tu = sub.add_parser(
        "tune",
        help="run a hyperparameter search from a YAML file",
        description=_TUNE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tu.add_argument("--config", required=True, help="the experiment file (YAML or JSON)")
    tu.add_argument("--storage-path", default=None, help="over run_config.storage_path")
    tu.add_argument("--name", default=None, help="over run_config.name")
    tu.add_argument("--num-samples", type=int, default=None, help="over tune_config.num_samples")
    tu.add_argument(
        "--verbose",
        type=int,
        default=None,
        help="0 silent, 1 the table of trials (default; off a terminal printed once, at the "
        "end), 2 also a line per result, 3 also the table as the trials report off a terminal",
    )
    tu.add_argument(
        "--resume",
        action="store_true",
        help="continue the interrupted experiment at storage_path/name (Tuner.restore): "
        "finished trials are kept, unfinished ones continue from their latest checkpoint; "
        "start it if there is none",
    )
    tu.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="run the file's trials with Ray Tune on the Ray cluster at ADDR (auto, HOST:PORT, "
        'ray://HOST:PORT, or local for a new one-node Ray); needs pip install "rljax[ray]". '
        "Each trial asks the cluster for the CPUs and GPUs its knobs name "
        "(rljax.tune.ray_trainable)",
    )
    _add_allow_import(tu)
    tu.set_defaults(func=cmd_tune)
    po = sub.add_parser(
        "port",
        help="rewrite an RLlib script's imports to rljax's (ray.rllib -> rljax, ray.tune -> "
        "rljax.tune, ray.init() removed)",
    )
    po.add_argument("script", help="the RLlib script (.py)")
    po.add_argument("-o", "--output", default=None, help="write here (default: stdout)")
    po.add_argument(
        "--force",
        action="store_true",
        help="replace an existing -o file (its permission bits are kept)",
    )
    po.set_defaults(func=cmd_port)
    return p


def main(argv: list[str] | None = None) -> int:
    """Runs a command line and returns its exit status: 0, 1 (``--stop-reward`` not reached, a
    tuning trial failed), 2 (bad input) or 130 (Ctrl-C).

    ``argv`` None means the process's own command line (the ``rljax`` script, ``python -m
    rljax.cli``): then Ctrl-C ends the process at once after the cleanup (``_end_process``).
    Given an ``argv`` (tests, notebooks), it returns 130 and the process goes on.
    """
    args = make_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for child processes
    try:
        code = args.func(args)
    except (ConfigError, CheckpointError) as e:
        print(f"rljax: error: {e}", file=sys.stderr)
        return 2
    except distributed.ProcessGroupError as e:
        print(f"rljax: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # rljax evaluate (rljax train reports its own); its algo stopped
        print("rljax: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    if code == EXIT_INTERRUPTED and argv is None:
        _end_process(code)
    return code


def _end_process(code: int) -> NoReturn:
    """Ends the process without the interpreter's teardown.

    Ctrl-C during a compile interrupts JAX's wait for it, but XLA goes on compiling in a native
    thread; tearing the interpreter down under that thread crashes it (a segfault, exit status
    139, instead of 130). By now the algorithm is stopped (runner threads joined, envs and their
    worker processes closed) and any checkpoint saved (saves are atomic), so only the output
    streams and log handlers need flushing before ``os._exit``.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
