"""IMPALA's and APPO's post-processing (stream order, time-major rows) and their updates: one
gradient step per train batch on the V-trace losses (``losses.py``), or RLlib's epochs of
minibatches of whole fragments (``make_epochs``).

The batch is laid out ``[T, B]``: when every env step reports every sub-env (lock-step, SYNC),
each of the N sub-envs is one column of T consecutive steps (``[T, N]``); otherwise (first-ready
ASYNC batches) the whole batch is one column in (sub-env, time) order (``[N * T, 1]``). Either
way a stream's rows are adjacent in time and every place where a trajectory stops (truncation,
the last real transition of a stream, a stream's end) is marked ``truncated``, so V-trace runs
along axis 0 and never across two streams.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import flax
import jax
import jax.numpy as jnp
import optax

from rljax.algorithms.actor_critic.policy import POLICY_ID, adapt_kl_coeff
from rljax.algorithms.impala.losses import (
    APPOLossConfig,
    VTraceBatch,
    VTraceLossConfig,
    appo_loss,
    impala_loss,
)
from rljax.learners import update as learner_update
from rljax.learners.circular import make_repeated_update, reduce_steps
from rljax.learners.hyperparams import make_injected_optimizer, settings_at, with_hyperparams
from rljax.networks.distributions import ActionDistribution
from rljax.ops.vtrace import next_or_bootstrap
from rljax.runners.ordering import order_by_stream, to_time_major
from rljax.types import RecurrentInput, Transition

Metrics = dict[str, jax.Array]
# The module's ``apply(params, obs [B, ...]) -> (action_dist_inputs [B, D], value [B])``.
Apply = Callable[[Any, Any], tuple[jax.Array, jax.Array]]


@flax.struct.dataclass
class IMPALATrainState:
    """Everything IMPALA's update changes. ``params`` maps policy id -> Flax params."""

    params: Any
    opt_state: Any
    step: jax.Array
    key: jax.Array
    # Env steps trained on so far (the real rows of every batch): schedules follow it.
    env_steps: Any = None
    # The env-to-module connectors' state (rljax.connectors.env_to_module); None: none.
    connectors: Any = None


@flax.struct.dataclass
class APPOTrainState:
    """APPO's learner state: IMPALA's, the target policy's parameters (the whole module's,
    moved every ``APPOHyperparams.target_period`` gradient steps) and the adaptive KL
    coefficient."""

    params: Any
    opt_state: Any
    target_params: Any
    kl_coeff: jax.Array
    step: jax.Array
    key: jax.Array
    # Env steps trained on so far (the real rows of every batch): schedules follow it.
    env_steps: Any = None
    # The env-to-module connectors' state (rljax.connectors.env_to_module); None: none.
    connectors: Any = None


@dataclasses.dataclass(frozen=True)
class IMPALAHyperparams:
    """IMPALA's settings, frozen from the config by ``build_algo()`` (each field the setting of
    its name; ``loss`` holds those ``impala_loss`` reads)."""

    loss: VTraceLossConfig
    num_epochs: int = 1
    minibatch_size: int | None = None
    shuffle_batch_per_epoch: bool = False


@dataclasses.dataclass(frozen=True)
class APPOHyperparams:
    """APPO's settings, frozen from the config by ``build_algo()``."""

    loss: APPOLossConfig
    target_network_update_freq: int
    tau: float
    kl_target: float
    use_circular_buffer: bool = False
    circular_buffer_num_batches: int = 1
    circular_buffer_iterations_per_batch: int = 1
    num_epochs: int = 1
    minibatch_size: int | None = None
    shuffle_batch_per_epoch: bool = False
    # Gradient steps of one pass over a train batch: its minibatches (1 without them).
    minibatches_per_batch: int = 1

    @property
    def target_period(self) -> int:
        """Gradient steps between moves of the target policy: RLlib's unit for
        ``target_network_update_freq`` is N x K train batches' worth of env steps trained on
        (the circular buffer's size and uses per batch), counted per minibatch, so ``freq x N x
        K x minibatches`` steps; each pass (``num_epochs``) trains on the batch's env steps
        again. The target moves after an update that reached another multiple of it."""
        return (
            self.target_network_update_freq
            * self.circular_buffer_num_batches
            * self.circular_buffer_iterations_per_batch
            * self.minibatches_per_batch
        )


