"""What one EnvPool step costs inside a jitted scan, by how long the program works between steps.

The fused rollout's profile (``ppo_profile.py``) finds the rollout slower than its parts: at
RLlib's defaults (one sub-env, 4,000 steps) EnvPool alone stepped in about 8 us a step and the
act step alone took about 6 us, yet the rollout took about 40-50 us a step. This script isolates
the env's share. Each variant is one jitted ``lax.scan`` over ``--steps`` steps of one EnvPool
CartPole-v1 sub-env (``--num-envs``: that many, stepped together; EnvPool's XLA step, same
process), where each step first runs ``K`` dependent products of the observations (one row per
sub-env, tiled to 256 wide) with a 256x256 matrix (RLlib's default hidden layer: a stand-in
for acting, which XLA cannot fuse away) and derives the actions from the result. The same ``K`` products in a scan without the env give their own cost;
the difference is what the env step costs when the program spends that long between steps.

A step of the env is a round trip to EnvPool's worker thread (the action queued, the worker
wakes and steps, the result queued back). If the worker blocks once it has waited longer than it
spins, the env's share jumps when the work between steps passes that time: the wake-up (on a
virtual machine, a sleeping vCPU woken by the hypervisor) is then paid every step, however
cheap the env. Variants alternate round by round in one process; medians and minimums over the
rounds, in microseconds per step.

Run: python benchmarks/envpool_handoff.py [--dots 0 1 2 4 8] [--steps 4000] [--rounds 7]
[--num-envs 1]
(``--quick``: 500 steps, 2 rounds, figures meaningless). JSON on stdout and in
``OUT/envpool_handoff.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_info, save_report, set_quick_compilation  # noqa: E402

WIDTH = 256


def build(dots: int, steps: int, with_env: bool, env: Any, num_envs: int) -> tuple[Any, Any]:
    """``(run, carry)``: the jitted scan of ``steps`` steps and its first carry."""
    import jax
    import jax.numpy as jnp

    weight = jnp.eye(WIDTH, dtype=jnp.float32) * 0.5
    handle, _, _, xla_step = env.xla()

    def work(obs: Any) -> Any:
        x = jnp.tile(obs, (1, WIDTH // obs.shape[1]))
        for _ in range(dots):
            x = jnp.tanh(x @ weight)
        return x

    def body(carry: Any, _: Any) -> Any:
        handle, obs, ids = carry
        x = work(obs)
        action = (x[:, 0] > 0).astype(jnp.int32)
        if not with_env:
            return (handle, obs + x[:, :4] * 1e-6, ids), None
        handle, (next_obs, _rew, _term, _trunc, info) = xla_step(handle, action, ids)
        return (handle, next_obs.astype(jnp.float32), info["env_id"].astype(jnp.int32)), None

    @jax.jit
    def run(handle: Any, obs: Any, ids: Any) -> Any:
        return jax.lax.scan(body, (handle, obs, ids), None, length=steps)[0]

    obs = jnp.zeros((num_envs, 4), jnp.float32)
    carry = (jnp.asarray(handle), obs, jnp.arange(num_envs, dtype=jnp.int32))
    return run, carry


def measure(dots: list[int], steps: int, rounds: int, num_envs: int) -> dict[str, Any]:
    import envpool
    import jax

    variants: dict[str, dict[str, Any]] = {}
    for k in dots:
        for with_env in (True, False):
            env = envpool.make(
                "CartPole-v1",
                env_type="gymnasium",
                num_envs=num_envs,
                batch_size=num_envs,
                seed=0,
            )
            env.async_reset()
            env.recv()
            run, carry = build(k, steps, with_env, env, num_envs)
            carry = jax.block_until_ready(run(*carry))  # compile and warm up
            name = f"{'env' if with_env else 'dots_only'}_{k}"
            variants[name] = {"run": run, "carry": carry, "env": env, "times": []}
    names = list(variants)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            v = variants[name]
            t0 = time.perf_counter()
            v["carry"] = jax.block_until_ready(v["run"](*v["carry"]))
            v["times"].append((time.perf_counter() - t0) / steps * 1e6)
    out: dict[str, Any] = {}
    for k in dots:
        with_env = variants[f"env_{k}"]["times"]
        alone = variants[f"dots_only_{k}"]["times"]
        out[str(k)] = {
            "us_per_step": round(statistics.median(with_env), 2),
            "us_per_step_min": round(min(with_env), 2),
            "dots_only_us_per_step": round(statistics.median(alone), 2),
            "env_share_us": round(statistics.median(with_env) - statistics.median(alone), 2),
        }
    for v in variants.values():
        v["env"].close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dots", type=int, nargs="+", default=[0, 1, 2, 4, 8])
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--num-envs", type=int, default=1, help="sub-envs stepped together")
    p.add_argument("--quick", action="store_true", help="smoke test: figures meaningless")
    p.add_argument("--out", type=Path, default=None, help="directory for envpool_handoff.json")
    args = p.parse_args()
    if any(k < 0 or k > 64 for k in args.dots) or min(args.steps, args.rounds) < 1:
        p.error("--dots each in 0..64, --steps and --rounds at least 1")
    if not 1 <= args.num_envs <= 256:
        p.error(f"--num-envs {args.num_envs}: use 1 to 256")
    if args.quick:
        set_quick_compilation()
        args.steps, args.rounds = 500, 2
    report = {
        "machine": machine_info(["jax", "jaxlib", "envpool"]),
        "settings": {
            "steps": args.steps,
            "rounds": args.rounds,
            "width": WIDTH,
            "num_envs": args.num_envs,
        },
        "by_dots_between_steps": measure(args.dots, args.steps, args.rounds, args.num_envs),
        "method": __doc__.split("\n\n")[1].replace("\n", " "),
    }
    save_report(report, args.out, "envpool_handoff")


if __name__ == "__main__":
    main()
