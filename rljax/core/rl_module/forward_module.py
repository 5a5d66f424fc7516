"""The part of ``RLModule`` a user subclasses for a module that acts by a forward pass of its
own (a heuristic, ``RandomRLModule``): it has no parameters and never learns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp

from rljax.core.columns import Columns
from rljax.utils.errors import ConfigError

FORWARD_METHODS = ("_forward", "_forward_inference", "_forward_exploration")


class ForwardModuleBase:
    """A module built by keywords (RLlib's ``RLModule(observation_space=..., action_space=...,
    model_config=...)``) whose forward pass is a subclass's ``_forward`` (or
    ``_forward_inference`` / ``_forward_exploration``)."""

    def __init__(
        self,
        *,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        model_config: dict[str, Any] | None = None,
        inference_only: bool = False,
        **kwargs: Any,
    ):
        self.observation_space = observation_space
        self.action_space = action_space
        self.model_config = dict(model_config or {})
        self.inference_only = inference_only
        self.setup()

    def setup(self) -> None:
        """Called once when the module is built (RLlib's hook); the spaces and
        ``model_config`` are set."""

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The forward pass, traced inside the jitted act step: ``batch[Columns.OBS]`` holds a
        batch of observations ``[B, *obs_shape]`` (jax arrays) and ``kwargs["rng"]`` a PRNG
        key. It returns ``{Columns.ACTIONS: [B, ...]}`` or ``{Columns.ACTION_DIST_INPUTS: [B,
        n]}`` (the action distribution's inputs: sampled when exploring, its mode otherwise).
        It must be pure jax (no host state)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no forward pass; override _forward (or "
            "_forward_inference and _forward_exploration)"
        )

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The greedy forward pass (default: ``_forward``)."""
        return self._forward(batch, **kwargs)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The exploring forward pass (default: ``_forward``)."""
        return self._forward(batch, **kwargs)


def is_forward_module_class(cls: Any) -> bool:
    """Whether ``cls`` is an ``RLModule`` subclass with a forward pass of its own."""
    return (
        isinstance(cls, type)
        and issubclass(cls, ForwardModuleBase)
        and any(getattr(cls, m) is not getattr(ForwardModuleBase, m) for m in FORWARD_METHODS)
    )


def forward_module_outputs(module: Any, obs: Any, key: jax.Array, explore: bool) -> dict[str, Any]:
    """A forward module's outputs over a batch ``obs`` (traceable): its forward pass's dict,
    with ``Columns.ACTIONS`` added from ``Columns.ACTION_DIST_INPUTS`` when it gives only those
    (sampled when exploring, the mode otherwise, by the module's action space)."""
    forward = module._forward_exploration if explore else module._forward_inference
    key, sample_key = jax.random.split(key)
    out = forward({Columns.OBS: obs}, rng=key)
    if not isinstance(out, Mapping) or not (
        Columns.ACTIONS in out or Columns.ACTION_DIST_INPUTS in out
    ):
        raise ConfigError(
            f"{type(module).__name__}'s forward pass returned {type(out).__name__}"
            f"{sorted(out) if isinstance(out, Mapping) else ''}; it must return a dict with "
            f"{Columns.ACTIONS!r} or {Columns.ACTION_DIST_INPUTS!r}"
        )
    out = dict(out)
    if Columns.ACTIONS not in out:
        from rljax.networks.distributions import make_distribution

        dist = make_distribution(module.action_space)
        inputs = out[Columns.ACTION_DIST_INPUTS]
        out[Columns.ACTIONS] = dist.sample(sample_key, inputs) if explore else dist.mode(inputs)
    out[Columns.ACTIONS] = jnp.asarray(out[Columns.ACTIONS])
    return out


__all__ = ["ForwardModuleBase", "forward_module_outputs", "is_forward_module_class"]
