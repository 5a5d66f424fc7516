"""Layer initializers by RLlib's names (``DefaultModelConfig``'s ``*_initializer`` settings),
as Flax initializers.

RLlib takes PyTorch's ``torch.nn.init`` names, with or without the trailing underscore
(``"xavier_uniform_"``, ``"orthogonal"``), their keyword arguments
(``*_initializer_kwargs``, e.g. ``{"gain": 0.01}``), or the torch functions themselves; each
maps to the Flax initializer that draws from the same distribution:

=====================================  ===========================================  =====================
name                                   kwargs (torch's)                             distribution
=====================================  ===========================================  =====================
``xavier_uniform`` / ``glorot_uniform``  ``gain`` (1)                               U(±gain·√(6/(fan_in+fan_out)))
``xavier_normal`` / ``glorot_normal``    ``gain`` (1)                               N(0, gain²·2/(fan_in+fan_out))
``kaiming_uniform`` / ``he_uniform``     ``a`` (0), ``mode`` (fan_in), ``nonlinearity`` (leaky_relu)  U(±gain·√(3/fan))
``kaiming_normal`` / ``he_normal``       as kaiming_uniform                         N(0, gain²/fan)
``orthogonal``                         ``gain`` (1)                                 orthogonal, scaled
``normal``                             ``mean`` (0), ``std`` (1)                    N(mean, std²)
``trunc_normal``                       ``mean`` (0), ``std`` (1), ``a`` (-2), ``b`` (2)  N cut to [a, b]
``uniform``                            ``a`` (0), ``b`` (1)                         U(a, b)
``constant``                           ``val``                                      val
``zeros`` / ``ones``                   none                                         0 / 1
=====================================  ===========================================  =====================

Anything else (another name, an unknown keyword, a function not among these) is a
``ConfigError`` naming what is allowed, raised when the config is made.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn

from rljax.utils.errors import ConfigError

Initializer = Callable[..., jax.Array]

_ALIASES = {
    "glorot_uniform": "xavier_uniform",
    "glorot_normal": "xavier_normal",
    "he_uniform": "kaiming_uniform",
    "he_normal": "kaiming_normal",
    "truncated_normal": "trunc_normal",
    "zeros": "zeros",
    "ones": "ones",
}
# name -> the keyword arguments it takes, with torch's defaults.
_KWARGS: dict[str, dict[str, Any]] = {
    "xavier_uniform": {"gain": 1.0},
    "xavier_normal": {"gain": 1.0},
    "kaiming_uniform": {"a": 0.0, "mode": "fan_in", "nonlinearity": "leaky_relu"},
    "kaiming_normal": {"a": 0.0, "mode": "fan_in", "nonlinearity": "leaky_relu"},
    "orthogonal": {"gain": 1.0},
    "normal": {"mean": 0.0, "std": 1.0},
    "trunc_normal": {"mean": 0.0, "std": 1.0, "a": -2.0, "b": 2.0},
    "uniform": {"a": 0.0, "b": 1.0},
    "constant": {"val": None},
    "zeros": {},
    "ones": {},
}
NAMES = tuple(_KWARGS)


def _gain(nonlinearity: str, a: float) -> float:
    """torch.nn.init.calculate_gain for the nonlinearities kaiming's takes."""
    gains = {"linear": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3.0, "relu": math.sqrt(2.0)}
    if nonlinearity == "leaky_relu":
        return math.sqrt(2.0 / (1.0 + float(a) ** 2))
    if nonlinearity not in gains:
        raise ConfigError(
            f"nonlinearity={nonlinearity!r}: use one of {sorted([*gains, 'leaky_relu'])}"
        )
    return gains[nonlinearity]


