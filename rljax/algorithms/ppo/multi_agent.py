"""Multi-agent PPO: policies stacked along a leading axis, sampled and updated together.

Policies with the same settings (the same model and the same per-policy overrides) form a
group whose parameters, optimizer states and KL coefficients are stacked ``[P_g, ...]``. Acting
gathers each agent slot's policy parameters and runs them vmapped over the slots (once per
group); the update of a group is one jitted ``vmap`` of the single-policy PPO update over its
policies, each on its own padded batch. Most runs have one group, however many policies.
Policies outside ``policies_to_train`` are not updated: their parameters stay bit for bit.
A policy whose module (``MultiRLModuleSpec``) is an ``RLModule`` with a forward pass of its own
(a heuristic, ``RandomRLModule``) has no parameters: it acts by that forward pass inside the same
jitted act step (a group of its own, after the learned groups) and is never updated.

Per-policy batches differ in size from iteration to iteration (the mapping function may assign
agents differently each episode, agents may act at different rates); they are padded to a
common size rounded up to a power of two (masked rows do not count), so the update compiles
once per size bucket, not once per iteration.
"""

from __future__ import annotations

import collections
import dataclasses
import inspect
import logging
from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.actor_critic.policy import recurrent_spec_of
from rljax.algorithms.algorithm import DEFAULT_POLICY, Algorithm
from rljax.algorithms.ppo import multi_agent_fused, multi_agent_recurrent
from rljax.algorithms.ppo.learner import (
    POLICY_ID,
    PPO_POPULATION_SETTINGS,
    PPOHyperparams,
    PPOTrainState,
    make_optimizer,
    make_ppo_postprocess,
    make_ppo_update,
)
from rljax.algorithms.ppo.multi_agent_parts import _bucket, _Group, make_multi_agent_policy_parts
from rljax.algorithms.ppo.networks import build_policy
from rljax.algorithms.ppo.recurrent import sequence_apply
from rljax.connectors.env_to_module.multi_agent import (
    ConnectedCreator,
    ConnectedMultiAgentEnv,
    build_multi_agent_connectors,
)
from rljax.core.rl_module.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.env.env_context import EnvContext
from rljax.env.jax_env import JaxEnv, jax_env_prefix
from rljax.env.jax_multi_agent import (
    AgentSlots,
    JaxMultiAgentGymEnv,
    is_jax_multi_agent_env,
    jax_multi_agent_creator,
)
from rljax.env.multi_agent_env import MultiAgentEnv
from rljax.env.multi_agent_vector import MultiAgentVectorEnv, mapping_caller, slot_spaces
from rljax.env.registry import registered_creator
from rljax.env.spaces import zeros_batch
from rljax.execution.evaluation import EvaluationEnv
from rljax.execution.loop import (
    AgentMetrics,
    IterationResult,
    PopulationParts,
    Timers,
    setting_is_off,
)
from rljax.execution.on_policy import OnPolicyLoop, steps_per_iteration
from rljax.execution.parts import (
    PolicyParts,
)
from rljax.execution.results import AgentStepCounter
from rljax.execution.weights import check_weights_fit
from rljax.policy.policy import PolicySpec
from rljax.runners.acting import make_act_step
from rljax.utils import xla_options
from rljax.utils.errors import ConfigError
from rljax.utils.jit import init_stacked, run_once
from rljax.utils.seeding import derive_seed

logger = logging.getLogger("rljax")


def multi_agent_creator(env: Any):
    """``creator(env_config) -> MultiAgentEnv`` for a registered name, a class or a callable
    (a multi-agent JAX env's: ``JaxMultiAgentCreator``)."""
    jax_creator = jax_multi_agent_creator(env)
    if jax_creator is not None:
        return jax_creator
    if jax_env_prefix(env) is not None or (inspect.isclass(env) and issubclass(env, JaxEnv)):
        raise ConfigError(
            f"env {env!r} is a single-agent JAX env; .multi_agent() needs a multi-agent env: a "
            "multi-agent JAX env ('jaxmarl:<id>', 'pgx:<game>', a JaxMultiAgentEnv class) or a "
            "MultiAgentEnv"
        )
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
        if is_jax_multi_agent_env(env):  # e.g. register_env("x", lambda cfg: MyJaxEnv(cfg))
            env = JaxMultiAgentGymEnv(env)
        if not isinstance(env, MultiAgentEnv):
            raise ConfigError(
                f"the env creator returned {type(env).__name__}, not a MultiAgentEnv; "
                ".multi_agent() needs one"
            )
        return env


def _setting_value(config: Any, name: str) -> float | None:
    """A population setting's value in ``config``: a float, or None where it is off
    (``vf_clip_param=None``; ``grad_clip`` None or 0)."""
    value = getattr(config, name)
    return None if setting_is_off(name, value) else float(value)


@dataclasses.dataclass
class _Sampled:
    """The episodes of an iteration's fragments (``MultiAgentPPO._sampled_episodes``)."""

    finished: list[Any]  # FinishedEpisode, each whole
    env_steps: int
    agents: AgentMetrics
    # Episode callbacks: each finished episode (its log) with its runner slot.
    by_slot: tuple[tuple[int, Any], ...]

    def result(
        self, learner: dict[str, Any], env_steps_trained: int, timers: Timers
    ) -> IterationResult:
        """The iteration's result with these episodes and the learner's ``learner`` metrics."""
        return IterationResult(
            num_env_steps_sampled=self.env_steps,
            num_env_steps_trained=env_steps_trained,
            episode_returns=np.array([ep.episode_return for ep in self.finished]),
            episode_lens=np.array([ep.length for ep in self.finished], int),
            learner_metrics=learner,
            timers=timers,
            agents=self.agents,
            multi_agent_episodes=self.by_slot,
        )


