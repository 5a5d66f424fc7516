"""The mid-episode state of gymnasium envs, saved as plain data (JSON and raw array bytes).

A checkpoint must not hold pickles, so an env's state is taken apart into data: for each layer of
the env (each wrapper, then the base env) either what the layer's own ``get_state()`` returns, or
its instance attributes, provided each is plain data: ``None``, bools, numbers, strings, numpy
arrays and scalars, numpy ``Generator`` states, and lists, tuples and string-keyed dicts of those.
Spaces, the env spec, callables and the wrapped env are not state and are skipped. Any other
object (a physics engine handle, a socket) makes the env uncapturable: ``EnvStateError`` names the
attribute, and the env can define ``get_state()`` / ``set_state(state)`` (returning and taking
plain data) to say what its state is.

gymnasium's classic-control envs (CartPole, Pendulum, MountainCar, Acrobot) and most envs written
in a script are plain data throughout, so they resume mid-episode exactly, random number
generator included.
"""

from __future__ import annotations

import base64
import types
from typing import Any

import gymnasium as gym
import numpy as np

# Construction arguments and caches of gymnasium's wrappers: not state.
_SKIPPED = frozenset({"_saved_kwargs", "_cached_spec", "spec", "env_fns"})


class EnvStateError(TypeError):
    """An env holds state that cannot be saved as plain data."""


def encode(value: Any, where: str) -> Any:
    """``value`` as JSON-compatible data (arrays as base64 bytes, tagged); raises
    ``EnvStateError`` naming ``where`` for anything that is not plain data."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.hasobject:
            raise EnvStateError(f"{where} is an array of Python objects, not plain data")
        return {
            "__ndarray__": arr.dtype.str,
            "shape": list(arr.shape),
            "scalar": isinstance(value, np.generic),
            "data": base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode(),
        }
    if isinstance(value, np.random.Generator):
        return {"__generator__": encode(value.bit_generator.state, f"{where}.bit_generator")}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise EnvStateError(f"{where} is a dict with keys that are not strings")
        if any(k.startswith("__") and k.endswith("__") for k in value):
            raise EnvStateError(f"{where} has a dunder key, which the encoding reserves")
        return {k: encode(v, f"{where}[{k!r}]") for k, v in value.items()}
    raise EnvStateError(
        f"{where} holds a {type(value).__module__}.{type(value).__qualname__}, which cannot be "
        "saved as plain data (checkpoints hold no pickles); define get_state() and "
        "set_state(state) on the env, returning and taking plain data"
    )


def decode(data: Any) -> Any:
    """The inverse of ``encode`` (arrays come back writable)."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "__ndarray__" in data:
        raw = base64.b64decode(data["data"])
        arr = np.frombuffer(raw, np.dtype(data["__ndarray__"])).reshape(data["shape"]).copy()
        return arr[()] if data["scalar"] else arr
    if "__generator__" in data:
        state = decode(data["__generator__"])
        gen = np.random.Generator(getattr(np.random, state["bit_generator"])())
        gen.bit_generator.state = state
        return gen
    if "__tuple__" in data:
        return tuple(decode(v) for v in data["__tuple__"])
    return {k: decode(v) for k, v in data.items()}


def _layers(env: gym.Env) -> list[Any]:
    """The env and every env it holds as ``.env`` (wrappers, and envs that wrap by hand, such as
    the sub-env restarter)."""
    layers = [env]
    while isinstance(getattr(layers[-1], "env", None), gym.Env):
        layers.append(layers[-1].env)
    return layers


def _is_state(name: str, value: Any, layer: Any) -> bool:
    if name in _SKIPPED:
        return False
    if isinstance(value, (gym.Space, gym.Env, types.ModuleType)):
        return False
    return not callable(value)


def _has_own(layer: Any, name: str) -> bool:
    """Whether the layer's class (not gymnasium's base classes) defines ``name``."""
    for cls in type(layer).__mro__:
        if cls in (gym.Env, gym.Wrapper, object):
            return False
        if name in vars(cls):
            return True
    return False


def get_env_state(env: gym.Env) -> list[dict[str, Any]]:
    """One entry per layer (outermost first): its class name and its encoded state."""
    states = []
    for layer in _layers(env):
        name = type(layer).__qualname__
        if _has_own(layer, "get_state"):
            state = {"get_state": encode(layer.get_state(), f"{name}.get_state()")}
        else:
            state = {
                "attrs": {
                    k: encode(v, f"{name}.{k}")
                    for k, v in vars(layer).items()
                    if _is_state(k, v, layer)
                }
            }
        states.append({"class": name, **state})
    return states


def set_env_state(env: gym.Env, states: list[dict[str, Any]]) -> None:
    """Puts ``get_env_state``'s output back into an env built the same way."""
    layers = _layers(env)
    names = [type(layer).__qualname__ for layer in layers]
    saved = [s["class"] for s in states]
    if names != saved:
        raise EnvStateError(f"the env's layers are {names}; the saved state is of {saved}")
    for layer, state in zip(layers, states, strict=True):
        if "get_state" in state:
            layer.set_state(decode(state["get_state"]))
            continue
        for k, v in decode(state["attrs"]).items():
            current = getattr(layer, k, None)
            if isinstance(v, np.random.Generator) and isinstance(current, np.random.Generator):
                current.bit_generator.state = v.bit_generator.state  # keep shared generators
            else:
                setattr(layer, k, v)
