"""A plain single-file fused PPO on gymnax (PureJaxRL's ``ppo.py`` shape): the limit.

Nothing but the env, the network and the update: the rollout (``lax.scan`` over vmapped gymnax
envs with gymnax's own auto-reset), GAE and the epochs of minibatch updates are one jitted
``update_step``; ``train`` scans ``update_step`` over every update in one program, as
PureJaxRL does. rljax's JAX-env path is measured against it (``benchmarks/jax_envs.py``).

Run: python benchmarks/fused_ppo_baseline.py [--num-envs 4 --num-steps 128 ...] prints one
JSON line: env steps/s of the whole-training program (``scan``) and of one call per update
(``per_update``, the host tracking the last 100 episode returns), and the env steps and
seconds until that mean first reached ``--target`` (per-update mode). With ``--curve`` it
prints one run's episodes instead (``benchmarks/purejaxrl_parity.py`` reads them);
``--anneal-lr --orthogonal-init`` make it PureJaxRL's ``ppo.py`` at its CartPole defaults.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import time
from typing import Any, NamedTuple

import flax.linen as nn
import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import optax


class ActorCritic(nn.Module):
    """Separate 64x64 tanh policy and value networks (rljax's default CartPole model).

    ``orthogonal``: PureJaxRL's initialisation (orthogonal kernels, scale sqrt(2) in the hidden
    layers, 0.01 for the logits, 1 for the value; zero biases); otherwise Flax's defaults.
    ``obs_ndim``: the observation's number of axes, flattened into one (MinAtar's 10x10xC grids,
    as PureJaxRL's ``FlattenObservationWrapper`` does).
    """

    num_actions: int
    hidden: int = 64
    orthogonal: bool = False
    obs_ndim: int = 1

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        def dense(width: int, scale: float) -> nn.Dense:
            if not self.orthogonal:
                return nn.Dense(width)
            return nn.Dense(width, kernel_init=nn.initializers.orthogonal(scale))

        x = x.reshape(*x.shape[: x.ndim - self.obs_ndim], -1)
        h = float(np.sqrt(2.0))
        a = nn.tanh(dense(self.hidden, h)(x))
        a = nn.tanh(dense(self.hidden, h)(a))
        logits = dense(self.num_actions, 0.01)(a)
        v = nn.tanh(dense(self.hidden, h)(x))
        v = nn.tanh(dense(self.hidden, h)(v))
        return logits, dense(1, 1.0)(v)[..., 0]


class Config(NamedTuple):
    env: str = "CartPole-v1"
    num_envs: int = 4
    num_steps: int = 128
    num_epochs: int = 4
    num_minibatches: int = 4
    lr: float = 2.5e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    max_grad_norm: float = 0.5
    # PureJaxRL's: the rate falls linearly to 0 over ``num_updates`` updates (constant within
    # one), and the orthogonal initialisation. Off: a constant rate and Flax's defaults.
    anneal_lr: bool = False
    orthogonal_init: bool = False
    # "minibatch": advantages normalised per minibatch (PureJaxRL's); "batch": once over the
    # whole batch, before the epochs (RLlib's, and so rljax's).
    adv_norm: str = "minibatch"
    # PureJaxRL's (PPO2's) value clipping: the larger of the squared errors of the prediction
    # and of the prediction clipped to within ``clip`` of the sampling one. RLlib has none.
    value_clip: bool = True


class Runner(NamedTuple):
    params: Any
    opt_state: Any
    env_state: Any
    obs: jax.Array
    ep_return: jax.Array
    ep_len: jax.Array
    key: jax.Array


def make(cfg: Config, num_updates: int | None = None) -> tuple[Any, Any]:
    """``(init(key) -> runner, update_step(runner) -> (runner, episodes))``, both jit-able.

    ``num_updates``: the length of the run, which ``cfg.anneal_lr`` anneals over."""
    env, env_params = gymnax.make(cfg.env)
    obs_ndim = len(env.observation_space(env_params).shape)
    net = ActorCritic(
        env.action_space(env_params).n, orthogonal=cfg.orthogonal_init, obs_ndim=obs_ndim
    )
    n, t = cfg.num_envs, cfg.num_steps
    mb = n * t // cfg.num_minibatches
    lr: Any = cfg.lr
    if cfg.anneal_lr:
        if num_updates is None:
            raise ValueError("anneal_lr=True needs num_updates (the run's length)")
        steps_per_update = cfg.num_minibatches * cfg.num_epochs
        lr = lambda count: cfg.lr * (1.0 - (count // steps_per_update) / num_updates)  # noqa: E731
    tx = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(lr, eps=1e-5))

    def init(key: jax.Array) -> Runner:
        key, net_key, env_key = jax.random.split(key, 3)
        obs_shape = env.observation_space(env_params).shape
        params = net.init(net_key, jnp.zeros(obs_shape))
        obs, env_state = jax.vmap(env.reset, (0, None))(jax.random.split(env_key, n), env_params)
        zeros = jnp.zeros((n,))
        return Runner(params, tx.init(params), env_state, obs, zeros, zeros, key)

    def env_step(r: Runner, _: Any) -> tuple[Runner, tuple[jax.Array, ...]]:
        key, act_key, step_key = jax.random.split(r.key, 3)
        logits, value = net.apply(r.params, r.obs)
        action = jax.random.categorical(act_key, logits)
        logp = jax.nn.log_softmax(logits)[jnp.arange(n), action]
        obs, env_state, reward, term, trunc, _ = jax.vmap(env.step, (0, 0, 0, None))(
            jax.random.split(step_key, n), r.env_state, action, env_params
        )
        done = term | trunc
        ep_return = r.ep_return + reward
        ep_len = r.ep_len + 1
        out = (r.obs, action, logp, value, reward, done, ep_return, done)
        r = Runner(
            r.params,
            r.opt_state,
            env_state,
            obs,
            jnp.where(done, 0.0, ep_return),
            jnp.where(done, 0, ep_len),
            key,
        )
        return r, out

    def loss_fn(params: Any, batch: tuple[jax.Array, ...]) -> jax.Array:
        obs, action, logp_old, value_old, adv, target = batch
        logits, value = net.apply(params, obs)
        logp_all = jax.nn.log_softmax(logits)
        logp = logp_all[jnp.arange(obs.shape[0]), action]
        ratio = jnp.exp(logp - logp_old)
        if cfg.adv_norm == "minibatch":
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - cfg.clip, 1 + cfg.clip) * adv).mean()
        v_clipped = value_old + jnp.clip(value - value_old, -cfg.clip, cfg.clip)
        vf_err = (value - target) ** 2
        if cfg.value_clip:
            vf_err = jnp.maximum(vf_err, (v_clipped - target) ** 2)
        vf = 0.5 * vf_err.mean()
        entropy = -(jnp.exp(logp_all) * logp_all).sum(-1).mean()
        return pg + cfg.vf_coef * vf - cfg.ent_coef * entropy

    def update_step(r: Runner) -> tuple[Runner, tuple[jax.Array, jax.Array]]:
        r, (obs, action, logp, value, reward, done, ep_ret, ep_done) = jax.lax.scan(
            env_step, r, None, length=t
        )
        _, last_value = net.apply(r.params, r.obs)

        def gae(carry: tuple[jax.Array, jax.Array], x: tuple[jax.Array, ...]) -> Any:
            adv, next_value = carry
            rew, v, d = x
            delta = rew + cfg.gamma * next_value * (1 - d) - v
            adv = delta + cfg.gamma * cfg.gae_lambda * (1 - d) * adv
            return (adv, v), adv

        _, adv = jax.lax.scan(
            gae, (jnp.zeros(n), last_value), (reward, value, done.astype(jnp.float32)), reverse=True
        )
        target = adv + value
        if cfg.adv_norm == "batch":
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        flat = jax.tree.map(
            lambda x: x.reshape(n * t, *x.shape[2:]), (obs, action, logp, value, adv, target)
        )

        def epoch(carry: tuple[Any, Any, jax.Array], _: Any) -> Any:
            params, opt_state, key = carry
            key, perm_key = jax.random.split(key)
            perm = jax.random.permutation(perm_key, n * t)
            batches = jax.tree.map(
                lambda x: x[perm].reshape(cfg.num_minibatches, mb, *x.shape[1:]), flat
            )

            def minibatch(c: tuple[Any, Any], b: Any) -> Any:
                p, o = c
                grads = jax.grad(loss_fn)(p, b)
                updates, o = tx.update(grads, o, p)
                return (optax.apply_updates(p, updates), o), None

            (params, opt_state), _ = jax.lax.scan(minibatch, (params, opt_state), batches)
            return (params, opt_state, key), None

        (params, opt_state, key), _ = jax.lax.scan(
            epoch, (r.params, r.opt_state, r.key), None, length=cfg.num_epochs
        )
        return r._replace(params=params, opt_state=opt_state, key=key), (ep_ret, ep_done)

    return init, update_step


def run(
    cfg: Config,
    total_steps: int,
    target: float = 450.0,
    seed: int = 0,
    scan: bool = True,
    per_update: bool = True,
) -> dict[str, Any]:
    """Steps/s of both modes (``scan``, ``per_update``: which run) and the per-update run's
    env steps and seconds to ``target``."""
    rows = cfg.num_envs * cfg.num_steps
    num_updates = max(2, total_steps // rows)
    init, update_step = make(cfg, num_updates)
    out: dict[str, Any] = {"system": "baseline", "num_envs": cfg.num_envs}
    out["num_steps"] = cfg.num_steps
    if scan:
        out.update(_scan(init, update_step, num_updates, rows, seed))
    if per_update:
        out.update(_per_update(init, update_step, num_updates, rows, seed, target))
    return out


def _scan(init: Any, update_step: Any, num_updates: int, rows: int, seed: int) -> dict[str, Any]:
    # PureJaxRL's way: every update in one program.
    train = jax.jit(lambda k: jax.lax.scan(lambda r, _: update_step(r), init(k), None, num_updates))
    compiled = train.lower(jax.random.PRNGKey(seed)).compile()
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(jax.random.PRNGKey(seed)))
    return {"scan_env_steps_per_s": num_updates * rows / (time.perf_counter() - t0)}


def _per_update(
    init: Any, update_step: Any, num_updates: int, rows: int, seed: int, target: float
) -> dict[str, Any]:
    # One call per update, the host following the episodes (as a training loop does).
    step = jax.jit(update_step, donate_argnums=0)
    r = jax.jit(init)(jax.random.PRNGKey(seed))
    r, _ = step(r)  # compiles
    jax.block_until_ready(r)
    recent: collections.deque[float] = collections.deque(maxlen=100)
    steps, reached_steps, reached_s = rows, None, None
    t0 = time.perf_counter()
    times = []
    for _ in range(num_updates - 1):
        t1 = time.perf_counter()
        r, (ep_ret, ep_done) = step(r)
        ep_ret, ep_done = np.asarray(ep_ret), np.asarray(ep_done)
        times.append(time.perf_counter() - t1)
        steps += rows
        recent.extend(ep_ret[ep_done].tolist())
        if reached_steps is None and len(recent) and np.mean(recent) >= target:
            reached_steps, reached_s = steps, time.perf_counter() - t0
    loop_s = time.perf_counter() - t0
    return {
        # Median: the machine's cores are shared; the mean beside.
        "per_update_env_steps_per_s": rows / statistics.median(times),
        "per_update_env_steps_per_s_mean": (num_updates - 1) * rows / loop_s,
        "per_update_ms": 1000 * statistics.median(times),
        "steps_to_target": reached_steps,
        "seconds_to_target": reached_s,
        "final_return_mean": float(np.mean(recent)) if recent else None,
    }


def curve(cfg: Config, total_steps: int, seed: int) -> dict[str, Any]:
    """One whole training run as one program (PureJaxRL's way): every finished episode's return
    and the env step it finished at (counting all envs), and PureJaxRL's own plotted figure per
    update (the mean over the update's steps and envs of the last finished episode's return,
    its ``LogWrapper``'s ``returned_episode_returns``; 0 before an env's first episode ends)."""
    rows = cfg.num_envs * cfg.num_steps
    num_updates = max(2, total_steps // rows)
    init, update_step = make(cfg, num_updates)

    def step(carry: tuple[Runner, jax.Array], _: Any) -> Any:
        r, held = carry
        r, (ep_ret, ep_done) = update_step(r)

        def hold(h: jax.Array, x: tuple[jax.Array, jax.Array]) -> Any:
            h = jnp.where(x[1], x[0], h)
            return h, h

        held, per_step = jax.lax.scan(hold, held, (ep_ret, ep_done))
        return (r, held), (ep_ret, ep_done, per_step.mean())

    train = jax.jit(
        lambda k: jax.lax.scan(step, (init(k), jnp.zeros(cfg.num_envs)), None, num_updates)[1]
    )
    ep_ret, ep_done, plotted = (np.asarray(x) for x in train(jax.random.PRNGKey(seed)))
    # [U, T, N] -> env steps at which each episode finished (the step's index x num_envs).
    env_steps = (np.arange(num_updates * cfg.num_steps) + 1) * cfg.num_envs
    done = ep_done.reshape(-1, cfg.num_envs)
    finished_at = np.broadcast_to(env_steps[:, None], done.shape)[done]
    return {
        "episode_env_steps": finished_at.tolist(),
        "episode_returns": ep_ret.reshape(-1, cfg.num_envs)[done].tolist(),
        "update_env_steps": ((np.arange(num_updates) + 1) * rows).tolist(),
        "purejaxrl_plotted_return": plotted.tolist(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--num-envs", type=int, default=4)
    p.add_argument("--num-steps", type=int, default=128)
    p.add_argument("--num-epochs", type=int, default=4)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--lr", type=float, default=2.5e-4)
    p.add_argument("--total-steps", type=int, default=500_000)
    p.add_argument("--target", type=float, default=450.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--anneal-lr", action="store_true", help="PureJaxRL's linear annealing to 0")
    p.add_argument(
        "--orthogonal-init", action="store_true", help="PureJaxRL's orthogonal initialisation"
    )
    p.add_argument("--adv-norm", choices=["minibatch", "batch"], default="minibatch")
    p.add_argument("--no-value-clip", action="store_true", help="no PPO2-style value clipping")
    p.add_argument(
        "--curve", action="store_true", help="print the run's episodes (``curve``), not speed"
    )
    a = p.parse_args()
    cfg = Config(
        a.env,
        a.num_envs,
        a.num_steps,
        a.num_epochs,
        a.num_minibatches,
        a.lr,
        anneal_lr=a.anneal_lr,
        orthogonal_init=a.orthogonal_init,
        adv_norm=a.adv_norm,
        value_clip=not a.no_value_clip,
    )
    if a.curve:
        print(json.dumps(curve(cfg, a.total_steps, a.seed)))
    else:
        print(json.dumps(run(cfg, a.total_steps, a.target, a.seed)))


if __name__ == "__main__":
    main()
