"""``rljax train`` and ``rljax evaluate``."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

from rljax.algorithms.algorithm_config import read_config_file
from rljax.utils.errors import CheckpointError, ConfigError, closest


def _algorithms() -> dict[str, type]:
    from rljax.algorithms.dqn import DQNConfig
    from rljax.algorithms.ppo import PPOConfig
    from rljax.algorithms.sac import SACConfig
    from rljax.algorithms.td3 import TD3Config

    return {"PPO": PPOConfig, "DQN": DQNConfig, "SAC": SACConfig, "TD3": TD3Config}


def _config_class(name: str) -> type:
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
    config = cls.from_dict(data)
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


def _fmt(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1f}"


def cmd_train(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    config = build_config(args)
    if args.stop_timesteps is not None and args.stop_timesteps <= 0:
        raise ConfigError(f"--stop-timesteps {args.stop_timesteps}; use a positive number")
    if args.checkpoint_num_to_keep < 1:
        raise ConfigError(
            f"--checkpoint-num-to-keep {args.checkpoint_num_to_keep}; use a positive number"
        )
    start = time.perf_counter()
    algo = config.build_algo()
    stop_ts = args.stop_timesteps
    result: dict[str, Any] = {}
    bar = tqdm(
        total=stop_ts, unit="steps", disable=args.no_progress, dynamic_ncols=True, file=sys.stderr
    )
    reason = "stop-iters"
    try:
        for _ in range(args.stop_iters):
            result = algo.train()
            er = result["env_runners"]
            steps = result["num_env_steps_sampled_lifetime"]
            bar.update(steps - bar.n)
            per_policy = er.get("module_episode_returns_mean")
            policies = (
                " ".join(f"{p}={_fmt(r)}" for p, r in per_policy.items()) + " "
                if per_policy
                else ""
            )
            bar.set_postfix_str(
                f"iter={result['training_iteration']} return={_fmt(er['episode_return_mean'])} "
                f"{policies}steps/s={er['num_env_steps_sampled_per_second']:,.0f}"
            )
            if (
                args.checkpoint_dir
                and args.checkpoint_freq
                and result["training_iteration"] % args.checkpoint_freq == 0
            ):
                algo.save_to_path(args.checkpoint_dir, num_to_keep=args.checkpoint_num_to_keep)
            ret = er["episode_return_mean"]
            if args.stop_reward is not None and not math.isnan(ret) and ret >= args.stop_reward:
                reason = "stop-reward"
                break
            if stop_ts is not None and steps >= stop_ts:
                reason = "stop-timesteps"
                break
        bar.close()
        if args.checkpoint_dir:
            algo.save_to_path(args.checkpoint_dir, num_to_keep=args.checkpoint_num_to_keep)
    finally:
        algo.stop()
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
        "env_steps_per_s": (result.get("num_env_steps_sampled_lifetime") or 0)
        / max(result.get("time_total_s") or 1e-9, 1e-9),
        "checkpoint": str(args.checkpoint_dir) if args.checkpoint_dir else None,
    }
    print(json.dumps(summary, indent=2))
    if args.stop_reward is not None and reason != "stop-reward":
        print(
            f"rljax: return {_fmt(er.get('episode_return_mean'))} did not reach --stop-reward {args.stop_reward}",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from rljax.algorithms.algorithm import Algorithm

    if args.episodes <= 0:
        raise ConfigError(f"--episodes {args.episodes}; use a positive number")
    algo = Algorithm.from_checkpoint(args.checkpoint)
    try:
        algo.config.evaluation_duration = args.episodes
        algo.config.evaluation_duration_unit = "episodes"
        out = algo.evaluate()["env_runners"]
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
            },
            indent=2,
        )
    )
    return 0


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rljax", description="Train and evaluate RL algorithms with rljax."
    )
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train an algorithm with a live progress bar")
    t.add_argument(
        "--algo", default=None, help="algorithm name (default: PPO, or the --config file's)"
    )
    t.add_argument("--env", default=None, help="EnvPool task id, gymnasium id, or registered name")
    t.add_argument("--config", default=None, help="YAML file of config keys (RLlib names)")
    t.add_argument("--num-env-runners", type=int, default=None)
    t.add_argument("--num-envs-per-env-runner", type=int, default=None)
    t.add_argument("--vectorize-mode", default=None, help="SYNC or ASYNC")
    t.add_argument("--num-learners", type=int, default=None)
    t.add_argument("--seed", type=int, default=None)
    t.add_argument(
        "--stop-reward", type=float, default=None, help="stop when episode_return_mean reaches this"
    )
    t.add_argument(
        "--stop-timesteps", type=int, default=None, help="stop after this many env steps"
    )
    t.add_argument("--stop-iters", type=int, default=10_000, help="stop after this many iterations")
    t.add_argument("--checkpoint-dir", default=None, help="save a checkpoint here at the end")
    t.add_argument("--checkpoint-freq", type=int, default=0, help="also save every N iterations")
    t.add_argument(
        "--checkpoint-num-to-keep",
        type=int,
        default=1,
        help="keep the newest N checkpoints in --checkpoint-dir (older ones: DIR/v-NNNNNN)",
    )
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train)
    e = sub.add_parser("evaluate", help="evaluate a checkpoint with the greedy policy")
    e.add_argument("checkpoint")
    e.add_argument("--episodes", type=int, default=10)
    e.set_defaults(func=cmd_evaluate)
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, CheckpointError) as e:
        print(f"rljax: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
