"""PPO's post-processing (GAE) and its update: epochs x shuffled minibatches in one jitted call.

The batch is laid out as ``[D, n]``: D learner shards (``max(1, num_learners)``) of n transitions.
Each shard shuffles its own rows and contributes ``minibatch_size`` rows to every minibatch, as
each of RLlib's Learners does with its share of the batch; the gradient of the global minibatch is
the average of the shards' gradients. With the batch placed as ``NamedSharding(mesh, P("data"))``,
XLA partitions the update over the mesh and inserts the all-reduce, so the same function runs on
one device or many and gives the same numbers.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax

from rljax.algorithms.actor_critic.policy import POLICY_ID, adapt_kl_coeff, masked_mean
from rljax.algorithms.ppo.losses import (
    PPO_LOSS_METRICS,
    PPOBatch,
    PPOLossConfig,
    ppo_loss,
)
from rljax.algorithms.settings import frozen_from_config
from rljax.learners import update as learner_update
from rljax.learners.hyperparams import (
    make_injected_optimizer,
    settings_at,
    with_hyperparams,
)
from rljax.networks.distributions import ActionDistribution
from rljax.ops.gae import gae_advantages, gae_advantages_time_major
from rljax.runners.ordering import from_time_major, order_by_stream, to_time_major
from rljax.types import Transition
from rljax.utils.shuffle import shuffled_positions


@flax.struct.dataclass
class PPOTrainState:
    """Everything the update changes. ``params`` maps policy id -> Flax params."""

    params: Any
    opt_state: Any
    kl_coeff: jax.Array
    step: jax.Array
    key: jax.Array
    # Env steps trained on so far (the valid rows of every batch): schedules follow it. None
    # where no schedule can be set (multi-agent PPO's stacked policies).
    env_steps: Any = None
    # The env-to-module connectors' state (rljax.connectors.env_to_module); None: none.
    connectors: Any = None


#: The settings (RLlib's names) trials of one PPO population may differ in, besides the seed:
#: values the jitted postprocess and update read (``rljax.execution.population``).
PPO_POPULATION_SETTINGS: tuple[str, ...] = (
    "lr",
    "grad_clip",
    "gamma",
    "lambda_",
    "clip_param",
    "vf_clip_param",
    "vf_loss_coeff",
    "entropy_coeff",
    "kl_target",
)


@dataclasses.dataclass(frozen=True)
class PPOHyperparams:
    """PPO's settings, frozen from the config by ``build_algo()``.

    Each field but the shard sizes is the ``PPOConfig`` setting of its name; ``loss`` holds
    the settings ``ppo_loss`` reads.
    """

    gamma: float
    lambda_: float
    kl_coeff: float
    kl_target: float
    num_epochs: int
    minibatch_size: int
    shuffle_batch_per_epoch: bool
    loss: PPOLossConfig
    num_shards: int
    shard_size: int
    grad_clip_by: str = "global_norm"
    # Stacked multi-agent updates pad small policies' batches: skip minibatches of padding only.
    skip_empty_minibatches: bool = False
    # With skip_empty_minibatches: skip every minibatch with padding in it (a batch of whole
    # episodes: its rows past the last full minibatch wait for another epoch, as a remainder
    # does in a fixed-size batch).
    full_minibatches_only: bool = False

    @classmethod
    def from_config(cls, cfg: Any, num_shards: int, shard_size: int) -> PPOHyperparams:
        """PPO's settings read from a ``PPOConfig`` once, at build time."""
        return frozen_from_config(cls, cfg, num_shards=num_shards, shard_size=shard_size)

    @property
    def num_minibatches(self) -> int:
        return self.shard_size // self.minibatch_size


def make_optimizer(
    lr: float | jax.Array, grad_clip: float | None, clip_by: str = "global_norm"
) -> optax.GradientTransformation:
    """PPO's optimizer: Adam (``eps=1e-5``, on the flattened parameters) after optional
    clipping (``clip_by``: RLlib's ``grad_clip_by``), guarded against non-finite gradients."""
    return learner_update.make_optimizer(lr, grad_clip, eps=1e-5, flatten=True, clip_by=clip_by)


