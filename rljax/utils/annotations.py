"""RLlib's method and API annotations (``ray.rllib.utils.annotations``), for scripts that mark
their classes with them. ``override(parent)`` checks, as RLlib's does, that the class defining
the method derives from ``parent``; the API-stability markers return what they mark."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _OverrideCheck:
    def __init__(self, func: Callable[..., Any], parent: type):
        self.func, self.parent = func, parent

    def __set_name__(self, owner: type, name: str) -> None:
        if not issubclass(owner, self.parent):
            raise TypeError(
                f"@override({self.parent.__name__}) on {owner.__name__}.{name}: "
                f"{owner.__name__} must be a subclass of {self.parent.__name__}"
            )
        setattr(owner, name, self.func)


def override(parent_cls: type) -> Callable[[F], F]:
    """Marks a method as overriding one of ``parent_cls``; defining it on a class that does not
    derive from ``parent_cls`` raises ``TypeError`` (RLlib's check)."""
    if not isinstance(parent_cls, type):
        raise TypeError(f"@override({parent_cls!r}): give the parent class")

    def decorator(method: F) -> F:
        return _OverrideCheck(method, parent_cls)  # type: ignore[return-value]

    return decorator


def _marker(obj: F) -> F:
    return obj


PublicAPI = DeveloperAPI = ExperimentalAPI = OldAPIStack = _marker
OverrideToImplementCustomLogic = OverrideToImplementCustomLogic_CallToSuperRecommended = _marker


__all__ = [
    "DeveloperAPI",
    "ExperimentalAPI",
    "OldAPIStack",
    "OverrideToImplementCustomLogic",
    "OverrideToImplementCustomLogic_CallToSuperRecommended",
    "PublicAPI",
    "override",
]
