"""RLlib's ``ray.rllib.evaluation.postprocessing``: the names and the host-side return and
advantage helpers that old-stack scripts import (``Postprocessing.ADVANTAGES``,
``compute_advantages``, ``discount_cumsum``), in NumPy, with RLlib's arithmetic.

rljax's algorithms compute advantages inside their jitted updates (``rljax.ops.gae``); these
helpers are for a user's own analysis of a trajectory, as RLlib's are. A callback's
``on_postprocess_trajectory`` (the old stack's hook that edits a batch before the update) is
never called by rljax, which says so when the callback class is set.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import numpy as np


class Postprocessing:
    """The keys that postprocessing adds to a trajectory's batch."""

    ADVANTAGES = "advantages"
    VALUE_TARGETS = "value_targets"


def discount_cumsum(x: np.ndarray, gamma: float) -> np.ndarray:
    """The discounted sums of ``x`` from each step to the end: ``y[t] = x[t] + gamma *
    y[t + 1]``, with ``y[T - 1] = x[T - 1]``.

    >>> discount_cumsum(np.array([1.0, 2.0, 3.0]), 0.5).tolist()
    [2.75, 3.5, 3.0]
    """
    x = np.asarray(x)
    if x.ndim < 1 or x.shape[0] == 0:
        raise ValueError(f"discount_cumsum: x must be a non-empty sequence; got shape {x.shape}")
    y = np.empty(x.shape, np.result_type(x.dtype, np.float32))
    running = np.zeros(x.shape[1:], y.dtype)
    for t in range(x.shape[0] - 1, -1, -1):
        running = x[t] + gamma * running
        y[t] = running
    return y


def compute_advantages(
    rollout: MutableMapping[str, Any],
    last_r: float,
    gamma: float = 0.9,
    lambda_: float = 1.0,
    use_gae: bool = True,
    use_critic: bool = True,
    rewards: Any = None,
    vf_preds: Any = None,
) -> MutableMapping[str, Any]:
    """Adds ``advantages`` and ``value_targets`` (float32) to one trajectory's batch, as
    RLlib's: with ``use_gae``, GAE(``gamma``, ``lambda_``) over the value estimates
    (``vf_preds``) bootstrapped with ``last_r``; without, the discounted returns (bootstrapped
    with ``last_r``) minus the value estimates, or themselves without ``use_critic``.

    Args:
      rollout: A dict-like batch of one trajectory with ``rewards`` (and ``vf_preds`` when
        ``use_critic``); it is changed in place and returned.
      last_r: The value estimate after the last step (0 when the episode terminated).
      rewards, vf_preds: Override the rollout's arrays.

    Raises:
      ValueError: ``use_gae`` without ``use_critic``, or no value estimates with
        ``use_critic``.
    """
    if use_gae and not use_critic:
        raise ValueError(
            "compute_advantages: use_gae=True needs use_critic=True (a value function)"
        )
    if rewards is None:
        rewards = rollout["rewards"]
    rewards = np.asarray(rewards, np.float32)
    if use_critic:
        if vf_preds is None:
            if "vf_preds" not in rollout:
                raise ValueError(
                    "compute_advantages: use_critic=True but the rollout has no vf_preds"
                )
            vf_preds = rollout["vf_preds"]
        vf_preds = np.asarray(vf_preds, np.float32)
    last = np.asarray([float(last_r)], np.float32)
    if use_gae:
        values = np.concatenate([vf_preds, last])
        deltas = rewards + gamma * values[1:] - values[:-1]
        advantages = discount_cumsum(deltas, gamma * lambda_)
        targets = advantages + vf_preds
    else:
        returns = discount_cumsum(np.concatenate([rewards, last]), gamma)[:-1]
        advantages = returns - vf_preds if use_critic else returns
        targets = returns if use_critic else np.zeros_like(returns)
    rollout[Postprocessing.ADVANTAGES] = advantages.astype(np.float32)
    rollout[Postprocessing.VALUE_TARGETS] = targets.astype(np.float32)
    return rollout


__all__ = ["Postprocessing", "compute_advantages", "discount_cumsum"]