class MultiAgentPPO(Algorithm):
    """PPO over several policies on a ``MultiAgentEnv`` (built by ``PPOConfig`` with
    ``.multi_agent(...)``)."""

    possible_agents: list[Any]
    parts: PolicyParts[list[PPOTrainState]]
    state: list[PPOTrainState]
    connectors_in_env = True  # rljax.connectors.env_to_module.multi_agent

    @classmethod
    def multi_agent_class(cls) -> type[Algorithm]:
        """This class: it trains ``.multi_agent(...)`` configs itself (so does a subclass)."""
        return cls

    def _resolve_env(self) -> None:
        cfg = self.config
        if self._saved_spaces is not None and self._saved_spaces.get("possible_agents"):
            # A module loaded for inference: the checkpoint describes the spaces and agents.
            self.observation_space, self.action_space = self._saved_spaces["spaces"]
            self.possible_agents = list(self._saved_spaces["possible_agents"])
            self.agent_observation_spaces = {
                a: self.observation_space for a in self.possible_agents
            }
            self.agent_action_spaces = {a: self.action_space for a in self.possible_agents}
            self.env_spec = None
            return
        self._ma_creator = multi_agent_creator(cfg.env)
        probe = _SlotEnvFn(self._ma_creator, EnvContext(cfg.env_config))()
        # A JAX env (by name, class or a registered creator): the fused path steps this one.
        self._probe_jax = probe.jax_env if isinstance(probe, JaxMultiAgentGymEnv) else None
        if cfg.env_to_module_connector is not None:
            try:
                agents = list(probe.possible_agents)
                connectors = build_multi_agent_connectors(
                    cfg.env_to_module_connector,
                    {a: probe.get_observation_space(a) for a in agents},
                    {a: probe.get_action_space(a) for a in agents},
                )
                if connectors is not None:  # once on a real observation, before compiling
                    connectors.check(probe.reset(seed=self.seed)[0])
            except BaseException:
                probe.close()
                raise
            if (
                connectors is not None
                and connectors.stateful
                and cfg.gym_env_vectorize_mode == "ASYNC"
            ):
                raise ConfigError(
                    "MeanStdFilter(multi_agent=True) keeps its statistics in this process, "
                    "shared by the runner threads' envs; gym_env_vectorize_mode='ASYNC' steps "
                    "each env in a process of its own, so use 'SYNC' with it"
                )
            if connectors is not None:
                # Runners and evaluation step the env through the connectors; the config keeps
                # them as data (rljax's pieces) or objects (a user's classes), not the factory.
                self._ma_creator = ConnectedCreator(self._ma_creator, connectors)
                self._probe_jax = None  # connectors run on the host
                cfg.env_to_module_connector = connectors.config_value()
                probe = ConnectedMultiAgentEnv(probe, connectors)
        try:
            (
                self.observation_space,
                self.action_space,
                self.agent_observation_spaces,
                self.agent_action_spaces,
            ) = slot_spaces(probe)
            self.possible_agents = list(probe.possible_agents)
        finally:
            probe.close()
        self.env_spec = None

    # ------------------------------------------------------------------ setup
    def _setup(self) -> None:
        cfg = self.config
        self._start_policies("multi-agent PPO runs its stacked update")
        # Modules with a forward pass of their own act but never learn (no parameters).
        self.forward_only = [
            pid
            for pid in self.policy_ids
            if (spec := self._module_spec(pid)) is not None and spec.is_forward_only
        ]
        to_train = cfg.policies_to_train if cfg.policies_to_train is not None else self.policy_ids
        self.train_mask = np.array(
            [p in to_train and p not in self.forward_only for p in self.policy_ids]
        )
        self.policy_observation_spaces = self._policy_spaces_of(
            "observation_space", self.agent_observation_spaces, self.padded
        )
        self.policy_action_spaces = self._policy_spaces_of(
            "action_space", self.agent_action_spaces, self.mixed_actions
        )
        self.fragment_length = self._fragment_length()
        self.num_slots = cfg.num_envs_per_env_runner * len(self.possible_agents)
        num_runners = cfg.num_runners
        batch_rows = self.fragment_length * self.num_slots * num_runners
        key = jax.random.PRNGKey(self.seed)
        key, init_key, self._action_key = jax.random.split(key, 3)
        init_keys = jax.random.split(init_key, self.num_policies)
        state_keys = jax.random.split(key, self.num_policies)
        # Policies with equal overrides share a group: one module, optimizer and update.
        by_settings: dict[str, list[int]] = {}
        for i, pid in enumerate(self.policy_ids):
            if pid in self.forward_only:
                continue
            settings = repr(
                (
                    sorted(cfg.module_overrides(pid).items()),
                    self._module_spec(pid),
                    self.policy_observation_spaces[pid],
                    self.policy_action_spaces[pid],
                )
            )
            by_settings.setdefault(settings, []).append(i)
        self.groups: list[_Group] = []
        self.group_of = np.zeros(self.num_policies, np.int32)
        self.local_of = np.zeros(self.num_policies, np.int32)
        states = []
        for g, members in enumerate(by_settings.values()):
            gcfg = cfg.module_config(self.policy_ids[members[0]])
            overridden = cfg.module_overrides(self.policy_ids[members[0]])
            obs_space = self.policy_observation_spaces[self.policy_ids[members[0]]]
            act_space = self.policy_action_spaces[self.policy_ids[members[0]]]
            dist, module = build_policy(obs_space, act_space, gcfg)
            obs_example = jax.device_put(zeros_batch(obs_space, 1))  # no compile
            obs_example = multi_agent_recurrent.init_example(module, obs_example, act_space)
            optimizer, hp = self._group_learner(gcfg, batch_rows)
            self.groups.append(
                _Group(
                    members=members,
                    module=module,
                    dist=dist,
                    optimizer=optimizer,
                    hp=hp,
                    train_mask=self.train_mask[members],
                    observation_space=obs_space,
                    padded=self.padded,
                    fixed={
                        name: _setting_value(gcfg, name)
                        for name in self.population_settings
                        if name in overridden
                    },
                )
            )
            self.group_of[members] = g
            self.local_of[members] = np.arange(len(members))
            params = init_stacked(module.init, init_keys[np.array(members)], obs_example)
            states.append(
                self._group_state(
                    self.groups[-1], {POLICY_ID: params}, state_keys[np.array(members)]
                )
            )
        self.state = jax.device_put(states, self.learner_devices[0])
        self.forward_modules = []
        for j, pid in enumerate(self.forward_only):
            spec = self._module_spec(pid)
            assert spec is not None and spec.module_class is not None
            self.forward_modules.append(
                spec.module_class(
                    observation_space=self.policy_observation_spaces[pid],
                    action_space=self.policy_action_spaces[pid],
                    model_config=dict(spec.model_config),
                    inference_only=True,
                )
            )
            i = self.policy_ids.index(pid)
            self.group_of[i], self.local_of[i] = len(self.groups) + j, 0
        # use_lstm: a state per agent slot, sequences per policy (multi_agent_recurrent).
        self._recurrent = any(hasattr(g.module, "initial_state") for g in self.groups)
        if self._recurrent:
            self.parts = self._recurrent_parts()
        else:
            self.parts = make_multi_agent_policy_parts(
                self.groups,
                self.policy_ids,
                self.group_of,
                self.local_of,
                self.action_space,
                cfg.clip_actions,
                self.forward_modules,
            )
        self._postprocess_rows = self.num_slots * num_runners
        postprocess = self._make_postprocess(batch_rows)
        self._updates: dict[tuple[int, int], Any] = {}
        self._act_step = make_act_step(
            self.parts.act, self.parts.bootstrap_keys, clip_rewards=self.config.clip_rewards
        )
        self._loop: OnPolicyLoop[list[PPOTrainState]] | None = None
        # The compiler options of the act step and the groups' stacked (vmapped) updates:
        # under "auto" none (rljax.utils.xla_options), a dict as given.
        self._xla_options = xla_options.resolve(cfg.xla_cpu_options, self._params(), stacked=True)
        self._fused_env = self._fused_jax_env()
        if self._population_member:
            # A trial of a population: its envs start as its own run's; the population runs
            # the program (population_parts).
            if self._fused_env is None:
                raise ConfigError(
                    "a multi-agent trial of a population needs the fused path: a multi-agent "
                    "JAX env whose agents share their spaces, num_env_runners=0, no "
                    "connectors, episode callbacks or recurrent policies (use_lstm)"
                )
            with xla_options.applied(self._xla_options):
                self._population_pieces = multi_agent_fused.fused_pieces(self, self._fused_env)
        elif self._fused_env is not None and not self._inference_only:
            with xla_options.applied(self._xla_options):
                self._loop = multi_agent_fused.setup_fused(self, postprocess, self._fused_env)
        elif not self._inference_only:
            free = self._free_running()
            with xla_options.applied(self._xla_options):
                self._runners = self._make_runner_group(
                    self._runner_params(),
                    self._act_step,
                    self.fragment_length,
                    free_running=free is not None,
                    max_queued_fragments=None if free is None else free.max_queued_fragments,
                )
            parts, on_runner_device = self.parts, self._on_runner_device
            # The execution layer's on-policy loop with the grouped update, which calls one
            # jitted program per policy group and batch size (so it is not jitted as a whole).
            self._loop = OnPolicyLoop.with_runners(
                self._runners,
                postprocess,
                self._grouped_update,
                lambda state: on_runner_device(parts.acting_params(state)),
                cfg.sample_timeout_s,
                fragments_per_batch=None if free is None else free.fragments_per_batch,
                broadcast_interval=1 if free is None else free.broadcast_interval,
                jit=False,
                report=self._report,
                steps_per_iteration=steps_per_iteration(cfg),
            )
        self._start_returns()

    def _start_returns(self) -> None:
        """The per-policy and per-agent returns of the iteration's episodes (their means are
        the results' ``module_episode_returns_mean`` / ``agent_episode_returns_mean``) and the
        lifetime agent steps."""
        n = self.config.metrics_num_episodes_for_smoothing
        self.policy_returns: dict[str, collections.deque[float]] = {
            p: collections.deque(maxlen=n) for p in self.policy_ids
        }
        self.agent_returns: dict[Any, collections.deque[float]] = {
            a: collections.deque(maxlen=n) for a in self.possible_agents
        }
        self._agent_steps = AgentStepCounter(self.possible_agents, self.policy_ids)

    def _start_policies(self, learner: str) -> None:
        """The config's policies, their spaces checked, the mapping function (the first
        policy for every agent when none is given), and whether agents' observation spaces
        (``padded``) or action spaces (``mixed_actions``) differ; ``learner`` says what runs on
        one learner device, in the refusal of ``num_learners > 1``."""
        cfg = self.config
        if cfg.num_learners > 1:
            raise ConfigError(f"{learner} on one learner device; use num_learners=0 or 1")
        self.policy_ids = list(self._policy_specs())
        self.num_policies = len(self.policy_ids)
        self._check_policy_spaces()
        self.mapping_fn = cfg.policy_mapping_fn or (
            lambda agent_id, episode, **kw: self.policy_ids[0]
        )
        self.padded = any(
            sp != self.observation_space for sp in self.agent_observation_spaces.values()
        )
        self.mixed_actions = any(
            sp != self.action_space for sp in self.agent_action_spaces.values()
        )

    # ------------------------------------------------------------------ the algorithm's parts
    # What multi-agent IMPALA and APPO (``rljax.algorithms.impala.multi_agent``) replace: the
    # fragment's length, a group's optimizer, settings and train state, the post-processing,
    # one policy's update and its batch.
    def _fragment_length(self) -> int:
        """Env steps each sub-env samples per iteration."""
        return self.config.get_rollout_fragment_length()

    def _free_running(self) -> Any:
        """How runner threads sample: ``FreeRunning`` (``rljax.algorithms.on_policy``) for an
        asynchronous learner, None for PPO's lock step (one fragment of every runner, sampled
        with the newest weights, per update)."""
        return None

    def _group_learner(self, gcfg: Any, batch_rows: int) -> tuple[Any, Any]:
        """A group's optimizer (built once) and frozen settings, from its config ``gcfg``."""
        optimizer = make_optimizer(float(gcfg.lr), gcfg.grad_clip, gcfg.grad_clip_by)
        return optimizer, PPOHyperparams.from_config(gcfg, 1, batch_rows)

    def _group_state(self, group: _Group, params: Any, keys: jax.Array) -> Any:
        """The group's initial train state: ``params`` and ``keys`` stacked [P_g, ...]."""
        return PPOTrainState(
            params=params,
            opt_state=run_once(jax.vmap(group.optimizer.init), params),
            kl_coeff=jnp.full((len(group.members),), group.hp.kl_coeff, jnp.float32),
            step=jnp.zeros((len(group.members),), jnp.int32),
            key=keys,
        )

    def _recurrent_parts(self) -> PolicyParts[list[PPOTrainState]]:
        """The policy parts of recurrent groups (``multi_agent_recurrent``)."""
        multi_agent_recurrent.check_recurrent_groups(self.groups, self.forward_only)
        width = max(g.dist.num_outputs for g in self.groups)

        def pad(inputs: jax.Array) -> jax.Array:
            return jnp.pad(inputs, ((0, 0), (0, width - inputs.shape[-1])))

        return multi_agent_recurrent.make_multi_agent_recurrent_parts(
            self.groups,
            self.policy_ids,
            self.group_of,
            self.local_of,
            self.action_space,
            self.config.clip_actions,
            recurrent_spec_of(self.groups[0].module, self.action_space),
            pad,
        )

    def _make_postprocess(self, batch_rows: int) -> Any:
        """``postprocess(Transition [T, slots]) -> batch [1, rows]`` (GAE, per policy), or
        with recurrent policies ``[1, sequences, max_seq_len]``."""
        self.hp = PPOHyperparams.from_config(self.config, 1, batch_rows)
        if self._recurrent:
            return multi_agent_recurrent.make_multi_agent_sequence_postprocess(
                self.hp,
                self._postprocess_rows,
                self.config.model_config.max_seq_len,
                self.num_policies,
                self._policy_discounts(),
            )
        return make_ppo_postprocess(
            self.hp,
            self._postprocess_rows,
            num_policies=self.num_policies,
            policy_discounts=self._policy_discounts(),
        )

    def _policy_update(self, g: int, size: int, hp: Any = None, optimizer: Any = None) -> Any:
        """One policy's update of group ``g`` on batches of ``size`` rows (vmapped over the
        group by ``_stacked_update``)."""
        group = self.groups[g]
        if self._recurrent:  # rows are sequences: minibatches of whole sequences
            seq = self.config.model_config.max_seq_len
            hp = dataclasses.replace(
                group.hp if hp is None else hp,
                shard_size=size,
                minibatch_size=min(max(1, group.hp.minibatch_size // seq), size),
                skip_empty_minibatches=True,
            )
            return make_ppo_update(
                sequence_apply(group.module.apply),
                group.dist,
                optimizer or group.optimizer,
                hp,
                sequence_len=seq,
            )
        hp = dataclasses.replace(
            group.hp if hp is None else hp,
            shard_size=size,
            minibatch_size=min(group.hp.minibatch_size, size),
            skip_empty_minibatches=True,
        )
        return make_ppo_update(group.module.apply, group.dist, optimizer or group.optimizer, hp)

    def _fused_jax_env(self) -> Any:
        """The JAX env of the fused path (``multi_agent_fused``), or None: a multi-agent JAX
        env whose agents share their spaces, with no runner threads, connectors or episode
        callbacks."""
        # The JAX env the probe in _resolve_env built (None: a loaded module, or no JAX env).
        env = getattr(self, "_probe_jax", None)
        if env is None or self.config.num_env_runners or self._record_episodes:
            return None
        if self._recurrent:
            logger.info("stepping the JAX env from the host: its policies are recurrent")
            return None
        misfit = AgentSlots.misfit(env)
        if misfit is not None:
            logger.info("stepping the JAX env from the host: %s", misfit)
            return None
        self._agent_policy = multi_agent_fused.agent_policies(
            self.policy_ids, self.possible_agents, self.mapping_fn
        )
        return env

    @property
    def _env_state_io(self) -> Any:
        if getattr(self, "_fused_env", None) is not None and self.runner_state is not None:
            return multi_agent_fused.env_states(self)
        return self._runners

    def _policy_specs(self) -> dict[str, PolicySpec]:
        """The config's policies: set on every config built into this class (``build_algo``
        picks it for ``.multi_agent(...)`` configs)."""
        policies = self.config.policies
        if policies is None:
            raise ConfigError(
                f"{type(self).__name__} needs a config with .multi_agent(policies=...); "
                f"build_algo() builds {self.config.algo_name} for a single-agent config"
            )
        return policies

    def _policy_discounts(
        self, gamma: Any = None, lambda_: Any = None
    ) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
        """Each policy's ``(gammas, lambdas)`` (in ``policy_ids`` order) where a policy
        overrides either (``algorithm_config_overrides_per_module``), the others taking
        ``gamma`` / ``lambda_`` (default: the config's; a population's trial passes its own);
        None where none overrides them (one gamma and lambda for every row)."""
        gamma = self.hp.gamma if gamma is None else gamma
        lambda_ = self.hp.lambda_ if lambda_ is None else lambda_
        overrides = [self.config.module_overrides(pid) for pid in self.policy_ids]
        if not any("gamma" in o or "lambda_" in o for o in overrides):
            return None
        return (
            tuple(float(o["gamma"]) if "gamma" in o else gamma for o in overrides),
            tuple(float(o["lambda_"]) if "lambda_" in o else lambda_ for o in overrides),
        )

    def _module_spec(self, policy_id: str) -> RLModuleSpec | None:
        """``policy_id``'s own ``RLModuleSpec`` in a ``MultiRLModuleSpec`` (None: none)."""
        spec = self.config.rl_module_spec
        return spec.spec_of(policy_id) if isinstance(spec, MultiRLModuleSpec) else None

    def get_multi_rl_module(self) -> MultiRLModule:
        """Every policy's module for inference, ``{policy_id: RLModule}``."""
        return MultiRLModule({pid: self._module(pid) for pid in self.policy_ids})

    def _policy_spaces_of(
        self, kind: str, by_agent: dict[Any, gym.Space], differ: bool
    ) -> dict[str, gym.Space]:
        """Each policy's ``kind`` space (``"observation_space"`` or ``"action_space"``): the
        agents' shared one; where agents' spaces differ, the space its specs give, else that of
        the agents ``policy_mapping_fn`` maps to it (asked once per agent, with no episode)."""
        if not differ:
            shared = next(iter(by_agent.values()))
            return {pid: shared for pid in self.policy_ids}
        found: dict[str, dict[Any, gym.Space]] = {pid: {} for pid in self.policy_ids}
        mapping = mapping_caller(self.mapping_fn)
        for agent, space in by_agent.items():
            try:
                pid = mapping(agent, None, worker_index=0)
            except Exception:  # an episode-dependent mapping: the specs must say
                continue
            if pid in found:
                found[pid][agent] = space
        out = {}
        for pid in self.policy_ids:
            given = [
                getattr(s, kind)
                for s in (self._policy_specs()[pid], self._module_spec(pid))
                if s is not None and getattr(s, kind) is not None
            ]
            spaces = list(dict.fromkeys(map(repr, found[pid].values())))
            if given:
                out[pid] = given[0]
            elif len(spaces) == 1:
                out[pid] = next(iter(found[pid].values()))
            else:
                raise ConfigError(
                    f"the agents' {kind}s differ and policy {pid!r} "
                    + (
                        f"is mapped to agents with different ones: {found[pid]}"
                        if spaces
                        else "is mapped to no agent by policy_mapping_fn(agent_id, None)"
                    )
                    + f"; give its {kind} in its RLModuleSpec (or PolicySpec): one of "
                    f"{sorted(set(map(str, by_agent.values())))}"
                )
            if out[pid] not in by_agent.values():
                raise ConfigError(
                    f"policy {pid!r} has {kind} {out[pid]}, which no agent has; the agents': "
                    f"{by_agent}"
                )
        return out

    def _check_policy_spaces(self) -> None:
        """Spaces given in a policy's spec must match the env agents' in kind, shape, dtype and
        size (bounds may differ: the network is built from the env's spaces)."""

        def compatible(a: gym.Space, b: gym.Space) -> bool:
            if type(a) is not type(b) or a.shape != b.shape or a.dtype != b.dtype:
                return False
            return getattr(a, "n", None) == getattr(b, "n", None)

        for pid, spec in self._policy_specs().items():
            module_spec = self._module_spec(pid)
            for where, given_spec in (
                (f"policies[{pid!r}]", spec),
                (f"MultiRLModuleSpec.rl_module_specs[{pid!r}]", module_spec),
            ):
                if given_spec is None:
                    continue
                for kind, given, env_space in (
                    ("observation_space", given_spec.observation_space, self._agents_obs_space()),
                    ("action_space", given_spec.action_space, self._agents_act_space()),
                ):
                    if (
                        given is not None
                        and env_space is not None
                        and not compatible(given, env_space)
                    ):
                        raise ConfigError(
                            f"{where} gives {kind}={given}, but the env's agents have "
                            f"{env_space}; leave it None or give a space of the same kind and "
                            "shape"
                        )

    def _spaces_data(self) -> dict[str, Any] | None:
        # Agents of different observation spaces: a checkpoint loads with its env (the padded
        # slot space alone does not say each policy's space).
        mixed = getattr(self, "padded", False) or getattr(self, "mixed_actions", False)
        return None if mixed else super()._spaces_data()

    def _agents_act_space(self) -> gym.Space | None:
        """The agents' shared action space; None where they differ (checked later)."""
        spaces = set(map(repr, self.agent_action_spaces.values()))
        return self.action_space if len(spaces) == 1 else None

    def _agents_obs_space(self) -> gym.Space | None:
        """The agents' shared observation space; None where they differ (checked later)."""
        spaces = set(map(repr, self.agent_observation_spaces.values()))
        return self.observation_space if len(spaces) == 1 else None

    def _runner_env(self, runner_index: int) -> MultiAgentVectorEnv:
        cfg = self.config
        n = cfg.num_envs_per_env_runner
        worker = runner_index + 1 if cfg.num_env_runners else 0
        # A runner rebuilt after a failure gets new seeds (new episodes), as single-agent ones do.
        builds = self.__dict__.setdefault("_env_builds", {})
        restart = builds.get(runner_index, 0)
        builds[runner_index] = restart + 1
        fns = [
            _SlotEnvFn(self._ma_creator, EnvContext(cfg.env_config, worker, j, cfg.num_env_runners))
            for j in range(n)
        ]
        env = MultiAgentVectorEnv(
            fns,
            self.policy_ids,
            self.mapping_fn,
            seed=derive_seed(self.seed, 1000 * runner_index + 100_003 * restart),
            policy_in_obs=True,
            mode=cfg.gym_env_vectorize_mode,
            record_episodes=self._record_episodes,
            policy_observation_spaces=self.policy_observation_spaces,
            policy_action_spaces=self.policy_action_spaces,
        )
        return env

    def _slots_per_runner(self) -> int:
        return self.num_slots

    # ------------------------------------------------------------------ acting
    def _runner_params(self) -> Any:
        return self._on_runner_device(self._params())

    def _params(self) -> list[Any]:
        return self.parts.acting_params(self.state)

    # ------------------------------------------------------------------ learning
    def _bucket_size(self, g: int, rows: int) -> int:
        """The padded per-policy batch size of group ``g`` for at most ``rows`` rows (with
        recurrent policies, sequences)."""
        minibatch = self.groups[g].hp.minibatch_size
        if self._recurrent:
            minibatch = max(1, minibatch // self.config.model_config.max_seq_len)
        return _bucket(rows, minibatch)

    def _update_fn(self, g: int, size: int):
        """Group ``g``'s jitted, vmapped update for per-policy batches of ``size`` rows."""
        if (g, size) not in self._updates:
            self._updates[(g, size)] = jax.jit(
                self._stacked_update(g, size),
                donate_argnums=(0,),
                compiler_options=self._xla_options["update"],
            )
        return self._updates[(g, size)]

    def _stacked_update(
        self, g: int, size: int, hp: PPOHyperparams | None = None, optimizer: Any = None
    ):
        """Group ``g``'s vmapped update for per-policy batches of ``size`` rows (traceable);
        ``hp`` and ``optimizer``: a population trial's (``multi_agent_fused.valued_group``)
        instead of the group's own."""
        update = self._policy_update(g, size, hp, optimizer)
        group = self.groups[g]

        def stacked_update(state, batch):
            new_state, metrics = jax.vmap(update)(state, batch)
            train_mask = self._stacked_update_mask(group, batch)

            # Frozen policies, and those without rows in this batch, keep every leaf of their
            # state (parameters bit for bit).
            def pick(n, o):
                return jnp.where(train_mask.reshape((-1,) + (1,) * (n.ndim - 1)), n, o)

            return jax.tree.map(pick, new_state, state), metrics

        return stacked_update

    def _per_policy_batches(
        self, flat: Any, policy: np.ndarray, valid: np.ndarray, g: int
    ) -> tuple[Any, int, np.ndarray]:
        """Group ``g``'s rows per policy, padded: every leaf [P_g, 1, size, ...], and counts."""
        members = self.groups[g].members
        own = [valid & (policy == p) for p in members]
        # Rows, or with recurrent policies ([S, L] arrays) the sequences holding any of them.
        rows = [np.nonzero(o.any(axis=1) if o.ndim == 2 else o)[0] for o in own]
        counts = np.array([int(o.sum()) for o in own])
        size = self._bucket_size(g, max(len(r) for r in rows))
        index = np.zeros((len(members), size), np.int32)
        real = np.zeros((len(members), size), np.float32)
        for k, r in enumerate(rows):
            index[k, : len(r)] = r
            real[k, : len(r)] = 1.0
        return self._gathered(flat, index, real, g), size, counts

    def _gathered(self, flat: Any, index: Any, real: Any, g: int) -> Any:
        """Group ``g``'s per-policy batches: the rows ``index`` [P_g, size] of ``flat``, masked
        by ``real``; every leaf [P_g, 1, size, ...] (traceable). With recurrent policies the
        rows are sequences (``multi_agent_recurrent.gathered_sequences``)."""
        group = self.groups[g]
        if self._recurrent:
            return multi_agent_recurrent.gathered_sequences(
                flat, index, real, group.members, group.obs, group.dist.num_outputs
            )
        obs = self.groups[g].obs(jax.tree.map(lambda x: x[index], flat.obs["obs"]), lead=2)
        gathered = jax.tree.map(lambda x: x[index], flat._replace(obs=None))._replace(obs=obs)
        width = self.groups[g].dist.num_outputs  # the group's own columns of padded inputs
        gathered = gathered._replace(
            mask=gathered.mask * real,
            action_dist_inputs=gathered.action_dist_inputs[..., :width],
        )
        return jax.tree.map(lambda x: x[:, None], gathered)

    def _grouped_update(
        self, state: list[PPOTrainState], batch: Any
    ) -> tuple[list[PPOTrainState], dict[str, Any]]:
        """One update of every policy group on a post-processed batch: each group's rows
        gathered per policy (``_per_policy_batches``), then the group's jitted, vmapped update
        (``_update_fn``). Metrics: ``groups``, each group's (per policy of the group), and
        ``counts``, the rows of each policy."""
        flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), batch)
        if self._recurrent:
            policy = multi_agent_recurrent.sequence_policies(flat)
        else:
            policy = np.asarray(flat.obs["policy"])
        valid = np.asarray(flat.mask) > 0
        counts = np.zeros(self.num_policies, np.int64)
        new = list(state)
        group_metrics = []
        for g, group in enumerate(self.groups):
            stacked, size, counts[group.members] = self._per_policy_batches(flat, policy, valid, g)
            new[g], metrics = self._update_fn(g, size)(new[g], stacked)
            group_metrics.append(metrics)
        return new, {"groups": group_metrics, "counts": counts}

    def _report(self, records: list[dict[str, Any]], timers: Timers) -> IterationResult:
        """The iteration's result from the loop's record of its update: learner metrics per
        policy, the runners' finished episodes, per-module and per-agent returns."""
        (record,) = records  # the loop's updates: one per iteration
        group_metrics = jax.device_get(record["metrics"]["groups"])
        counts = record["metrics"]["counts"]
        sampled = self._sampled_episodes([record["sample_record"]], [record["episodes"]])
        learner = {
            pid: {
                **{
                    k: float(v[self.local_of[i]])
                    for k, v in group_metrics[self.group_of[i]].items()
                },
                "num_module_steps_trained": int(counts[i]),
            }
            for i, pid in enumerate(self.policy_ids)
            # As RLlib's: no metrics of a module that is not trained (one outside
            # policies_to_train, or one that only acts and has no learner).
            if self.train_mask[i]
        }
        return sampled.result(learner, int(counts[self.train_mask].sum()), timers)

    def _sampled_episodes(self, samples: list[Any], episodes: list[Mapping[str, Any]]) -> _Sampled:
        """What the runners' fragments ``samples`` (``SampleRecord``s) of one iteration hold:
        the finished episodes, the env steps, the per-policy and per-agent returns (means over
        the episodes that ended in the iteration), and per agent and per module the agent
        steps of the iteration's episode arrays (``episodes``; only their ``"valid"`` and
        ``"policy"`` arrays are read to the host)."""
        finished = []
        env_steps = 0
        by_slot = []
        for sample in samples:
            for slot, s in zip(sample.slots, sample.stats, strict=True):
                if s is None:  # a dropped runner's columns
                    continue
                finished += s[0]
                env_steps += s[1]
                by_slot += [(slot, ep) for ep in s[0]]
        # Per-iteration means, as the episode metrics (see EpisodeStats).
        for returns in (*self.policy_returns.values(), *self.agent_returns.values()):
            returns.clear()
        for ep in finished:
            per_policy: dict[str, float] = {}
            for agent, ret in ep.agent_returns.items():
                self.agent_returns[agent].append(ret)
                pid = ep.agent_policies[agent]
                per_policy[pid] = per_policy.get(pid, 0.0) + ret
            for pid, ret in per_policy.items():
                self.policy_returns[pid].append(ret)
        per_agent, per_module = self._agent_steps.count(episodes)
        nan = float("nan")
        agents = AgentMetrics(
            module_episode_returns_mean={
                p: float(np.mean(r)) if r else nan for p, r in self.policy_returns.items()
            },
            agent_episode_returns_mean={
                str(a): float(np.mean(r)) if r else nan for a, r in self.agent_returns.items()
            },
            agent_steps=per_agent,
            agent_steps_lifetime=dict(self._agent_steps.agent_lifetime),
            module_steps=per_module,
            module_steps_lifetime=dict(self._agent_steps.module_lifetime),
        )
        return _Sampled(finished, env_steps, agents, tuple(by_slot))

    # ------------------------------------------------------------------ populations
    # The settings trials of one population may differ in, besides the seed (PPO's): values
    # the jitted postprocess and update read (rljax.execution.population).
    population_settings: ClassVar[tuple[str, ...]] = PPO_POPULATION_SETTINGS
    population_state_settings: ClassVar[tuple[str, ...]] = ("kl_coeff",)

    @classmethod
    def population_env_refusal(cls, config: Any) -> str | None:
        """Why trials of ``config`` cannot run in a population's program because of their env
        (None if they can): its agents must step on the fused path, so the env is built once
        to look (a JAX env's constructor compiles nothing)."""
        try:
            env = _SlotEnvFn(multi_agent_creator(config.env), EnvContext(config.env_config))()
        except Exception as e:  # the trial itself reports a bad env
            return f"the env does not build ({type(e).__name__}: {e})"
        try:
            if not isinstance(env, JaxMultiAgentGymEnv):
                return (
                    f"env {config.env!r} is not a multi-agent JAX env; a multi-agent population "
                    "steps its envs inside the program"
                )
            return AgentSlots.misfit(env.jax_env)
        finally:
            env.close()

    def population_values(self) -> dict[str, float | None]:
        """This run's ``population_settings``, read from the config once: floats, None for a
        setting that is off (``vf_clip_param=None``; ``grad_clip`` None or 0)."""
        return {name: _setting_value(self.config, name) for name in self.population_settings}

    def population_parts(self) -> PopulationParts:
        """What a population runs of this trial (built with ``population_member=True``): the
        slot rollout, report and learner functions of the fused path
        (``multi_agent_fused.population_parts``)."""
        if not self._population_member:
            raise RuntimeError(
                "this MultiAgentPPO is not a trial of a population (build it with "
                "population_member=True, as Population does)"
            )
        return multi_agent_fused.population_parts(self, self._population_pieces, self._fused_env)

    def _training_step(self) -> IterationResult:
        if self._population_member:
            raise RuntimeError(
                "this MultiAgentPPO is a trial of a population: the population trains it "
                "(and hands each trial its iteration through train_from)"
            )
        assert self._loop is not None, "a module loaded for inference does not train"
        self.state, self.runner_state, result = self._loop.step(self.state, self.runner_state)
        return result

    # ------------------------------------------------------------------ inference, checkpoints
    # Checkpoints are rljax.execution.checkpoints' (save, restore, loading for inference) through
    # the state hooks below: the groups' stacked train states are the state saved.
    def _policy_index(self, policy_id: str | None) -> int:
        if policy_id is None and self.num_policies == 1:
            return 0
        if policy_id not in self.policy_ids:
            raise ValueError(
                f"unknown policy_id {policy_id!r}; this algorithm has {self.policy_ids}"
            )
        return self.policy_ids.index(policy_id)

    def get_weights(self, policies: list[str] | None = None) -> dict[str, Any]:
        """Each policy's parameters (host arrays), as ``{policy_id: params}``."""
        ids = self.policy_ids if policies is None else list(policies)
        for pid in ids:
            self._policy_index(pid)
        return {pid: jax.device_get(self.parts.inference_params(self.state, pid)) for pid in ids}

    def set_weights(self, weights: dict[str, Any]) -> None:
        """Replaces the parameters of the policies in ``weights`` (``{policy_id: params}``, in
        ``get_weights()``'s structure); runners act with them from the next sample on. A frozen
        policy (outside ``policies_to_train``) keeps what is set here, e.g. a fixed opponent."""
        for pid, params in weights.items():
            i = self._policy_index(pid)
            if pid in self.forward_only:
                raise ValueError(
                    f"policy {pid!r} acts by its module's forward pass and has no weights to "
                    "set; set_weights takes the learned policies "
                    f"{[p for p in self.policy_ids if p not in self.forward_only]}"
                )
            check_weights_fit(pid, params, self.parts.inference_params(self.state, pid))
            g, k = int(self.group_of[i]), int(self.local_of[i])
            stacked = self.state[g].params[POLICY_ID]
            new = jax.tree.map(
                lambda s, x, k=k: s.at[k].set(jnp.asarray(x, s.dtype)), stacked, params[POLICY_ID]
            )
            self.state[g] = dataclasses.replace(self.state[g], params={POLICY_ID: new})
        if self._runners is not None:  # runner threads act with them next (none after stop())
            self._runners.publish(self._runner_params(), advance=False)

    def _stateful_connectors(self) -> Any:
        """The connectors whose statistics a checkpoint keeps (``MeanStdFilter``), or None."""
        creator = getattr(self, "_ma_creator", None)
        if isinstance(creator, ConnectedCreator) and creator.connectors.stateful:
            return creator.connectors
        return None

    def _checkpoint_state(self, include_replay_buffer: bool | None = None) -> Any:
        # The groups' train states, then the connectors' statistics where there are any.
        connectors = self._stateful_connectors()
        extra = [] if connectors is None else [{"connectors": connectors.get_state()}]
        return [*self.state, *extra]

    def _stacked_update_mask(self, group: _Group, batch: Any) -> jax.Array:
        """The policies of ``group`` that this update changes: trained ones with rows in
        ``batch`` (a policy absent from a batch keeps every leaf of its state, as RLlib leaves
        a module out of a batch alone)."""
        rows = jnp.sum(batch.mask.reshape((batch.mask.shape[0], -1)), axis=1)
        return jnp.asarray(group.train_mask) & (rows > 0)

    def _inference_target(self, includes_replay_buffer: bool) -> Any:
        target = self._checkpoint_state(False)
        if self._inference_only:
            # Built without the env, so without its connectors: a checkpoint with
            # MeanStdFilter(multi_agent=True)'s statistics holds them after the train states
            # (read and dropped: a module acts on observations as given).
            template = self._saved_connector_template()
            if template:
                target.append({"connectors": template})
        return target

    def _saved_connector_template(self) -> list[dict[str, Any]]:
        """The shapes of the statistics a checkpoint of this config holds, from the config's
        connector specs and the saved agents' observation space (the filter keeps it)."""
        shape = tuple(self.observation_space.shape or ())
        agent = {
            "count": np.zeros((), np.int64),
            "mean": np.zeros(shape, np.float64),
            "m2": np.zeros(shape, np.float64),
        }
        specs = self.config.env_to_module_connector
        return [
            {str(i): dict(agent) for i in range(len(self.possible_agents))}
            for spec in (specs if isinstance(specs, list) else [])
            if isinstance(spec, dict) and spec.get("type") == "MeanStdFilter"
        ]

    def _restore_state(self, state: Any) -> None:
        state = list(state)
        if state and isinstance(state[-1], dict) and "connectors" in state[-1]:
            saved = state.pop()["connectors"]
            connectors = self._stateful_connectors()
            if connectors is not None:
                connectors.set_state(jax.device_get(saved))
        states = jax.tree.map(jnp.asarray, state)
        self.state = jax.device_put(states, self.learner_devices[0])
        if self._runners is not None:  # runner threads act with them next (none after stop())
            self._runners.publish(self._runner_params(), advance=False)

    @property
    def num_agent_steps_sampled_lifetime(self) -> int:
        """Agent steps sampled so far, all agents' (kept in checkpoints, per agent)."""
        return self._agent_steps.lifetime

    @property
    def states(self) -> list[PPOTrainState]:
        """The train state of each group of policies (the name before ``state``)."""
        return self.state

    def _policy_ids(self) -> list[str]:
        return list(self.policy_ids)

    def _evaluation_env(self, num_envs: int, seed: int, spec: Any = None) -> EvaluationEnv:
        """Copies of the env with the training mapping function: each agent plays with the
        policy it trains."""
        if self._recurrent:
            raise ConfigError(
                "evaluating a multi-agent run's recurrent policies (use_lstm) is not built; "
                "their training results report the episodes sampled"
            )
        context = EnvContext(self.config.env_config)
        creator = self._ma_creator
        if self._stateful_connectors() is not None:
            creator = creator.frozen()  # the statistics as they are now, not updated
        return MultiAgentVectorEnv(
            [_SlotEnvFn(creator, context) for _ in range(num_envs)],
            self.policy_ids,
            self.mapping_fn,
            seed=seed,
            policy_in_obs=True,
        )


__all__ = ["DEFAULT_POLICY", "MultiAgentPPO"]
