"""IMPALA: config (RLlib's names and defaults) and the algorithm, V-trace on the on-policy loop.

With ``num_env_runners >= 1`` the runner threads sample without pause, each with the newest
weights it has received, held back only when ``max_requests_in_flight_per_env_runner`` finished
fragments wait for the learner. An update takes the first fragments ready from any runners
(``train_batch_size_per_learner`` env steps' worth), so a slow runner delays no one, and the
learner corrects for the lag with V-trace (``rljax/ops/vtrace.py``). Weights reach the runners
every ``broadcast_interval`` updates. With ``num_learners=0`` the update runs in the driver
(sampling still overlaps it, in the runner threads); with ``num_learners >= 1`` in a learner
thread of its own, so that the driver's work between iterations (results, evaluation,
checkpoints) overlaps learning too, and one ``train()`` returns every update finished since the
last (RLlib's asynchronous iteration).

With an EnvPool env and ``num_env_runners=0`` sampling runs in the driver, fused with the update
into one jitted program (synchronous, as RLlib's local runner): each iteration samples
``rollout_fragment_length`` env steps from every sub-env and trains on them: one gradient step
at RLlib's defaults, ``num_epochs`` passes of ``minibatch_size`` minibatches when set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import jax.numpy as jnp
import optax

from rljax.algorithms.actor_critic.policy import (
    RECURRENT_LIMITS,
    make_actor_critic_parts,
    make_recurrent_policy_parts,
    recurrent_refusal,
    recurrent_spec_of,
)
from rljax.algorithms.algorithm_config import UNSET, AlgorithmConfig
from rljax.algorithms.impala.learner import (
    IMPALAHyperparams,
    IMPALATrainState,
    impala_optimizer,
    make_impala_update,
    make_vtrace_postprocess,
)
from rljax.algorithms.impala.recurrent import (
    make_recurrent_vtrace_postprocess,
    time_major_sequence_apply,
)
from rljax.algorithms.on_policy import FreeRunning, OnPolicyAlgorithm
from rljax.algorithms.settings import MAX_NUM_EPOCHS, Setting, frozen_from_config
from rljax.execution.parts import PolicyParts
from rljax.learners.hyperparams import (
    dynamic_settings,
    with_hyperparams,
)
from rljax.utils.checks import Bool, Choice, Int, Number
from rljax.utils.errors import ConfigError
from rljax.utils.jit import run_once
from rljax.utils.schedules import NumberOrSchedule, schedule_start


class IMPALAConfig(AlgorithmConfig):
    """IMPALA's config; defaults follow RLlib's new API stack.

    With runner threads (``num_env_runners >= 1``), an update's batch is
    ``fragments_per_batch`` fragments (``train_batch_size_per_learner`` over a fragment's env
    steps, ``rollout_fragment_length x num_envs_per_env_runner``: 10 fragments of 50 steps for
    RLlib's 500 with one sub-env per runner), the first ready from any runners. On the fused
    path (``num_env_runners=0``) one iteration samples ``rollout_fragment_length`` env steps
    from every sub-env and trains on them. With ``rollout_fragment_length="auto"`` the
    fragment is sized from ``train_batch_size_per_learner`` instead. An update is one gradient
    step (RLlib's defaults), or ``num_epochs`` passes of minibatches of ``minibatch_size`` env
    steps per learner, whole fragments (``impala.learner.make_epochs``).

    Example:
        ```python
        from rljax.algorithms.impala import IMPALAConfig

        algo = (
            IMPALAConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=2, num_envs_per_env_runner=8)
            .build_algo()
        )
        print(algo.train()["env_runners"]["episode_return_mean"])
        ```
    """

    algo_name: ClassVar[str] = "IMPALA"
    takes_env_to_module_connector: ClassVar[bool] = True

    rollout_fragment_length = AlgorithmConfig.rollout_fragment_length.replace(
        default=50,
        doc="Env steps per sub-env per iteration, and the length of V-trace's rows (at most "
        '1,000,000); "auto": from train_batch_size_per_learner.',
    )
    max_requests_in_flight_per_env_runner = Setting(
        1,
        Int(1),
        "With runner threads: finished fragments a runner may hold for the learner before it "
        "waits (RLlib's requests in flight). Runners never wait for weights; the lag that "
        "results is reported as policy_lag_mean/max.",
        section="env_runners",
    )
    lr = AlgorithmConfig.lr.replace(
        default=5e-4,
        check=NumberOrSchedule(Number(0)),
        checked_on_set=True,
        doc="The optimizer's learning rate, or RLlib's schedule [[0, lr0], [env_step, lr1], "
        "...] (linear in lifetime env steps sampled).",
        per_module=True,
    )
    train_batch_size_per_learner = AlgorithmConfig.train_batch_size_per_learner.replace(default=500)
    grad_clip = AlgorithmConfig.grad_clip.replace(default=40.0, per_module=True)
    # What one policy of a multi-agent config may override (algorithm_config_overrides_per_
    # module): the settings of its learner.
    model_config = AlgorithmConfig.model_config.replace(per_module=True)
    gamma = AlgorithmConfig.gamma.replace(per_module=True)
    vtrace = Setting(True, Bool(), "Use V-trace; IMPALA and APPO always do (keep True).")
    vtrace_clip_rho_threshold = Setting(
        1.0,
        Number(0, low_open=True),
        "rho_bar: the importance ratios are clipped to this in V-trace's value targets.",
        per_module=True,
    )
    vtrace_clip_pg_rho_threshold = Setting(
        1.0,
        Number(0, low_open=True),
        "The importance ratios are clipped to this in the policy-gradient advantages.",
        per_module=True,
    )
    lambda_ = Setting(
        1.0,
        Number(0, 1),
        "The traces' lambda: c_t = lambda * min(1, rho_t); 1 is IMPALA's.",
        per_module=True,
    )
    vf_loss_coeff = Setting(0.5, Number(0), "The value loss's weight.", per_module=True)
    entropy_coeff = Setting(
        0.01,
        NumberOrSchedule(Number(0)),
        "The entropy bonus's weight, or a schedule [[0, c0], [env_step, c1], ...].",
        checked_on_set=True,
        per_module=True,
    )
    broadcast_interval = Setting(
        1,
        Int(1),
        "Updates between weight broadcasts to the runner threads.",
    )
    learner_queue_size = Setting(
        3,
        Int(1),
        "With a learner thread (num_learners >= 1): updates it may finish before train() "
        "collects them; then it waits, so a run left alone between train() calls stops. The "
        "fragments waiting for the learner are bounded by "
        "max_requests_in_flight_per_env_runner.",
    )
    opt_type = Setting(
        "adam",
        Choice(("adam", "rmsprop")),
        'The optimizer: "adam", or "rmsprop" with decay, momentum and epsilon (as the IMPALA '
        "paper's).",
        per_module=True,
    )
    decay = Setting(
        0.99, Number(0, 1), "RMSProp's decay of its squared-gradient average.", per_module=True
    )
    momentum = Setting(0.0, Number(0), "RMSProp's momentum (0: none).", per_module=True)
    epsilon = Setting(
        0.1,
        Number(0, low_open=True),
        "RMSProp's epsilon, inside the square root (TensorFlow's RMSProp, the IMPALA paper's, "
        "whose squared-gradient average starts at 1).",
        per_module=True,
    )
    num_epochs = Setting(
        1,
        Int(1, MAX_NUM_EPOCHS),
        "Passes over each train batch (RLlib's); 1: one gradient step per batch.",
        per_module=True,
    )
    minibatch_size = Setting[int | None](
        None,
        Int(1, optional=True),
        "Env steps of each gradient step's minibatch, whole fragments (a multiple of "
        "rollout_fragment_length, as RLlib requires); None: the whole train batch.",
    )
    shuffle_batch_per_epoch = Setting(
        False,
        Bool(),
        "Take each pass's minibatches (whole fragments) in a new random order.",
    )
    num_gpu_loader_threads = Setting(
        8,
        Int(0),
        "Accepted for compatibility; does nothing here: batches are already on the learner's "
        "device.",
    )

    has_recurrent_policies: ClassVar[bool] = True

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or IMPALA)

    def env_runners(
        self,
        *,
        num_env_runners: int = UNSET,
        num_envs_per_env_runner: int = UNSET,
        explore: bool = UNSET,
        gym_env_vectorize_mode: Any = UNSET,
        rollout_fragment_length: int | str = UNSET,
        num_gpus_per_env_runner: float = UNSET,
        num_cpus_per_env_runner: float = UNSET,
        async_batch_size: int | None = UNSET,
        sample_async: bool = UNSET,
        sample_timeout_s: float | None = UNSET,
        env_to_module_connector: Any = UNSET,
        batch_mode: str = UNSET,
        max_requests_in_flight_per_env_runner: int = UNSET,
        **kwargs: Any,
    ) -> IMPALAConfig:
        """Sets the sampling knobs."""
        return self._set("env_runners", locals())

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
        **kwargs: Any,
    ) -> IMPALAConfig:
        """Sets IMPALA's training settings (RLlib's names)."""
        return self._set("training", locals())

    @property
    def fragments_per_batch(self) -> int:
        """With runner threads: the fragments of one update (of ``rollout_fragment_length x``
        a runner's sub-envs per step), ``train_batch_size_per_learner x num_learners`` env
        steps rounded to whole fragments, at least one. 1 on the fused path."""
        if self.num_env_runners == 0:
            return 1
        per_fragment = self.get_rollout_fragment_length() * (self.envs_per_step // self.num_runners)
        return max(1, round(self.total_train_batch_size / per_fragment))

    @property
    def sampled_batch_size(self) -> int:
        """Env steps of one update: ``fragments_per_batch`` fragments with runner threads, one
        fragment of every sub-env on the fused path."""
        if self.num_env_runners == 0:
            return super().sampled_batch_size
        per_runner_step = self.envs_per_step // self.num_runners
        return self.fragments_per_batch * self.get_rollout_fragment_length() * per_runner_step

    def _update_rows(self) -> int:
        """A gradient step passes its minibatch (over all learners; the whole sampled batch
        without one) through the networks."""
        return min(self.learners_minibatch_size or self.sampled_batch_size, self.sampled_batch_size)

    @property
    def learners_minibatch_size(self) -> int | None:
        """Env steps of one gradient step over all learners: ``minibatch_size`` is each
        learner's (RLlib's), and the batch is split over the learners along time."""
        if self.minibatch_size is None:
            return None
        return self.minibatch_size * self.num_learner_shards

    @property
    def minibatches_per_batch(self) -> int:
        """Gradient steps of one pass over a train batch: ``sampled_batch_size`` over the
        learners' minibatch (1 without minibatches, or with one as big as the batch)."""
        size = self.learners_minibatch_size
        if size is None or size >= self.sampled_batch_size:
            return 1
        return self.sampled_batch_size // size

    def _validate_minibatches(self) -> None:
        """RLlib's rule (each learner's minibatch whole fragments, at most the train batch) and
        rljax's layout's: a minibatch (over all learners) smaller than the sampled batch splits
        it evenly into lock-step columns. (On the fused path an update's batch is one fragment
        of every sub-env, which may be smaller than ``train_batch_size_per_learner``: a
        minibatch at least that big is the whole batch.)"""
        size = self.minibatch_size
        if size is None:
            return
        fragment = self.get_rollout_fragment_length()
        if size % fragment or size > self.total_train_batch_size:
            raise ConfigError(
                f"minibatch_size={size} must be None or a multiple of rollout_fragment_length="
                f"{fragment} and at most the train batch ({self.total_train_batch_size} env "
                "steps), as RLlib requires"
            )
        batch, learners = self.sampled_batch_size, self.learners_minibatch_size or size
        if learners >= batch:
            return
        if batch % learners:
            raise ConfigError(
                f"minibatch_size={size} (x {self.num_learner_shards} learner(s): {learners} env "
                f"steps) does not divide an update's batch ({batch} env steps: {batch // fragment} "
                f"fragments of {fragment}) into whole minibatches; pick one whose fragments divide "
                "the batch's"
            )
        if self.envs_per_step != self.num_envs_per_env_runner * self.num_runners:
            raise ConfigError(
                f"minibatch_size={size} with first-ready batches (gym_env_vectorize_mode="
                f"{self.gym_env_vectorize_mode!r}, {self.envs_per_step // self.num_runners} of "
                f"{self.num_envs_per_env_runner} sub-envs a step): their fragments are not "
                "lock-step columns to split; use minibatch_size=None or lock-step sampling"
            )

    def _validate_multi_agent_vtrace(self) -> None:
        """What multi-agent IMPALA and APPO do not build (``impala/multi_agent.py``)."""
        if self.minibatch_size is not None:
            raise ConfigError(
                f"minibatch_size={self.minibatch_size} with a multi-agent config: multi-agent "
                f"{self.algo_name} trains each policy on its whole batch (num_epochs passes); "
                "use minibatch_size=None"
            )
        if self.num_learners > 1:
            raise ConfigError(
                f"num_learners={self.num_learners} with a multi-agent config: multi-agent "
                f"{self.algo_name} runs its stacked update on one learner device; use "
                "num_learners=0 or 1"
            )

    def validate(self) -> None:
        super().validate()
        if not self.vtrace:
            raise ConfigError(
                "vtrace=False: IMPALA and APPO always use V-trace (as RLlib's do); keep True"
            )
        if self.is_multi_agent:
            self._validate_multi_agent_vtrace()
        else:
            self._validate_minibatches()
        if self.model_config.use_lstm:
            why = recurrent_refusal(self)
            if why is not None:
                raise ConfigError(f"model_config use_lstm=True with {why}: {RECURRENT_LIMITS}")
        shards = self.num_learner_shards
        if shards > 1 and self.get_rollout_fragment_length() % shards:
            # The batch is [T, B] (or [T * N, 1]) and the learners split its leading axis.
            raise ConfigError(
                f"rollout_fragment_length={self.get_rollout_fragment_length()} does not divide "
                f"across num_learners={self.num_learners}: {self.algo_name}'s batch is split "
                "along time over the learners; pick a fragment length that is a multiple of "
                f"{shards}"
            )


class IMPALA(OnPolicyAlgorithm):
    """IMPALA: an actor-critic (PPO's networks) trained with V-trace on lagging samples."""

    config_class = IMPALAConfig
    config: IMPALAConfig
    parts: PolicyParts[Any]

    @classmethod
    def multi_agent_class(cls) -> type[Any]:
        from rljax.algorithms.impala.multi_agent import MultiAgentIMPALA

        return MultiAgentIMPALA

    def _setup(self) -> None:
        cfg = self.config
        dist, params, key = self._init_actor_critic()
        optimizer = self._make_optimizer()
        # The optimizer's state does not depend on the rate; the update writes each step's
        # (a schedule's value at the env steps trained on, or the number) in it.
        opt_state = with_hyperparams(
            run_once(optimizer.init, params), learning_rate=schedule_start(cfg.lr)
        )
        values = self.population_values()
        dynamic = dynamic_settings({k: values[k] for k in self.dynamic_settings})
        # A batch's lock-step columns: every sub-env of the fused rollout, or those of its
        # fragments (each fragment's sub-envs are streams of their own: RunnerGroup.sample_any).
        columns = cfg.total_num_envs
        if cfg.num_env_runners:
            columns = cfg.fragments_per_batch * cfg.num_envs_per_env_runner
        if hasattr(self.module, "initial_state"):  # use_lstm, or a user module with a state
            why = recurrent_refusal(cfg, user_module=False)
            if why is not None:
                raise ConfigError(f"a recurrent module with {why}: {RECURRENT_LIMITS}")
            spec = recurrent_spec_of(self.module, self.action_space)
            self.parts = make_recurrent_policy_parts(
                self.module.apply, spec, dist, self.action_space, cfg.clip_actions
            )
            # The learner's forward pass: the module over the batch's sequences.
            apply = time_major_sequence_apply(self.module.apply, cfg.model_config.max_seq_len)
            postprocess = make_recurrent_vtrace_postprocess(columns)
        else:
            self.parts = make_actor_critic_parts(
                self.module.apply, dist, self.action_space, cfg.clip_actions
            )
            apply = self.module.apply
            postprocess = make_vtrace_postprocess(columns)
        self.state, update = self._learner(apply, dist, optimizer, params, opt_state, key, dynamic)
        self._setup_execution(
            postprocess,
            update,
            free_running=FreeRunning(
                fragments_per_batch=cfg.fragments_per_batch,
                broadcast_interval=cfg.broadcast_interval,
                max_queued_fragments=cfg.max_requests_in_flight_per_env_runner,
                learner_thread=cfg.num_learners >= 1,
                max_pending_updates=cfg.learner_queue_size,
            ),
        )

    def _make_optimizer(self) -> optax.GradientTransformation:
        """The optimizer, built once (``impala_optimizer``)."""
        return impala_optimizer(self.config)

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
        """The initial learner state and the update (APPO overrides) with the forward pass
        ``apply``; ``optimizer`` is built once, ``dynamic`` the settings the update evaluates
        at the env steps trained on."""
        hp = frozen_from_config(
            IMPALAHyperparams,
            self._static_config(),
            minibatch_size=self.config.learners_minibatch_size,
        )
        state = IMPALATrainState(
            params=params,
            opt_state=opt_state,
            step=jnp.zeros((), jnp.int32),
            key=key,
            env_steps=jnp.zeros((), jnp.int32),
        )
        return state, make_impala_update(apply, dist, optimizer, hp, dynamic=dynamic)


__all__ = ["IMPALA", "IMPALAConfig"]
