"""PPO: config (RLlib's names and defaults) and the algorithm that wires runners to the learner."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import jax.numpy as jnp

from rljax.algorithms.actor_critic.policy import (
    POLICY_ID,
    RECURRENT_LIMITS,
    build_policy,
    make_actor_critic_parts,
    recurrent_refusal,
    recurrent_spec_of,
)
from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.algorithm_config import UNSET, AlgorithmConfig
from rljax.algorithms.on_policy import OnPolicyAlgorithm
from rljax.algorithms.ppo.learner import (
    PPO_POPULATION_SETTINGS,
    PPOBatch,
    PPOHyperparams,
    PPOTrainState,
    make_injected_ppo_optimizer,
    make_ppo_postprocess,
    make_ppo_update,
)
from rljax.algorithms.ppo.losses import VF_CLIP_MODES
from rljax.algorithms.ppo.ppo_learner import PPOLearner, learning_rate_scales, make_loss_hook
from rljax.algorithms.ppo.recurrent import (
    make_recurrent_policy_parts,
    make_sequence_postprocess,
    sequence_apply,
)
from rljax.algorithms.settings import MAX_NUM_EPOCHS, Setting
from rljax.execution.loop import LearnerFactory
from rljax.execution.parts import PolicyParts
from rljax.learners.hyperparams import dynamic_settings, with_hyperparams
from rljax.types import Transition
from rljax.utils import once
from rljax.utils.checks import Bool, Choice, Int, Number
from rljax.utils.errors import ConfigError
from rljax.utils.jit import run_once
from rljax.utils.schedules import NumberOrSchedule, is_schedule, schedule_start

logger = logging.getLogger("rljax")

# Minibatch updates per iteration (num_epochs x minibatches per epoch), all inside one jitted
# call: RLlib's defaults (30 epochs of 4,000 rows in minibatches of 128) run 930.
MAX_MINIBATCH_UPDATES = 100_000


class PPOConfig(AlgorithmConfig):
    """PPO's config; defaults follow RLlib's new API stack.

    Example:
        ```python
        from rljax.algorithms.ppo import PPOConfig

        algo = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_envs_per_env_runner=16)
            .training(lr=3e-4, num_epochs=6, minibatch_size=128)
            .build_algo()
        )
        print(algo.train()["env_runners"]["episode_return_mean"])
        ```
    """

    algo_name: ClassVar[str] = "PPO"
    takes_env_to_module_connector: ClassVar[bool] = True
    has_recurrent_policies: ClassVar[bool] = True
    samples_complete_episodes: ClassVar[bool] = True

    # RLlib's PPO defaults. The learner settings (per_module) may differ per policy.
    lr = AlgorithmConfig.lr.replace(
        default=5e-5,
        per_module=True,
        check=NumberOrSchedule(Number(0), point=Number(0)),
        checked_on_set=True,
        doc="Adam's learning rate, or RLlib's schedule [[0, lr0], [env_step, lr1], ...] "
        "(linear in lifetime env steps sampled; after the first point the rates may be 0, "
        "to anneal to 0).",
    )
    grad_clip = AlgorithmConfig.grad_clip.replace(per_module=True)
    model_config = AlgorithmConfig.model_config.replace(per_module=True)
    gamma = AlgorithmConfig.gamma.replace(per_module=True)
    lambda_ = Setting(1.0, Number(0, 1), "GAE's lambda.", per_module=True)
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
        "The value loss (a squared error) is clipped at this; None: not clipped. "
        "vf_clip_mode='prediction' clips the value prediction instead.",
        per_module=True,
    )
    vf_clip_mode = Setting(
        "squared_error",
        Choice(VF_CLIP_MODES),
        "What vf_clip_param clips (not an RLlib setting): 'squared_error', RLlib's, clips the "
        "value loss, a squared error, at vf_clip_param; 'prediction', PPO2's (PureJaxRL's, "
        "CleanRL's, Stable-Baselines3's clip_range_vf), keeps the value prediction within "
        "vf_clip_param of the sampling policy's and takes the larger of the clipped and "
        "unclipped squared errors.",
        per_module=True,
    )
    vf_loss_coeff = Setting(1.0, Number(0), "The value loss's weight.", per_module=True)
    entropy_coeff = Setting(
        0.0,
        NumberOrSchedule(Number(0)),
        "The entropy bonus's weight, or a schedule [[0, c0], [env_step, c1], ...].",
        per_module=True,
        checked_on_set=True,
    )
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
        lr: float | list[list[float]] = UNSET,
        gamma: float = UNSET,
        train_batch_size_per_learner: int = UNSET,
        train_batch_size: int | None = UNSET,
        grad_clip: float | None = UNSET,
        grad_clip_by: str = UNSET,
        learner_class: type | None = UNSET,
        learner_config_dict: dict[str, Any] | None = UNSET,
        lambda_: float = UNSET,
        use_gae: bool = UNSET,
        clip_param: float = UNSET,
        vf_clip_param: float | None = UNSET,
        vf_clip_mode: str = UNSET,
        vf_loss_coeff: float = UNSET,
        entropy_coeff: float | list[list[float]] = UNSET,
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

    def get_default_learner_class(self) -> type:
        """``PPOLearner``: the learner class a ``learner_class`` subclasses (RLlib's
        ``get_default_learner_class``)."""
        return PPOLearner

    def _validate_recurrent(self) -> None:
        why = recurrent_refusal(self)
        if why is not None:
            raise ConfigError(f"model_config use_lstm=True with {why}: {RECURRENT_LIMITS}")

    def _update_rows(self) -> int:
        """A minibatch of every learner passes the networks together."""
        return self.minibatch_size * self.num_learner_shards

    def validate(self) -> None:
        super().validate()
        if self.is_multi_agent:
            for pid in self.policies or {}:
                module = self.module_config(pid)
                for name in PPO.dynamic_settings:
                    if is_schedule(getattr(module, name)):
                        raise ConfigError(
                            f"{name} of policy {pid!r} is a schedule; multi-agent PPO takes "
                            "numbers (schedules train single-agent PPO)"
                        )
        if self.model_config.use_lstm:
            self._validate_recurrent()
        if not (self.use_gae and self.use_critic):
            raise ConfigError(
                f"use_gae={self.use_gae}, use_critic={self.use_critic}: rljax's PPO always uses "
                "GAE and a critic; both must stay True"
            )
        sampled, wanted = self.sampled_batch_size, self.total_train_batch_size
        if sampled < wanted and once.first_time("ppo_rounds", f"{sampled}<{wanted}"):
            logger.warning(
                "rollout_fragment_length=%r x %d sub-envs samples %d env steps per iteration, "
                "fewer than train_batch_size=%d: RLlib's PPO samples rounds of fragments until "
                "it has the train batch, rljax trains on one round; set "
                "rollout_fragment_length='auto' (or larger) for the batch you asked for",
                self.rollout_fragment_length,
                self.envs_per_step,
                sampled,
                wanted,
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


# PPO's policy parts are the shared actor-critic's (IMPALA and APPO build the same).
make_ppo_policy_parts = make_actor_critic_parts


class PPO(OnPolicyAlgorithm):
    """Proximal Policy Optimization on EnvPool (fused into jit) or gymnasium vector envs."""

    config_class = PPOConfig
    # Measured faster on a one-thread CPU client with a dense model on 2 cores
    # (``rljax.utils.xla_threads.choose_at_build``; ``benchmarks/xla_cpu_threads.py``).
    xla_cpu_one_thread = True
    config: PPOConfig
    parts: PolicyParts[PPOTrainState]
    state: PPOTrainState
    # The learner of config.learner_class (built with the config), or None: PPO's own loss.
    learner: PPOLearner | None = None

    @classmethod
    def multi_agent_class(cls) -> type[Algorithm]:
        from rljax.algorithms.ppo.multi_agent import MultiAgentPPO

        return MultiAgentPPO

    population_settings: ClassVar[tuple[str, ...]] = PPO_POPULATION_SETTINGS
    population_state_settings: ClassVar[tuple[str, ...]] = ("kl_coeff",)

    def _setup(self) -> None:
        cfg = self.config
        self._dist, params, key = self._init_actor_critic()
        self.batch_size = cfg.sampled_batch_size
        num_shards = cfg.num_learner_shards
        self.hp = PPOHyperparams.from_config(
            self._static_config(), num_shards, self.batch_size // num_shards
        )
        # Built once; the update writes each iteration's rate (and a population's clip) in
        # its state.
        self._optimizer = make_injected_ppo_optimizer(cfg.lr, cfg.grad_clip, cfg.grad_clip_by)
        # Adam's state does not depend on the rate: equal for every trial of a population (the
        # injected values are set after: the cached program holds the first trial's).
        opt_state = run_once(
            self._optimizer.init, params, cache_key=("ppo_injected_optimizer", bool(cfg.grad_clip))
        )
        opt_state = with_hyperparams(
            opt_state,
            learning_rate=schedule_start(cfg.lr),
            max_norm=cfg.grad_clip if cfg.grad_clip else None,
        )
        self.state = PPOTrainState(
            params=params,
            opt_state=opt_state,
            kl_coeff=jnp.asarray(cfg.kl_coeff, jnp.float32),
            step=jnp.zeros((), jnp.int32),
            key=key,
            env_steps=jnp.zeros((), jnp.int32),
        )
        if hasattr(self.module, "initial_state"):  # use_lstm, or a user module with a state
            if cfg.batch_mode == "complete_episodes":
                raise ConfigError(
                    "batch_mode='complete_episodes' with a recurrent module: recurrent PPO "
                    "trains on fixed-length sequences; use batch_mode='truncate_episodes'"
                )
            if cfg.learner_class is not None:
                raise ConfigError(
                    f"learner_class={cfg.learner_class.__name__} with a recurrent module: a "
                    "learner class's loss trains non-recurrent PPO only"
                )
            why = recurrent_refusal(cfg, user_module=False)
            if why is not None:
                raise ConfigError(f"a recurrent module with {why}: {RECURRENT_LIMITS}")
            self._setup_recurrent()
            return
        self.parts = make_ppo_policy_parts(
            self.module.apply, self._dist, self.action_space, cfg.clip_actions
        )
        postprocess, update = self._learner_functions(self.population_values())
        self._setup_execution(postprocess, update)

    def _setup_recurrent(self) -> None:
        """``use_lstm``: acting with a state per sub-env, training on sequences
        (``rljax.algorithms.ppo.recurrent``)."""
        cfg = self.config
        seq_len = cfg.model_config.max_seq_len
        spec = recurrent_spec_of(self.module, self.action_space)
        self.parts = make_recurrent_policy_parts(
            self.module.apply, spec, self._dist, self.action_space, cfg.clip_actions
        )
        fragment = cfg.get_rollout_fragment_length()
        num_seqs = cfg.total_num_envs * -(-fragment // seq_len)
        hp = dataclasses.replace(
            self.hp,
            minibatch_size=max(1, cfg.minibatch_size // seq_len),
            shard_size=num_seqs,
        )
        values = self.population_values()
        update = make_ppo_update(
            sequence_apply(self.module.apply),
            self._dist,
            self._optimizer,
            hp,
            dynamic=dynamic_settings({k: values[k] for k in self.dynamic_settings}),
            sequence_len=seq_len,
            flat_params=False,  # per-leaf steps: the LSTM learning test was measured with them
        )
        postprocess = make_sequence_postprocess(hp, cfg.total_num_envs, seq_len)
        self._setup_execution(postprocess, update)

    def _learner_factory(self, hp: PPOHyperparams | None = None) -> LearnerFactory:
        """PPO's ``values -> (postprocess, update)``, closed over the frozen record (``hp``:
        another one's sizes), the network, the distribution and the optimizer built once
        (never the algorithm)."""
        return functools.partial(
            ppo_learner_functions,
            self.hp if hp is None else hp,
            self.config.total_num_envs,
            self.module.apply,
            self._dist,
            self._optimizer,
            tuple(self.dynamic_settings),
            **self._learner_class_parts(),
        )

    def _update_for_rows(self, rows: int) -> Callable[..., Any]:
        hp = dataclasses.replace(
            self.hp, shard_size=rows, skip_empty_minibatches=True, full_minibatches_only=True
        )
        return self._learner_factory(hp)(self.population_values())[1]

    def _batch_unit(self) -> int:
        return self.hp.minibatch_size

    def _learner_class_parts(self) -> dict[str, Any]:
        """What ``config.learner_class`` (a ``PPOLearner`` subclass, built once with the
        config) gives the update: its loss (``loss_hook``) and, where it registers optimizers
        of its own, each parameter's learning rate relative to ``lr`` (``update_scale``);
        nothing for PPO's own loss and optimizer."""
        learner_class = self.config.learner_class
        if learner_class is None:
            return {}
        if self.learner is None:
            self.learner = learner_class(config=self.config)
        scales = learning_rate_scales(
            self.learner, POLICY_ID, self.state.params[POLICY_ID], self.config
        )
        return {
            "loss_hook": make_loss_hook(self.learner, POLICY_ID, self.config, self._dist),
            "update_scale": None if scales is None else {POLICY_ID: scales},
        }


