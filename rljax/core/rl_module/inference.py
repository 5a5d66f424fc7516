"""An algorithm's inference: its policy's jitted inference functions (one per inference function,
so policies that share a network share their compilations), observations checked against the
observation space, and the actions of ``compute_actions``, ``compute_single_action``, a module's
forward passes and evaluation.

``Inference`` reads the algorithm through ``InferenceHost`` (its parts, training state, spaces and
inference key stream), so it acts with the weights the algorithm holds at each call;
``rljax.algorithms.algorithm.Algorithm`` builds one and delegates its inference methods to it.
It sits with ``RLModule`` and the recurrent evaluation actor, whose observation checks it uses
(``rljax.core.rl_module.inputs``); nothing here imports ``rljax.algorithms``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.core.rl_module.inputs import checked_observations
from rljax.core.rl_module.rl_module import RecurrentActor
from rljax.env.spaces import is_structured
from rljax.execution.parts import InferenceFn, Params, PolicyParts
from rljax.runners.acting import recurrent_spec
from rljax.utils.checks import require_bool


class InferenceHost(Protocol):
    """What ``Inference`` reads of the algorithm it serves (``Algorithm`` provides it)."""

    parts: PolicyParts[Any]
    state: Any
    _action_key: jax.Array
    observation_space: gym.Space[Any]
    action_space: gym.Space[Any]

    def _check_policy_id(self, policy_id: str | None) -> None: ...
    def _observation_shape(self) -> tuple[int, ...]: ...


class Inference:
    """The jitted inference of ``host``'s policy, compiled once per inference function.

    Args:
      host: The algorithm: its ``parts`` and ``state`` are read at each call (they are set by
        its ``_setup()``, after this object is built).
    """

    def __init__(self, host: InferenceHost) -> None:
        self._host = host
        self.infer_cache: dict[InferenceFn, InferenceFn] = {}
        self._recurrent_infer_cache: dict[Any, Callable[..., Any]] = {}
        self._greedy_slots_jit: Callable[[Params, Any], jax.Array] | None = None

    def check_obs(self, obs: Any, batched: bool) -> Any:
        """Observations checked against the observation space (an array, or for Dict / Tuple
        spaces a dict / tuple of arrays); a mismatch raises ``ValueError`` naming it."""
        host = self._host
        if not is_structured(host.observation_space):
            host._observation_shape()  # a space without a shape: ConfigError, as before
        return checked_observations(host.observation_space, obs, batched)

    def infer_fn(self, explore: bool, policy_id: str | None = None) -> InferenceFn:
        """The jitted ``parts.inference(policy_id, explore)``: one per inference function, so
        policies that share a network share its compilations."""
        explore = require_bool("explore", explore)  # "no" or 1 must not pick sampling
        infer = self._host.parts.inference(policy_id, explore)
        if infer not in self.infer_cache:
            self.infer_cache[infer] = jax.jit(infer)
        return self.infer_cache[infer]

    def recurrent_infer_fn(self, explore: bool) -> Callable[..., Any]:
        """A recurrent policy's jitted ``recurrent_inference(explore)``, compiled once."""
        parts = self._host.parts
        assert parts.recurrent_inference is not None
        infer = parts.recurrent_inference(explore)
        if infer not in self._recurrent_infer_cache:
            self._recurrent_infer_cache[infer] = jax.jit(infer)
        return self._recurrent_infer_cache[infer]

    def next_action_key(self) -> jax.Array:
        """A new key of the host's inference key stream (``compute_actions``, modules,
        evaluation)."""
        host = self._host
        host._action_key, sub = jax.random.split(host._action_key)
        return sub

    def forward(
        self,
        obs: Any,
        explore: bool,
        policy_id: str | None = None,
        params: Params | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One jitted pass over checked observations: (action_dist_inputs, env actions), with
        the current weights or ``params`` (a snapshot)."""
        host = self._host
        if params is None:
            params = host.parts.inference_params(host.state, policy_id)
        infer = self.infer_fn(explore, policy_id)
        if len(jax.tree.leaves(obs)[0]) == 0:
            return empty_outputs(infer, params, obs, host._action_key)
        inputs, action = infer(params, jax.tree.map(jnp.asarray, obs), self.next_action_key())
        return np.asarray(inputs), host.parts.to_env_action_host(jax.tree.map(np.asarray, action))

    def compute_actions(self, obs_batch: Any, explore: bool, policy_id: str | None) -> Any:
        """``Algorithm.compute_actions``: actions for a batch of observations, or a dict
        id -> observation (stacked into one batch)."""
        explore = require_bool("explore", explore)
        self._host._check_policy_id(policy_id)
        space = self._host.observation_space
        # A dict of observations by id, unless it is one batch of a Dict space.
        is_batch = isinstance(space, gym.spaces.Dict) and (
            isinstance(obs_batch, dict) and set(obs_batch) == set(space.spaces)
        )
        if isinstance(obs_batch, dict) and not is_batch:
            if not obs_batch:
                return {}
            ids = list(obs_batch)
            rows = [self.check_obs(obs_batch[i], False) for i in ids]
            actions = self.compute_actions(
                jax.tree.map(lambda *xs: np.stack(xs), *rows), explore, policy_id
            )
            return {i: jax.tree.map(lambda a, k=k: a[k], actions) for k, i in enumerate(ids)}
        return self.forward(self.check_obs(obs_batch, batched=True), explore, policy_id)[1]

    def compute_single_action(self, observation: Any, explore: bool, policy_id: str | None) -> Any:
        """``Algorithm.compute_single_action``: the action for one observation (an ``int`` for
        a ``Discrete`` action space)."""
        explore = require_bool("explore", explore)
        self._host._check_policy_id(policy_id)
        obs = self.check_obs(observation, batched=False)
        actions = self.forward(jax.tree.map(lambda x: x[None], obs), explore, policy_id)[1]
        action = jax.tree.map(lambda a: a[0], actions)  # a Tuple / Dict space's: part by part
        return int(action) if isinstance(self._host.action_space, gym.spaces.Discrete) else action

    def evaluation_actions(
        self, explore: bool = False, params: Any = None
    ) -> Callable[[Any], np.ndarray]:
        """Observations -> the policy's env actions (greedy, or sampled with ``explore``), for
        evaluation; with ``params`` (a snapshot) instead of the current weights."""
        host = self._host
        parts = host.parts
        if parts.recurrent_inference is not None:
            spec = recurrent_spec(parts.act)
            infer = self.recurrent_infer_fn(explore)
            if params is None:
                params = parts.inference_params(host.state, None)
            return RecurrentActor(
                spec, infer, params, parts.to_env_action_host, self.next_action_key
            )
        if parts.greedy_slots is None:
            return lambda obs: self.forward(jax.tree.map(np.asarray, obs), explore, params=params)[
                1
            ]
        greedy = self._greedy_slots_jit
        if greedy is None:
            # Typed as the function it wraps: mypy 1.14 joins a jitted one and it to object.
            jitted: Callable[[Params, Any], jax.Array] = jax.jit(parts.greedy_slots)
            greedy = self._greedy_slots_jit = jitted
        if params is None:
            params = parts.acting_params(host.state)
        to_env = parts.to_env_action_host
        return lambda obs: to_env(np.asarray(greedy(params, obs)))


def empty_outputs(
    infer: InferenceFn, params: Params, obs: Any, key: jax.Array
) -> tuple[np.ndarray, np.ndarray]:
    """``infer(params, obs, key)``'s outputs for an empty batch ``obs``, built from its output
    shapes for one row (traced, not compiled): nothing needs computing, and a model that reshapes
    by the batch size cannot even be traced with a batch of 0."""
    row = jax.tree.map(lambda x: jax.ShapeDtypeStruct((1, *x.shape[1:]), x.dtype), obs)
    inputs, action = jax.eval_shape(infer, params, row, key)
    return (
        np.zeros((0, *inputs.shape[1:]), inputs.dtype),
        jax.tree.map(lambda a: np.zeros((0, *a.shape[1:]), a.dtype), action),
    )


__all__ = ["Inference", "InferenceHost", "empty_outputs"]
