"""IQL: implicit Q-learning from offline data (RLlib's ``IQLConfig``), on SAC's actor and
critics with a state-value network beside them.

No action outside the data is ever evaluated: the value ``V(s)`` is fitted by expectile
regression (``expectile``) to the target critics' values of the data's actions, the critics to
``r + gamma * V(s')``, and the actor clones the data's actions weighted by ``exp(beta * (Q -
V))`` (capped at 100): ``rljax.algorithms.iql.losses``. The data, the jitted ``train()`` of
``dataset_num_iters_per_learner`` gradient steps and evaluation are CQL's
(``rljax.algorithms.sac.offline``). RLlib's defaults: ``beta`` 0.1, ``expectile`` 0.8, the three
rates 3e-4, batches of 2,000 rows (MARWIL's), twin critics, and the target critics copied after every step (``tau`` 1.0,
``target_network_update_freq`` 0); here the period counts gradient steps. SAC's temperature
and replay settings are accepted and unused (IQL's actor has no entropy term; the data are the
files). Continuous actions only, as RLlib's.

Example:
    ```python
    from rljax.algorithms.iql import IQLConfig

    config = (
        IQLConfig()
        .environment("Pendulum-v1")
        .offline_data(input_="/tmp/pendulum-data")
        .training(beta=3.0, expectile=0.7, tau=0.005)
    )
    ```
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from rljax.algorithms.algorithm_config import UNSET
from rljax.algorithms.iql.losses import (
    IQL_METRICS,
    IQLLearnerState,
    IQLNetworks,
    IQLOptimizers,
    make_iql_learn,
    make_iql_target_update,
)
from rljax.algorithms.off_policy import rate_setting
from rljax.algorithms.sac.offline import OfflineSAC, OfflineSACConfig
from rljax.algorithms.sac.sac import SACConfig, make_sac_policy_parts
from rljax.algorithms.settings import Setting
from rljax.execution.off_policy import OffPolicyState, ReplayLearner
from rljax.execution.parts import PolicyParts
from rljax.learners.hyperparams import make_injected_optimizer
from rljax.learners.update import make_optimizer
from rljax.networks.distributions import SquashedDiagGaussian
from rljax.networks.q_models import GaussianActor, TwinCritic
from rljax.utils import memory
from rljax.utils.checks import Number
from rljax.utils.jit import run_once


class IQLConfig(OfflineSACConfig):
    """IQL's config: RLlib's IQL settings and defaults on SAC's networks.

    Example:
        ```python
        from rljax.algorithms.iql import IQLConfig

        config = (
            IQLConfig()
            .environment("Pendulum-v1")
            .offline_data(input_="/tmp/pendulum-data")
        )
        ```
    """

    algo_name: ClassVar[str] = "IQL"

    # RLlib's IQL is a MARWIL: its batches are MARWIL's 2,000 rows.
    train_batch_size_per_learner = SACConfig.train_batch_size_per_learner.replace(default=2000)
    target_network_update_freq = SACConfig.target_network_update_freq.replace(default=0)
    tau = SACConfig.tau.replace(default=1.0)
    actor_lr = rate_setting(3e-4, "The actor's")
    critic_lr = rate_setting(3e-4, "The critics'")
    beta = Setting(
        0.1,
        Number(0, low_open=True),
        "The advantage's temperature in the actor's weights exp(beta * (Q - V)): higher "
        "clones the data's better actions more greedily.",
    )
    expectile = Setting(
        0.8,
        Number(0, 1, low_open=True, high_open=True),
        "The expectile V(s) is fitted to (in (0, 1)): higher approaches the best data action's "
        "value.",
    )
    value_lr = rate_setting(3e-4, "The state value's")

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or IQL)

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
        beta: float = UNSET,
        expectile: float = UNSET,
        value_lr: float | list[list[float]] = UNSET,
        **kwargs: Any,
    ) -> IQLConfig:
        """Sets IQL's training settings (RLlib's names)."""
        if lr is None:
            lr = UNSET
        return self._set("training", locals())

    def network_params(self, observation_space: Any, action_space: Any) -> int:
        """SAC's actor and critics, and the state value."""
        mc = self.model_config
        hiddens = [*mc.fcnet_hiddens, *mc.head_fcnet_hiddens]
        value = memory.mlp_params(memory.flat_size(observation_space), hiddens, 1)
        return super().network_params(observation_space, action_space) + value


class IQL(OfflineSAC):
    """IQL on offline data; evaluation runs the policy in the config's env."""

    config_class = IQLConfig
    config: IQLConfig

    def _build_parts(
        self, key: jax.Array
    ) -> tuple[PolicyParts[OffPolicyState], ReplayLearner[Any]]:  # IQLLearnerState
        cfg = self.config
        self._check_spaces()  # SAC's; IQL's networks, optimizers and learner are its own
        action_dim = int(self.action_space.shape[0])
        dist = SquashedDiagGaussian(action_dim)
        actor = GaussianActor(action_dim, cfg.model_config)
        critic = TwinCritic(cfg.model_config, num_critics=2 if cfg.twin_q else 1)
        value = TwinCritic(cfg.model_config, num_critics=1, num_actions=1)
        self.actor, self.critic, self.value = actor, critic, value

        def adam(rate: Any, max_norm: Any) -> Any:
            # RLlib's IQL learner: torch's Adam with eps=1e-7, gradients clipped by grad_clip.
            return make_optimizer(
                rate, max_norm, eps=1e-7, always_chain=True, clip_by=cfg.grad_clip_by
            )

        optimizers = IQLOptimizers(
            actor=make_injected_optimizer(adam, cfg.actor_lr, cfg.grad_clip),
            critic=make_injected_optimizer(adam, cfg.critic_lr, cfg.grad_clip),
            value=make_injected_optimizer(adam, cfg.value_lr, cfg.grad_clip),
        )
        k_actor, k_critic, k_value = jax.random.split(key, 3)
        obs = jnp.zeros((1, *self._observation_shape()), jnp.float32)
        act = jnp.zeros((1, action_dim), jnp.float32)
        actor_params = run_once(actor.init, k_actor, obs)
        critic_params = run_once(critic.init, k_critic, obs, act)
        value_params = run_once(value.init, k_value, obs)
        init = IQLLearnerState(
            actor=actor_params,
            critic=critic_params,
            target_critic=jax.tree.map(jnp.copy, critic_params),
            value=value_params,
            actor_opt=run_once(optimizers.actor.init, actor_params),
            critic_opt=run_once(optimizers.critic.init, critic_params),
            value_opt=run_once(optimizers.value.init, value_params),
            steps=jnp.zeros((), jnp.int32),
        )
        learn = make_iql_learn(
            IQLNetworks(actor, critic, value, dist),
            optimizers,
            {"actor_lr": cfg.actor_lr, "critic_lr": cfg.critic_lr, "value_lr": cfg.value_lr},
            beta=float(cfg.beta),
            expectile=float(cfg.expectile),
        )
        update_target = make_iql_target_update(float(cfg.tau), int(cfg.target_network_update_freq))
        learner = ReplayLearner(init, learn, update_target, IQL_METRICS)
        return make_sac_policy_parts(actor, dist, self.action_space), learner


__all__ = ["IQL", "IQLConfig"]
