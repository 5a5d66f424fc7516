"""The mid-episode state of gymnasium envs, saved as plain data (JSON and raw array bytes).

A checkpoint must not hold pickles, so an env's state is taken apart into data: for each layer of
the env (each wrapper, then the base env) either what the layer's own ``get_state()`` returns, or
its instance attributes, provided each is plain data: ``None``, bools, numbers, strings, numpy
arrays and scalars, numpy ``Generator`` states, and lists, tuples and string-keyed dicts of those.
Spaces are saved by their sampling generators; the env spec, the ``EnvContext`` (env_config) it
was built with, functions, classes and the wrapped env (``.env``) are not state and are skipped. Any other object (a physics engine handle, a socket,
a callable object, another env) makes the env uncapturable: ``EnvStateError`` names the
attribute, and the env can define ``get_state()`` / ``set_state(state)`` (returning and taking
plain data) to say what its state is.

gymnasium's classic-control envs (CartPole, Pendulum, MountainCar, Acrobot) and most envs written
in a script are plain data throughout, so they resume mid-episode exactly, random number
generator included.
"""

from __future__ import annotations

import base64
import functools
import types
from typing import Any

import gymnasium as gym
import numpy as np

from rljax.env.env_context import EnvContext

# Construction arguments and caches of gymnasium's wrappers: not state.
_SKIPPED = frozenset({"_saved_kwargs", "_cached_spec", "spec", "env_fns"})


class EnvStateError(TypeError):
    """An env holds state that cannot be saved as plain data, or a saved state that does not
    fit the env it would be restored into."""


class EnvStateMalformed(EnvStateError):
    """A saved env state that is not of the form the env saves (a corrupt or crafted file)."""


_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