def ppo_learner_functions(
    hp: PPOHyperparams,
    total_num_envs: int,
    apply: Callable[..., Any],
    dist: Any,
    optimizer: Any,
    dynamic_names: tuple[str, ...],
    values: Mapping[str, Any],
    loss_hook: Callable[..., Any] | None = None,
    update_scale: Any = None,
) -> tuple[Callable[[Transition], PPOBatch], Callable[..., Any]]:
    """PPO's postprocess (GAE) and update with ``values`` of the population settings: numbers
    or schedules for one run, traced scalars or ``SchedulePoints`` for a trial of a
    population. The dynamic ones (``dynamic_names``, and ``grad_clip``) reach the update as
    one mapping, evaluated there once per update; the others replace the frozen record's.
    ``loss_hook`` and ``update_scale``: a learner class's loss and per-parameter learning
    rates (``make_ppo_update``)."""
    hp = dataclasses.replace(
        hp,
        gamma=values["gamma"],
        lambda_=values["lambda_"],
        kl_target=values["kl_target"],
        loss=hp.loss._replace(
            clip_param=values["clip_param"],
            vf_clip_param=values["vf_clip_param"],
            vf_loss_coeff=values["vf_loss_coeff"],
        ),
    )
    dynamic = dynamic_settings({k: values[k] for k in (*dynamic_names, "grad_clip")})
    return (
        make_ppo_postprocess(hp, total_num_envs),
        make_ppo_update(
            apply,
            dist,
            optimizer,
            hp,
            dynamic=dynamic,
            # Per-array clipping needs the gradients per array, not as one vector.
            flat_params=hp.grad_clip_by != "norm",
            loss_hook=loss_hook,
            update_scale=update_scale,
        ),
    )


__all__ = ["POLICY_ID", "PPO", "PPOConfig", "build_policy", "make_ppo_policy_parts"]