def canonical_name(where: str, value: Any) -> str | None:
    """The table's name of ``value`` (a name, a torch ``nn.init`` function, or None)."""
    if value is None:
        return None
    name = value if isinstance(value, str) else getattr(value, "__name__", None)
    if not isinstance(name, str):
        raise ConfigError(
            f"{where}={value!r}: use an initializer's name ({', '.join(NAMES)}) or a "
            "torch.nn.init function"
        )
    key = name.strip().lower().rstrip("_")
    key = _ALIASES.get(key, key)
    if key not in _KWARGS:
        raise ConfigError(f"{where}={name!r} is not an initializer rljax has; use one of {NAMES}")
    return key


def check_kwargs(where: str, name: str | None, kwargs: Any) -> dict[str, Any] | None:
    """``kwargs`` checked against what ``name`` takes (a dict, or None for the defaults)."""
    if kwargs is None:
        if name == "constant":
            raise ConfigError(f"{where}: the 'constant' initializer needs {{'val': <number>}}")
        return None
    if not isinstance(kwargs, Mapping):
        raise ConfigError(f"{where}={kwargs!r}: use a dict of the initializer's arguments")
    if name is None:
        raise ConfigError(f"{where}={dict(kwargs)!r} is set but its initializer is not")
    allowed = _KWARGS[name]
    for key, value in kwargs.items():
        if key not in allowed:
            raise ConfigError(
                f"{where}: {name!r} takes {sorted(allowed) or 'no arguments'}; got {key!r}"
            )
        if key == "mode" and value not in ("fan_in", "fan_out"):
            raise ConfigError(f"{where}['mode']={value!r}: use 'fan_in' or 'fan_out'")
        if key == "nonlinearity":
            _gain(value, 0.0)
        elif key != "mode" and not isinstance(value, int | float):
            raise ConfigError(f"{where}[{key!r}]={value!r}: use a number")
    if name == "constant" and "val" not in kwargs:
        raise ConfigError(f"{where}: the 'constant' initializer needs {{'val': <number>}}")
    return dict(kwargs)


def make_initializer(name: str, kwargs: Mapping[str, Any] | None = None) -> Initializer:
    """The Flax initializer of ``name`` with ``kwargs`` (checked by ``check_kwargs``)."""
    kw = {**_KWARGS[name], **(kwargs or {})}
    if name == "xavier_uniform":
        return nn.initializers.variance_scaling(kw["gain"] ** 2, "fan_avg", "uniform")
    if name == "xavier_normal":
        return nn.initializers.variance_scaling(kw["gain"] ** 2, "fan_avg", "normal")
    if name in ("kaiming_uniform", "kaiming_normal"):
        gain = _gain(kw["nonlinearity"], kw["a"])
        if name == "kaiming_uniform":
            return nn.initializers.variance_scaling(gain**2, kw["mode"], "uniform")
        return nn.initializers.variance_scaling(gain**2, kw["mode"], "normal")
    if name == "orthogonal":
        return nn.initializers.orthogonal(kw["gain"])
    if name == "zeros":
        return nn.initializers.zeros
    if name == "ones":
        return nn.initializers.ones
    if name == "constant":
        return nn.initializers.constant(kw["val"])
    mean, std = float(kw.get("mean", 0.0)), float(kw.get("std", 1.0))
    if name == "normal":

        def normal(key: jax.Array, shape: Any, dtype: Any = jnp.float32) -> jax.Array:
            return mean + std * jax.random.normal(key, shape, dtype)

        return normal
    if name == "trunc_normal":
        low, high = (float(kw["a"]) - mean) / std, (float(kw["b"]) - mean) / std

        def trunc_normal(key: jax.Array, shape: Any, dtype: Any = jnp.float32) -> jax.Array:
            return mean + std * jax.random.truncated_normal(key, low, high, shape, dtype)

        return trunc_normal
    low, high = float(kw["a"]), float(kw["b"])

    def uniform(key: jax.Array, shape: Any, dtype: Any = jnp.float32) -> jax.Array:
        return jax.random.uniform(key, shape, dtype, low, high)

    return uniform


__all__ = ["NAMES", "canonical_name", "check_kwargs", "make_initializer"]