def encode(value: Any, where: str) -> Any:
    """``value`` as JSON-compatible data (arrays as base64 bytes, tagged); raises
    ``EnvStateError`` naming ``where`` for anything that is not plain data.

    Types are matched exactly (a subclass such as a namedtuple, an ``OrderedDict`` or an
    ``IntEnum`` would come back as its base class, so it is refused); numpy scalars keep their
    dtype (``np.float64`` is not turned into a Python float).
    """
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.hasobject or arr.dtype.fields is not None:
            raise EnvStateError(
                f"{where} is an array of dtype {arr.dtype}, not plain numbers; define get_state()"
            )
        return {
            "__ndarray__": arr.dtype.str,
            "shape": list(arr.shape),
            "scalar": isinstance(value, np.generic),
            "data": base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode(),
        }
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind is np.random.Generator:
        return {"__generator__": encode(value.bit_generator.state, f"{where}.bit_generator")}
    if kind is tuple:
        return {"__tuple__": [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if kind is list:
        return [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind is dict:
        if not all(type(k) is str for k in value):
            raise EnvStateError(f"{where} is a dict with keys that are not strings")
        if any(k.startswith("__") and k.endswith("__") for k in value):
            raise EnvStateError(f"{where} has a dunder key, which the encoding reserves")
        return {k: encode(v, f"{where}[{k!r}]") for k, v in value.items()}
    raise EnvStateError(
        f"{where} holds a {kind.__module__}.{kind.__qualname__}, which cannot be saved as plain "
        "data (checkpoints hold no pickles); define get_state() and set_state(state) on the env, "
        "returning and taking plain data"
    )


def decode(data: Any) -> Any:
    """The inverse of ``encode`` (arrays come back writable)."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "__ndarray__" in data:
        return _decode_array(data)
    if "__generator__" in data:
        state = decode(data["__generator__"])
        name = state.get("bit_generator") if isinstance(state, dict) else None
        if name not in _BIT_GENERATORS:
            raise EnvStateError(
                f"a saved random generator names bit generator {name!r}; allowed: {_BIT_GENERATORS}"
            )
        gen = np.random.Generator(getattr(np.random, name)())
        gen.bit_generator.state = state
        return gen
    if "__tuple__" in data:
        return tuple(decode(v) for v in data["__tuple__"])
    return {k: decode(v) for k, v in data.items()}


def decode_leaves(arrays: list[Any], live: list[Any]) -> list[np.ndarray] | None:
    """Saved arrays (``encode``'d leaves) decoded, or None unless they fit ``live`` (the same
    number of leaves, each of the same shape and dtype)."""
    saved = [np.asarray(decode(a)) for a in arrays]
    if len(saved) != len(live) or any(
        a.shape != np.shape(b) or a.dtype != np.asarray(b).dtype
        for a, b in zip(saved, live, strict=True)
    ):
        return None
    return saved


def _decode_array(data: dict[str, Any]) -> np.ndarray:
    """An encoded array, checked: a plain number dtype, a shape that fits its bytes."""
    try:
        dtype = np.dtype(data["__ndarray__"]) if isinstance(data["__ndarray__"], str) else None
        if dtype is None or dtype.kind not in "biufc" or dtype.fields is not None:
            raise EnvStateError(f"a saved array has dtype {str(data['__ndarray__'])[:30]!r}")
        shape = data["shape"]
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            raise EnvStateError("a saved array has a malformed shape")
        raw = base64.b64decode(data["data"], validate=True)
        if len(raw) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise EnvStateError("a saved array's data does not fit its shape")
        arr = np.frombuffer(raw, dtype).reshape(shape).copy()
        return arr[()] if data["scalar"] is True else arr
    except EnvStateError:
        raise
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise EnvStateError(f"a saved array is malformed ({type(e).__name__})") from None


def _subspaces(space: gym.Space) -> list[gym.Space]:
    inner = getattr(space, "spaces", None)  # Dict and Tuple spaces
    return list(inner.values()) if isinstance(inner, dict) else list(inner or ())


def _space_rngs(space: gym.Space) -> Any:
    """A space's sampling generator and those of the spaces inside it (Dict, Tuple)."""
    return [space._np_random, [_space_rngs(c) for c in _subspaces(space)]]


def _set_space_rngs(space: gym.Space, saved: Any) -> None:
    space._np_random = saved[0]
    for child, child_saved in zip(_subspaces(space), saved[1], strict=True):
        _set_space_rngs(child, child_saved)


def _layers(env: gym.Env) -> list[Any]:
    """The env and every env it holds as ``.env`` (wrappers, and envs that wrap by hand, such as
    the sub-env restarter), less layers that declare they hold no state (``rljax_stateless``:
    rljax's API check and the sub-env restarter), so that a saved state does not depend on
    them."""
    layers = [env]
    while isinstance(inner := getattr(layers[-1], "env", None), gym.Env):
        layers.append(inner)
    return [layer for layer in layers if not getattr(type(layer), "rljax_stateless", False)]


def _is_state(name: str, value: Any, layer: Any) -> bool:
    """Whether attribute ``name`` is state to save: not the wrapped env, not construction
    arguments, not a function or class. Spaces are saved by their sampling generators."""
    if name in _SKIPPED or (name == "env" and isinstance(value, gym.Env)):
        return False
    if isinstance(value, gym.Env):
        raise EnvStateError(
            f"{type(layer).__qualname__}.{name} holds another env, which rljax does not save; "
            "define get_state() and set_state(state) on the env"
        )
    if isinstance(value, (*_NOT_STATE, EnvContext)):
        return False  # the env_config it was built with: the same in a rebuilt env
    if callable(value) and not isinstance(value, gym.Space):
        raise EnvStateError(
            f"{type(layer).__qualname__}.{name} holds a callable "
            f"{type(value).__qualname__} object, which may hold state that cannot be saved as "
            "plain data; define get_state() and set_state(state) on the env"
        )
    return True


_NOT_STATE = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    functools.partial,
)


def _has_own(layer: Any, name: str) -> bool:
    """Whether the layer's class (not gymnasium's base classes) defines ``name``."""
    for cls in type(layer).__mro__:
        if cls in (gym.Env, gym.Wrapper, object):
            return False
        if name in vars(cls):
            return True
    return False


def _encode_attr(layer: Any, name: str, value: Any) -> Any:
    where = f"{type(layer).__qualname__}.{name}"
    if isinstance(value, gym.Space):
        return {"__space_rngs__": encode(_space_rngs(value), where)}
    return encode(value, where)


def get_env_state(env: gym.Env) -> list[dict[str, Any]]:
    """One entry per layer (outermost first): its class name and its encoded state."""
    states = []
    for layer in _layers(env):
        name = type(layer).__qualname__
        if _has_own(layer, "get_state"):
            if not _has_own(layer, "set_state"):
                raise EnvStateError(f"{name} defines get_state() but not set_state(state)")
            state = {"get_state": encode(layer.get_state(), f"{name}.get_state()")}
        else:
            attrs = dict(vars(layer))
            for k in ("observation_space", "action_space"):  # spaces set on the class
                if k not in attrs and isinstance(getattr(type(layer), k, None), gym.Space):
                    attrs[k] = getattr(type(layer), k)
            state = {
                "attrs": {
                    k: _encode_attr(layer, k, v) for k, v in attrs.items() if _is_state(k, v, layer)
                }
            }
        states.append({"class": name, **state})
    return states


def _saved_layers(states: Any) -> list[dict[str, Any]]:
    """``states`` as one dict per layer, less the sub-env restarter's (saved by earlier
    versions; it holds no env state)."""
    if not isinstance(states, list) or not all(isinstance(s, dict) for s in states):
        raise EnvStateError("the saved env state must be a list of one dict per env layer")
    return [s for s in states if s.get("class") != "RestartingEnv"]


def check_env_state(env: gym.Env, states: list[dict[str, Any]]) -> None:
    """Raises ``EnvStateError`` unless ``states`` was saved from an env built like ``env``:
    the same layers, each saving the same attributes (a file cannot set other attributes)."""
    states = _saved_layers(states)
    names = [type(layer).__qualname__ for layer in _layers(env)]
    saved = [s.get("class") for s in states]
    if names != saved:
        shown = [str(c)[:60] for c in saved[:20]]
        raise EnvStateError(f"the env's layers are {names}; the saved state is of {shown}")
    layer_classes = {type(layer).__qualname__: type(layer) for layer in _layers(env)}
    for live, state in zip(get_env_state(env), states, strict=True):
        if set(live) != set(state):
            raise EnvStateError(
                f"the saved state of env layer {live['class']} has entries {sorted(state)[:10]}; "
                f"expected {sorted(live)}"
            )
        where = f"env layer {live['class']}"
        if "attrs" in live:
            attrs = state["attrs"]
            if not isinstance(attrs, dict):
                raise EnvStateMalformed(f"the saved state of {where} is malformed")
            for name, value in attrs.items():
                if name in live["attrs"]:
                    if name == "render_mode" and value != live["attrs"][name]:
                        raise EnvStateMalformed(
                            f"the saved state of {where} changes its render_mode"
                        )
                    _check_form(live["attrs"][name], value, f"{where}.{name[:60]}")
                elif not _may_set(layer_classes[live["class"]], name):
                    raise EnvStateMalformed(
                        f"the saved state of {where} sets {name[:60]!r}, which is not a data "
                        "attribute of that env"
                    )
                else:
                    _check_form(None, value, f"{where}.{name[:60]}")
        else:
            _check_form(None, state["get_state"], f"{where}.get_state()")


_PRIMITIVE_KINDS = {bool: "bool", int: "number", float: "number", str: "str"}
_TAGS = ("__ndarray__", "__generator__", "__tuple__", "__space_rngs__")


def _kind(value: Any) -> str:
    if value is None:
        return "none"
    if type(value) in _PRIMITIVE_KINDS:
        return _PRIMITIVE_KINDS[type(value)]
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        tags = [t for t in _TAGS if t in value]
        return tags[0] if tags else "dict"
    return type(value).__name__


def _check_form(live: Any, saved: Any, where: str, depth: int = 0) -> None:
    """Raises ``EnvStateMalformed`` unless encoded value ``saved`` fits ``live`` (the live env's
    own encoded value; None where it has none yet): everything decodable (arrays of plain number
    dtypes whose bytes fit their shapes, random generators whose states their bit generators
    accept), and a random generator where the env has one (and only there)."""
    if depth > 32:
        raise EnvStateMalformed(f"{where} is nested too deep")
    kind = _kind(saved)
    if kind not in ("none", "bool", "number", "str", "list", "dict", *_TAGS):
        raise EnvStateMalformed(f"{where} holds a {kind}")
    live_kind = _kind(live)
    # Envs change their plain data's types as they run (MountainCar's state turns from an array
    # into a tuple, Acrobot's from float32 into float64), so numbers, arrays and containers may
    # differ; a random generator or a space's generators must stay what they are.
    random_kinds = ("__generator__", "__space_rngs__")
    if (
        live is not None
        and kind != live_kind
        and (kind in random_kinds or live_kind in random_kinds)
    ):
        raise EnvStateMalformed(f"{where} holds a {kind} where the env holds a {live_kind}")
    if kind == "__ndarray__":
        _decode_malformed(saved, where)
    elif kind == "__generator__":
        _decode_malformed(saved, where)  # the bit generator checks its own state
    elif kind == "__space_rngs__":
        if live is None:
            raise EnvStateMalformed(f"{where} sets a space's generators where the env has none")
        _check_form(live["__space_rngs__"], saved["__space_rngs__"], where, depth + 1)
    elif kind == "__tuple__":
        ref = live["__tuple__"] if live_kind == "__tuple__" else None
        _check_form(ref, saved["__tuple__"], where, depth + 1)
    elif kind == "list":
        refs = live if live_kind == "list" else []
        for i, item in enumerate(saved):
            ref = refs[min(i, len(refs) - 1)] if refs else None
            _check_form(ref, item, f"{where}[{i}]", depth + 1)
    elif kind == "dict":
        refs = live if live_kind == "dict" else {}
        for k, v in saved.items():
            _check_form(refs.get(k), v, f"{where}[{str(k)[:40]!r}]", depth + 1)


def _decode_malformed(saved: Any, where: str) -> Any:
    try:
        return decode(saved)
    except EnvStateError as e:
        raise EnvStateMalformed(f"{where}: {e}") from None
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as e:
        raise EnvStateMalformed(f"{where} is malformed ({type(e).__name__})") from None


def _may_set(cls: type, name: str) -> bool:
    """Whether a saved state may set attribute ``name`` that the live env does not have yet
    (one it creates later, such as its random generator after the first reset): never a
    dunder, nor a name the class defines as a method, property or other descriptor."""
    if not name.isidentifier() or name.startswith("__"):
        return False
    for klass in cls.__mro__:
        if name in vars(klass):
            value = vars(klass)[name]
            return not (callable(value) or hasattr(value, "__get__"))
    return True


def set_env_state(env: gym.Env, states: list[dict[str, Any]]) -> None:
    """Puts ``get_env_state``'s output back into an env built the same way."""
    check_env_state(env, states)
    for layer, state in zip(_layers(env), _saved_layers(states), strict=True):
        if "get_state" in state:
            layer.set_state(decode(state["get_state"]))
            continue
        for k, raw in state["attrs"].items():
            current = getattr(layer, k, None)
            if isinstance(raw, dict) and "__space_rngs__" in raw:
                if isinstance(current, gym.Space):
                    _set_space_rngs(current, decode(raw["__space_rngs__"]))
                continue
            v = decode(raw)
            if isinstance(v, np.random.Generator) and isinstance(current, np.random.Generator):
                current.bit_generator.state = v.bit_generator.state  # keep shared generators
            else:
                setattr(layer, k, v)
