"""APPO: IMPALA with a target policy and PPO's clipped surrogate (RLlib's APPO, new API stack).

V-trace's ratios use the target ("old") policy, a copy of the parameters moved every
``target_network_update_freq x circular_buffer_num_batches x circular_buffer_iterations_per_batch``
updates (RLlib's unit); the policy term is PPO's clipped surrogate on
``min(mu / pi_old, target_worker_clipping) * pi / mu`` (``impala/losses.py: appo_loss``), with an
optional adaptive KL(pi_old || pi) penalty. With ``use_circular_buffer`` (the default, as
RLlib's) each train batch serves ``circular_buffer_iterations_per_batch`` updates, back to back
inside the jitted update: what RLlib's circular buffer of the last
``circular_buffer_num_batches`` batches does for a learner that keeps up with its runners, as
rljax's does by construction (``learners/circular.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from rljax.algorithms.algorithm_config import UNSET
from rljax.algorithms.impala.impala import IMPALA, IMPALAConfig
from rljax.algorithms.impala.learner import APPOHyperparams, APPOTrainState, make_appo_update
from rljax.algorithms.settings import Setting, frozen_from_config
from rljax.utils.checks import Bool, Int, Number


class APPOConfig(IMPALAConfig):
    """APPO's config; defaults follow RLlib's new API stack.

    Each train batch serves ``circular_buffer_iterations_per_batch`` updates (2 by default),
    as RLlib's circular buffer of ``circular_buffer_num_batches`` (8) batches gives a learner
    that keeps up with its runners; ``use_circular_buffer=False`` trains on each batch once.

    Example:
        ```python
        from rljax.algorithms.appo import APPOConfig

        algo = (
            APPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=2, num_envs_per_env_runner=8)
            .training(use_kl_loss=True)
            .build_algo()
        )
        ```
    """

    algo_name: ClassVar[str] = "APPO"

    vf_loss_coeff = IMPALAConfig.vf_loss_coeff.replace(default=0.5)
    entropy_coeff = IMPALAConfig.entropy_coeff.replace(default=0.01)
    clip_param = Setting(
        0.4,
        Number(0, low_open=True),
        "The surrogate's clip range: the ratio is clipped to [1 - clip_param, 1 + clip_param].",
        per_module=True,
    )
    use_kl_loss = Setting(
        False, Bool(), "Add the KL(target policy || policy) penalty.", per_module=True
    )
    kl_coeff = Setting(
        1.0,
        Number(0),
        "The KL penalty's initial weight, adapted after every update towards kl_target.",
        per_module=True,
    )
    kl_target = Setting(
        0.01, Number(0, low_open=True), "The KL the adaptive kl_coeff aims at.", per_module=True
    )
    target_network_update_freq = Setting(
        2,
        Int(1),
        "Moves of the target policy, in RLlib's unit: every freq x circular_buffer_num_batches "
        "x circular_buffer_iterations_per_batch gradient steps (with or without the buffer).",
        per_module=True,
    )
    tau = Setting(
        1.0,
        Number(0, 1, low_open=True),
        "The target policy moves tau of the way to the current one (1: a copy).",
        per_module=True,
    )
    target_worker_clipping = Setting(
        2.0,
        Number(0, low_open=True),
        "The importance ratio behaviour / target policy is clipped to this in the surrogate.",
        per_module=True,
    )
    use_circular_buffer = Setting(
        True,
        Bool(),
        "IMPACT's circular buffer: each train batch serves circular_buffer_iterations_per_batch "
        "updates (a learner that keeps up with its runners, as rljax's, only ever finds the "
        "newest batch live in RLlib's buffer); False: one update per batch.",
        per_module=True,
    )
    circular_buffer_num_batches = Setting(
        8,
        Int(1),
        "N: train batches RLlib's circular buffer holds; here it sets the unit of "
        "target_network_update_freq (no batch but the newest is ever live, see "
        "use_circular_buffer).",
        per_module=True,
    )
    circular_buffer_iterations_per_batch = Setting(
        2, Int(1), "K: updates each train batch serves.", per_module=True
    )

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or APPO)

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
        vtrace: bool = UNSET,
        vtrace_clip_rho_threshold: float = UNSET,
        vtrace_clip_pg_rho_threshold: float = UNSET,
        lambda_: float = UNSET,
        vf_loss_coeff: float = UNSET,
        entropy_coeff: float | list[list[float]] = UNSET,
        broadcast_interval: int = UNSET,
        learner_queue_size: int = UNSET,
        opt_type: str = UNSET,
        decay: float = UNSET,
        momentum: float = UNSET,
        epsilon: float = UNSET,
        num_epochs: int = UNSET,
        minibatch_size: int | None = UNSET,
        shuffle_batch_per_epoch: bool = UNSET,
        num_gpu_loader_threads: int = UNSET,
        clip_param: float = UNSET,
        use_kl_loss: bool = UNSET,
        kl_coeff: float = UNSET,
        kl_target: float = UNSET,
        target_network_update_freq: int = UNSET,
        tau: float = UNSET,
        target_worker_clipping: float = UNSET,
        use_circular_buffer: bool = UNSET,
        circular_buffer_num_batches: int = UNSET,
        circular_buffer_iterations_per_batch: int = UNSET,
        **kwargs: Any,
    ) -> APPOConfig:
        """Sets APPO's training settings (RLlib's names)."""
        return self._set("training", locals())


class APPO(IMPALA):
    """APPO: IMPALA's loop and networks, the surrogate against a target policy."""

    config_class = APPOConfig
    # Measured faster on a one-thread CPU client with a dense model on 2 cores
    # (``rljax.utils.xla_threads.choose_at_build``; ``benchmarks/xla_cpu_threads.py``).
    xla_cpu_one_thread = True
    config: APPOConfig

    @classmethod
    def multi_agent_class(cls) -> type[Any]:
        from rljax.algorithms.impala.multi_agent import MultiAgentAPPO

        return MultiAgentAPPO

    def _learner(
        self,
        apply: Callable[..., Any],
        dist: Any,
        optimizer: Any,
        params: Any,
        opt_state: Any,
        key: Any,
        dynamic: Any,
    ) -> Any:
        hp = frozen_from_config(
            APPOHyperparams,
            self._static_config(),
            minibatches_per_batch=self.config.minibatches_per_batch,
            minibatch_size=self.config.learners_minibatch_size,
        )
        state = APPOTrainState(
            params=params,
            opt_state=opt_state,
            # Its own buffers: the update donates the state.
            target_params=jax.tree.map(jnp.copy, params),
            kl_coeff=jnp.asarray(self.config.kl_coeff, jnp.float32),
            step=jnp.zeros((), jnp.int32),
            key=key,
            env_steps=jnp.zeros((), jnp.int32),
        )
        return state, make_appo_update(apply, dist, optimizer, hp, dynamic=dynamic)


__all__ = ["APPO", "APPOConfig"]
