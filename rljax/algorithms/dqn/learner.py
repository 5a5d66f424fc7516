"""DQN's learner: its state, its frozen settings, and the learn step built from them.

``learn = make_dqn_learn(networks, optimizer, hp)`` is a pure function
``learn(state, batch, weights, key) -> (state, td_errors, metrics)``: one gradient step of
``rljax.algorithms.dqn.losses.dqn_loss`` on a replay batch, the TD errors feeding priorities.
The target network follows ``params`` by ``rljax.learners.update.make_target_update``.

The optimizer is built once (``make_dqn_optimizer``: ``optax.inject_hyperparams``, the rate in
its state); the learning rate is DQN's one dynamic setting, evaluated once per step at the env
steps sampled and written into the optimizer state (``rljax.learners.hyperparams``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax

from rljax.algorithms.dqn.losses import DQNLossConfig, dqn_loss
from rljax.algorithms.dqn.networks import DQNNetworks
from rljax.algorithms.settings import frozen_from_config
from rljax.learners.hyperparams import (
    dynamic_settings,
    make_injected_optimizer,
    settings_at,
    with_hyperparams,
)
from rljax.learners.update import gradient_step, make_optimizer
from rljax.utils.schedules import Schedule

DQN_METRICS = (
    "default_optimizer_learning_rate",
    "qf_loss",
    "qf_mean",
    "qf_max",
    "qf_min",
    "td_error_mean",
    "gradients_global_norm",
)


@flax.struct.dataclass
class DQNLearnerState:
    """Everything DQN's update changes; the field names are the checkpoint's keys.

    Attributes:
      params: The online Q-network's parameters.
      target_params: The target Q-network's parameters.
      opt_state: The optimizer's state for ``params``.
    """

    params: Any
    target_params: Any
    opt_state: Any


@dataclasses.dataclass(frozen=True)
class DQNHyperparams:
    """DQN's settings, frozen from the config when the algorithm is built (RLlib's names;
    ``epsilon`` is the exploration schedule of (timestep, value) pairs)."""

    loss: DQNLossConfig  # double_q, td_error_loss_fn
    noisy: bool
    num_atoms: int
    v_min: float
    v_max: float
    tau: float
    epsilon: tuple[tuple[int, float], ...]

    @classmethod
    def from_config(cls, cfg: Any) -> DQNHyperparams:
        """DQN's settings read from a ``DQNConfig`` once, at build time."""
        epsilon = tuple((int(t), float(v)) for t, v in cfg.epsilon)
        return frozen_from_config(cls, cfg, epsilon=epsilon)

    def support(self) -> jax.Array | None:
        """The atoms of the return distributions, [num_atoms]; None for expected-value Q."""
        if self.num_atoms == 1:
            return None
        return jnp.linspace(self.v_min, self.v_max, self.num_atoms)


def make_dqn_optimizer(
    lr: float | Schedule, grad_clip: float | None, clip_by: str = "global_norm"
) -> optax.GradientTransformation:
    """DQN's Adam (always chained, behind the clip of ``clip_by`` when ``grad_clip`` is set), built
    once with its rate (and clip) in its state; the state starts at ``lr``'s first value and
    each step writes the rate of its env steps there. The state without the injected values
    is the one checkpoints have always stored."""

    def factory(rate: Any, max_norm: Any) -> optax.GradientTransformation:
        return make_optimizer(rate, max_norm, always_chain=True, clip_by=clip_by)

    return make_injected_optimizer(factory, lr, grad_clip)


def make_dqn_learn(
    networks: DQNNetworks,
    optimizer: optax.GradientTransformation,
    hp: DQNHyperparams,
    lr: float | Schedule | None = None,
    dynamic: Mapping[str, Any] | None = None,
) -> Callable[
    ...,
    tuple[DQNLearnerState, jax.Array, dict[str, jax.Array]],
]:
    """``learn(state, batch, weights [B], key) -> (state, td_errors [B], metrics)``.

    ``batch`` holds ``obs`` [B, ...], ``action`` [B], ``reward`` [B] (n-step returns),
    ``discount`` [B] and ``next_obs`` [B, ...]; ``weights`` are importance weights. The metrics
    are ``DQN_METRICS``, scalars.

    ``optimizer`` is built once (``make_dqn_optimizer``). The learning rate is a dynamic
    setting: ``dynamic["lr"]`` (``rljax.learners.hyperparams``: a number, ``SchedulePoints``
    or a traced scalar; default ``lr``, a number or RLlib's schedule), evaluated once per step
    at ``timestep`` (the env steps sampled; None: 0), written into an injected optimizer's
    state and reported as ``default_optimizer_learning_rate`` (NaN without a rate).
    """
    dynamic = dynamic_settings({"lr": lr} if dynamic is None else dynamic)
    loss_cfg = hp.loss
    # One pass of the online net over obs and next_obs together, where no noise tells them apart.
    one_online_pass = hp.loss.double_q and not hp.noisy

    def loss_fn(params, target_params, batch, weights, keys):
        k_online, k_next, k_target = keys
        obs, next_obs = batch["obs"], batch["next_obs"]
        next_out_online: jax.Array | None  # None: no double Q
        if one_online_pass:
            # Observations may be a structure (a Dict space's dict of arrays).
            size = jax.tree.leaves(obs)[0].shape[0]
            both = networks.apply(
                params, jax.tree.map(lambda a, b: jnp.concatenate([a, b]), obs, next_obs)
            )
            out, next_out_online = both[:size], both[size:]
        else:
            out = networks.apply(params, obs, k_online)
            next_out_online = networks.apply(params, next_obs, k_next) if hp.loss.double_q else None
        next_out_target = networks.apply(target_params, next_obs, k_target)
        return dqn_loss(
            out,
            next_out_online,
            next_out_target,
            batch["action"],
            batch["reward"],
            batch["discount"],
            weights,
            loss_cfg,
            networks.support,
        )

    def learn(
        state: DQNLearnerState,
        batch: dict[str, jax.Array],
        weights: jax.Array,
        key: jax.Array,
        timestep: jax.Array | None = None,
    ):
        # The dynamic settings, evaluated once per step.
        rate = settings_at(dynamic, timestep).get("lr")
        opt_state = with_hyperparams(state.opt_state, learning_rate=rate)
        keys = jax.random.split(key, 3)
        step = gradient_step(
            loss_fn,
            optimizer,
            state.params,
            opt_state,
            state.target_params,
            batch,
            weights,
            keys,
        )
        td, q_taken = step.aux
        metrics = {
            "default_optimizer_learning_rate": (
                jnp.asarray(float("nan"), jnp.float32) if rate is None else rate
            ),
            "qf_loss": step.loss,
            "qf_mean": jnp.mean(q_taken),
            "qf_max": jnp.max(q_taken),
            "qf_min": jnp.min(q_taken),
            "td_error_mean": jnp.mean(jnp.abs(td)),
            "gradients_global_norm": step.grad_norm,
        }
        return dataclasses.replace(state, params=step.params, opt_state=step.opt_state), td, metrics

    return learn


__all__ = [
    "DQN_METRICS",
    "DQNHyperparams",
    "DQNLearnerState",
    "make_dqn_learn",
    "make_dqn_optimizer",
]
