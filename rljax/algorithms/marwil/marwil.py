"""MARWIL and BC: learning a policy from offline data (RLlib's ``MARWILConfig`` / ``BCConfig``).

The data are rows of env steps read from ``offline_data(input_=...)`` (Parquet files, as
``offline_data(output=...)`` records them: ``rljax.offline``). They are read once, when the
algorithm is built, and kept on the learner's device; each ``train()`` is one jitted program of
``dataset_num_iters_per_learner`` gradient steps (None: one pass over the data) on batches of
``train_batch_size_per_learner`` rows, drawn from a new permutation of the rows each call.

The value targets are the MARWIL paper's (and RLlib's old API stack's), GAE with
``lambda_ = 1``: the discounted rewards to the end of the row's episode in the data, plus the
discounted value of the last row's ``new_obs`` where the episode did not terminate there (with
the current value function). RLlib 2.60's new stack differs here: it turns each row into a
one-step episode, so its targets are ``r + gamma * V(s')``; rljax keeps the episodes the files
hold. The env named by ``.environment()`` gives the spaces and runs ``evaluate()``; training
steps no env.

Example:
    ```python
    from rljax.algorithms.marwil import BCConfig

    algo = (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_="/tmp/cartpole-expert")
        .training(lr=1e-3, train_batch_size_per_learner=1024)
        .build_algo()
    )
    algo.train()
    print(algo.evaluate()["env_runners"]["episode_return_mean"])
    ```
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any, ClassVar

import flax
import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.actor_critic.policy import POLICY_ID, make_actor_critic_parts
from rljax.algorithms.algorithm_config import UNSET, AlgorithmConfig
from rljax.algorithms.marwil.losses import MARWILBatch, marwil_loss
from rljax.algorithms.on_policy import OnPolicyAlgorithm
from rljax.algorithms.settings import Setting
from rljax.learners.update import gradient_step, make_optimizer
from rljax.offline.data import OfflineData, read_offline_data
from rljax.offline.learning import (
    OfflineLossEvaluation,
    offline_iteration,
    offline_refusal,
    updates_per_train,
)
from rljax.types import IterationResult
from rljax.utils.checks import Number
from rljax.utils.errors import ConfigError
from rljax.utils.schedules import is_schedule


def _only(allowed: float, why: str) -> Callable[[str, Any], float]:
    """A check taking one number (``allowed``) and refusing others with ``why``."""

    def check(name: str, value: Any) -> float:
        number = Number(0)(name, value)
        if number != allowed:
            raise ConfigError(f"{name}={value!r}: {why}")
        return float(allowed)

    return check


class MARWILConfig(AlgorithmConfig):
    """MARWIL's config (RLlib's names and defaults); ``beta=0`` is behaviour cloning.

    Example:
        ```python
        from rljax.algorithms.marwil import MARWILConfig

        config = (
            MARWILConfig()
            .environment("CartPole-v1")
            .offline_data(input_="/tmp/cartpole-data")
            .training(beta=1.0, lr=1e-4)
        )
        ```
    """

    algo_name: ClassVar[str] = "MARWIL"
    learns_offline: ClassVar[bool] = True
    evaluates_offline_loss: ClassVar[bool] = True

    lr = AlgorithmConfig.lr.replace(default=1e-4)
    train_batch_size_per_learner = AlgorithmConfig.train_batch_size_per_learner.replace(
        default=2000
    )
    lambda_ = Setting(
        1.0,
        _only(1.0, "rljax's MARWIL computes RLlib's default value targets, lambda_=1.0 only"),
        "GAE's lambda for the value targets; rljax's MARWIL takes RLlib's default, 1.0 (the "
        "discounted return to the episode's end in the data, bootstrapped where it was cut).",
    )
    beta = Setting(
        1.0,
        Number(0),
        "The advantage temperature of the exp(beta * A / sqrt(c2)) weights; 0: behaviour "
        "cloning (no value function is trained).",
    )
    bc_logstd_coeff = Setting(
        0.0,
        _only(0.0, "rljax's MARWIL has no log-std bonus; 0.0 only"),
        "RLlib's bonus on a Gaussian policy's log-std; rljax's MARWIL takes 0.0 only.",
    )
    moving_average_sqd_adv_norm_update_rate = Setting(
        1e-8,
        Number(0, 1),
        "The rate of the moving average c2 of the squared advantages.",
    )
    moving_average_sqd_adv_norm_start = Setting(
        100.0, Number(0, low_open=True), "The moving average c2's start."
    )
    vf_coeff = Setting(1.0, Number(0), "The value loss's weight.")

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or MARWIL)

    def training(
        self,
        *,
        lr: float = UNSET,
        gamma: float = UNSET,
        train_batch_size_per_learner: int = UNSET,
        train_batch_size: int | None = UNSET,
        grad_clip: float | None = UNSET,
        grad_clip_by: str = UNSET,
        learner_class: type | None = UNSET,
        learner_config_dict: dict[str, Any] | None = UNSET,
        lambda_: float = UNSET,
        beta: float = UNSET,
        bc_logstd_coeff: float = UNSET,
        moving_average_sqd_adv_norm_update_rate: float = UNSET,
        moving_average_sqd_adv_norm_start: float = UNSET,
        vf_coeff: float = UNSET,
        **kwargs: Any,
    ) -> MARWILConfig:
        """Sets MARWIL's training settings (RLlib's names)."""
        return self._set("training", locals())

    def validate(self) -> None:
        super().validate()
        refusal = _marwil_refusal(self)
        if refusal is not None:
            raise ConfigError(f"{self.algo_name}: {refusal}")


class BCConfig(MARWILConfig):
    """Behaviour cloning (RLlib's ``BCConfig``): MARWIL with ``beta=0``, learning
    ``-log pi(a|s)`` of the offline data's actions.

    Example:
        ```python
        from rljax.algorithms.marwil import BCConfig

        config = (
            BCConfig()
            .environment("CartPole-v1")
            .offline_data(input_="/tmp/cartpole-expert")
        )
        ```
    """

    algo_name: ClassVar[str] = "BC"

    beta = MARWILConfig.beta.replace(
        default=0.0,
        check=_only(0.0, "BC is MARWIL with beta=0; MARWILConfig weighs by advantages"),
        doc="0: behaviour cloning (BC takes 0 only; MARWILConfig weighs by advantages).",
    )

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or BC)


def _marwil_checks(config: Any) -> str | None:
    """MARWIL's own refusals (``offline_refusal`` makes the shared ones)."""
    if is_schedule(config.lr):
        return "lr schedules are not built; give one rate"
    if config.learner_class is not None:
        return "learner_class is not taken; the loss is MARWIL's"
    if config.model_config.get("use_lstm") or config.model_config.get("use_attention"):
        return "recurrent models are not built; it trains feed-forward policies"
    if config.env_to_module_connector is not None:
        return (
            "env_to_module connectors are not applied to offline rows; remove the connector "
            "(the data hold the env's observations)"
        )
    return None


def _marwil_refusal(config: Any) -> str | None:
    """Why ``config`` cannot train here, or None."""
    return offline_refusal(config, _marwil_checks)


@flax.struct.dataclass
class MARWILTrainState:
    """What the update changes. ``params`` maps the policy id to the Flax params."""

    params: Any
    opt_state: Any
    step: jax.Array
    key: jax.Array
    sqd_adv_norm: jax.Array  # the moving average c2 of the squared advantages
    connectors: Any = None  # none: no env-to-module connectors


LossFn = Callable[[Any, MARWILBatch, jax.Array], tuple[jax.Array, tuple[jax.Array, Any]]]


def make_marwil_loss(
    apply: Callable[..., Any], dist: Any, *, beta: float, vf_coeff: float, update_rate: float
) -> LossFn:
    """``loss_fn(params, batch, c2) -> (loss, (new_c2, metrics))``: RLlib's MARWIL loss (BC's
    with ``beta=0``) of the policy ``params[POLICY_ID]`` on ``batch``."""

    def loss_fn(
        params: Any, batch: MARWILBatch, c2: jax.Array
    ) -> tuple[jax.Array, tuple[jax.Array, dict[str, jax.Array]]]:
        logits, values = apply(params[POLICY_ID], batch.obs)
        logp = dist.log_prob(logits, batch.actions)
        if beta == 0.0:
            targets = values
        else:
            _, bootstrap = apply(params[POLICY_ID], batch.bootstrap_obs)
            targets = batch.returns + batch.discount * jax.lax.stop_gradient(bootstrap)
        return marwil_loss(
            logp, values, targets, c2, beta=beta, vf_coeff=vf_coeff, update_rate=update_rate
        )

    return loss_fn


def _batches(key: jax.Array, num_rows: int, batch_size: int, num_iters: int) -> jax.Array:
    """``[num_iters, batch_size]`` row indices: the rows in the order of new permutations."""
    reps = math.ceil(num_iters * batch_size / num_rows)
    order = jax.vmap(lambda k: jax.random.permutation(k, num_rows))(jax.random.split(key, reps))
    return order.reshape(-1)[: num_iters * batch_size].reshape(num_iters, batch_size)


def _batch(data: dict[str, Any], rows: jax.Array) -> MARWILBatch:
    return MARWILBatch(
        obs=data["obs"][rows],
        actions=data["actions"][rows],
        returns=data["returns"][rows],
        discount=data["discount"][rows],
        bootstrap_obs=data["new_obs"][data["last"][rows]],
    )


def make_marwil_train(
    loss_fn: LossFn,
    optimizer: Any,
    data: dict[str, Any],
    *,
    batch_size: int,
    num_iters: int,
) -> Callable[[MARWILTrainState], tuple[MARWILTrainState, dict[str, jax.Array]]]:
    """``train(state) -> (state, metrics)``: ``num_iters`` gradient steps of ``loss_fn`` on
    batches of ``batch_size`` rows of ``data`` (arrays on the device: ``obs``, ``actions``,
    ``returns``, ``discount``, ``last``, ``new_obs``), taken in the order of a new
    permutation; metrics are means over the steps."""
    num_rows = int(data["returns"].shape[0])

    def train(state: MARWILTrainState) -> tuple[MARWILTrainState, dict[str, jax.Array]]:
        key, perm_key = jax.random.split(state.key)

        def one(carry: Any, rows: jax.Array) -> tuple[Any, dict[str, jax.Array]]:
            params, opt_state, c2 = carry
            out = gradient_step(loss_fn, optimizer, params, opt_state, _batch(data, rows), c2)
            new_c2, metrics = out.aux
            metrics = {**metrics, "total_loss": out.loss, "gradients_global_norm": out.grad_norm}
            return (out.params, out.opt_state, new_c2), metrics

        carry = (state.params, state.opt_state, state.sqd_adv_norm)
        batches = _batches(perm_key, num_rows, batch_size, num_iters)
        (params, opt_state, c2), metrics = jax.lax.scan(one, carry, batches)
        state = dataclasses.replace(
            state,
            params=params,
            opt_state=opt_state,
            sqd_adv_norm=c2,
            step=state.step + num_iters,
            key=key,
        )
        means = {k: jnp.mean(v) for k, v in metrics.items()}
        if "moving_avg_sqd_adv_norm" in metrics:  # RLlib logs its last value
            means["moving_avg_sqd_adv_norm"] = c2
        return state, means

    return train


def make_marwil_eval_loss(
    loss_fn: LossFn, data: dict[str, Any], *, batch_size: int, num_iters: int
) -> Callable[[MARWILTrainState, jax.Array], dict[str, jax.Array]]:
    """``eval_loss(state, key) -> metrics``: ``loss_fn`` of the current weights (no gradient,
    no update) on ``num_iters`` batches of ``batch_size`` rows drawn with ``key``, RLlib's
    offline evaluation of type ``"eval_loss"``: the last batch's ``total_eval_loss`` and loss
    terms, as RLlib's runner logs them."""
    num_rows = int(data["returns"].shape[0])

    def one(state: MARWILTrainState, rows: jax.Array) -> dict[str, jax.Array]:
        loss, (_, metrics) = loss_fn(state.params, _batch(data, rows), state.sqd_adv_norm)
        return {**metrics, "total_eval_loss": loss}

    def eval_loss(state: MARWILTrainState, key: jax.Array) -> dict[str, jax.Array]:
        batches = _batches(key, num_rows, batch_size, num_iters)
        per_batch = jax.lax.map(lambda rows: one(state, rows), batches)
        return {k: v[-1] for k, v in per_batch.items()}

    return eval_loss


class MARWIL(OnPolicyAlgorithm):
    """MARWIL (and BC) on offline data; evaluation runs the policy in the config's env."""

    config_class = MARWILConfig
    config: MARWILConfig
    state: MARWILTrainState
    dynamic_settings: ClassVar[tuple[str, ...]] = ()

    def _setup(self) -> None:
        cfg = self.config
        refusal = _marwil_refusal(cfg)
        if refusal is not None:
            raise ConfigError(f"{cfg.algo_name}: {refusal}")
        self._dist, params, key = self._init_actor_critic()
        if hasattr(self.module, "initial_state"):
            raise ConfigError(f"{cfg.algo_name}: recurrent modules are not built")
        self.parts = make_actor_critic_parts(
            self.module.apply, self._dist, self.action_space, cfg.clip_actions
        )
        optimizer = make_optimizer(cfg.lr, cfg.grad_clip or None, clip_by=cfg.grad_clip_by)
        self.state = self._place_learner_state(
            MARWILTrainState(
                params=params,
                opt_state=optimizer.init(params),
                step=jnp.zeros((), jnp.int32),
                key=key,
                sqd_adv_norm=jnp.asarray(cfg.moving_average_sqd_adv_norm_start, jnp.float32),
            )
        )
        self._loop, self.fused = None, False
        self._offline_eval: OfflineLossEvaluation | None = None
        if self._inference_only or self._population_member:
            return
        self.data = read_offline_data(cfg.input_, self.observation_space, self.action_space)
        batch = cfg.train_batch_size_per_learner
        if self.data.num_rows < batch:
            raise ConfigError(
                f"{cfg.algo_name}: the offline data hold {self.data.num_rows} rows, fewer than "
                f"train_batch_size_per_learner={batch}; lower it or record more"
            )
        self.num_iters = updates_per_train(cfg, self.data.num_rows)
        loss_fn = make_marwil_loss(
            self.module.apply,
            self._dist,
            beta=float(cfg.beta),
            vf_coeff=float(cfg.vf_coeff),
            update_rate=float(cfg.moving_average_sqd_adv_norm_update_rate),
        )
        data = self._device_data(self.data, cfg.gamma)
        self._train = jax.jit(
            make_marwil_train(loss_fn, optimizer, data, batch_size=batch, num_iters=self.num_iters),
            donate_argnums=0,
        )
        self._offline_eval = OfflineLossEvaluation.for_config(
            cfg,
            self.data.num_rows,
            lambda size, iters: make_marwil_eval_loss(
                loss_fn, data, batch_size=size, num_iters=iters
            ),
        )

    def _device_data(self, data: OfflineData, gamma: float) -> dict[str, Any]:
        returns, discount, last = data.returns_to_go(gamma)
        host = {
            "obs": data.obs,
            "actions": data.actions,
            "returns": returns,
            "discount": discount,
            "last": last.astype(np.int32),
            "new_obs": data.new_obs,
        }
        return jax.device_put(host, self.learner_devices[0])

    def _runner_params(self, state: Any = None) -> Any:
        return self.parts.acting_params(self.state if state is None else state)

    def _training_step(self) -> IterationResult:
        start = time.perf_counter()
        self.state, metrics = self._train(self.state)
        metrics = jax.device_get(metrics)
        rows = self.num_iters * self.config.train_batch_size_per_learner
        return offline_iteration(POLICY_ID, metrics, rows, time.perf_counter() - start)

    def _offline_loss_evaluation(self) -> OfflineLossEvaluation | None:
        """The loss on the offline data (``evaluate_offline()``)."""
        return self._offline_eval


class BC(MARWIL):
    """Behaviour cloning: MARWIL with ``beta=0``."""

    config_class = BCConfig
    config: BCConfig


__all__ = ["BC", "BCConfig", "MARWIL", "MARWILConfig", "MARWILTrainState", "make_marwil_train"]
