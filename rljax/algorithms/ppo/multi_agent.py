"""Multi-agent PPO: policies stacked along a leading axis, sampled and updated together.

Every policy shares one architecture (the config's model), so their parameters, optimizer
states and KL coefficients are stacked ``[P, ...]``. Acting gathers each agent slot's policy
parameters and runs them vmapped over the slots; the update is one jitted ``vmap`` of the
single-policy PPO update over the P policies, each on its own padded batch. Policies outside
``policies_to_train`` are not updated: their parameters stay bit for bit.

Per-policy batches differ in size from iteration to iteration (the mapping function may assign
agents differently each episode, agents may act at different rates); they are padded to a
common size rounded up to a power of two (masked rows do not count), so the update compiles
once per size bucket, not once per iteration.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.algorithm import DEFAULT_POLICY, Algorithm
from rljax.algorithms.ppo.learner import (
    POLICY_ID,
    PPOHyperparams,
    PPOTrainState,
    make_optimizer,
    make_ppo_postprocess,
    make_ppo_update,
)
from rljax.algorithms.ppo.ppo import build_policy
from rljax.env.env_context import EnvContext
from rljax.env.multi_agent_env import MultiAgentEnv
from rljax.env.multi_agent_vector import MultiAgentVectorEnv, agent_spaces
from rljax.env.registry import registered_creator
from rljax.runners.acting import episode_arrays, make_act_step
from rljax.utils.errors import ConfigError
from rljax.utils.jit import init_stacked, run_once


def multi_agent_creator(env: Any):
    """``creator(env_config) -> MultiAgentEnv`` for a registered name, a class or a callable."""
    if isinstance(env, str):
        creator = registered_creator(env)
        if creator is None:
            raise ConfigError(
                f"multi-agent env {env!r} is not registered; call rljax.register_env({env!r}, "
                "lambda cfg: MyMultiAgentEnv(cfg)) or pass the class"
            )
        return creator
    if callable(env):
        return env
    raise ConfigError(f"env={env!r}; a multi-agent env must be a MultiAgentEnv class or a creator")


class _SlotEnvFn:
    def __init__(self, creator, context: EnvContext):
        self.creator, self.context = creator, context

    def __call__(self) -> MultiAgentEnv:
        env = self.creator(self.context)
        if not isinstance(env, MultiAgentEnv):
            raise ConfigError(
                f"the env creator returned {type(env).__name__}, not a MultiAgentEnv; "
                ".multi_agent() needs one"
            )
        return env


def _bucket(n: int, minimum: int) -> int:
    """The smallest power of two >= max(n, minimum)."""
    n = max(n, minimum, 1)
    return 1 << (n - 1).bit_length()


class MultiAgentPPO(Algorithm):
    """PPO over several policies on a ``MultiAgentEnv`` (built by ``PPOConfig`` with
    ``.multi_agent(...)``)."""

    def _resolve_env(self) -> None:
        cfg = self.config
        self._ma_creator = multi_agent_creator(cfg.env)
        probe = _SlotEnvFn(self._ma_creator, EnvContext(cfg.env_config))()
        try:
            self.observation_space, self.action_space = agent_spaces(probe)
            self.possible_agents = list(probe.possible_agents)
        finally:
            probe.close()
        self.env_spec = None

    # ------------------------------------------------------------------ setup
    def _setup(self) -> None:
        cfg = self.config
        if cfg.num_learners > 1:
            raise ConfigError(
                "multi-agent PPO runs its stacked update on one learner device; use "
                "num_learners=0 or 1"
            )
        self.policy_ids = list(cfg.policies)
        self.num_policies = len(self.policy_ids)
        self.mapping_fn = cfg.policy_mapping_fn or (
            lambda agent_id, episode, **kw: self.policy_ids[0]
        )
        to_train = cfg.policies_to_train if cfg.policies_to_train is not None else self.policy_ids
        self.train_mask = np.array([p in to_train for p in self.policy_ids])
        self._dist, self.module = build_policy(self.observation_space, self.action_space, cfg)
        key = jax.random.PRNGKey(self.seed)
        key, init_key, self._action_key = jax.random.split(key, 3)
        obs_example = jnp.zeros((1, *self.observation_space.shape), self.observation_space.dtype)
        init_keys = jax.random.split(init_key, self.num_policies)
        params = init_stacked(self.module.init, init_keys, obs_example)
        self.optimizer = make_optimizer(float(cfg.lr), cfg.grad_clip)
        opt_state = run_once(jax.vmap(self.optimizer.init), {POLICY_ID: params})
        self.state = jax.device_put(
            PPOTrainState(
                params={POLICY_ID: params},
                opt_state=opt_state,
                kl_coeff=jnp.full((self.num_policies,), cfg.kl_coeff, jnp.float32),
                step=jnp.zeros((self.num_policies,), jnp.int32),
                key=jax.random.split(key, self.num_policies),
            ),
            self.learner_devices[0],
        )
        self.fragment_length = cfg.get_rollout_fragment_length()
        self.num_slots = cfg.num_envs_per_env_runner * len(self.possible_agents)
        num_runners = max(1, cfg.num_env_runners)
        self.hp = PPOHyperparams.from_config(
            cfg, 1, self.fragment_length * self.num_slots * num_runners
        )
        postprocess = make_ppo_postprocess(
            self.hp, self.num_slots * num_runners, num_policies=self.num_policies
        )
        self._postprocess_jit = jax.jit(lambda traj: (postprocess(traj), episode_arrays(traj)))
        self._updates: dict[int, Any] = {}
        self._act_step = make_act_step(self._policy_fn, bootstrap_keys=("vf_preds",))
        self._runner_vec_envs: list[MultiAgentVectorEnv] = []
        self._runners = self._make_runner_group(
            self._runner_params(), self._act_step, self.fragment_length
        )
        self.policy_returns = {
            p: collections.deque(maxlen=cfg.metrics_num_episodes_for_smoothing)
            for p in self.policy_ids
        }
        self.agent_returns: dict[Any, collections.deque] = {
            a: collections.deque(maxlen=cfg.metrics_num_episodes_for_smoothing)
            for a in self.possible_agents
        }
        self.num_agent_steps_sampled_lifetime = 0

    def _runner_env(self, runner_index: int) -> MultiAgentVectorEnv:
        cfg = self.config
        n = cfg.num_envs_per_env_runner
        worker = runner_index + 1 if cfg.num_env_runners else 0
        fns = [
            _SlotEnvFn(self._ma_creator, EnvContext(cfg.env_config, worker, j, cfg.num_env_runners))
            for j in range(n)
        ]
        env = MultiAgentVectorEnv(
            fns,
            self.policy_ids,
            self.mapping_fn,
            seed=self.seed + 1000 * runner_index,
            policy_in_obs=True,
        )
        self._runner_vec_envs.append(env)
        return env

    def _slots_per_runner(self) -> int:
        return self.num_slots

    # ------------------------------------------------------------------ acting
    def _policy_fn(self, params: Any, obs: Any, key: jax.Array):
        """Each slot acts with its own policy's parameters (gathered, then vmapped)."""
        per_slot = jax.tree.map(lambda p: p[obs["policy"]], params[POLICY_ID])
        dist_inputs, value = jax.vmap(lambda p, o: self.module.apply(p, o[None]))(
            per_slot, obs["obs"]
        )
        dist_inputs, value = dist_inputs[:, 0], value[:, 0]
        action = self._dist.sample(key, dist_inputs)
        extras = {
            "action_logp": self._dist.log_prob(dist_inputs, action),
            "vf_preds": value,
            "action_dist_inputs": dist_inputs,
        }
        return action, extras

    def _runner_params(self) -> Any:
        return jax.device_put(self.state.params, self.runner_device, may_alias=False)

    # ------------------------------------------------------------------ learning
    def _update_fn(self, size: int):
        """The jitted, vmapped update for per-policy batches of ``size`` rows (cached)."""
        if size not in self._updates:
            hp = dataclasses.replace(
                self.hp,
                shard_size=size,
                minibatch_size=min(self.hp.minibatch_size, size),
                skip_empty_minibatches=True,
            )
            update = make_ppo_update(self.module.apply, self._dist, self.optimizer, hp)
            train_mask = jnp.asarray(self.train_mask)

            def stacked_update(state, batch):
                new_state, metrics = jax.vmap(update)(state, batch)

                # Frozen policies keep every leaf of their state (parameters bit for bit).
                def pick(n, o):
                    return jnp.where(train_mask.reshape((-1,) + (1,) * (n.ndim - 1)), n, o)

                return jax.tree.map(pick, new_state, state), metrics

            self._updates[size] = jax.jit(stacked_update, donate_argnums=(0,))
        return self._updates[size]

    def _per_policy_batches(self, batch: Any) -> tuple[Any, int, np.ndarray]:
        """Rows of each policy, padded: every leaf [P, 1, size, ...], and the row counts."""
        flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), batch)
        policy = np.asarray(flat.obs["policy"])
        valid = np.asarray(flat.mask) > 0
        counts = np.array([np.sum(valid & (policy == p)) for p in range(self.num_policies)])
        size = _bucket(int(counts.max()), self.hp.minibatch_size)
        index = np.zeros((self.num_policies, size), np.int32)
        real = np.zeros((self.num_policies, size), np.float32)
        for p in range(self.num_policies):
            rows = np.nonzero(valid & (policy == p))[0]
            index[p, : len(rows)] = rows
            real[p, : len(rows)] = 1.0
        gathered = jax.tree.map(lambda x: x[index], flat._replace(obs=flat.obs["obs"]))
        gathered = gathered._replace(mask=gathered.mask * real)
        return jax.tree.map(lambda x: x[:, None], gathered), size, counts

    def _training_step(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        group = self._runners.sample(self.config.sample_timeout_s)
        batch, episodes = self._postprocess_jit(group.traj)
        t1 = time.perf_counter()
        stacked, size, counts = self._per_policy_batches(batch)
        self.state, metrics = self._update_fn(size)(self.state, stacked)
        jax.block_until_ready(metrics)
        self._runners.publish(self._runner_params())
        t2 = time.perf_counter()
        metrics = jax.device_get(metrics)
        finished = []
        env_steps = 0
        for env in self._runner_vec_envs:
            finished += env.finished_episodes
            env.finished_episodes = []
            env_steps, env.num_env_steps = env_steps + env.num_env_steps, 0
        for ep in finished:
            per_policy: dict[str, float] = {}
            for agent, ret in ep.agent_returns.items():
                self.agent_returns[agent].append(ret)
                pid = ep.agent_policies[agent]
                per_policy[pid] = per_policy.get(pid, 0.0) + ret
            for pid, ret in per_policy.items():
                self.policy_returns[pid].append(ret)
        agent_steps = int(np.asarray(episodes["num_valid"]))
        self.num_agent_steps_sampled_lifetime += agent_steps
        learner = {
            pid: {
                **{k: float(v[i]) for k, v in metrics.items()},
                "num_module_steps_trained": int(counts[i]) if self.train_mask[i] else 0,
            }
            for i, pid in enumerate(self.policy_ids)
        }
        nan = float("nan")
        runner_metrics = {
            "module_episode_returns_mean": {
                p: float(np.mean(r)) if r else nan for p, r in self.policy_returns.items()
            },
            "agent_episode_returns_mean": {
                str(a): float(np.mean(r)) if r else nan for a, r in self.agent_returns.items()
            },
            "num_agent_steps_sampled": agent_steps,
            "num_agent_steps_sampled_lifetime": self.num_agent_steps_sampled_lifetime,
        }
        return {
            "learner_metrics": learner,
            "episode_returns": np.array([ep.episode_return for ep in finished]),
            "episode_lens": np.array([ep.length for ep in finished], int),
            "num_env_steps_sampled": env_steps,
            "num_env_steps_trained": int(counts[self.train_mask].sum()),
            "timers": {
                "training_step": t2 - t0,
                "env_runner_sampling_timer": t1 - t0,
                "learner_update_timer": t2 - t1,
            },
            "runner_metrics": runner_metrics,
        }

    # ------------------------------------------------------------------ inference, checkpoints
    def _policy_index(self, policy_id: str | None) -> int:
        if policy_id is None and self.num_policies == 1:
            return 0
        if policy_id not in self.policy_ids:
            raise ValueError(
                f"unknown policy_id {policy_id!r}; this algorithm has {self.policy_ids}"
            )
        return self.policy_ids.index(policy_id)

    def _inference_params(self, policy_id: str | None = None) -> Any:
        i = self._policy_index(policy_id)
        return {POLICY_ID: jax.tree.map(lambda p: p[i], self.state.params[POLICY_ID])}

    def _policy_outputs(self, params: Any, obs: jax.Array) -> jax.Array:
        return self.module.apply(params[POLICY_ID], obs)[0]

    def _checkpoint_state(self, include_replay_buffer: bool | None = None) -> Any:
        return self.state

    def _restore_state(self, state: Any) -> None:
        self.state = jax.device_put(jax.tree.map(jnp.asarray, state), self.learner_devices[0])
        self._runners.publish(self._runner_params())

    def _policy_ids(self) -> list[str]:
        return list(self.policy_ids)

    def evaluate(self) -> dict[str, Any]:
        raise NotImplementedError(
            "evaluate() is not built for multi-agent algorithms yet; read "
            "env_runners/module_episode_returns_mean from train()"
        )


__all__ = ["DEFAULT_POLICY", "MultiAgentPPO"]
