"""PPO: config (RLlib's names and defaults) and the algorithm that wires runners to the learner."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import jax
import jax.numpy as jnp

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.algorithm_config import UNSET, AlgorithmConfig
from rljax.algorithms.ppo.learner import (
    POLICY_ID,
    PPOHyperparams,
    PPOTrainState,
    make_optimizer,
    make_ppo_postprocess,
    make_ppo_update,
)
from rljax.algorithms.ppo.networks import build_policy
from rljax.algorithms.settings import Setting
from rljax.execution.on_policy import OnPolicyLoop
from rljax.execution.parts import PolicyParts, distribution_inference, space_env_actions
from rljax.networks.distributions import ActionDistribution
from rljax.runners.acting import (
    make_act_step,
    make_fused_rollout,
)
from rljax.utils.checks import Bool, Int, Number
from rljax.utils.errors import ConfigError
from rljax.utils.jit import run_once

# Passes over the batch per iteration: RLlib's tuned examples use up to ~30.
MAX_NUM_EPOCHS = 1000
# Minibatch updates per iteration (num_epochs x minibatches per epoch), all inside one jitted
# call: RLlib's defaults (30 epochs of 4,000 rows in minibatches of 128) run 930.
MAX_MINIBATCH_UPDATES = 100_000


class PPOConfig(AlgorithmConfig):
    """PPO's config; defaults follow RLlib's new API stack.

    Example::

        from rljax.algorithms.ppo import PPOConfig

        algo = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_envs_per_env_runner=16)
            .training(lr=3e-4, num_epochs=6, minibatch_size=128)
            .build_algo()
        )
        print(algo.train()["env_runners"]["episode_return_mean"])
    """

    algo_name: ClassVar[str] = "PPO"

    # RLlib's PPO defaults. The learner settings (per_module) may differ per policy.
    lr = AlgorithmConfig.lr.replace(default=5e-5, per_module=True)
    grad_clip = AlgorithmConfig.grad_clip.replace(per_module=True)
    model_config = AlgorithmConfig.model_config.replace(per_module=True)
    lambda_ = Setting(1.0, Number(0, 1), "GAE's lambda.")
    use_gae = Setting(True, Bool(), "Use GAE advantages; rljax's PPO always does (keep True).")
    clip_param = Setting(
        0.3,
        Number(0, low_open=True),
        "The surrogate's clip range: the probability ratio is clipped to [1 - clip_param, "
        "1 + clip_param].",
        per_module=True,
    )
    vf_clip_param = Setting[float | None](
        10.0,
        Number(0, low_open=True, optional=True),
        "The value loss (a squared error) is clipped at this; None: not clipped.",
        per_module=True,
    )
    vf_loss_coeff = Setting(1.0, Number(0), "The value loss's weight.", per_module=True)
    entropy_coeff = Setting(0.0, Number(0), "The entropy bonus's weight.", per_module=True)
    kl_coeff = Setting(
        0.2,
        Number(0),
        "The KL penalty's initial weight, adapted after every update towards kl_target.",
        per_module=True,
    )
    kl_target = Setting(
        0.01, Number(0, low_open=True), "The KL the adaptive kl_coeff aims at.", per_module=True
    )
    use_kl_loss = Setting(
        True,
        Bool(),
        "Add the KL penalty (sampling policy || current policy) to the loss.",
        per_module=True,
    )
    use_critic = Setting(
        True, Bool(), "Learn a value function; rljax's PPO always does (keep True)."
    )
    minibatch_size = Setting(
        128, Int(1), "Rows of each learner's share of a minibatch.", per_module=True
    )
    num_epochs = Setting(
        30, Int(1, MAX_NUM_EPOCHS), "Passes over the train batch per iteration.", per_module=True
    )
    shuffle_batch_per_epoch = Setting(
        True,
        Bool(),
        "Shuffle the train batch each epoch; False: minibatches take its rows in order.",
        per_module=True,
    )

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or PPO)

    def training(
        self,
        *,
        lr: float = UNSET,
        gamma: float = UNSET,
        train_batch_size_per_learner: int = UNSET,
        train_batch_size: int | None = UNSET,
        grad_clip: float | None = UNSET,
        grad_clip_by: str = UNSET,
        lambda_: float = UNSET,
        use_gae: bool = UNSET,
        clip_param: float = UNSET,
        vf_clip_param: float | None = UNSET,
        vf_loss_coeff: float = UNSET,
        entropy_coeff: float = UNSET,
        kl_coeff: float = UNSET,
        kl_target: float = UNSET,
        use_kl_loss: bool = UNSET,
        use_critic: bool = UNSET,
        minibatch_size: int = UNSET,
        num_epochs: int = UNSET,
        shuffle_batch_per_epoch: bool = UNSET,
        **kwargs: Any,
    ) -> PPOConfig:
        """Sets PPO's training settings (RLlib's names; ``minibatch_size`` is per learner)."""
        return self._set("training", locals())

    def _update_rows(self) -> int:
        """A minibatch of every learner passes the networks together."""
        return self.minibatch_size * self.num_learner_shards

    def validate(self) -> None:
        super().validate()
        if not (self.use_gae and self.use_critic):
            raise ConfigError(
                f"use_gae={self.use_gae}, use_critic={self.use_critic}: rljax's PPO always uses "
                "GAE and a critic; both must stay True"
            )
        per_learner = self.sampled_batch_size // self.num_learner_shards
        if self.minibatch_size > per_learner:
            raise ConfigError(
                f"minibatch_size={self.minibatch_size} is larger than the batch each learner gets "
                f"({per_learner} env steps = {self.sampled_batch_size} sampled / {self.num_learner_shards} "
                "learner(s)); lower minibatch_size or raise train_batch_size_per_learner"
            )
        updates = self.num_epochs * (per_learner // self.minibatch_size)
        if updates > MAX_MINIBATCH_UPDATES:
            raise ConfigError(
                f"num_epochs={self.num_epochs} x {per_learner // self.minibatch_size:,} minibatches "
                f"of minibatch_size={self.minibatch_size} in a batch of {per_learner:,} is "
                f"{updates:,} updates per iteration, more than {MAX_MINIBATCH_UPDATES:,}; raise "
                "minibatch_size or lower num_epochs"
            )


def make_ppo_policy_parts(
    apply: Callable[[Any, jax.Array], tuple[jax.Array, jax.Array]],
    dist: ActionDistribution,
    action_space: gym.Space,
    clip_actions: bool,
) -> PolicyParts[PPOTrainState]:
    """PPO's policy for the execution layer.

    Args:
      apply: The module's ``apply(params, obs [B, ...]) -> (action_dist_inputs [B, D],
        value [B])``.
      dist: The action distribution of ``action_dist_inputs``.
      action_space: The env's action space (actions are cast to it, and clipped to a Box's
        bounds with ``clip_actions``).
    """

    def act(params: Any, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
        dist_inputs, value = apply(params[POLICY_ID], obs)
        action = dist.sample(key, dist_inputs)
        extras = {
            "action_logp": dist.log_prob(dist_inputs, action),
            "vf_preds": value,
            "action_dist_inputs": dist_inputs,
        }
        return action, extras

    def outputs(params: Any, obs: jax.Array) -> jax.Array:
        return apply(params[POLICY_ID], obs)[0]

    def params_of(state: PPOTrainState) -> Any:
        return state.params

    to_env, to_env_host = space_env_actions(action_space, clip_actions)
    return PolicyParts(
        act=act,
        acting_params=params_of,
        bootstrap_keys=("vf_preds",),
        inference=distribution_inference(outputs, dist),
        inference_params=lambda state, policy_id: params_of(state),
        to_env_action=to_env,
        to_env_action_host=to_env_host,
    )


class PPO(Algorithm):
    """Proximal Policy Optimization on EnvPool (fused into jit) or gymnasium vector envs."""

    config_class = PPOConfig
    config: PPOConfig
    parts: PolicyParts[PPOTrainState]
    state: PPOTrainState

    @classmethod
    def multi_agent_class(cls) -> type[Algorithm]:
        from rljax.algorithms.ppo.multi_agent import MultiAgentPPO

        return MultiAgentPPO

    def _setup(self) -> None:
        cfg = self.config
        dist, self.module = build_policy(self.observation_space, self.action_space, cfg)
        key = jax.random.PRNGKey(self.seed)
        key, init_key, self._action_key = jax.random.split(key, 3)
        obs_example = jnp.zeros((1, *self._observation_shape()), self.observation_space.dtype)
        try:
            params = {POLICY_ID: run_once(self.module.init, init_key, obs_example)}
            out = jax.eval_shape(self.module.apply, params[POLICY_ID], obs_example)
        except Exception as e:
            raise ConfigError(
                f"the model could not be built for observations {self.observation_space}: {e}"
            ) from e
        if out[0].shape != (1, dist.num_outputs) or out[1].shape != (1,):
            raise ConfigError(
                f"the module must return (action_dist_inputs [B, {dist.num_outputs}], value [B]); "
                f"it returned shapes {out[0].shape} and {out[1].shape}"
            )

        self.fragment_length = cfg.get_rollout_fragment_length()
        self.batch_size = cfg.sampled_batch_size
        num_shards = cfg.num_learner_shards
        self.hp = PPOHyperparams.from_config(cfg, num_shards, self.batch_size // num_shards)
        optimizer = make_optimizer(float(cfg.lr), cfg.grad_clip)
        state = PPOTrainState(
            params=params,
            opt_state=run_once(optimizer.init, params),
            kl_coeff=jnp.asarray(cfg.kl_coeff, jnp.float32),
            step=jnp.zeros((), jnp.int32),
            key=key,
        )
        num_envs = cfg.total_num_envs
        self._postprocess = make_ppo_postprocess(self.hp, num_envs)
        self._update = make_ppo_update(self.module.apply, dist, optimizer, self.hp)
        self.parts = make_ppo_policy_parts(
            self.module.apply, dist, self.action_space, cfg.clip_actions
        )
        self._act_step = make_act_step(self.parts.act, self.parts.bootstrap_keys)
        self.state = self._place_learner_state(state)
        self.fused = self._fused_envpool()
        if self.fused:
            self._setup_fused()
        else:
            self._setup_host_runners()

    # ------------------------------------------------------------------ execution
    def _setup_fused(self) -> None:
        xla_step, self.runner_state = self._make_fused_runner(self._runner_params())
        rollout = make_fused_rollout(
            self._act_step, xla_step, self.fragment_length, self.parts.to_env_action
        )
        self._loop = OnPolicyLoop.fused(
            rollout,
            self._postprocess,
            self._update,
            self.parts.acting_params,
            self._runner_params,
            self.mesh,
            self._state_sharding,
            self._batch_sharding,
        )

    def _setup_host_runners(self) -> None:
        self._runners = self._make_runner_group(
            self._runner_params(), self._act_step, self.fragment_length
        )
        self._loop = OnPolicyLoop.with_runners(
            self._runners,
            self._postprocess,
            self._update,
            self._runner_params,
            self.config.sample_timeout_s,
            self.mesh,
            self._state_sharding,
            self._batch_sharding,
        )

    def _runner_params(self, state: PPOTrainState | None = None) -> Any:
        # A copy: the update donates the train state, and runner threads may still be acting
        # with the previous weights while it runs.
        params = self.parts.acting_params(self.state if state is None else state)
        return jax.device_put(params, self.runner_device, may_alias=False)

    # The loop's jitted programs (the multi-device and fault-tolerance checks inspect them).
    @property
    def _train_step(self) -> Any:
        return self._loop.train_step

    @property
    def _sample(self) -> Any:
        return self._loop.sample

    @property
    def _jit_update(self) -> Any:
        return self._loop.update

    @property
    def _postprocess_jit(self) -> Any:
        return self._loop.postprocess

    # ------------------------------------------------------------------ training
    def _training_step(self) -> dict[str, Any]:
        if self._runners is not None:
            self._live_runners()  # a stopped algorithm raises here
        self.state, self.runner_state, result = self._loop.step(self.state, self.runner_state)
        return result

    # ------------------------------------------------------------------ checkpoint hooks
    def _checkpoint_state(self, include_replay_buffer: bool | None = None) -> Any:
        return self.state

    def _restore_state(self, state: Any) -> None:
        target = self._state_sharding if self.mesh is not None else self.learner_devices[0]
        self.state = jax.device_put(jax.tree.map(jnp.asarray, state), target)
        if self._runners is not None:  # runner threads act with them next
            self._runners.publish(self._runner_params(), advance=False)


__all__ = ["PPO", "PPOConfig", "build_policy"]
