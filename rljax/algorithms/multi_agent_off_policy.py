"""Multi-agent DQN, SAC and TD3: each policy a single-agent learner of its own, with its own
replay buffer, fed by the agent slots of multi-agent PPO's runners.

Sampling, agent slots, evaluation, results and connectors are multi-agent PPO's
(``rljax.algorithms.ppo.multi_agent``). What differs:

- **Policies.** Each policy is built by the single-agent algorithm (DQN, SAC or TD3) from the
  config (with the model settings of the policy's module spec, where a ``MultiRLModuleSpec``
  gives it one) and the policy's spaces: its networks, optimizers, target networks, exploration (DQN's epsilon schedule,
  TD3's warm-up) and learning step are the single-agent ones, unchanged. An agent slot acts
  with its policy of the episode.
- **Replay.** Each policy has an episode replay buffer (``rljax.replay.episode``) with a ring
  per agent slot. A slot's rows go to the buffer of the policy that acted on them, in the order
  of its agent's own steps (an agent's transitions run from one of its observations to its
  next, however many env steps apart), so n-step returns follow the agent's own steps and its
  episode ends. ``replay_buffer_config["capacity"]`` counts each policy's buffer: its rings
  share it equally, so a policy that only some slots map to keeps fewer of its steps (with one
  policy per agent, ``capacity / agents``). RLlib's ``MultiAgentEpisodeReplayBuffer`` and
  ``MultiAgentPrioritizedEpisodeReplayBuffer`` name these buffers, as do the single-agent names.
- **Cycles.** An iteration is cycles of a fragment of ``rollout_fragment_length`` env steps
  from every sub-env (times RLlib's sample weight of ``training_intensity``), added to the
  buffers, then each trained policy's ``train_weight`` updates on batches of
  ``train_batch_size_per_learner`` rows of its own, once ``num_steps_sampled_before_learning
  _starts`` env steps have been sampled and its buffer has a row to sample. Schedules, the
  learning start and target updates count the run's env steps (not agent steps), as RLlib's
  learners do. The whole cycle of every policy is one jitted program; the runners act with the
  new weights from the next fragment on.

Not built: several learners, populations, recurrent modules, modules with a forward pass only,
agents with different action spaces, and the fused JAX-env path (a multi-agent JAX env is
stepped from the host); each is refused by name.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.off_policy import OffPolicyAlgorithm, check_loaded_buffer
from rljax.algorithms.ppo.multi_agent import MultiAgentPPO
from rljax.algorithms.ppo.multi_agent_parts import unpad_observations
from rljax.execution.loop import IterationResult, Timers
from rljax.execution.off_policy import (
    OffPolicyState,
    ReplaySchedule,
    make_learn_cycle,
    make_update,
)
from rljax.execution.on_policy import OnPolicyLoop
from rljax.execution.parts import PolicyParts
from rljax.learners.hyperparams import live_layout, saved_layout
from rljax.replay.episode import EpisodeReplayBuffer
from rljax.runners.acting import make_act_step
from rljax.utils import xla_options
from rljax.utils.errors import ConfigError


class _Policy:
    """One policy's single-agent parts: built by the single-agent algorithm's own
    ``_build_parts`` and ``_make_buffer`` on the policy's config and spaces."""

    def __init__(
        self,
        algo_class: type[OffPolicyAlgorithm],
        config: Any,
        observation_space: gym.Space,
        action_space: gym.Space,
        slots: int,
        seed: int,
        key: jax.Array,
    ) -> None:
        # The single-agent algorithm's parts are its methods of its config and spaces: an
        # instance holding only those (no env, runners or learner of its own) builds them.
        view: Any = object.__new__(algo_class)
        view.config, view.seed, view.env_spec = config, seed, None
        view.observation_space, view.action_space = observation_space, action_space
        view._inference_only = False
        init_key, learn_key = jax.random.split(key)
        self.parts, self.learner = view._build_parts(init_key)
        view.parts = self.parts
        view.num_envs = slots
        self.schedule = view.schedule = ReplaySchedule(
            train_weight=config.replay_ratio_weights()[1],
            batch_size=config.total_train_batch_size,
            n_step=config.n_step_range,
            gamma=float(config.gamma),
            target_update_freq=int(config.target_network_update_freq),
            learning_starts=int(config.num_steps_sampled_before_learning_starts),
        )
        self.initial = OffPolicyState(
            learner=self.learner.init,
            buffer=None,
            key=learn_key,
            timestep=jnp.zeros((), jnp.int32),
            last_target_update=jnp.zeros((), jnp.int32),
            num_updates=jnp.zeros((), jnp.int32),
        )
        try:
            self.buffer: EpisodeReplayBuffer = view._make_buffer(self.initial)
        except ValueError as e:  # a ring too short for the n-step window
            capacity = config.replay_buffer_config["capacity"]
            raise ConfigError(
                f"replay_buffer_config['capacity']={capacity} is shared by the {slots} agent "
                f"slots' rings of each policy's buffer, too few rows each for n_step="
                f"{config.n_step!r} ({e}); raise the capacity"
            ) from e
        self.observation_space = observation_space


