"""DQN: config (RLlib's names and defaults) and the algorithm (double Q, dueling, n-step, PER)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp

from rljax.algorithms.algorithm_config import UNSET
from rljax.algorithms.dqn.learner import (
    DQN_METRICS,
    DQNHyperparams,
    DQNLearnerState,
    make_dqn_learn,
    make_dqn_optimizer,
)
from rljax.algorithms.dqn.networks import DQNNetworks
from rljax.algorithms.off_policy import OffPolicyAlgorithm, OffPolicyConfig
from rljax.algorithms.settings import Setting
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.env.spaces import zeros_batch
from rljax.execution.off_policy import OffPolicyState, ReplayLearner
from rljax.execution.parts import PolicyParts, single_policy_inference, space_env_actions
from rljax.learners.update import make_target_update
from rljax.networks.models import build_module
from rljax.networks.q_models import CustomQNetwork, build_q_network
from rljax.utils import memory
from rljax.utils.checks import (
    Bool,
    Choice,
    Int,
    Number,
    is_int,
    is_real,
    refuse,
)
from rljax.utils.errors import ConfigError
from rljax.utils.jit import run_once
from rljax.utils.schedules import NumberOrSchedule

_EPSILON_ALLOWED = (
    "a number in [0, 1] or a schedule [(timestep, value), ...]: int timesteps >= 0 that "
    "increase, values in [0, 1]"
)


def check_epsilon(name: str, value: Any) -> list[tuple[int, float]]:
    """RLlib's epsilon: a number (constant) or a piecewise-linear schedule of (timestep, value)
    pairs (tuples, or lists as YAML and JSON give them); returns the schedule."""
    pairs = [(0, value)] if is_real(value) else value
    if not (isinstance(pairs, (list, tuple)) and pairs) or not all(
        isinstance(p, (list, tuple))
        and len(p) == 2
        and is_int(p[0])
        and p[0] >= 0
        and is_real(p[1])
        and 0.0 <= p[1] <= 1.0
        for p in pairs
    ):
        refuse(name, value, _EPSILON_ALLOWED)
    times = [int(t) for t, _ in pairs]
    if times != sorted(times):
        refuse(name, value, f"{_EPSILON_ALLOWED} (the timesteps {times} do not increase)")
    return [(t, float(v)) for t, (_, v) in zip(times, pairs, strict=True)]


class DQNConfig(OffPolicyConfig):
    """DQN's config; defaults follow RLlib's new API stack.

    Example:
        ```python
        from rljax.algorithms.dqn import DQNConfig

        config = (
            DQNConfig()
            .environment("CartPole-v1")
            .training(
                double_q=True,
                dueling=True,
                n_step=3,
                replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 50000},
            )
        )
        algo = config.build_algo()
        ```
    """

    algo_name: ClassVar[str] = "DQN"
    takes_module_class: ClassVar[bool] = True
    lr = OffPolicyConfig.lr.replace(
        default=5e-4,
        check=NumberOrSchedule(Number(0)),
        checked_on_set=True,
        doc="Adam's learning rate, or RLlib's schedule [[0, lr0], [env_step, lr1], ...] (env steps sampled).",
    )
    grad_clip = OffPolicyConfig.grad_clip.replace(default=40.0)
    train_batch_size_per_learner = OffPolicyConfig.train_batch_size_per_learner.replace(default=32)
    MODEL_CONFIG_SETTINGS: ClassVar[dict[str, str]] = {
        "double_q": "double_q",
        "dueling": "dueling",
        "epsilon": "epsilon",
        "num_atoms": "num_atoms",
        "std_init": "sigma0",
        "v_max": "v_max",
        "v_min": "v_min",
    }
    double_q = Setting(True, Bool(), "Double Q-learning: the online network picks the next action.")
    dueling = Setting(True, Bool(), "Dueling heads: a value stream and an advantage stream.")
    epsilon = Setting[list[tuple[int, float]]](
        [(0, 1.0), (10000, 0.05)],
        check_epsilon,
        "The epsilon-greedy exploration rate: a number, or a piecewise-linear schedule "
        "[(timestep, value), ...].",
    )
    td_error_loss_fn = Setting(
        "huber", Choice(("huber", "mse")), 'The TD loss: "huber" or "mse" (expected-value Q).'
    )
    num_atoms = Setting(
        1, Int(1), "Atoms of the return distribution (C51); 1: expected-value Q-learning."
    )
    v_min = Setting(-10.0, Number(), "The return distribution's lowest atom.")
    v_max = Setting(10.0, Number(), "The return distribution's highest atom.")
    noisy = Setting(False, Bool(), "Factorised-Gaussian NoisyDense layers in the heads.")
    sigma0 = Setting(0.5, Number(0, low_open=True), "The initial noise scale of noisy layers.")

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or DQN)

    def training(
        self,
        *,
        lr: float | list[list[float]] = UNSET,
        gamma: float = UNSET,
        train_batch_size_per_learner: int = UNSET,
        train_batch_size: int | None = UNSET,
        grad_clip: float | None = UNSET,
        grad_clip_by: str = UNSET,
        learner_class: type | None = UNSET,
        learner_config_dict: dict[str, Any] | None = UNSET,
        replay_buffer_config: dict[str, Any] = UNSET,
        n_step: int | tuple[int, int] = UNSET,
        num_steps_sampled_before_learning_starts: int = UNSET,
        training_intensity: float | None = UNSET,
        target_network_update_freq: int = UNSET,
        tau: float = UNSET,
        store_buffer_in_checkpoints: bool = UNSET,
        double_q: bool = UNSET,
        dueling: bool = UNSET,
        epsilon: float | list[tuple[int, float]] = UNSET,
        td_error_loss_fn: str = UNSET,
        num_atoms: int = UNSET,
        v_min: float = UNSET,
        v_max: float = UNSET,
        noisy: bool = UNSET,
        sigma0: float = UNSET,
        **kwargs: Any,
    ) -> DQNConfig:
        """Sets DQN's training settings (RLlib's names)."""
        return self._set("training", locals())

    def _coerce(self, key: str, value: Any) -> Any:
        if key == "epsilon":
            # The schedule in its normal form at once (a number becomes [(0, value)]); a value
            # that is no schedule is kept as given: validate() refuses it, as it does every
            # other setting's (a setter only records).
            try:
                return check_epsilon(key, value)
            except ConfigError:
                return value
        return super()._coerce(key, value)

    def network_params(self, observation_space: Any, action_space: Any) -> int:
        """The Q-network (its target copy is counted with the optimizer's copies).

        Images as ``rljax.networks.q_models.QNetwork`` builds them: the conv stack, then the
        head (``head_fcnet_hiddens``, ``memory.image_head`` when empty) of each stream on its output; with
        ``noisy`` the heads hold twice the parameters.
        """
        n = int(getattr(action_space, "n", 1))
        atoms = max(1, self._atoms())
        mc = self.model_config
        if memory.is_image(observation_space):
            encoder, in_dim, _ = memory.conv_encoder(observation_space, mc.conv_filters)
            hiddens = memory.image_head(observation_space, mc.head_fcnet_hiddens)
        else:
            encoder, in_dim = 0, memory.flat_size(observation_space)
            # The dense encoder is counted once per stream: an upper bound.
            hiddens = [*mc.fcnet_hiddens, *mc.head_fcnet_hiddens]
        streams = memory.mlp_params(in_dim, hiddens, n * atoms)
        if self.dueling:
            streams += memory.mlp_params(in_dim, hiddens, atoms)
        if self.noisy is True:  # NoisyDense heads: a sigma for every weight and bias
            streams *= 2
        return encoder + streams

    def memory_terms(self, observation_space: Any, action_space: Any) -> list[tuple[str, int]]:
        """Adds the categorical projection of a distributional Q-network (``num_atoms > 1``):
        ``rljax.ops.value_learning.categorical_projection`` weighs every target atom against
        every support atom, a float32 ``[batch, num_atoms, num_atoms]`` array."""
        terms = super().memory_terms(observation_space, action_space)
        atoms = self._atoms()
        if atoms > 1:
            terms.append(
                (
                    f"num_atoms={atoms:,} (the projection's [batch, num_atoms, num_atoms])",
                    self.total_train_batch_size * atoms * atoms * 4,
                )
            )
        return terms

    def _atoms(self) -> int:
        """``num_atoms`` when it is an int (the estimate may run before ``validate()``)."""
        atoms = self.num_atoms
        return int(atoms) if isinstance(atoms, int) and not isinstance(atoms, bool) else 1

    def validate(self) -> None:
        super().validate()
        spec = users_module_spec(self)
        if spec is not None:
            heads = [
                f"{k}={getattr(self, k)!r}"
                for k, off in (("dueling", False), ("num_atoms", 1), ("noisy", False))
                if getattr(self, k) != off
            ]
            if self.model_config.head_fcnet_hiddens:  # RLlib's old "hiddens": a Q head on top
                heads.append(f"head_fcnet_hiddens={list(self.model_config.head_fcnet_hiddens)}")
            if heads:
                raise ConfigError(
                    f"RLModuleSpec(module_class={getattr(spec.module_class, '__name__', '?')}) with "
                    f"{', '.join(heads)}: a module of yours gives DQN's Q-values itself (its "
                    "output, or the first of a tuple, [B, num_actions]), so DQN adds no heads "
                    "to it; set .training(dueling=False, num_atoms=1, noisy=False) and no "
                    "head_fcnet_hiddens (RLlib's old-stack 'hiddens': [])"
                )
        if self.num_atoms > 1 and not self.v_min < self.v_max:
            raise ConfigError(
                f"v_min={self.v_min!r} must be below v_max={self.v_max!r} (the support of the "
                "return distribution)"
            )


def users_module_spec(config: DQNConfig) -> RLModuleSpec | None:
    """The single-agent spec whose Flax module is the Q-network, or None (the default
    networks)."""
    spec = config.rl_module_spec
    if config.is_multi_agent or not isinstance(spec, RLModuleSpec) or spec.module_class is None:
        return None
    return spec


def epsilon_at(schedule: Sequence[tuple[int, float]], timestep: jax.Array) -> jax.Array:
    """Piecewise-linear schedule (RLlib's ``epsilon``), constant past its ends."""
    ts = jnp.asarray([t for t, _ in schedule], jnp.float32)
    vs = jnp.asarray([v for _, v in schedule], jnp.float32)
    return jnp.interp(timestep.astype(jnp.float32), ts, vs)


def epsilon_greedy(
    key: jax.Array, q: jax.Array, epsilon: jax.Array, masked: bool = False
) -> jax.Array:
    """Greedy actions, replaced by uniform ones with probability ``epsilon``; [B, A] -> [B].

    ``masked`` (a Q-network of the user's, which may mask actions): as RLlib's
    ``EpsilonGreedy``, a random action is drawn among the valid ones: an action the network
    masks (a Q-value at the float's lowest, as ``log(mask)`` clipped there gives) is never
    drawn; a row with none valid draws among all. Rows with every action valid draw from the
    same stream either way."""
    k_explore, k_action = jax.random.split(key)
    greedy = jnp.argmax(q, axis=-1).astype(jnp.int32)
    random = jax.random.randint(k_action, greedy.shape, 0, q.shape[-1], jnp.int32)
    if masked:
        valid = q > jnp.finfo(q.dtype).min / 2
        valid = valid | ~jnp.any(valid, axis=-1, keepdims=True)
        among_valid = jax.random.categorical(k_action, jnp.where(valid, 0.0, -jnp.inf))
        random = jnp.where(jnp.all(valid, axis=-1), random, among_valid.astype(jnp.int32))
    return jnp.where(jax.random.uniform(k_explore, greedy.shape) < epsilon, random, greedy)


def make_dqn_policy_parts(
    networks: DQNNetworks,
    epsilon: Sequence[tuple[int, float]],
    action_space: gym.Space,
    masked: bool = False,
) -> PolicyParts[OffPolicyState]:
    """DQN's policy: epsilon-greedy on the Q-values, epsilon following its schedule
    (``masked``: random actions only among those the network does not mask).

    The acting parameters are ``{"q": params, "epsilon": scalar}`` at the loop's timestep;
    inference reports the Q-values (noise off) as ``action_dist_inputs``.
    """

    def acting_params(state: OffPolicyState) -> Any:
        return {"q": state.learner.params, "epsilon": epsilon_at(epsilon, state.timestep)}

    def act(params: Any, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
        k_noise, k_eps = jax.random.split(key)
        q = networks.q_values(networks.apply(params["q"], obs, k_noise))
        return epsilon_greedy(k_eps, q, params["epsilon"], masked), {}

    def outputs(params: Any, obs: jax.Array) -> jax.Array:
        """Q-values (means of the return distributions with ``num_atoms > 1``), noise off."""
        return networks.q_values(networks.apply(params["q"], obs, None))

    to_env, to_env_host = space_env_actions(action_space, clip=False)
    return PolicyParts(
        act=act,
        acting_params=acting_params,
        bootstrap_keys=(),
        # Exploring acts as the runners do: epsilon-greedy at the current schedule value.
        inference=single_policy_inference(
            outputs,
            lambda key, q, params: epsilon_greedy(key, q, params["epsilon"], masked),
            lambda q, params: jnp.argmax(q, axis=-1),
        ),
        inference_params=lambda state, policy_id: acting_params(state),
        to_env_action=to_env,
        to_env_action_host=to_env_host,
    )


class DQN(OffPolicyAlgorithm):
    """DQN on EnvPool (fused into jit) or gymnasium vector envs."""

    config_class = DQNConfig
    # Measured faster on a one-thread CPU client with a dense model on 2 cores
    # (``rljax.utils.xla_threads.choose_at_build``; ``benchmarks/xla_cpu_threads.py``).
    xla_cpu_one_thread = True
    config: DQNConfig

    @classmethod
    def multi_agent_class(cls) -> type[Any]:
        """``MultiAgentDQN`` (``rljax.algorithms.multi_agent_off_policy``): each policy a
        single-agent DQN learner with a replay buffer of its own."""
        from rljax.algorithms.multi_agent_off_policy import MultiAgentDQN

        return MultiAgentDQN

    def _build_parts(
        self, key: jax.Array
    ) -> tuple[PolicyParts[OffPolicyState], ReplayLearner[DQNLearnerState]]:
        cfg = self.config
        if not isinstance(self.action_space, gym.spaces.Discrete):
            raise ConfigError(
                f"DQN needs a Discrete action space; the env has {self.action_space}. Use SAC or "
                "PPO for continuous actions"
            )
        num_actions = int(self.action_space.n)
        self.hp = DQNHyperparams.from_config(cfg)
        spec = users_module_spec(cfg)
        self.q_net: nn.Module
        if spec is not None:
            module = build_module(
                self.observation_space, num_actions, False, cfg.model_config, spec
            )
            self.q_net = CustomQNetwork(module, num_actions)
            obs = zeros_batch(self.observation_space, 1)
        else:
            self.q_net = build_q_network(
                self.observation_space,
                num_actions,
                cfg.model_config,
                cfg.dueling,
                num_atoms=self.hp.num_atoms,
                noisy=self.hp.noisy,
                sigma0=float(cfg.sigma0),
            )
            obs = jnp.zeros((1, *self._observation_shape()), self.observation_space.dtype)
        self.networks = DQNNetworks(self.q_net, self.hp.noisy, self.hp.support())
        params = run_once(self.q_net.init, key, obs)
        # Built once: the rate lives in the optimizer state, each step writes its own.
        self.optimizer = make_dqn_optimizer(cfg.lr, cfg.grad_clip, cfg.grad_clip_by)
        learner = ReplayLearner(
            init=DQNLearnerState(
                params=params,
                target_params=jax.tree.map(jnp.copy, params),
                opt_state=run_once(self.optimizer.init, params),
            ),
            learn=make_dqn_learn(self.networks, self.optimizer, self.hp, lr=cfg.lr),
            update_target=make_target_update(self.hp.tau, {"target_params": "params"}),
            metric_names=DQN_METRICS,
        )
        # A module of the user's may mask actions: exploration then keeps to the others.
        policy = make_dqn_policy_parts(
            self.networks, self.hp.epsilon, self.action_space, masked=spec is not None
        )
        return policy, learner

    # For inspection (not traced): the network's raw output and its Q-values.
    def _net(self, params: Any, obs: jax.Array, key: jax.Array | None) -> jax.Array:
        """The network's raw output; noisy layers draw noise when given a key."""
        return self.networks.apply(params, obs, key)

    def _q_values(self, out: jax.Array) -> jax.Array:
        """Q-values [B, A] from the output: itself, or the mean of the return distribution."""
        return self.networks.q_values(out)


__all__ = ["DQN", "DQNConfig", "epsilon_at", "epsilon_greedy"]
