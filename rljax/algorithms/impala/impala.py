"""IMPALA: config (RLlib's names and defaults) and the algorithm, V-trace on the on-policy loop.

Runner threads sample with the weights they last received, up to
``max_requests_in_flight_per_env_runner`` versions behind the learner, and the learner corrects
for the lag with V-trace (``rljax/ops/vtrace.py``). With an EnvPool env and
``num_env_runners=0`` sampling runs in the driver, fused with the update into one jitted
program (synchronous, as RLlib's local runner).

Each iteration trains on what it samples: ``rollout_fragment_length`` env steps from every
sub-env, one gradient step.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax.numpy as jnp

from rljax.algorithms.algorithm_config import UNSET, AlgorithmConfig
from rljax.algorithms.impala.learner import (
    IMPALAHyperparams,
    IMPALATrainState,
    make_impala_update,
    make_vtrace_postprocess,
)
from rljax.algorithms.on_policy import OnPolicyAlgorithm
from rljax.algorithms.ppo.ppo import make_ppo_policy_parts
from rljax.algorithms.settings import Setting, frozen_from_config
from rljax.execution.parts import PolicyParts
from rljax.learners.update import make_optimizer
from rljax.utils.checks import Bool, Int, Number
from rljax.utils.errors import ConfigError
from rljax.utils.jit import run_once


class IMPALAConfig(AlgorithmConfig):
    """IMPALA's config; defaults follow RLlib's new API stack.

    One iteration samples ``rollout_fragment_length`` env steps from every sub-env and takes one
    gradient step on them: the train batch is ``rollout_fragment_length x`` the sub-envs of all
    runners (10 sub-envs for RLlib's 500 with the default fragment of 50). With
    ``rollout_fragment_length="auto"`` the fragment is sized from
    ``train_batch_size_per_learner`` instead.

    Example::

        from rljax.algorithms.impala import IMPALAConfig

        algo = (
            IMPALAConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=2, num_envs_per_env_runner=8)
            .build_algo()
        )
        print(algo.train()["env_runners"]["episode_return_mean"])
    """

    algo_name: ClassVar[str] = "IMPALA"

    rollout_fragment_length = AlgorithmConfig.rollout_fragment_length.replace(
        default=50,
        doc="Env steps per sub-env per iteration, and the length of V-trace's rows (at most "
        '1,000,000); "auto": from train_batch_size_per_learner.',
    )
    max_requests_in_flight_per_env_runner = Setting(
        1,
        Int(1),
        "With runner threads: how many fragments a runner may sample ahead of the weights it "
        "acts with (the runner group's lag bound; the lag is reported as policy_lag_mean/max). "
        "RLlib's name for the requests a runner may have in flight.",
        section="env_runners",
    )
    lr = AlgorithmConfig.lr.replace(default=5e-4)
    train_batch_size_per_learner = AlgorithmConfig.train_batch_size_per_learner.replace(default=500)
    grad_clip = AlgorithmConfig.grad_clip.replace(default=40.0)
    vtrace = Setting(True, Bool(), "Use V-trace; IMPALA and APPO always do (keep True).")
    vtrace_clip_rho_threshold = Setting(
        1.0,
        Number(0, low_open=True),
        "rho_bar: the importance ratios are clipped to this in V-trace's value targets.",
    )
    vtrace_clip_pg_rho_threshold = Setting(
        1.0,
        Number(0, low_open=True),
        "The importance ratios are clipped to this in the policy-gradient advantages.",
    )
    lambda_ = Setting(
        1.0, Number(0, 1), "The traces' lambda: c_t = lambda * min(1, rho_t); 1 is IMPALA's."
    )
    vf_loss_coeff = Setting(0.5, Number(0), "The value loss's weight.")
    entropy_coeff = Setting(0.01, Number(0), "The entropy bonus's weight.")
    broadcast_interval = Setting(
        1,
        Int(1, 1),
        "Updates between weight broadcasts to the runners; the weights are published after "
        "every update here (keep 1).",
    )
    learner_queue_size = Setting(
        3,
        Int(1),
        "Accepted for compatibility: the runner group's bounded fragment queues (see "
        "max_requests_in_flight_per_env_runner) take the place of RLlib's learner queue.",
    )
    num_gpu_loader_threads = Setting(
        8,
        Int(0),
        "Accepted for compatibility; does nothing here: batches are already on the learner's "
        "device.",
    )

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or IMPALA)

    def env_runners(
        self,
        *,
        num_env_runners: int = UNSET,
        num_envs_per_env_runner: int = UNSET,
        gym_env_vectorize_mode: Any = UNSET,
        rollout_fragment_length: int | str = UNSET,
        num_gpus_per_env_runner: float = UNSET,
        num_cpus_per_env_runner: float = UNSET,
        async_batch_size: int | None = UNSET,
        sample_async: bool = UNSET,
        sample_timeout_s: float | None = UNSET,
        max_requests_in_flight_per_env_runner: int = UNSET,
        **kwargs: Any,
    ) -> IMPALAConfig:
        """Sets the sampling knobs."""
        return self._set("env_runners", locals())

    def training(
        self,
        *,
        lr: float = UNSET,
        gamma: float = UNSET,
        train_batch_size_per_learner: int = UNSET,
        train_batch_size: int | None = UNSET,
        grad_clip: float | None = UNSET,
        grad_clip_by: str = UNSET,
        vtrace: bool = UNSET,
        vtrace_clip_rho_threshold: float = UNSET,
        vtrace_clip_pg_rho_threshold: float = UNSET,
        lambda_: float = UNSET,
        vf_loss_coeff: float = UNSET,
        entropy_coeff: float = UNSET,
        broadcast_interval: int = UNSET,
        learner_queue_size: int = UNSET,
        num_gpu_loader_threads: int = UNSET,
        **kwargs: Any,
    ) -> IMPALAConfig:
        """Sets IMPALA's training settings (RLlib's names)."""
        return self._set("training", locals())

    def _update_rows(self) -> int:
        """An update passes the whole sampled batch through the networks."""
        return self.sampled_batch_size

    def validate(self) -> None:
        super().validate()
        if not self.vtrace:
            raise ConfigError(
                "vtrace=False: IMPALA and APPO always use V-trace (as RLlib's do); keep True"
            )
        if self.is_multi_agent:
            raise ConfigError(
                f"{self.algo_name} trains one policy here; multi-agent configs are not built yet"
            )


class IMPALA(OnPolicyAlgorithm):
    """IMPALA: an actor-critic (PPO's networks) trained with V-trace on lagging samples."""

    config_class = IMPALAConfig
    config: IMPALAConfig
    parts: PolicyParts[Any]

    def _setup(self) -> None:
        cfg = self.config
        dist, params, key = self._init_actor_critic()
        optimizer = make_optimizer(float(cfg.lr), cfg.grad_clip, flatten=True)
        opt_state = run_once(optimizer.init, params)
        self.state, update = self._learner(dist, optimizer, params, opt_state, key)
        self.parts = make_ppo_policy_parts(
            self.module.apply, dist, self.action_space, cfg.clip_actions
        )
        self._setup_execution(
            make_vtrace_postprocess(cfg.total_num_envs),
            update,
            max_policy_lag=cfg.max_requests_in_flight_per_env_runner,
        )

    def _learner(self, dist: Any, optimizer: Any, params: Any, opt_state: Any, key: Any) -> Any:
        """The initial learner state and the update (APPO overrides)."""
        hp = frozen_from_config(IMPALAHyperparams, self.config)
        state = IMPALATrainState(
            params=params, opt_state=opt_state, step=jnp.zeros((), jnp.int32), key=key
        )
        return state, make_impala_update(self.module.apply, dist, optimizer, hp)


__all__ = ["IMPALA", "IMPALAConfig"]
