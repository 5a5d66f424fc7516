"""The callbacks of one algorithm: built from the config, called by hook name."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

from rljax.callbacks.callbacks import EPISODE_HOOKS, HOOKS, RLlibCallback
from rljax.utils import once
from rljax.utils.errors import CallbackError, ConfigError

logger = logging.getLogger("rljax")


def _name(obj: Any) -> str:
    if isinstance(obj, functools.partial):  # a class with its arguments bound
        return f"functools.partial({_name(obj.func)}, ...)"
    return getattr(obj, "__qualname__", None) or type(obj).__name__


def callback_class_of(value: Any) -> Any:
    """The class a ``callbacks_class`` entry builds: itself, or a ``functools.partial``'s
    class (RLlib's examples bind a callback's arguments so:
    ``functools.partial(SelfPlayCallback, win_rate_threshold=0.95)``); None for anything else."""
    if isinstance(value, functools.partial):
        return value.func if inspect.isclass(value.func) else None
    return value if inspect.isclass(value) else None


class _FunctionCallback:
    """One function passed as ``config.callbacks(on_x=fn)``."""

    def __init__(self, hook: str, fn: Callable[..., Any]):
        self.hook = hook
        setattr(self, hook, fn)


def callback_classes(value: Any) -> list[type]:
    """``callbacks_class`` as a list of classes (None: none)."""
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


class Callbacks:
    """Every callback of an algorithm: the classes' instances, then the single functions.

    Args:
      callbacks_class: A class (an ``RLlibCallback`` subclass, or any class with hook
        methods), a list of them, or None.
      functions: Hook name -> a function or a list of functions, called in order
        (``config.callbacks(on_episode_end=fn)``).
      built_in: ``(name, callback object)`` pairs rljax adds itself (the offline data
        recorder), called after the user's.
    """

    def __init__(
        self,
        callbacks_class: Any,
        functions: dict[str, Callable[..., Any] | list[Callable[..., Any]]],
        built_in: list[tuple[str, Any]] | None = None,
    ):
        self.entries: list[tuple[str, Any]] = []
        for cls in callback_classes(callbacks_class):
            try:
                self.entries.append((_name(cls), cls()))
            except Exception as e:
                raise CallbackError(
                    f"building the callback {_name(cls)}() raised {type(e).__name__}: {e}"
                ) from e
        for hook, fns in functions.items():
            # RLlib's callbacks(on_x=...) takes a function or a list of them, called in order.
            for fn in fns if isinstance(fns, list | tuple) else [fns]:
                if fn is not None:
                    self.entries.append((_name(fn), _FunctionCallback(hook, fn)))
        self._users = len(self.entries)
        self.entries.extend(built_in or [])
        self._defined = {hook: [e for e in self.entries if _defines(e[1], hook)] for hook in HOOKS}

    def users_only(self) -> Callbacks:
        """These callbacks without rljax's own (the offline data recorder): the same objects,
        for hooks rljax's own must not see twice (an evaluation's episodes, which the
        recorder takes directly)."""
        view = object.__new__(Callbacks)
        view.entries = self.entries[: self._users]
        view._users = len(view.entries)
        view._defined = {h: [e for e in view.entries if _defines(e[1], h)] for h in HOOKS}
        return view

    def defines(self, hook: str) -> bool:
        """Whether any callback does something in ``hook``."""
        return bool(self._defined[hook])

    @property
    def wants_episodes(self) -> bool:
        """Any episode hook defined: the sampled steps must reach the host."""
        return any(self.defines(h) for h in (*EPISODE_HOOKS, "on_sample_end"))

    def __call__(self, hook: str, **kwargs: Any) -> None:
        """Calls ``hook`` on every callback defining it; a raise becomes ``CallbackError``
        naming the hook and the callback."""
        for name, callback in self._defined[hook]:
            try:
                getattr(callback, hook)(**kwargs)
            except CallbackError:
                raise
            except Exception as e:
                raise CallbackError(
                    f"the callback {name}.{hook} raised {type(e).__name__}: {e}"
                ) from e


def _defines(callback: Any, hook: str) -> bool:
    if isinstance(callback, _FunctionCallback):
        return callback.hook == hook
    method = getattr(type(callback), hook, None)
    return method is not None and method is not getattr(RLlibCallback, hook)


def check_callbacks_class(name: str, value: Any) -> Any:
    """A class, a list of classes, or None; anything else is refused, naming it."""
    for entry in callback_classes(value):
        cls = callback_class_of(entry)
        if cls is None:
            raise ConfigError(
                f"{name}={value!r}: expected a callback class (a subclass of "
                "rljax.callbacks.callbacks.RLlibCallback) or a functools.partial of one, a "
                f"list of them, or None; got {type(entry).__name__} {entry!r}"
            )
        unknown = [
            m
            for m in vars(cls)
            if m.startswith("on_") and callable(vars(cls)[m]) and m not in HOOKS
        ]
        # An old-stack hook, or a misspelt one: never called, which must not pass unsaid (said
        # once per class object: the setting is checked again on each copy of the config; a
        # class defined again, as a notebook cell run again does, is a new one).
        if unknown and once.first_time("unknown_hooks", f"{id(cls)}:{_name(cls)}"):
            logger.warning(
                "%s: %s defines %s, which rljax never calls; the hooks are: %s",
                name,
                _name(cls),
                ", ".join(unknown),
                ", ".join(HOOKS),
            )
    return value


def check_hook_function(name: str, value: Any) -> Any:
    """A hook's function, a list of functions (RLlib 2.60 calls them in order), or None."""
    if isinstance(value, list | tuple):
        if not value or not all(callable(fn) for fn in value):
            raise ConfigError(
                f"{name}={value!r}: expected a function (called with keywords), a non-empty "
                "list of functions, or None"
            )
        return list(value)
    if value is not None and not callable(value):
        raise ConfigError(
            f"{name}={value!r}: expected a function (called with keywords), a list of "
            "functions, or None"
        )
    return value


__all__ = [
    "Callbacks",
    "callback_class_of",
    "check_callbacks_class",
    "check_hook_function",
]
