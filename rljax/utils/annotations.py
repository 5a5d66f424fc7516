"""RLlib's ``ray.rllib.utils.annotations``: the decorators old scripts put on methods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])


def override(parent_cls: type) -> Callable[[_F], _F]:
    """RLlib's ``@override(Parent)``: marks a method as overriding ``parent_cls``'s; returns it
    unchanged."""

    def decorator(method: _F) -> _F:
        return method

    return decorator


__all__ = ["override"]
