"""IQL's learner (Kostrikov et al. 2021, as RLlib 2.60's ``IQLTorchLearner``): a state value
fitted by expectile regression to the target critics' values of the data's actions, critics
fitted to ``r + gamma * V(s')``, and the actor to the data's actions weighted by
``min(exp(beta * (Q_target(s, a) - V(s))), 100)``.

One step computes the three losses from one forward pass with the step's starting parameters
(RLlib's single update; the value the actor's weights use is the one before the value's own
step) and takes one Adam step for each of the three parts (each loss reaches only its own
part's parameters). The actor's log-probability is the squashed Gaussian's of the data's
actions in (-1, 1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple, cast

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from rljax.learners.hyperparams import dynamic_settings, settings_at, with_hyperparams
from rljax.learners.update import gradient_step, make_target_update
from rljax.networks.distributions import SquashedDiagGaussian

# RLlib's names of IQL's optimizers' rates (its metrics) -> IQL's dynamic settings.
IQL_RATES = {
    "qf_learning_rate": "critic_lr",
    "policy_learning_rate": "actor_lr",
    "value_learning_rate": "value_lr",
}
IQL_METRICS = (
    *IQL_RATES,
    "qf_loss",
    "policy_loss",
    "value_loss",
    "qf_mean",
    "vf_mean",
    "advantage_mean",
    "exp_advantage_mean",
    "td_error_mean",
)
# The exponentiated advantage's cap (RLlib's and the paper's).
MAX_EXP_ADVANTAGE = 100.0


@flax.struct.dataclass
class IQLLearnerState:
    """Everything IQL's update changes; the field names are the checkpoint's keys.

    Attributes:
      actor: The actor's parameters (SAC's squashed Gaussian).
      critic: The critics' parameters (stacked twins).
      target_critic: The target critics' parameters.
      value: The state value's parameters.
      actor_opt, critic_opt, value_opt: Their optimizers' states.
      steps: Gradient steps taken (the target's period counts them).
    """

    actor: Any
    critic: Any
    target_critic: Any
    value: Any
    actor_opt: Any
    critic_opt: Any
    value_opt: Any
    steps: jax.Array


class IQLNetworks(NamedTuple):
    """``actor.apply(params, obs) -> [B, 2 * A]``, ``critic.apply(params, obs, action) -> [C,
    B]``, ``value.apply(params, obs) -> [1, B, 1]`` (a one-critic, one-output ``TwinCritic``)
    and the actor's distribution."""

    actor: nn.Module
    critic: nn.Module
    value: nn.Module
    dist: SquashedDiagGaussian


class IQLOptimizers(NamedTuple):
    actor: optax.GradientTransformation
    critic: optax.GradientTransformation
    value: optax.GradientTransformation


def expectile_loss(diff: jax.Array, expectile: float | jax.Array) -> jax.Array:
    """``|expectile - 1(diff < 0)| * diff^2``: weight ``expectile`` where ``diff > 0``, ``1 -
    expectile`` elsewhere."""
    return jnp.where(diff > 0, expectile, 1.0 - expectile) * jnp.square(diff)


def make_iql_learn(
    networks: IQLNetworks,
    optimizers: IQLOptimizers,
    rates: Mapping[str, Any],
    *,
    beta: float,
    expectile: float,
) -> Any:
    """``learn(state, batch, weights, key, timestep) -> (state, td_errors, metrics)`` for
    ``ReplayLearner``: ``batch`` holds ``obs`` [B, O], ``action`` [B, A] in (-1, 1),
    ``reward`` [B], ``discount`` [B] (``gamma``, 0 where the episode terminated) and
    ``next_obs``. ``rates``: ``actor_lr``, ``critic_lr``, ``value_lr`` (numbers or RLlib's
    schedules, of the gradient steps here). ``weights`` and ``key`` are unused (uniform rows,
    no sampling)."""
    actor, critic, value, dist = networks
    dynamic = dynamic_settings(dict(rates))

    def v_of(params: Any, obs: jax.Array) -> jax.Array:
        return cast(jax.Array, value.apply(params, obs))[0, :, 0]

    def q_of(params: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
        return cast(jax.Array, critic.apply(params, obs, action))

    def value_loss(params: Any, obs: jax.Array, q_target: jax.Array):
        v = v_of(params, obs)
        return jnp.mean(expectile_loss(q_target - v, expectile)), v

    def critic_loss(params: Any, obs: jax.Array, action: jax.Array, target: jax.Array):
        q = q_of(params, obs, action)  # [C, B]
        # The mean over the critics: RLlib halves each twin's loss.
        return jnp.mean(jnp.square(target[None] - q)), q

    def actor_loss(params: Any, obs: jax.Array, action: jax.Array, weight: jax.Array):
        logp = dist.log_prob(cast(jax.Array, actor.apply(params, obs)), action)
        return -jnp.mean(weight * logp), logp

    def learn(
        state: IQLLearnerState,
        batch: dict[str, jax.Array],
        weights: jax.Array,
        key: jax.Array,
        timestep: jax.Array | None = None,
    ):
        now = settings_at(dynamic, timestep)
        obs, action = batch["obs"], batch["action"]
        q_target = jnp.min(q_of(state.target_critic, obs, action), 0)
        v_next = v_of(state.value, batch["next_obs"])
        target = batch["reward"] + batch["discount"] * v_next
        v_step = gradient_step(
            value_loss,
            optimizers.value,
            state.value,
            with_hyperparams(state.value_opt, learning_rate=now["value_lr"]),
            obs,
            q_target,
        )
        # V(s) at the step's starting parameters: the value loss's own forward pass.
        advantage = q_target - v_step.aux
        weight = jnp.minimum(jnp.exp(beta * advantage), MAX_EXP_ADVANTAGE)
        q_step = gradient_step(
            critic_loss,
            optimizers.critic,
            state.critic,
            with_hyperparams(state.critic_opt, learning_rate=now["critic_lr"]),
            obs,
            action,
            target,
        )
        pi_step = gradient_step(
            actor_loss,
            optimizers.actor,
            state.actor,
            with_hyperparams(state.actor_opt, learning_rate=now["actor_lr"]),
            obs,
            action,
            weight,
        )
        q = q_step.aux
        td = target - q[0]
        metrics = {
            **{metric: now[name] for metric, name in IQL_RATES.items()},
            "qf_loss": q_step.loss,
            "policy_loss": pi_step.loss,
            "value_loss": v_step.loss,
            "qf_mean": jnp.mean(q[0]),
            "vf_mean": jnp.mean(v_step.aux),
            "advantage_mean": jnp.mean(advantage),
            "exp_advantage_mean": jnp.mean(weight),
            "td_error_mean": jnp.mean(td),
        }
        state = dataclasses.replace(
            state,
            actor=pi_step.params,
            critic=q_step.params,
            value=v_step.params,
            actor_opt=pi_step.opt_state,
            critic_opt=q_step.opt_state,
            value_opt=v_step.opt_state,
            steps=state.steps + 1,
        )
        return state, td, metrics

    return learn


def make_iql_target_update(tau: float, period: int) -> Any:
    """``update_target(state) -> state``: every ``period`` gradient steps (0 or 1: every step)
    the target critics move ``tau`` of the way to the critics (1 copies them)."""

    move = make_target_update(tau, {"target_critic": "critic"})
    if period <= 1:
        return move

    def update_target(state: IQLLearnerState) -> IQLLearnerState:
        due = state.steps % period == 0
        moved = move(state).target_critic
        kept = jax.tree.map(lambda m, t: jnp.where(due, m, t), moved, state.target_critic)
        return dataclasses.replace(state, target_critic=kept)

    return update_target


__all__ = [
    "IQL_METRICS",
    "IQLLearnerState",
    "IQLNetworks",
    "IQLOptimizers",
    "expectile_loss",
    "make_iql_learn",
    "make_iql_target_update",
]
