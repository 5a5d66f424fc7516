"""The typed interface between an algorithm and the execution layer.

An algorithm builds its policy's pure functions once, closing over its networks and frozen
hyper-parameters, and hands them over as a ``PolicyParts``: acting for the runners and the fused
rollout, the parameters they act with, inference for ``compute_actions`` and evaluation, and the
mapping of policy actions to env actions. The execution layer (sampling, loops, evaluation,
inference, checkpoints) reads nothing else of the algorithm's policy; it jits these functions, so
none of them may read mutable state (``self``) when traced.

As in brax's ``make_inference_fn``: ``inference(policy_id, explore)`` returns a pure function
``infer(params, obs, key) -> (action_dist_inputs, action)`` and ``inference_params(state,
policy_id)`` the parameters it takes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.runners.acting import recurrent_spec
from rljax.types import InferenceFn as InferenceFn
from rljax.types import Params as Params
from rljax.types import PolicyParts as PolicyParts
from rljax.types import RecurrentInput
from rljax.types import State as State
from rljax.types import StateT as StateT


def single_policy_inference(
    outputs: Callable[[Params, jax.Array], jax.Array],
    explore: Callable[[jax.Array, jax.Array, Params], jax.Array],
    greedy: Callable[[jax.Array, Params], jax.Array],
) -> Callable[[str | None, bool], InferenceFn]:
    """``inference`` of an algorithm with one policy, from its pieces.

    Args:
      outputs: ``outputs(params, obs) -> action_dist_inputs`` (noise off).
      explore: ``explore(key, action_dist_inputs, params) -> action``: sampling as the runners
        act (a distribution's sample, epsilon-greedy, exploration noise).
      greedy: ``greedy(action_dist_inputs, params) -> action``.
    """

    def infer_greedy(params: Params, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        inputs = outputs(params, obs)
        return inputs, greedy(inputs, params)

    def infer_explore(
        params: Params, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        inputs = outputs(params, obs)
        return inputs, explore(key, inputs, params)

    def inference(policy_id: str | None, explore_: bool) -> InferenceFn:
        return infer_explore if explore_ else infer_greedy

    return inference


def distribution_inference(
    outputs: Callable[[Params, jax.Array], jax.Array], dist: Any
) -> Callable[[str | None, bool], InferenceFn]:
    """``inference`` of a policy that samples its action distribution ``dist`` (an
    ``ActionDistribution``) and acts greedily with its mode."""
    return single_policy_inference(
        outputs,
        lambda key, inputs, params: dist.sample(key, inputs),
        lambda inputs, params: dist.mode(inputs),
    )


def space_env_actions(
    space: gym.Space, clip: bool
) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """``(to_env_action, to_env_action_host)`` of a policy that acts in the env's own action
    space: a Box's dtype (clipped to its bounds with ``clip``, RLlib's ``clip_actions``), or
    int32 values of a discrete space (a Discrete's ``start`` added to the policy's index); a Tuple / Dict space's actions part by part (a tuple /
    dict of them)."""
    if isinstance(space, gym.spaces.Tuple | gym.spaces.Dict):
        keys: list[str] | None = None
        subs: list[gym.Space] = list(space.spaces) if isinstance(space, gym.spaces.Tuple) else []
        if isinstance(space, gym.spaces.Dict):
            keys = sorted(space.spaces)
            subs = [space.spaces[k] for k in keys]
        funcs = [space_env_actions(s, clip) for s in subs]

        def each(action: Any, host: bool) -> Any:
            leaves = [action[k] for k in keys] if keys else list(action)
            out = [f[1 if host else 0](a) for f, a in zip(funcs, leaves, strict=True)]
            return dict(zip(keys, out, strict=True)) if keys else tuple(out)

        return (lambda a: each(a, False)), (lambda a: each(a, True))

    # A Discrete space counting from ``start``: the policy's index i is the env's start + i.
    start = int(space.start) if isinstance(space, gym.spaces.Discrete) else 0

    def to_env(action: jax.Array) -> jax.Array:
        if isinstance(space, gym.spaces.Box):
            if clip:
                action = jnp.clip(action, space.low, space.high)
            return action.astype(space.dtype)
        return action.astype(jnp.int32) + start if start else action.astype(jnp.int32)

    def to_env_host(action: np.ndarray) -> np.ndarray:
        if isinstance(space, gym.spaces.Box):
            if clip:
                action = np.clip(action, space.low, space.high)
            # The env's own dtype: EnvPool's MuJoCo tasks take float64, which JAX (32-bit)
            # does not compute.
            return np.asarray(action, space.dtype)
        return np.asarray(action) + start if start else action

    return to_env, to_env_host


def with_env_to_module(
    parts: PolicyParts[StateT],
    transform: Callable[[Any, Any], Any],
    connectors_of: Callable[[StateT], Any],
) -> PolicyParts[StateT]:
    """``parts`` whose policy sees observations through env-to-module connectors.

    The acting and inference parameters become ``{"module": ..., "connectors": ...}`` (the
    connectors' state, ``connectors_of(state)``), so the runners get the connectors' state
    with every weight broadcast, and evaluation, ``compute_actions`` and exported programs
    apply ``transform(connector_state, obs)`` with the weights they act with.
    """
    act0 = parts.act

    def seen(connectors: Any, obs: Any) -> Any:
        # A recurrent policy's input: the connectors transform its observations only.
        if isinstance(obs, RecurrentInput):
            return obs._replace(obs=transform(connectors, obs.obs))
        return transform(connectors, obs)

    def act(params: Params, obs: Any, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
        return act0(params["module"], seen(params["connectors"], obs), key)

    if recurrent_spec(act0) is not None:
        act.recurrent = recurrent_spec(act0)  # type: ignore[attr-defined]

    def acting_params(state: StateT) -> Params:
        return {"module": parts.acting_params(state), "connectors": connectors_of(state)}

    def inference_params(state: StateT, policy_id: str | None) -> Params:
        return {
            "module": parts.inference_params(state, policy_id),
            "connectors": connectors_of(state),
        }

    # One wrapper per inner function: callers cache compilations per function object.
    wrapped: dict[InferenceFn, InferenceFn] = {}

    def inference(policy_id: str | None, explore: bool) -> InferenceFn:
        inner = parts.inference(policy_id, explore)
        if inner not in wrapped:

            def infer(params: Params, obs: jax.Array, key: jax.Array) -> Any:
                return inner(params["module"], seen(params["connectors"], obs), key)

            wrapped[inner] = infer
        return wrapped[inner]

    recurrent = None
    if parts.recurrent_inference is not None:
        inner_recurrent = parts.recurrent_inference
        recurrent_fns: dict[bool, Callable[..., Any]] = {}

        def recurrent(explore: bool) -> Callable[..., Any]:
            if explore not in recurrent_fns:
                inner = inner_recurrent(explore)
                recurrent_fns[explore] = lambda params, rin, key: inner(
                    params["module"], seen(params["connectors"], rin), key
                )
            return recurrent_fns[explore]

    return dataclasses.replace(
        parts,
        act=act,
        acting_params=acting_params,
        inference=inference,
        inference_params=inference_params,
        recurrent_inference=recurrent,
    )