class MultiAgentOffPolicy(MultiAgentPPO):
    """An off-policy algorithm (DQN, SAC, TD3: the config's ``algo_class``) over several
    policies on a ``MultiAgentEnv`` (built by its config with ``.multi_agent(...)``); see the
    module docstring."""

    # add_module / remove_module (rljax.algorithms.module_surface) refuse: a rebuild would not
    # carry the policies' critics, target networks and replay buffers over.
    rebuilds_with_new_modules: ClassVar[bool] = False

    state: list[OffPolicyState]  # type: ignore[assignment]
    parts: PolicyParts[list[OffPolicyState]]  # type: ignore[assignment]
    # Trials of these train one at a time (no population program).
    population_settings: ClassVar[tuple[str, ...]] = ()
    population_state_settings: ClassVar[tuple[str, ...]] = ()

    def _setup(self) -> None:
        cfg: Any = self.config  # the off-policy algorithm's config (OffPolicyConfig)
        algo_class = cfg.algo_class
        name = algo_class.__name__
        self._start_policies(f"multi-agent {name} trains its policies")
        specs = {pid: self._module_spec(pid) for pid in self.policy_ids}
        forward_only = [pid for pid, spec in specs.items() if spec and spec.is_forward_only]
        custom = [pid for pid, spec in specs.items() if spec and spec.module_class is not None]
        if forward_only or custom:
            raise ConfigError(
                f"multi-agent {name} builds each policy's networks from its model_config; "
                f"policies {forward_only or custom} name a module class of their own"
            )
        self.forward_only = []
        to_train = cfg.policies_to_train if cfg.policies_to_train is not None else self.policy_ids
        self.train_mask = np.array([p in to_train for p in self.policy_ids])
        if self.mixed_actions:
            raise ConfigError(
                f"multi-agent {name} needs one action space for every agent; the agents have "
                f"{sorted({str(s) for s in self.agent_action_spaces.values()})}"
            )
        self.policy_observation_spaces = self._policy_spaces_of(
            "observation_space", self.agent_observation_spaces, self.padded
        )
        self.policy_action_spaces = self._policy_spaces_of(
            "action_space", self.agent_action_spaces, False
        )
        self.num_slots = cfg.num_envs_per_env_runner * len(self.possible_agents)
        self.total_slots = self.num_slots * cfg.num_runners
        self.fragment_length = cfg.get_rollout_fragment_length()
        self.sample_weight, self.train_weight = cfg.replay_ratio_weights()
        # The env steps of a cycle: every sub-env's fragment (not the agents' rows).
        self.cycle_env_steps = self.sample_weight * self.fragment_length * cfg.envs_per_step
        self.cycles_per_iteration = max(
            1, math.ceil(cfg.min_sample_timesteps_per_iteration / self.cycle_env_steps)
        )
        key = jax.random.PRNGKey(self.seed)
        key, self._action_key = jax.random.split(key)
        keys = jax.random.split(key, self.num_policies)
        self.policies: list[_Policy] = []
        for i, pid in enumerate(self.policy_ids):
            pcfg = cfg.module_config(pid)  # the model settings of the policy's module spec
            try:
                self.policies.append(
                    _Policy(
                        algo_class,
                        pcfg,
                        self.policy_observation_spaces[pid],
                        self.policy_action_spaces[pid],
                        self.total_slots,
                        self.seed,
                        keys[i],
                    )
                )
            except ConfigError as e:
                raise ConfigError(f"policy {pid!r}: {e}") from e
        self.parts = self._slot_parts()
        # One program: DQN's epsilon and TD3's warm-up flag are computed from the state, and
        # eagerly each would be a dispatch per operation, every cycle.
        self._jit_acting_params = jax.jit(self.parts.acting_params)
        if self.runner_device == self.learner_devices[0]:
            # The runners' copy in the same program (the cycle donates the state they were
            # read from); a device_put of every leaf cost about 2 ms a cycle.
            acting = self.parts.acting_params
            self._jit_acting_copy: Any = jax.jit(
                lambda state: jax.tree.map(jnp.copy, acting(state))
            )
        else:
            self._jit_acting_copy = None
        self._recurrent = False
        self._act_step = make_act_step(
            self.parts.act, self.parts.bootstrap_keys, clip_rewards=cfg.clip_rewards
        )
        states = [
            p.initial._replace(buffer=None if self._inference_only else p.buffer.init())
            for p in self.policies
        ]
        self.state = jax.device_put(states, self.learner_devices[0])
        # The options of the programs, picked by the networks' sizes (no compilation here).
        self._xla_options = xla_options.resolve(
            cfg.xla_cpu_options, jax.eval_shape(self.parts.acting_params, self.state)
        )
        self._fused_env = None
        self._loop = None
        if not self._inference_only:
            with xla_options.applied(self._xla_options):
                self._runners = self._make_runner_group(
                    self._runner_params(),
                    self._act_step,
                    self.fragment_length * self.sample_weight,
                )
                self._loop = OnPolicyLoop.with_runners(
                    self._runners,
                    lambda traj: traj,  # a cycle adds the fragment as it is
                    self._make_cycle(),
                    self._acting_copy,
                    cfg.sample_timeout_s,
                    report=self._report,
                    steps_per_iteration=self.cycles_per_iteration,
                )
        self._start_returns()

    # ------------------------------------------------------------------ acting
    def _params(self) -> list[Any]:
        return self._jit_acting_params(self.state)

    def _acting_copy(self, state: Any) -> Any:
        """A copy of the policies' acting parameters on the runner device."""
        if self._jit_acting_copy is not None:
            return self._jit_acting_copy(state)
        return self._on_runner_device(self._jit_acting_params(state))

    def _runner_params(self) -> Any:
        return self._acting_copy(self.state)

    def _slot_parts(self) -> PolicyParts[list[OffPolicyState]]:
        """Every slot acts with its own policy's single-agent ``act`` (each policy runs on
        every slot, each slot keeps its own policy's action); inference is the policy's own."""
        policies, ids = self.policies, self.policy_ids
        spaces, padded = [p.observation_space for p in policies], self.padded

        def own_obs(i: int, slot_obs: Any, lead: int = 1) -> Any:
            return unpad_observations(slot_obs, spaces[i], padded, lead)

        def pick(actions: list[jax.Array], policy: jax.Array) -> jax.Array:
            if len(actions) == 1:
                return actions[0]
            actions = [a.astype(actions[0].dtype) for a in actions]
            return jnp.stack(actions)[policy, jnp.arange(policy.shape[0])]

        def act(params: Any, obs: Any, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
            keys = jax.random.split(key, len(policies))
            actions = [
                p.parts.act(params[i], own_obs(i, obs["obs"]), keys[i])[0]
                for i, p in enumerate(policies)
            ]
            return pick(actions, obs["policy"]), {}

        def greedy_slots(params: Any, obs: Any) -> jax.Array:
            key = jax.random.PRNGKey(0)  # greedy: unused by the policies' greedy inference
            actions = [
                p.parts.inference(None, False)(params[i], own_obs(i, obs["obs"]), key)[1]
                for i, p in enumerate(policies)
            ]
            return pick(actions, obs["policy"])

        def index(policy_id: str | None) -> int:
            return 0 if policy_id is None else ids.index(policy_id)

        def slot_inference(i: int, explore: bool) -> Any:
            """Policy ``i``'s inference on slot rows (padded where agents' spaces differ)."""
            infer = policies[i].parts.inference(None, explore)
            if not padded:
                return infer
            return lambda params, obs, key: infer(params, own_obs(i, obs), key)

        # Built once: inference is cached by function (one compilation per policy and mode).
        inferences = {
            (i, explore): slot_inference(i, explore)
            for i in range(len(policies))
            for explore in (False, True)
        }

        first = policies[0].parts
        return PolicyParts(
            act=act,
            acting_params=lambda state: [
                p.parts.acting_params(s) for p, s in zip(policies, state, strict=True)
            ],
            bootstrap_keys=(),
            inference=lambda pid, explore: inferences[(index(pid), explore)],
            inference_params=lambda state, pid: policies[index(pid)].parts.inference_params(
                state[index(pid)], None
            ),
            # One action space for every agent (mixed ones are refused): one conversion.
            to_env_action=first.to_env_action,
            to_env_action_host=first.to_env_action_host,
            greedy_slots=greedy_slots,
        )

    # ------------------------------------------------------------------ learning
    def _make_cycle(self) -> Any:
        """``cycle(states, traj [T, S]) -> (states, metrics)``: each policy's rows added to its
        buffer (its agents' own steps, per slot ring), then its updates (``make_learn_cycle``);
        a policy outside ``policies_to_train`` keeps its networks and buffer as they are."""
        agents_per_copy = len(self.possible_agents)

        def env_steps(traj: Any) -> jax.Array:
            """The env steps the copies took (a copy's slots share its flag; a call that only
            reset a copy after its episode is none, as the runners count them)."""
            return jnp.sum(traj.stepped.astype(jnp.int32)) // agents_per_copy

        cycles: list[Any] = []
        for i, p in enumerate(self.policies):
            if not self.train_mask[i]:
                cycles.append(None)
                continue
            update = make_update(p.learner, p.buffer, p.schedule)
            cycles.append(
                make_learn_cycle(
                    update,
                    p.buffer,
                    p.schedule,
                    p.learner.metric_names,
                    env_steps=env_steps,
                )
            )
        names = [p.learner.metric_names for p in self.policies]
        spaces, padded = [p.observation_space for p in self.policies], self.padded

        def cycle(states: list[OffPolicyState], traj: Any) -> tuple[list[OffPolicyState], Any]:
            columns = jnp.broadcast_to(jnp.arange(traj.valid.shape[1]), traj.valid.shape)
            new, metrics, started = [], [], []
            for i, run in enumerate(cycles):
                if run is None:  # frozen: its schedules still follow the env steps
                    new.append(states[i]._replace(timestep=states[i].timestep + env_steps(traj)))
                    metrics.append({k: jnp.zeros((), jnp.float32) for k in names[i]})
                    started.append(jnp.zeros((), bool))
                    continue
                own = traj._replace(
                    obs=unpad_observations(traj.obs["obs"], spaces[i], padded, lead=2),
                    env_id=columns,  # each slot of each runner: a ring of its own
                    present=traj.present & (traj.obs["policy"] == i),
                )
                state, m, s = run(states[i], own)
                new.append(state)
                metrics.append(m)
                started.append(s)
            return new, {"policies": metrics, "started": jnp.stack(started)}

        return cycle

    def _report(self, records: list[dict[str, Any]], timers: Timers) -> IterationResult:
        """The iteration's result from its cycles' records: each policy's learner metrics
        averaged over the cycles it trained in, the runners' finished episodes, per-module and
        per-agent returns."""
        host = jax.device_get([r["metrics"] for r in records])
        started = np.stack([np.asarray(m["started"], bool) for m in host])  # [cycles, P]
        sampled = self._sampled_episodes(
            [r["sample_record"] for r in records], [r["episodes"] for r in records]
        )
        learner: dict[str, Any] = {}
        trained = 0
        for i, pid in enumerate(self.policy_ids):
            if not self.train_mask[i]:  # not trained: no metrics (they were NaN), as RLlib's
                continue
            on = started[:, i]
            names = self.policies[i].learner.metric_names
            metrics = {
                k: float(np.mean([m["policies"][i][k] for m, s in zip(host, on, strict=True) if s]))
                if on.any()
                else float("nan")
                for k in names
            }
            updates = int(on.sum()) * self.train_weight
            rows = updates * self.policies[i].schedule.batch_size
            trained += rows
            learner[pid] = {
                **metrics,
                "num_updates": float(updates),
                "num_module_steps_trained": rows,
            }
        return sampled.result(learner, trained, timers)

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint_state(self, include_replay_buffer: bool | None = None) -> Any:
        include = self._includes_replay_buffer(include_replay_buffer)
        policies = []
        for s in self.state:
            state = s._asdict()
            state["learner"] = saved_layout(state["learner"])
            if not include:
                del state["buffer"]
            policies.append(state)
        connectors = self._stateful_connectors()
        extra = {} if connectors is None else {"connectors": connectors.get_state()}
        return {"policies": policies, **extra}

    def _inference_target(self, includes_replay_buffer: bool) -> Any:
        target = self._checkpoint_state(False)
        if includes_replay_buffer:  # its shapes only: nothing is allocated for the buffers
            for state, p in zip(target["policies"], self.policies, strict=True):
                state["buffer"] = jax.eval_shape(p.buffer.init)
        if self._inference_only:
            template = self._saved_connector_template()
            if template:
                target["connectors"] = template
        return target

    def _check_loaded_state(self, loaded: Any, path: Any) -> None:
        for state in loaded["policies"]:
            check_loaded_buffer(state.get("buffer"), path)

    def _restore_state(self, loaded: Any) -> None:
        if "connectors" in loaded:
            connectors = self._stateful_connectors()
            if connectors is not None:
                connectors.set_state(jax.device_get(loaded["connectors"]))
        states = []
        for fields, now, p in zip(loaded["policies"], self.state, self.policies, strict=True):
            fields = dict(fields)
            fields["learner"] = live_layout(fields["learner"], now.learner)
            if self._inference_only:
                fields["buffer"] = None
            else:
                fields.setdefault("buffer", jax.device_get(p.buffer.init()))
            states.append(OffPolicyState(**jax.tree.map(jnp.asarray, fields)))
        self.state = jax.device_put(states, self.learner_devices[0])
        if self._runners is not None:  # runner threads act with them next (none after stop())
            self._runners.publish(self._runner_params(), advance=False)

    def get_weights(self, policies: list[str] | None = None) -> dict[str, Any]:
        """Each policy's inference weights (host arrays), as ``{policy_id: weights}``."""
        ids = self.policy_ids if policies is None else list(policies)
        for pid in ids:
            self._policy_index(pid)
        return {pid: jax.device_get(self.parts.inference_params(self.state, pid)) for pid in ids}

    # Algorithm's: the weights written where each policy's state holds them.
    set_weights = Algorithm.set_weights

    @property
    def states(self) -> list[OffPolicyState]:  # type: ignore[override]
        """Each policy's off-policy state (networks, buffer, counters)."""
        return self.state


class MultiAgentDQN(MultiAgentOffPolicy):
    """DQN over several policies (built by ``DQNConfig`` with ``.multi_agent(...)``)."""


class MultiAgentSAC(MultiAgentOffPolicy):
    """SAC over several policies (built by ``SACConfig`` with ``.multi_agent(...)``; TQC's
    config builds it with TQC's learners)."""


class MultiAgentTD3(MultiAgentOffPolicy):
    """TD3 over several policies (built by ``TD3Config`` with ``.multi_agent(...)``)."""


__all__ = ["MultiAgentDQN", "MultiAgentOffPolicy", "MultiAgentSAC", "MultiAgentTD3"]
