"""TD3: config (RLlib's old-stack names; SB3's and the TD3 paper's defaults where RLlib has none)
and the algorithm that wires TD3's learner into the shared off-policy loops."""

from __future__ import annotations

from typing import Any, ClassVar, cast

import jax
import jax.numpy as jnp

from rljax.algorithms.algorithm_config import UNSET
from rljax.algorithms.off_policy import OffPolicyAlgorithm, OffPolicyConfig, rate_setting
from rljax.algorithms.settings import Setting
from rljax.algorithms.td3.learner import (
    TD3_METRICS,
    TD3Hyperparams,
    TD3LearnerState,
    TD3Networks,
    init_td3_state,
    make_td3_learn,
    make_td3_optimizers,
    make_td3_target_update,
)
from rljax.algorithms.td3.networks import ActionBounds, DeterministicActor, gaussian_exploration
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.execution.off_policy import OffPolicyState, ReplayLearner
from rljax.execution.parts import PolicyParts, single_policy_inference
from rljax.networks.q_models import TwinCritic, check_vector_obs
from rljax.utils import memory
from rljax.utils.checks import Bool, Int, Number
from rljax.utils.errors import ConfigError


class TD3Config(OffPolicyConfig):
    """TD3's config: RLlib's ``TD3Config`` names and defaults (its old API stack).

    Twin critics (``twin_q``), target policy smoothing (``smooth_target_policy``,
    ``target_noise``, ``target_noise_clip``) and delayed actor updates (``policy_delay``), with
    the replay settings every off-policy algorithm shares. Exploration adds Gaussian noise of
    standard deviation ``exploration_noise`` (the TD3 paper's 0.1) to the actor's actions;
    before ``num_steps_sampled_before_learning_starts`` env steps the actions are uniform
    random, as Stable-Baselines3's are (RLlib's ``GaussianNoise`` has its own
    ``random_timesteps``, by default equal to its learning start, 10,000). All noise is in the
    actor's [-1, 1] scale: in units of half the action range.

    Example:
        ```python
        from rljax.algorithms.td3 import TD3Config

        config = (
            TD3Config()
            .environment("Pendulum-v1")
            .training(actor_lr=1e-3, critic_lr=1e-3, policy_delay=2, target_noise=0.2)
        )
        algo = config.build_algo()
        ```
    """

    algo_name: ClassVar[str] = "TD3"
    # RLlib's TD3Config (old API stack) where it differs from every off-policy algorithm's.
    # lr is unused: TD3 has one learning rate per network.
    lr = OffPolicyConfig.lr.replace(default=1e-3)
    tau = OffPolicyConfig.tau.replace(default=5e-3)
    target_network_update_freq = OffPolicyConfig.target_network_update_freq.replace(default=0)
    train_batch_size_per_learner = OffPolicyConfig.train_batch_size_per_learner.replace(default=100)
    num_steps_sampled_before_learning_starts = (
        OffPolicyConfig.num_steps_sampled_before_learning_starts.replace(default=10_000)
    )
    replay_buffer_config = OffPolicyConfig.replay_buffer_config.replace(
        default={"type": "EpisodeReplayBuffer", "capacity": 1_000_000}
    )
    model_config = OffPolicyConfig.model_config.replace(
        default=DefaultModelConfig(fcnet_hiddens=(400, 300), fcnet_activation="relu")
    )
    twin_q = Setting(
        True, Bool(), "Two critics and the minimum of their targets (False: one critic, as DDPG)."
    )
    policy_delay = Setting(
        2,
        Int(1),
        "Critic updates per actor update; the target networks move with the actor.",
    )
    smooth_target_policy = Setting(True, Bool(), "Add clipped noise to the target actor's actions.")
    target_noise = Setting(
        0.2, Number(0), "That noise's standard deviation (in half action ranges)."
    )
    target_noise_clip = Setting(0.5, Number(0), "The bound on that noise's magnitude.")
    exploration_noise = Setting(
        0.1,  # the TD3 paper's (RLlib's is GaussianNoise(stddev=0.1) in exploration_config)
        Number(0),
        "The standard deviation of the Gaussian noise on acting actions.",
    )
    actor_lr = rate_setting(1e-3, "The actor's")
    critic_lr = rate_setting(1e-3, "The critics'")

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or TD3)

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
        policy_delay: int = UNSET,
        smooth_target_policy: bool = UNSET,
        target_noise: float = UNSET,
        target_noise_clip: float = UNSET,
        exploration_noise: float = UNSET,
        actor_lr: float | list[list[float]] = UNSET,
        critic_lr: float | list[list[float]] = UNSET,
        **kwargs: Any,
    ) -> TD3Config:
        """Sets TD3's training settings (RLlib's names; ``lr`` is not used)."""
        if lr is None:
            lr = UNSET
        return self._set("training", locals())

    def _conv_encoders(self) -> int:
        """None: TD3's networks take vector observations (an image is refused at build)."""
        return 0

    def network_params(self, observation_space: Any, action_space: Any) -> int:
        """The deterministic actor (an action) and the critics."""
        hiddens = [*self.model_config.fcnet_hiddens, *self.model_config.head_fcnet_hiddens]
        critics = 2 if self.twin_q else 1
        return memory.actor_critic_params(observation_space, action_space, hiddens, 1, critics)

    def validate(self) -> None:
        super().validate()
        if self.policy_delay > 1 and self.target_network_update_freq > 0:
            raise ConfigError(
                f"target_network_update_freq={self.target_network_update_freq} with "
                f"policy_delay={self.policy_delay}: TD3's target networks move with each delayed "
                "actor update, as in the TD3 paper; set target_network_update_freq=0, or "
                "policy_delay=1 to move them every target_network_update_freq env steps"
            )


