"""Where one iteration of PPO's fused EnvPool path spends its time (``ppo_cartpole.py``'s profile).

The fused iteration is one XLA program (rollout, GAE and every epoch), so its parts cannot be
timed from outside it. This module compiles each part on its own, from the same functions the
algorithm built (its act step, EnvPool's XLA step and same-step reset, its postprocess and its
update), and times them in turn, round after round, on the same data and the algorithm's current
weights:

* ``rollout``: the fused rollout of one fragment (acting, EnvPool's steps, the same-step reset
  round trips), on the algorithm's own envs and runner state (which it advances and hands back).
* ``acting``: the act step alone, replayed in a ``lax.scan`` over the env results that rollout
  acted on, with its keys: the same rows and the same branches (the second policy pass where a
  step truncated).
* ``env_stepping``: ``rollout - acting`` (derived): EnvPool's steps, the same-step reset round
  trips and the scan's carry.
* ``reset_round_trips``: how many steps of the fragment ended an episode (each sends one more
  EnvPool step from a host callback; the other steps skip it) and the seconds spent in those
  callbacks, timed inside them.
* ``postprocess``: GAE and advantage normalisation on that rollout's trajectory.
* ``update``: every epoch's minibatch steps on that batch, from the algorithm's state (not
  donated, so each round starts from the same state).
* ``fused_iteration``: the algorithm's own program (sampling and update in one call), as
  ``train()`` runs it; ``train_call``: ``algo.train()`` itself, the result dict included.
* ``envpool_only``: EnvPool's XLA step in a ``lax.scan`` with random actions and EnvPool's own
  next-step reset (no policy, no round trip): the env's own stepping rate in the same process,
  a bound on any rollout.

Each figure is the median and the minimum over the rounds, in seconds per iteration (one
fragment / one batch). The parts are separate programs: the sum of rollout, postprocess and
update may differ from the fused program (one dispatch instead of three, buffers shared).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

METHOD = (
    "Each part compiled as its own jitted program from the algorithm's own functions and timed "
    "in turn, round after round, on the same data and the algorithm's current weights "
    "(benchmarks/ppo_profile.py): rollout = act step + EnvPool XLA step + same-step reset round "
    "trips for one fragment; acting = the act step replayed in a scan over the results that "
    "rollout acted on; env_stepping = rollout - acting; postprocess = GAE on the rollout; "
    "update = all epochs on that batch; fused_iteration = the algorithm's own single program; "
    "envpool_only = EnvPool's XLA step alone with random actions. Median and min over rounds."
)


def _timed(fn: Callable[[], Any]) -> float:
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - t0


def profile_fused(algo: Any, rounds: int) -> dict[str, Any]:
    """The per-part times of ``algo``'s fused iteration (an rljax PPO on the fused EnvPool
    path, already trained for some iterations); ``algo``'s runner state and weights stay
    usable afterwards."""
    import jax
    import jax.numpy as jnp

    from rljax.env import envpool_vector
    from rljax.env.envpool_vector import make_envpool
    from rljax.runners.acting import make_fused_rollout
    from rljax.types import FusedRunnerState

    loop = algo._loop
    if loop is None or loop.train_step is None:
        raise ValueError("profile_fused needs the fused path with one learner")
    length = algo.fragment_length
    act_step = algo._act_step
    to_env_action = algo.parts.to_env_action
    env = algo._env
    xla_step = env.xla()[3]

    # The same-step reset, its host calls counted and timed (the callback the algorithm's
    # program binds is the same function, unwrapped).
    calls = {"n": 0, "s": 0.0}

    def counted(*args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return envpool_vector._reset_ended_rows(*args)
        finally:
            calls["n"] += 1
            calls["s"] += time.perf_counter() - t0

    reset_ended = None
    if algo._reset_ended is not None:
        reset_ended = envpool_vector.envpool_reset_ended(env, host_fn=counted)
    rollout = jax.jit(
        make_fused_rollout(act_step, xla_step, length, to_env_action, reset_ended=reset_ended)
    )

    def recording_rollout(params: Any, rs: Any) -> Any:
        """The rollout, also returning each step's key and the result it acted on."""

        def body(carry: Any, _: Any) -> Any:
            key, sub = jax.random.split(carry.key)
            action, actor, transition = act_step(params, sub, carry.actor, carry.result)
            handle, (obs, rew, term, trunc, info) = xla_step(
                carry.handle, to_env_action(action), carry.result.env_id
            )
            result = envpool_vector.envpool_result(
                obs, rew, term, trunc, info, xp=jnp, reset_ended=reset_ended
            )
            return FusedRunnerState(handle, actor, result, key), (transition, carry.result, sub)

        return jax.lax.scan(body, rs, None, length=length)

    def replay(params: Any, actor: Any, results: Any, keys: Any) -> Any:
        def body(actor: Any, x: Any) -> Any:
            result, key = x
            _, actor, transition = act_step(params, key, actor, result)
            return actor, transition

        return jax.lax.scan(body, actor, (results, keys))

    num_envs = algo.runner_state.result.env_id.shape[0]
    num_actions = algo.action_space.n
    # The envs of envpool_only: a second EnvPool of the same task and size (its next-step
    # reset leaves the algorithm's envs alone).
    spare = make_envpool(algo.env_spec, num_envs, num_envs, seed=12345)
    spare_handle, _, _, spare_step = spare.xla()
    spare.async_reset()
    spare_ids = jnp.asarray(spare.recv()[-1]["env_id"], jnp.int32)

    def envpool_only(handle: Any, env_id: Any, key: Any) -> Any:
        def body(carry: Any, k: Any) -> Any:
            handle, ids = carry
            action = jax.random.randint(k, ids.shape, 0, num_actions)
            handle, (_obs, _rew, _term, _trunc, info) = spare_step(handle, action, ids)
            return (handle, info["env_id"]), None

        return jax.lax.scan(body, (handle, env_id), jax.random.split(key, length))[0][0]

    # Copies: the fused iteration timed below donates (and so deletes) the algorithm's arrays.
    params = jax.tree.map(jnp.copy, algo.parts.acting_params(algo.state))
    actor_before = jax.tree.map(jnp.copy, algo.runner_state.actor)
    rs, (traj, results, keys) = jax.jit(recording_rollout)(params, algo.runner_state)
    postprocess = jax.jit(algo._postprocess)
    update = jax.jit(algo._update)
    act = jax.jit(replay)
    env_only = jax.jit(envpool_only)
    batch = postprocess(traj)
    ended_steps = int(jnp.sum(jnp.any(traj.terminated | traj.truncated, axis=1)))
    truncated_steps = int(jnp.sum(jnp.any(traj.truncated, axis=1)))
    state = {"rs": rs, "env_handle": spare_handle, "key": jax.random.PRNGKey(0)}

    def run_rollout() -> Any:
        calls_before = calls["n"]
        state["rs"], out = rollout(algo.parts.acting_params(algo.state), state["rs"])
        jax.block_until_ready(out)
        state["round_trips"] = calls["n"] - calls_before
        return out

    def run_env_only() -> Any:
        state["key"], sub = jax.random.split(state["key"])
        state["env_handle"] = env_only(state["env_handle"], spare_ids, sub)
        return state["env_handle"]

    def run_fused() -> Any:
        algo.state, algo.runner_state, metrics, _ = loop.train_step(algo.state, state["rs"])
        state["rs"] = algo.runner_state
        return metrics

    parts: dict[str, Callable[[], Any]] = {
        "rollout": run_rollout,
        "acting": lambda: act(params, actor_before, results, keys),
        "postprocess": lambda: postprocess(traj),
        "update": lambda: update(algo.state, batch),
        "fused_iteration": run_fused,
        "train_call": algo.train,
        "envpool_only": run_env_only,
    }
    # Compile everything first (the first call of each), then the timed rounds.
    for name, fn in parts.items():
        if name == "train_call":
            algo.runner_state = state["rs"]
        jax.block_until_ready(fn())
        if name in ("train_call", "fused_iteration"):
            state["rs"] = algo.runner_state
    times: dict[str, list[float]] = {name: [] for name in parts}
    callbacks = {"n": 0, "s": 0.0, "rollouts": 0}
    for r in range(rounds):
        names = list(parts) if r % 2 == 0 else list(reversed(parts))
        for name in names:
            if name == "train_call":
                algo.runner_state = state["rs"]
            before = dict(calls)
            times[name].append(_timed(parts[name]))
            if name == "train_call":
                state["rs"] = algo.runner_state
            if name == "rollout":
                callbacks["n"] += calls["n"] - before["n"]
                callbacks["s"] += calls["s"] - before["s"]
                callbacks["rollouts"] += 1
    algo.runner_state = state["rs"]
    spare.close()

    def summary(values: list[float]) -> dict[str, float]:
        return {"median_s": statistics.median(values), "min_s": min(values)}

    out: dict[str, Any] = {name: summary(v) for name, v in times.items()}
    env_s = [r - a for r, a in zip(times["rollout"], times["acting"], strict=True)]
    out["env_stepping"] = {**summary(env_s), "derived": "rollout - acting"}
    rows = length * num_envs
    out["envpool_only"]["env_steps_per_s"] = rows / out["envpool_only"]["median_s"]
    out["fused_iteration"]["env_steps_per_s"] = rows / out["fused_iteration"]["median_s"]
    out["train_call"]["env_steps_per_s"] = rows / out["train_call"]["median_s"]
    n_cb = max(callbacks["rollouts"], 1)
    out["reset_round_trips"] = {
        "steps_with_an_ended_episode_first_fragment": ended_steps,
        "steps_with_a_truncation_first_fragment": truncated_steps,
        "fragment_steps": length,
        "host_calls_per_rollout": callbacks["n"] / n_cb,
        "host_seconds_per_rollout": callbacks["s"] / n_cb,
    }
    parts_sum = sum(out[k]["median_s"] for k in ("rollout", "postprocess", "update"))
    out["sum_rollout_postprocess_update_s"] = parts_sum
    out["rounds"] = rounds
    out["env_steps_per_iteration"] = rows
    out["method"] = METHOD
    out["load_average_after"] = list(os.getloadavg())
    return out
