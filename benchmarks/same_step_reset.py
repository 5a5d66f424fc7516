"""The cost of same-step auto-reset on the fused EnvPool rollout, against next-step resets.

On-policy runners reset an ended episode's sub-env in the step that ended it (so a batch of N
rows holds N env steps, as RLlib's does). EnvPool resets only on the step after an episode end,
so the fused rollout sends that step at once, from a host callback, for the sub-envs whose
episode ended: one more EnvPool round trip in every env step where an episode ended, and a
second policy pass in steps with a truncation (to bootstrap from the final observation).
Next-step resets cost neither, but a batch then holds fewer env steps than rows (the reset
rows are masked out).

Both variants run the same PPO acting step, jitted as one ``lax.scan`` over a fragment of
``--fragment`` steps of ``--envs`` sub-envs, with the untrained policy, on the same machine in
one process, alternating variant per round. Per env and variant: rows (env-step slots) per
second, env steps (real transitions) per second, env steps per fragment, and the episodes that
ended per fragment. CartPole's untrained episodes (about 22 steps) are the worst case;
Pendulum's (200 steps, all truncated together) exercise the bootstrap pass. Prints JSON and
writes ``OUT/same_step_reset.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_info, save_report  # noqa: E402


def measure(env: str, envs: int, fragment: int, rounds: int, fragments: int) -> dict[str, Any]:
    import jax

    from rljax.algorithms.ppo import PPOConfig
    from rljax.runners.acting import make_fused_rollout

    config = (
        PPOConfig()
        .environment(env)
        .env_runners(num_envs_per_env_runner=envs)
        .training(train_batch_size_per_learner=envs * fragment)
    )
    algo = config.build_algo()
    params = algo._runner_params()
    variants: dict[str, Any] = {}
    for name, act_step in (("next_step", None), ("same_step", algo._act_step)):
        # A fresh EnvPool per variant; act_step=None builds one that resets next-step.
        xla_step, state, reset_ended = algo._make_fused_runner(params, act_step)
        rollout = make_fused_rollout(
            algo._act_step, xla_step, fragment, algo.parts.to_env_action, reset_ended=reset_ended
        )
        variants[name] = {"env": algo._env, "state": state, "rollout": jax.jit(rollout)}
        state, _ = variants[name]["rollout"](params, state)  # compile
        variants[name]["state"] = state
    times: dict[str, list[float]] = {name: [] for name in variants}
    valid: dict[str, list[int]] = {name: [] for name in variants}
    ended: dict[str, list[int]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, v in variants.items():
            t0 = time.perf_counter()
            for _ in range(fragments):
                v["state"], traj = v["rollout"](params, v["state"])
                valid[name].append(int(traj.valid.sum()))
                ended[name].append(int(traj.episode_done.sum()))
            jax.block_until_ready(traj)
            times[name].append(time.perf_counter() - t0)
    rows = envs * fragment * fragments
    out: dict[str, Any] = {}
    for name in variants:
        seconds = statistics.median(times[name])
        steps = statistics.mean(valid[name])
        out[name] = {
            "rows_per_s": rows / seconds,
            "env_steps_per_s": steps * fragments / seconds,
            "env_steps_per_fragment": steps,
            "rows_per_fragment": envs * fragment,
            "episodes_per_fragment": statistics.mean(ended[name]),
        }
        variants[name]["env"].close()
    algo.stop()
    out["same_step_over_next_step_env_steps_per_s"] = (
        out["same_step"]["env_steps_per_s"] / out["next_step"]["env_steps_per_s"]
    )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", nargs="+", default=["CartPole-v1", "Pendulum-v1"])
    p.add_argument("--num-envs", type=int, default=16, help="sub-envs (num_envs_per_env_runner)")
    p.add_argument("--fragment", type=int, default=250, help="steps per fragment")
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per variant (median)")
    p.add_argument("--fragments", type=int, default=8, help="fragments per round")
    p.add_argument("--out", default="results", help="directory for same_step_reset.json")
    args = p.parse_args()
    report = {
        "settings": vars(args),
        "machine": machine_info(["jax", "envpool"]),
        "results": {
            env: measure(env, args.num_envs, args.fragment, args.rounds, args.fragments)
            for env in args.envs
        },
    }
    save_report(report, args.out, "same_step_reset")


if __name__ == "__main__":
    main()
