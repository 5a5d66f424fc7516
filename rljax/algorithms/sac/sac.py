"""SAC: config (RLlib's names and defaults) and the algorithm: a squashed Gaussian for a 1-D Box
action space, SAC-Discrete (a categorical policy, a value per action) for a Discrete one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, cast

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.algorithm_config import UNSET
from rljax.algorithms.off_policy import OffPolicyAlgorithm, OffPolicyConfig, rate_setting
from rljax.algorithms.sac.learner import (
    SAC_METRICS,
    SACHyperparams,
    SACLearnerState,
    SACNetworks,
    make_sac_learn,
    make_sac_optimizers,
)
from rljax.algorithms.settings import Setting
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.execution.off_policy import OffPolicyState, ReplayLearner
from rljax.execution.parts import PolicyParts, distribution_inference, space_env_actions
from rljax.learners.update import make_target_update
from rljax.networks.distributions import Categorical, SquashedDiagGaussian
from rljax.networks.q_models import (
    CategoricalActor,
    GaussianActor,
    TwinCritic,
    check_vector_obs,
)
from rljax.utils import memory
from rljax.utils.checks import Bool, Number
from rljax.utils.errors import ConfigError
from rljax.utils.jit import run_once


class SACConfig(OffPolicyConfig):
    """SAC's config; defaults follow RLlib's new API stack.

    Example:
        ```python
        from rljax.algorithms.sac import SACConfig

        config = (
            SACConfig()
            .environment("Pendulum-v1")
            .training(actor_lr=3e-4, critic_lr=3e-4, alpha_lr=3e-4, tau=0.005)
        )
        algo = config.build_algo()
        ```
    """

    algo_name: ClassVar[str] = "SAC"
    # RLlib's SAC defaults where they differ from every off-policy algorithm's.
    # lr is unused: SAC has one learning rate per network (RLlib sets lr=None).
    lr = OffPolicyConfig.lr.replace(default=3e-4)
    tau = OffPolicyConfig.tau.replace(default=5e-3)
    target_network_update_freq = OffPolicyConfig.target_network_update_freq.replace(default=0)
    train_batch_size_per_learner = OffPolicyConfig.train_batch_size_per_learner.replace(default=256)
    num_steps_sampled_before_learning_starts = (
        OffPolicyConfig.num_steps_sampled_before_learning_starts.replace(default=1500)
    )
    min_sample_timesteps_per_iteration = OffPolicyConfig.min_sample_timesteps_per_iteration.replace(
        default=100
    )
    replay_buffer_config = OffPolicyConfig.replay_buffer_config.replace(
        default={
            "type": "PrioritizedEpisodeReplayBuffer",
            "capacity": 1_000_000,
            "alpha": 0.6,
            "beta": 0.4,
        }
    )
    model_config = OffPolicyConfig.model_config.replace(
        default=DefaultModelConfig(fcnet_hiddens=(256, 256), fcnet_activation="relu")
    )
    twin_q = Setting(True, Bool(), "Two critics and the minimum of their targets.")
    initial_alpha = Setting(
        1.0, Number(0, low_open=True), "The entropy temperature's initial value."
    )
    target_entropy = Setting[str | float](
        "auto",
        Number(literals=("auto",)),
        'The entropy the temperature aims at; "auto": minus the action dimension.',
    )
    actor_lr = rate_setting(3e-5, "The actor's")
    critic_lr = rate_setting(3e-4, "The critics'")
    alpha_lr = rate_setting(3e-4, "The temperature's")

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or SAC)

    def training(
        self,
        *,
        lr: float | None = UNSET,
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
        twin_q: bool = UNSET,
        initial_alpha: float = UNSET,
        target_entropy: str | float = UNSET,
        actor_lr: float | list[list[float]] = UNSET,
        critic_lr: float | list[list[float]] = UNSET,
        alpha_lr: float | list[list[float]] = UNSET,
        **kwargs: Any,
    ) -> SACConfig:
        """Sets SAC's training settings (RLlib's names)."""
        if lr is None:
            lr = UNSET
        return self._set("training", locals())

    def _conv_encoders(self) -> int:
        """None: SAC's networks take vector observations (an image is refused at build)."""
        return 0

    def network_params(self, observation_space: Any, action_space: Any) -> int:
        """The actor (a mean and a log std per action; discrete: a logit per action) and the
        critics (discrete: a value per action)."""
        mc = self.model_config
        hiddens = [*mc.fcnet_hiddens, *mc.head_fcnet_hiddens]
        critics = 2 if self.twin_q else 1
        if isinstance(action_space, gym.spaces.Discrete):
            net = memory.mlp_params(
                memory.flat_size(observation_space), hiddens, int(action_space.n)
            )
            return (1 + critics) * net
        return memory.actor_critic_params(observation_space, action_space, hiddens, 2, critics)