def make_td3_policy_parts(
    actor: DeterministicActor, bounds: ActionBounds, hp: TD3Hyperparams
) -> PolicyParts[OffPolicyState]:
    """TD3's policy: the deterministic actor with Gaussian exploration noise, uniform random
    actions before learning starts; its actions in [-1, 1] are RLlib's ``action_dist_inputs``
    and greedy inference returns them as they are."""

    def acting_params(state: OffPolicyState) -> Any:
        return {"actor": state.learner.actor, "uniform": state.timestep < hp.learning_starts}

    def explore(key: jax.Array, action: jax.Array, params: Any) -> jax.Array:
        return gaussian_exploration(key, action, hp.exploration_noise, params["uniform"])

    def outputs(params: Any, obs: jax.Array) -> jax.Array:
        # Module.apply without ``mutable`` returns the output alone (see DQNNetworks.apply).
        return cast(jax.Array, actor.apply(params["actor"], obs))

    def act(params: Any, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
        return explore(key, outputs(params, obs), params), {}

    return PolicyParts(
        act=act,
        acting_params=acting_params,
        bootstrap_keys=(),
        # Exploring acts as the runners do now: noise, or uniform before learning starts.
        inference=single_policy_inference(outputs, explore, lambda action, params: action),
        inference_params=lambda state, policy_id: acting_params(state),
        # ActionBounds.to_env keeps its input's kind: jax in, jax out; numpy in, numpy out.
        to_env_action=bounds.to_env,
        to_env_action_host=bounds.to_env,
    )


class TD3(OffPolicyAlgorithm):
    """TD3 on EnvPool (fused into jit) or gymnasium vector envs."""

    config_class = TD3Config
    config: TD3Config

    @classmethod
    def multi_agent_class(cls) -> type[Any]:
        """``MultiAgentTD3`` (``rljax.algorithms.multi_agent_off_policy``): each policy a
        single-agent TD3 learner with a replay buffer of its own."""
        from rljax.algorithms.multi_agent_off_policy import MultiAgentTD3

        return MultiAgentTD3

    def _build_parts(
        self, key: jax.Array
    ) -> tuple[PolicyParts[OffPolicyState], ReplayLearner[TD3LearnerState]]:
        cfg = self.config
        self.bounds = ActionBounds.of(self.action_space, "TD3")
        check_vector_obs(self.observation_space, "TD3")
        action_dim = int(self.bounds.low.shape[0])  # a 1-D Box's (ActionBounds.of checked)
        self.hp = TD3Hyperparams.from_config(cfg)
        self.actor = DeterministicActor(action_dim, cfg.model_config)
        critic = TwinCritic(cfg.model_config, num_critics=2 if cfg.twin_q else 1)
        networks = TD3Networks(self.actor, critic)
        optimizers = make_td3_optimizers(self.hp)
        obs = jnp.zeros((1, *self._observation_shape()), jnp.float32)
        act = jnp.zeros((1, action_dim), jnp.float32)
        learner = ReplayLearner(
            init=init_td3_state(networks, optimizers, key, obs, act),
            learn=make_td3_learn(networks, optimizers, self.hp),
            update_target=make_td3_target_update(self.hp),
            metric_names=TD3_METRICS,
        )
        return make_td3_policy_parts(self.actor, self.bounds, self.hp), learner


__all__ = ["TD3", "TD3Config"]