def make_injected_ppo_optimizer(
    lr: float | tuple[tuple[int, float], ...],
    grad_clip: float | None,
    clip_by: str = "global_norm",
) -> optax.GradientTransformation:
    """PPO's optimizer (``make_optimizer``) built once, its rate and clip in its state
    (``optax.inject_hyperparams``): the update sets them each iteration."""

    def factory(rate: Any, max_norm: Any) -> optax.GradientTransformation:
        return make_optimizer(rate, max_norm, clip_by)

    return make_injected_optimizer(factory, lr, grad_clip)


def normalize_advantages(
    adv: jax.Array,
    mask: jax.Array,
    policy: jax.Array | None = None,
    num_policies: int | None = None,
) -> jax.Array:
    """Advantages to mean 0 and standard deviation 1 over the real rows (``mask``); with
    ``policy`` (each row's policy index), per policy, as each of RLlib's modules does with its
    own batch."""
    if policy is None or num_policies is None:
        mean = masked_mean(adv, mask)
        std = jnp.sqrt(masked_mean(jnp.square(adv - mean), mask))
    else:
        count = jnp.maximum(jax.ops.segment_sum(mask, policy, num_policies), 1.0)
        mean = (jax.ops.segment_sum(adv * mask, policy, num_policies) / count)[policy]
        var = jax.ops.segment_sum(jnp.square(adv - mean) * mask, policy, num_policies)
        std = jnp.sqrt(var / count)[policy]
    return (adv - mean) / (std + 1e-8)