class VTraceTrainBatch(NamedTuple):
    """A post-processed batch; every leaf has leading shape [T, B].

    Attributes:
      obs: Observations s_t, [T, B, *obs_shape].
      vtrace: The V-trace rows (actions, behaviour log-probabilities, rewards, terminations,
        cuts as ``truncated``, mask).
      bootstrap_value: The acting policy's value of the observation after each row, [T, B]
        (``next_extras["vf_preds"]``); used where the row is cut.
    """

    obs: Any
    vtrace: VTraceBatch
    bootstrap_value: jax.Array

    @property
    def mask(self) -> jax.Array:
        """The real rows, [T, B] (``OnPolicyBatch``): V-trace's ``mask``."""
        return self.vtrace.mask


def stream_ordered_batch(traj: Transition) -> VTraceTrainBatch:
    """The rows of ``traj`` [T, K] as one V-trace batch of leading shape [T * K], ordered by
    (stream, time) and cut where a stream stops (``order_by_stream``)."""
    ordered = order_by_stream(traj)
    s = ordered.rows
    return VTraceTrainBatch(
        obs=s.obs,
        vtrace=VTraceBatch(
            action=s.action,
            behaviour_logp=s.extras["action_logp"],
            reward=s.reward,
            terminated=s.terminated,
            truncated=ordered.cut,
            mask=s.valid.astype(jnp.float32),
        ),
        bootstrap_value=s.next_extras["vf_preds"],
    )


def make_vtrace_postprocess(num_envs: int) -> Callable[[Transition], VTraceTrainBatch]:
    """``postprocess(Transition [T, K]) -> VTraceTrainBatch [T, B]``.

    ``order_by_stream`` orders the rows by (sub-env, time) and marks the cuts; when every env
    step reports all ``num_envs`` sub-envs (K == num_envs) each sub-env has exactly T rows,
    laid out time-major ``[T, num_envs]``; otherwise the ordered rows form one column
    ``[T * K, 1]``.
    """

    def postprocess(traj: Transition) -> VTraceTrainBatch:
        k = traj.reward.shape[1]
        batch = stream_ordered_batch(traj)
        if k == num_envs:
            return to_time_major(batch, k)
        return jax.tree.map(lambda x: x[:, None], batch)

    return postprocess


def forward_with_next_values(
    apply: Apply, params: Any, batch: VTraceTrainBatch
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The current networks on the batch: ``(dist_inputs [T, B, D], values [T, B],
    next_values [T, B])``, where ``next_values`` is V(s_{t+1}) of the stream's next row, or the
    bootstrap value where the row is cut (the last row always is). ``apply`` takes the rows
    flattened, or a recurrent batch's ``RecurrentInput`` as it is (``recurrent.py``)."""
    lead = batch.bootstrap_value.shape
    obs = batch.obs
    if not isinstance(obs, RecurrentInput):  # a recurrent forward takes the [T, B] layout
        obs = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), obs)
    dist_inputs, values = apply(params[POLICY_ID], obs)
    dist_inputs = dist_inputs.reshape((*lead, -1))
    values = values.reshape(lead)
    next_values = next_or_bootstrap(values, batch.bootstrap_value, batch.vtrace.truncated)
    return dist_inputs, values, next_values


Optimizer = optax.GradientTransformation


def _dynamic_now(
    dynamic: Mapping[str, Any], state: Any, default_entropy: float
) -> tuple[Any, Any, jax.Array]:
    """The dynamic settings at the state's env steps, evaluated once per update: the
    optimizer state with the step's rate, the rate (None: not dynamic), the entropy weight."""
    now = settings_at(dynamic, state.env_steps)
    rate = now.get("lr")
    opt_state = with_hyperparams(state.opt_state, learning_rate=rate)
    entropy = jnp.asarray(now.get("entropy_coeff", default_entropy), jnp.float32)
    return opt_state, rate, entropy