def make_sac_policy_parts(
    actor: nn.Module, dist: SquashedDiagGaussian | Categorical, action_space: gym.Space
) -> PolicyParts[OffPolicyState]:
    """SAC's policy: the actor's squashed Gaussian (or, discrete, its categorical), sampled to
    act, its mode for greedy inference; squashed actions in (-1, 1) scaled to the env's
    bounds, discrete ones passed as they are."""

    def acting_params(state: OffPolicyState) -> Any:
        return state.learner.actor

    def outputs(params: Any, obs: jax.Array) -> jax.Array:
        """The distribution's inputs: [B, 2 * A] (mean, log std), or logits [B, A]."""
        return cast(jax.Array, actor.apply(params, obs))

    to_env: Callable[[jax.Array], jax.Array]
    to_env_host: Callable[[np.ndarray], np.ndarray]
    if isinstance(dist, Categorical):
        categorical = dist

        def act(params: Any, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
            return categorical.sample(key, outputs(params, obs)), {}

        to_env, to_env_host = space_env_actions(action_space, clip=False)  # start + index
    else:
        gaussian = dist
        box = cast(gym.spaces.Box, action_space)  # SAC's build refused any other
        low = np.asarray(box.low, np.float32)
        high = np.asarray(box.high, np.float32)
        dtype = box.dtype

        def act(params: Any, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
            action, _ = gaussian.sample_and_log_prob(key, outputs(params, obs))
            return action, {}

        def to_env(action: jax.Array) -> jax.Array:
            """Squashed actions in (-1, 1) to the env's bounds."""
            lo, hi = jnp.asarray(low), jnp.asarray(high)
            return (lo + (action + 1.0) * 0.5 * (hi - lo)).astype(dtype)

        def to_env_host(action: np.ndarray) -> np.ndarray:
            return (low + (action + 1.0) * 0.5 * (high - low)).astype(dtype)

    return PolicyParts(
        act=act,
        acting_params=acting_params,
        bootstrap_keys=(),
        inference=distribution_inference(outputs, dist),
        inference_params=lambda state, policy_id: acting_params(state),
        to_env_action=to_env,
        to_env_action_host=to_env_host,
    )


class SAC(OffPolicyAlgorithm):
    """Soft Actor-Critic on EnvPool (fused into jit) or gymnasium vector envs.

    Its parts are built in steps a subclass on SAC's networks (TQC, CQL, IQL) overrides one at
    a time: ``_check_spaces``, ``_build_networks`` (with ``_make_critic``), the learner's
    initial state and ``_make_learn``.
    """

    config_class = SACConfig
    config: SACConfig
    #: True for algorithms that take a 1-D Box action space only (RLlib's CQL, IQL and TQC).
    continuous_only: ClassVar[bool] = False
    #: What a continuous-only algorithm's refusal of a Discrete space suggests instead.
    discrete_hint: ClassVar[str] = ". SAC takes Discrete actions"
    #: The names of the learner's metrics, in the order its step returns them.
    metric_names: ClassVar[tuple[str, ...]] = SAC_METRICS

    @classmethod
    def multi_agent_class(cls) -> type[Any] | None:
        """``MultiAgentSAC`` (``rljax.algorithms.multi_agent_off_policy``): each policy a
        single-agent learner of this class with a replay buffer of its own."""
        from rljax.algorithms.multi_agent_off_policy import MultiAgentSAC

        return MultiAgentSAC

    def _check_spaces(self) -> bool:
        """Refuses the spaces SAC's networks cannot take, naming them; True for Discrete."""
        space, name = self.action_space, self.config.algo_name
        discrete = isinstance(space, gym.spaces.Discrete)
        box = isinstance(space, gym.spaces.Box) and len(space.shape) == 1
        if self.continuous_only and not box:
            also = self.discrete_hint if discrete else ""
            raise ConfigError(
                f"{name} needs a 1-D Box action space (RLlib's {name} is continuous); the env "
                f"has {space}{also}"
            )
        if not (discrete or box):
            raise ConfigError(
                f"{name} needs a 1-D Box or a Discrete action space; the env has {space}. Use "
                "PPO for other action spaces"
            )
        if not discrete and not (
            np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))
        ):
            raise ConfigError(f"{name} needs finite action bounds to squash into; got {space}")
        check_vector_obs(self.observation_space, name)
        return discrete

    def _make_critic(self, num_actions: int) -> nn.Module:
        """The critics: Q(s, a) for a Box action (``num_actions`` 0), one value per action of
        a Discrete one."""
        critics = 2 if self.config.twin_q else 1
        return TwinCritic(self.config.model_config, critics, num_actions)

    def _build_networks(self) -> None:
        """Checks the spaces and sets the actor, critics, distribution, settings (``hp``) and
        optimizers the learner and the policy are made of."""
        cfg = self.config
        space = self.action_space
        dist: SquashedDiagGaussian | Categorical
        self.actor: nn.Module
        if self._check_spaces():
            # RLlib's "auto" target entropy is -prod(action_space.shape): -1 for Discrete.
            action_dim, num_actions = 1, int(space.n)
            dist = Categorical(num_actions)
            self.actor = CategoricalActor(num_actions, cfg.model_config)
            self.critic = self._make_critic(num_actions)
            self.action_example = None
        else:
            action_dim = int(space.shape[0])
            dist = SquashedDiagGaussian(action_dim)
            self.actor = GaussianActor(action_dim, cfg.model_config)
            self.critic = self._make_critic(0)
            self.action_example = jnp.zeros((1, action_dim), jnp.float32)
        self.dist = dist
        self.hp = SACHyperparams.from_config(cfg, action_dim)
        self.target_entropy = self.hp.target_entropy
        self.networks = SACNetworks(self.actor, self.critic, dist)
        self.optimizers = make_sac_optimizers(self.hp)

    def _make_learn(self) -> Callable[..., Any]:
        """The jitted learner's step on a sampled batch (``make_sac_learn``'s signature)."""
        return make_sac_learn(self.networks, self.optimizers, self.hp)

    def _build_parts(
        self, key: jax.Array
    ) -> tuple[PolicyParts[OffPolicyState], ReplayLearner[SACLearnerState]]:
        self._build_networks()
        k_actor, k_critic = jax.random.split(key)
        obs = jnp.zeros((1, *self._observation_shape()), jnp.float32)
        actor_params = run_once(self.actor.init, k_actor, obs)
        inputs = (obs,) if self.action_example is None else (obs, self.action_example)
        critic_params = run_once(self.critic.init, k_critic, *inputs)
        log_alpha = jnp.log(jnp.asarray(self.hp.initial_alpha, jnp.float32))
        learner = ReplayLearner(
            init=SACLearnerState(
                actor=actor_params,
                critic=critic_params,
                target_critic=jax.tree.map(jnp.copy, critic_params),
                log_alpha=log_alpha,
                actor_opt=run_once(self.optimizers.actor.init, actor_params),
                critic_opt=run_once(self.optimizers.critic.init, critic_params),
                alpha_opt=self.optimizers.alpha.init(log_alpha),
            ),
            learn=self._make_learn(),
            update_target=make_target_update(self.hp.tau, {"target_critic": "critic"}),
            metric_names=self.metric_names,
        )
        return make_sac_policy_parts(self.actor, self.dist, self.action_space), learner


__all__ = ["SAC", "SACConfig"]