def stream_advantages(
    ordered: Any,
    lock_step_streams: int | None,
    hp: PPOHyperparams,
    num_policies: int | None = None,
    policy_discounts: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """GAE along the streams of ``order_by_stream``'s ``ordered`` rows: ``(advantages,
    value targets, mask)``, each [rows], the advantages normalised (per policy with
    ``num_policies``, the rows' ``obs["policy"]``). ``lock_step_streams`` K: every stream has
    the same T rows (SYNC), so GAE runs time-major on [T, K]; None: over the one flat
    sequence (ASYNC). ``policy_discounts``: ``make_ppo_postprocess``'s."""
    s = ordered.rows
    gae_in = (s.reward, s.extras["vf_preds"], s.next_extras["vf_preds"], s.terminated)
    discounts: Any = (hp.gamma, hp.lambda_)
    if policy_discounts is not None:  # each row's policy's gamma and lambda
        gammas, lambdas = (jnp.asarray(d, jnp.float32) for d in policy_discounts)
        discounts = (gammas[s.obs["policy"]], lambdas[s.obs["policy"]])
    k = lock_step_streams
    if k is not None:
        if policy_discounts is not None:
            discounts = to_time_major(discounts, k)
        rewards, values, next_values, terminated, cut = to_time_major((*gae_in, ordered.cut), k)
        adv, targets = gae_advantages_time_major(
            rewards, values, next_values, terminated, cut, *discounts
        )
        adv, targets = from_time_major((adv, targets))
    else:
        adv, targets = gae_advantages(*gae_in, ordered.cut, *discounts)
    mask = s.valid.astype(jnp.float32)
    policy = None if num_policies is None else s.obs["policy"]
    return normalize_advantages(adv, mask, policy, num_policies), targets, mask


def make_ppo_postprocess(
    hp: PPOHyperparams,
    num_envs: int,
    num_policies: int | None = None,
    policy_discounts: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
) -> Callable[[Transition], PPOBatch]:
    """``postprocess(Transition [T, K]) -> PPOBatch [D, n]``: GAE per sub-env, normalised advantages.

    The ordering and cut step (``rljax.runners.ordering.order_by_stream``) then GAE: rows are
    ordered by (sub-env, time), each stream's non-transitions after its real ones, and cut at
    truncations, stream ends and each stream's last real transition. When every env step
    reports all ``num_envs`` sub-envs (SYNC), each sub-env has exactly T rows and GAE runs
    time-major; otherwise (ASYNC) it runs over the one flat sequence.

    With ``num_policies`` (multi-agent slots, ``obs = {"obs": ..., "policy": ...}``) advantages
    are normalised per policy, as each of RLlib's modules does with its own batch; with
    ``policy_discounts`` (each policy's ``(gammas, lambdas)``, where policies override them)
    each row is discounted with its policy's gamma and lambda.
    """

    def postprocess(traj: Transition) -> PPOBatch:
        k = traj.reward.shape[1]
        ordered = order_by_stream(traj)
        s = ordered.rows
        adv, targets, mask = stream_advantages(
            ordered, k if k == num_envs else None, hp, num_policies, policy_discounts
        )
        batch = PPOBatch(
            obs=s.obs,
            action=s.action,
            action_logp=s.extras["action_logp"],
            action_dist_inputs=s.extras["action_dist_inputs"],
            vf_preds=s.extras["vf_preds"],
            advantages=adv,
            value_targets=targets,
            mask=mask,
        )
        return jax.tree.map(lambda x: x.reshape((hp.num_shards, -1, *x.shape[1:])), batch)

    return postprocess


def make_ppo_update(
    apply_fn: Callable,
    dist: ActionDistribution,
    optimizer: optax.GradientTransformation,
    hp: PPOHyperparams,
    dynamic: Mapping[str, Any] | None = None,
    sequence_len: int | None = None,
    flat_params: bool = False,
    loss_hook: Callable[..., tuple[jax.Array, dict[str, jax.Array]]] | None = None,
    update_scale: Any = None,
) -> Callable[[PPOTrainState, PPOBatch], tuple[PPOTrainState, dict[str, jax.Array]]]:
    """``update(state, batch [D, n]) -> (state, metrics)``: ``num_epochs`` x minibatches, scanned.

    ``optimizer`` is built once (``make_injected_optimizer`` where the rate changes).
    ``dynamic`` holds the settings that change while the run trains
    (``rljax.learners.hyperparams``): ``lr`` (written into the optimizer
    state, reported as ``default_optimizer_learning_rate``), ``grad_clip`` (likewise) and
    ``entropy_coeff`` (the loss's; without it ``hp.loss.entropy_coeff``), each a number,
    schedule or traced scalar, evaluated once per update at ``state.env_steps``. The state
    counts the env steps it has trained on.

    With ``sequence_len`` L (recurrent PPO) the batch's rows are sequences, leaves [D, n,
    L, ...] (``hp``'s sizes count sequences), ``apply_fn`` maps a minibatch of sequences to
    outputs of its B * L steps, and the loss runs over those steps.

    ``flat_params`` (for an optimizer built by ``make_optimizer``, which runs Adam on the
    flattened parameters): the minibatch steps carry the policy's parameters as one vector
    (``learner_update.flatten_params``) and differentiate the loss in it, so the gradients,
    their norm, the non-finite check and Adam are one array each instead of one per layer;
    the same numbers up to the summation order of the gradient norm.

    ``loss_hook`` (a learner class's, ``rljax.algorithms.ppo.ppo_learner.make_loss_hook``):
    ``hook(params, minibatch, dist_inputs, values, kl_coeff, loss_cfg) -> (loss, metrics)``
    gives each minibatch step's loss instead of PPO's; its scalar metrics join PPO's (whose
    ``total_loss`` becomes the hook's loss). Not with ``sequence_len``.

    ``update_scale`` (a learner's own optimizers, ``PPOLearner.register_optimizer``): a tree
    like ``state.params`` of float32 numbers, each leaf's learning rate relative to the
    optimizer's (0: not trained); every Adam update is multiplied by it.
    """
    if loss_hook is not None and sequence_len is not None:
        raise ValueError("a learner class's loss hook trains non-recurrent PPO only")
    d, mb, m = hp.num_shards, hp.minibatch_size, hp.num_minibatches
    dynamic = dict(dynamic or {})

    def loss_fn(params, batch: PPOBatch, kl_coeff, entropy: jax.Array, *, unflatten: Callable):
        flat = jax.tree.map(lambda x: x.reshape((d * mb, *x.shape[2:])), batch)
        policy_params = unflatten(params)[POLICY_ID]
        dist_inputs, values = apply_fn(policy_params, flat.obs)
        if sequence_len is not None:  # the steps of the sequences, [B * L, ...]
            flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), flat._replace(obs=None))
        loss_cfg = hp.loss._replace(entropy_coeff=entropy)  # type: ignore[arg-type]
        loss, metrics = ppo_loss(dist_inputs, values, flat, dist, kl_coeff, loss_cfg)
        if loss_hook is not None:
            loss, extra = loss_hook(policy_params, flat, dist_inputs, values, kl_coeff, loss_cfg)
            metrics = {**metrics, **extra, "total_loss": loss}
        return loss, metrics

    base_names = sorted([*PPO_LOSS_METRICS, "gradients_default_optimizer_global_norm"])
    identity: Callable[[Any], Any] = lambda p: p  # noqa: E731

    def metric_names_of(state: PPOTrainState, batch: PPOBatch, entropy, unflatten) -> list[str]:
        """The minibatch step's metric names: PPO's, and those a loss hook logs (read from
        its trace by shapes alone)."""
        if loss_hook is None:
            return base_names

        def shape(x: Any) -> jax.ShapeDtypeStruct:
            return jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x))

        minibatch = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct((d, mb, *x.shape[2:]), x.dtype), batch
        )
        logged = jax.eval_shape(
            lambda p, b, k, e: loss_fn(p, b, k, e, unflatten=unflatten)[1],
            jax.tree.map(shape, state.params),
            minibatch,
            shape(state.kl_coeff),
            shape(entropy),
        )
        return sorted({*logged, "gradients_default_optimizer_global_norm"})

    def begin(state: PPOTrainState):
        """The dynamic settings, evaluated once for the whole update, written into the
        optimizer state; ``(state, rate, entropy)``."""
        now = settings_at(dynamic, state.env_steps)
        rate = now.get("lr")
        entropy = jnp.asarray(now.get("entropy_coeff", hp.loss.entropy_coeff), jnp.float32)
        opt_state = with_hyperparams(
            state.opt_state, learning_rate=rate, max_norm=now.get("grad_clip")
        )
        return dataclasses.replace(state, opt_state=opt_state), rate, entropy

    def minibatches_of(batch: PPOBatch, key: jax.Array) -> PPOBatch:
        """One epoch's minibatches ``[m, D, mb, ...]``: the batch's rows shuffled per shard."""
        # Real rows first (in random order; in batch order without shuffle_batch_per_epoch),
        # padding and non-transitions last: minibatches are filled with data, and rows cut
        # off by the minibatch count are padding first. Single-operand integer sorts
        # (rljax.utils.shuffle): XLA's CPU argsort took a fifth of a small update.
        row_mask = batch.mask if batch.mask.ndim == 2 else jnp.max(batch.mask, axis=2)
        perms = shuffled_positions(key, row_mask == 0, hp.shuffle_batch_per_epoch)
        shuffled = jax.tree.map(lambda x: jax.vmap(lambda xs, p: xs[p[: m * mb]])(x, perms), batch)
        # [D, m * mb, ...] -> [m, D, mb, ...]: minibatch i takes mb rows of every shard.
        return jax.tree.map(
            lambda x: jnp.swapaxes(x.reshape((d, m, mb, *x.shape[2:])), 0, 1), shuffled
        )

    def take_step(
        carry, batch: PPOBatch, entropy: jax.Array, unflatten: Callable[[Any], Any], scale: Any
    ):
        """One minibatch's gradient step on ``carry = (state, metric sums, steps)``."""
        state, metric_sums, num_steps = carry
        step = learner_update.gradient_step(
            functools.partial(loss_fn, unflatten=unflatten),
            optimizer,
            state.params,
            state.opt_state,
            batch,
            state.kl_coeff,
            entropy,
            update_scale=scale,
        )
        params, opt_state, metrics = step.params, step.opt_state, step.aux
        metrics["gradients_default_optimizer_global_norm"] = step.grad_norm
        # A minibatch of padding only (a policy with fewer rows than the others in a
        # stacked multi-agent update) is no step at all: Adam would still move the params.
        if hp.skip_empty_minibatches:
            has_data = (
                jnp.all(batch.mask > 0) if hp.full_minibatches_only else jnp.sum(batch.mask) > 0
            )
            keep = lambda new, old: jax.tree.map(  # noqa: E731
                lambda n, o: jnp.where(has_data, n, o), new, old
            )
            params, opt_state = keep(params, state.params), keep(opt_state, state.opt_state)
        else:
            has_data = jnp.ones((), bool)
        state = dataclasses.replace(state, params=params, opt_state=opt_state)
        # Metrics are summed in the carry as one vector: on a CPU every op in this loop
        # costs a dispatch, and a stacked output per metric would add one per metric per
        # minibatch.
        values = jnp.stack([jnp.asarray(metrics[k], jnp.float32) for k in sorted(metrics)])
        metric_sums = metric_sums + has_data * values
        return state, metric_sums, num_steps + has_data

    def start_carry(state: PPOTrainState, names: list[str]):
        return (state, jnp.zeros((len(names),), jnp.float32), jnp.zeros((), jnp.float32))

    def update(state: PPOTrainState, batch: PPOBatch):
        state, rate, entropy = begin(state)
        unflatten = identity
        scale = update_scale
        if flat_params:
            vector, unflatten = learner_update.flatten_params(state.params)
            flattened = vector is not state.params  # (params, identity): not flattened
            if update_scale is not None and flattened:  # one number per parameter, as laid out
                per_leaf = jax.tree.map(
                    lambda p, s: jnp.full(p.shape, s, jnp.float32), state.params, update_scale
                )
                scale = learner_update.flatten_params(per_leaf)[0]
            state = dataclasses.replace(state, params=vector)
        metric_names = metric_names_of(state, batch, entropy, unflatten)

        def epoch(carry, key: jax.Array):
            minibatches = minibatches_of(batch, key)
            step = lambda c, b: (take_step(c, b, entropy, unflatten, scale), None)  # noqa: E731
            return jax.lax.scan(step, carry, minibatches)[0], None

        key, sub = jax.random.split(state.key)
        epoch_keys = jax.random.split(sub, hp.num_epochs)
        carry = start_carry(state, metric_names)
        (state, sums, steps), _ = jax.lax.scan(epoch, carry, epoch_keys)
        return finish(state, sums, steps, batch, key, rate, entropy, unflatten, metric_names)

    def finish(state, sums, steps, batch, key, rate, entropy, unflatten, metric_names):
        state = dataclasses.replace(state, params=unflatten(state.params))
        metrics = dict(zip(metric_names, sums / jnp.maximum(steps, 1.0), strict=True))
        kl = metrics["mean_kl_loss"]
        kl_coeff = state.kl_coeff
        if hp.loss.use_kl_loss:  # updated once per iteration
            kl_coeff = adapt_kl_coeff(kl_coeff, kl, hp.kl_target)
        metrics["curr_kl_coeff"] = state.kl_coeff
        metrics["curr_entropy_coeff"] = entropy
        if rate is not None:
            metrics["default_optimizer_learning_rate"] = rate
        env_steps = state.env_steps
        if env_steps is not None:
            env_steps = env_steps + jnp.sum(batch.mask > 0).astype(env_steps.dtype)
        state = dataclasses.replace(
            state, kl_coeff=kl_coeff, step=state.step + 1, key=key, env_steps=env_steps
        )
        return state, metrics

    return update
