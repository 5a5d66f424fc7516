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
* ``network_floor``: as many gradient steps as the update takes (epochs x minibatches), each the
  policy network's forward and backward pass over a minibatch of the batch's observations and a
  plain gradient step (``network_floor``): the network's own arithmetic, with none of PPO's loss,
  Adam, clipping or shuffling, a bound on any update of this network at these sizes.
  ``arithmetic`` gives the matrix products' floating-point operations per gradient step and the
  rate the update and the floor reach.

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
    "envpool_only = EnvPool's XLA step alone with random actions; network_floor = the update's "
    "number of gradient steps, each only the network's forward and backward pass on a minibatch "
    "and a plain gradient step. Median and min over rounds."
)


def dense_kernels(params: Any) -> list[tuple[int, int]]:
    """The ``(inputs, outputs)`` of every 2-D kernel in ``params`` (the dense layers)."""
    import jax

    return [
        (int(x.shape[0]), int(x.shape[1]))
        for path, x in jax.tree_util.tree_leaves_with_path(params)
        if getattr(x, "ndim", 0) == 2 and "kernel" in jax.tree_util.keystr(path)
    ]


def matmul_flops_per_step(params: Any, rows: int) -> int:
    """About the floating-point operations of one gradient step's matrix products on ``rows``
    rows: the forward product and the two of the backward pass (inputs' and weights' gradients),
    2 operations per multiply-add, per dense layer."""
    return sum(3 * 2 * rows * i * o for i, o in dense_kernels(params))


def network_floor(
    apply: Callable[[Any, Any], Any], obs: Any, steps: int, minibatch: int
) -> Callable[[Any], Any]:
    """``floor(params) -> params``: ``steps`` gradient steps, each ``apply``'s forward and
    backward pass over ``minibatch`` consecutive rows of ``obs`` (a squared loss on every output,
    so the backward pass depends on the data) and a plain step ``params - 1e-6 * grad``."""
    import jax
    import jax.numpy as jnp

    rows = int(obs.shape[0])

    def loss(params: Any, x: Any) -> Any:
        return sum(0.5 * jnp.sum(jnp.square(o)) for o in jax.tree.leaves(apply(params, x)))

    def floor(params: Any) -> Any:
        def body(p: Any, i: Any) -> Any:
            start = (i * minibatch) % max(rows - minibatch, 1)
            x = jax.lax.dynamic_slice_in_dim(obs, start, minibatch)
            g = jax.grad(loss)(p, x)
            return jax.tree.map(lambda a, b: a - 1e-6 * b, p, g), None

        return jax.lax.scan(body, params, jnp.arange(steps))[0]

    return floor


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

    from rljax.algorithms.ppo.learner import POLICY_ID
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
    # The update and the floor compiled with the options the algorithm's own update got.
    options = getattr(algo, "_xla_options", {}).get("update")
    update = jax.jit(algo._update, compiler_options=options)
    act = jax.jit(replay)
    env_only = jax.jit(envpool_only)
    batch = postprocess(traj)
    # The network's own arithmetic: as many gradient steps as the update's, nothing else.
    hp = algo.hp
    grad_steps = hp.num_epochs * hp.num_minibatches
    floor_obs = jnp.reshape(batch.obs, (-1, *algo.observation_space.shape))
    policy_params = params[POLICY_ID]  # already a copy; the floor donates nothing
    floor = jax.jit(
        network_floor(algo.module.apply, floor_obs, grad_steps, hp.minibatch_size),
        compiler_options=options,
    )
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
        # Its metrics, episodes and count of skipped updates come back packed.
        algo.state, algo.runner_state, packed = loop.train_step(algo.state, state["rs"])
        state["rs"] = algo.runner_state
        return packed

    parts: dict[str, Callable[[], Any]] = {
        "rollout": run_rollout,
        "acting": lambda: act(params, actor_before, results, keys),
        "postprocess": lambda: postprocess(traj),
        "update": lambda: update(algo.state, batch),
        "fused_iteration": run_fused,
        "train_call": algo.train,
        "envpool_only": run_env_only,
        "network_floor": lambda: floor(policy_params),
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
    flops = matmul_flops_per_step(policy_params, hp.minibatch_size)
    out["arithmetic"] = {
        "gradient_steps_per_update": grad_steps,
        "minibatch_rows": hp.minibatch_size,
        "dense_layers": dense_kernels(policy_params),
        "matmul_flops_per_gradient_step": flops,
        "update_gflops_per_s": flops * grad_steps / out["update"]["median_s"] / 1e9,
        "floor_gflops_per_s": flops * grad_steps / out["network_floor"]["median_s"] / 1e9,
        "update_over_floor": out["update"]["median_s"] / out["network_floor"]["median_s"],
    }
    parts_sum = sum(out[k]["median_s"] for k in ("rollout", "postprocess", "update"))
    out["sum_rollout_postprocess_update_s"] = parts_sum
    out["rounds"] = rounds
    out["env_steps_per_iteration"] = rows
    out["method"] = METHOD
    out["load_average_after"] = list(os.getloadavg())
    return out