def _scheduled_step(
    loss_for: Callable[[jax.Array], Callable[..., Any]],
    optimizer: Optimizer,
    dynamic: Mapping[str, Any],
    default_entropy: float,
    state: Any,
    *args: Any,
) -> tuple[Any, Metrics]:
    """One gradient step at the dynamic settings of ``state.env_steps`` (``_dynamic_now``): the
    loss is ``loss_for(entropy_coeff)``, called with ``(params, *args)``. Returns the state with
    its new parameters, optimizer state and step count, and the loss metrics with the
    gradients' norm, the entropy weight and, where it changes, the learning rate."""
    opt_state, rate, entropy = _dynamic_now(dynamic, state, default_entropy)
    step = learner_update.gradient_step(
        loss_for(entropy), optimizer, state.params, opt_state, *args
    )
    metrics = dict(step.aux)
    metrics["gradients_default_optimizer_global_norm"] = step.grad_norm
    metrics["curr_entropy_coeff"] = entropy
    if rate is not None:
        metrics["default_optimizer_learning_rate"] = rate
    state = dataclasses.replace(
        state, params=step.params, opt_state=step.opt_state, step=state.step + 1
    )
    return state, metrics


def count_env_steps(
    update: Callable[[Any, VTraceTrainBatch], tuple[Any, Metrics]],
) -> Callable[[Any, VTraceTrainBatch], tuple[Any, Metrics]]:
    """``update`` that then adds the batch's real rows to ``state.env_steps`` (once per
    batch, however many updates APPO's circular buffer runs on it)."""

    def counted(state: Any, batch: VTraceTrainBatch) -> tuple[Any, Metrics]:
        state, metrics = update(state, batch)
        if state.env_steps is None:  # a state built without the count (no schedule reads it)
            return state, metrics
        rows = jnp.sum(batch.mask > 0).astype(jnp.int32)
        return dataclasses.replace(state, env_steps=state.env_steps + rows), metrics

    return counted


def make_epochs(
    update: Callable[[Any, VTraceTrainBatch], tuple[Any, Metrics]],
    num_epochs: int,
    minibatch_size: int | None,
    shuffle: bool,
) -> Callable[[Any, VTraceTrainBatch], tuple[Any, Metrics]]:
    """``update`` (one gradient step) run over a ``[T, B]`` batch as RLlib's learner runs
    ``num_epochs`` passes of ``minibatch_size`` env steps each (None: the whole batch).

    A minibatch is whole columns of the batch (``minibatch_size / T`` of them: RLlib's
    minibatches of whole fragments, so V-trace never runs across a cut the batch does not
    have), taken in order, or in a new random order each pass with ``shuffle`` (keys from
    ``state.key`` and the state's step count, so a run repeats). The steps run in one
    ``lax.scan``. Metrics are the means over the steps, counts (``num_*``) their sums. One pass
    over the whole batch is ``update`` itself: the program RLlib's defaults train with.
    """
    if num_epochs < 1:
        raise ValueError(f"num_epochs must be >= 1; got {num_epochs}")
    if num_epochs == 1 and minibatch_size is None:
        return update

    def passes(state: Any, batch: VTraceTrainBatch) -> tuple[Any, Metrics]:
        rows, columns = batch.bootstrap_value.shape
        per = columns
        if minibatch_size is not None and minibatch_size < rows * columns:
            per = minibatch_size // rows
            if per < 1 or minibatch_size % rows or columns % per:
                raise ValueError(
                    f"minibatch_size={minibatch_size} is not whole columns of a [{rows}, "
                    f"{columns}] batch"
                )
        if num_epochs == 1 and per == columns:  # one pass over the whole batch: one step
            return update(state, batch)
        order = []
        for epoch in range(num_epochs):
            cols = jnp.arange(columns)
            if shuffle:
                key = jax.random.fold_in(jax.random.fold_in(state.key, state.step), epoch)
                cols = jax.random.permutation(key, columns)
            order.append(cols.reshape(columns // per, per))
        picks = jnp.concatenate(order)  # [epochs x minibatches, per]

        def step(state: Any, cols: jax.Array) -> tuple[Any, Metrics]:
            if per == columns and not shuffle:  # every pass the whole batch, in order
                return update(state, batch)
            minibatch = jax.tree.map(lambda x: jnp.take(x, cols, axis=1), batch)
            return update(state, minibatch)

        state, metrics = jax.lax.scan(step, state, picks)
        return state, reduce_steps(metrics)

    return passes


def impala_optimizer(cfg: Any) -> optax.GradientTransformation:
    """IMPALA's and APPO's optimizer for ``cfg``, built once: Adam, or TensorFlow's RMSProp
    (the IMPALA paper's: epsilon inside the square root, the squared-gradient average
    starting at 1), after the global-norm clip; its rate (and clip) live in its state."""
    rmsprop = cfg.opt_type == "rmsprop"
    decay, eps, momentum = float(cfg.decay), float(cfg.epsilon), float(cfg.momentum) or None
    clip_by = cfg.grad_clip_by

    def factory(learning_rate: Any, max_norm: Any) -> optax.GradientTransformation:
        base = None
        if rmsprop:
            base = optax.rmsprop(
                learning_rate, decay=decay, eps=eps, initial_scale=1.0, momentum=momentum
            )
        return learner_update.make_optimizer(
            learning_rate, max_norm, flatten=True, base=base, clip_by=clip_by
        )

    return make_injected_optimizer(factory, cfg.lr, cfg.grad_clip)


def make_impala_update(
    apply: Apply,
    dist: ActionDistribution,
    optimizer: Optimizer,
    hp: IMPALAHyperparams,
    dynamic: Mapping[str, Any] | None = None,
) -> Callable[[IMPALATrainState, VTraceTrainBatch], tuple[IMPALATrainState, Metrics]]:
    """``update(state, batch [T, B]) -> (state, metrics)``: one gradient step on
    ``impala_loss`` (RLlib's learner takes one per train batch at its defaults;
    ``hp.num_epochs`` passes of ``hp.minibatch_size`` take more: ``make_epochs``).

    ``optimizer`` is built once. ``dynamic`` (``rljax.learners.hyperparams``)
    holds the settings that change while the run trains, evaluated once per update at
    ``state.env_steps``: ``lr`` (written into an injected optimizer's state, reported as
    ``default_optimizer_learning_rate``) and ``entropy_coeff`` (without it
    ``hp.loss.entropy_coeff``)."""
    dynamic = dict(dynamic or {})

    def loss_for(entropy: jax.Array) -> Callable[..., tuple[jax.Array, Metrics]]:
        loss_cfg = hp.loss._replace(entropy_coeff=entropy)  # type: ignore[arg-type]

        def loss_fn(params: Any, batch: VTraceTrainBatch) -> tuple[jax.Array, Metrics]:
            dist_inputs, values, next_values = forward_with_next_values(apply, params, batch)
            return impala_loss(dist_inputs, values, next_values, batch.vtrace, dist, loss_cfg)

        return loss_fn

    def update(
        state: IMPALATrainState, batch: VTraceTrainBatch
    ) -> tuple[IMPALATrainState, Metrics]:
        return _scheduled_step(loss_for, optimizer, dynamic, hp.loss.entropy_coeff, state, batch)

    return count_env_steps(
        make_epochs(update, hp.num_epochs, hp.minibatch_size, hp.shuffle_batch_per_epoch)
    )


def make_appo_update(
    apply: Apply,
    dist: ActionDistribution,
    optimizer: Optimizer,
    hp: APPOHyperparams,
    dynamic: Mapping[str, Any] | None = None,
) -> Callable[[APPOTrainState, VTraceTrainBatch], tuple[APPOTrainState, Metrics]]:
    """``update(state, batch [T, B]) -> (state, metrics)``: one gradient step on ``appo_loss``
    against the target policy (or ``hp.num_epochs`` passes of minibatches: ``make_epochs``);
    then, where the steps reached another multiple of ``hp.target_period``, the target moves
    ``tau`` of the way to the current parameters, and with ``use_kl_loss`` the KL coefficient
    adapts to the steps' mean KL as RLlib's (x1.5 above 2 kl_target, x0.5 below kl_target / 2),
    once per update as RLlib's learner does after one.

    With ``use_circular_buffer`` ``circular_buffer_iterations_per_batch`` such steps run on
    the batch, back to back (``learners/circular.py`` says why that is RLlib's buffer here).
    ``dynamic`` as ``make_impala_update``'s."""
    move_target = learner_update.make_target_update(hp.tau, {"target_params": "params"})
    dynamic = dict(dynamic or {})

    def loss_for(entropy: jax.Array) -> Callable[..., tuple[jax.Array, Metrics]]:
        loss_cfg = hp.loss._replace(
            vtrace=hp.loss.vtrace._replace(entropy_coeff=entropy)  # type: ignore[arg-type]
        )

        def loss_fn(
            params: Any, batch: VTraceTrainBatch, target_params: Any, kl_coeff: jax.Array
        ) -> tuple[jax.Array, Metrics]:
            dist_inputs, values, next_values = forward_with_next_values(apply, params, batch)
            old_dist_inputs, _, _ = forward_with_next_values(apply, target_params, batch)
            return appo_loss(
                dist_inputs,
                values,
                next_values,
                old_dist_inputs,
                batch.vtrace,
                dist,
                kl_coeff,
                loss_cfg,
            )

        return loss_fn

    def gradient_step(
        state: APPOTrainState, batch: VTraceTrainBatch
    ) -> tuple[APPOTrainState, Metrics]:
        return _scheduled_step(
            loss_for,
            optimizer,
            dynamic,
            hp.loss.vtrace.entropy_coeff,
            state,
            batch,
            state.target_params,
            state.kl_coeff,
        )

    passes = make_epochs(
        gradient_step, hp.num_epochs, hp.minibatch_size, hp.shuffle_batch_per_epoch
    )

    def update(state: APPOTrainState, batch: VTraceTrainBatch) -> tuple[APPOTrainState, Metrics]:
        # The batch's gradient steps (one, or the passes of minibatches), then once, as
        # RLlib's learner does after an update: the target moves where the steps crossed a
        # multiple of the period, and the KL coefficient adapts to the steps' mean KL.
        start = state.step
        state, metrics = passes(state, batch)
        due = state.step // hp.target_period > start // hp.target_period
        moved = move_target(state)
        target = jax.tree.map(
            lambda new, old: jnp.where(due, new, old), moved.target_params, state.target_params
        )
        kl, kl_coeff = metrics["mean_kl_loss"], state.kl_coeff
        if hp.loss.use_kl_loss:
            kl_coeff = adapt_kl_coeff(kl_coeff, kl, hp.kl_target)
        metrics["curr_kl_coeff"] = state.kl_coeff
        metrics["num_target_updates"] = due.astype(jnp.float32)
        return dataclasses.replace(state, target_params=target, kl_coeff=kl_coeff), metrics

    if not hp.use_circular_buffer:
        return count_env_steps(update)
    return count_env_steps(make_repeated_update(update, hp.circular_buffer_iterations_per_batch))


__all__ = [
    "APPOHyperparams",
    "APPOTrainState",
    "IMPALAHyperparams",
    "IMPALATrainState",
    "VTraceTrainBatch",
    "forward_with_next_values",
    "impala_optimizer",
    "make_appo_update",
    "make_epochs",
    "make_impala_update",
    "make_vtrace_postprocess",
    "stream_ordered_batch",
]
