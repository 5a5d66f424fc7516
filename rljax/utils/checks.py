"""Typed checks of settings, so that each setting's allowed values are declared once.

A check is called as ``check(name, value)``. It returns the value in its normal form (numpy
scalars as Python ones, a list of layer widths as a tuple) or raises ``ConfigError`` naming the
setting, the value given (its repr and type) and what is allowed. Config classes keep a table
setting -> check: the algorithm configs run theirs in ``validate()`` before the checks of
combinations, ``DefaultModelConfig`` in ``__post_init__``. So a wrong type never changes a
setting's meaning (``"64"`` read as layer widths 6 and 4, ``"no"`` read as true) and never
surfaces later as an error from deep inside JAX or numpy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from rljax.utils.errors import ConfigError

Check = Callable[[str, Any], Any]


def describe(value: Any) -> str:
    """``repr(value)`` and its type, as every message shows a refused value."""
    return f"{value!r} ({type(value).__name__})"


def refuse(name: str, value: Any, allowed: str, number: bool = False) -> NoReturn:
    """Raises ``ConfigError``: ``name=value (type); use allowed``.

    ``number``: a number is allowed, so a string that reads as one gets a note on quoting.
    """
    hint = _text_hint(value) if number else ""
    raise ConfigError(f"{name}={describe(value)}; use {allowed}{hint}")


def _text_hint(value: Any) -> str:
    """A note when a number was given as a string: quoted, or YAML's 1e-3."""
    if not isinstance(value, str):
        return ""
    try:
        number = float(value)
    except ValueError:
        return ""
    if not math.isfinite(number):
        return ""
    mantissa, e, exponent = value.strip().lower().partition("e")
    if e and "." not in mantissa:
        # PyYAML reads YAML 1.1, where a float needs a dot and a signed exponent: 1e-3 is a
        # string. The file looks right to whoever wrote it, so say so.
        sign = "" if exponent[:1] in ("+", "-") else "+"
        return f" (YAML reads {value} as a string; write {mantissa}.0e{sign}{exponent})"
    return f" (a number in quotes is a string; write {value.strip()} without quotes)"


def is_int(value: Any) -> bool:
    """A Python or numpy int; bools are not ints here."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    """A Python or numpy int or float; bools are not numbers here."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _or(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def _alternatives(optional: bool, literals: tuple[str, ...], main: str) -> str:
    return _or([*(["None"] if optional else []), *map(repr, literals), main])


@dataclasses.dataclass(frozen=True)
class Bool:
    """``True`` or ``False`` (a numpy bool too); never a string, an int or None unless optional
    (or one of ``literals``, e.g. ``"auto"``)."""

    optional: bool = False
    literals: tuple[str, ...] = ()

    @property
    def allowed(self) -> str:
        return _or(
            [*(["None"] if self.optional else []), *map(repr, self.literals), "True", "False"]
        )

    def __call__(self, name: str, value: Any) -> bool | str | None:
        if value is None and self.optional:
            return None
        if isinstance(value, str) and value in self.literals:
            return value
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        refuse(name, value, self.allowed)


@dataclasses.dataclass(frozen=True)
class Int:
    """An int in ``[minimum, maximum]``; not a bool, a float (even 4.0) or a string.

    Attributes:
      minimum: The smallest value allowed.
      maximum: The largest value allowed, or None for no bound.
      optional: Whether None is allowed.
      literals: Strings allowed besides ints (e.g. ``"auto"``).
    """

    minimum: int = 0
    maximum: int | None = None
    optional: bool = False
    literals: tuple[str, ...] = ()

    @property
    def allowed(self) -> str:
        bound = (
            f"an int >= {self.minimum}"
            if self.maximum is None
            else f"an int in [{self.minimum}, {self.maximum}]"
        )
        return _alternatives(self.optional, self.literals, bound)

    def __call__(self, name: str, value: Any) -> int | str | None:
        if value is None and self.optional:
            return None
        if isinstance(value, str) and value in self.literals:
            return value
        if (
            is_int(value)
            and self.minimum <= value
            and (self.maximum is None or value <= self.maximum)
        ):
            return int(value)
        refuse(name, value, self.allowed, number=True)


@dataclasses.dataclass(frozen=True)
class Number:
    """A finite int or float within bounds; not a bool or a string.

    Python ints stay ints (a message about ``num_gpus_per_learner=1`` shows what was set);
    numpy scalars become Python ones.

    Attributes:
      low, high: Bounds, or None for none.
      low_open, high_open: Whether the bound itself is excluded.
      optional: Whether None is allowed.
      literals: Strings allowed besides numbers (e.g. ``"auto"``).
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    optional: bool = False
    literals: tuple[str, ...] = ()

    @property
    def allowed(self) -> str:
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            bound = f"a number in {left}{self.low:g}, {self.high:g}{right}"
        elif self.low is not None:
            bound = f"a finite number {'>' if self.low_open else '>='} {self.low:g}"
        elif self.high is not None:
            bound = f"a finite number {'<' if self.high_open else '<='} {self.high:g}"
        else:
            bound = "a finite number"
        return _alternatives(self.optional, self.literals, bound)

    def _in_bounds(self, v: float) -> bool:
        if not math.isfinite(v):
            return False
        if self.low is not None and (v <= self.low if self.low_open else v < self.low):
            return False
        return self.high is None or (v < self.high if self.high_open else v <= self.high)

    def __call__(self, name: str, value: Any) -> float | int | str | None:
        if value is None and self.optional:
            return None
        if isinstance(value, str) and value in self.literals:
            return value
        if is_real(value) and self._in_bounds(float(value)):
            return int(value) if is_int(value) else float(value)
        refuse(name, value, self.allowed, number=True)


@dataclasses.dataclass(frozen=True)
class Choice:
    """One of a few strings."""

    options: tuple[str, ...]
    optional: bool = False

    @property
    def allowed(self) -> str:
        return _or([*(["None"] if self.optional else []), *map(repr, self.options)])

    def __call__(self, name: str, value: Any) -> str | None:
        if value is None and self.optional:
            return None
        if isinstance(value, str) and value in self.options:
            return value
        raise ConfigError(f"{name}={describe(value)} is not supported; use {self.allowed}")


@dataclasses.dataclass(frozen=True)
class Widths:
    """A list (or tuple, or 1-D int array) of layer widths, each an int >= 1; may be empty.

    A string is refused, not split into characters (``"64"`` is not ``[6, 4]``), and so is a
    bare int (``64`` is not ``[64]``: say which).
    """

    @property
    def allowed(self) -> str:
        return "a list of ints >= 1, e.g. [256, 256]"

    def __call__(self, name: str, value: Any) -> tuple[int, ...]:
        if isinstance(value, np.ndarray) and value.ndim == 1:
            value = value.tolist()
        if not isinstance(value, (list, tuple)):
            refuse(name, value, self.allowed)
        for i, width in enumerate(value):
            if not (is_int(width) and width >= 1):
                refuse(name, value, f"{self.allowed} (entry {i} is {describe(width)})")
        return tuple(int(w) for w in value)


@dataclasses.dataclass(frozen=True)
class StrKeyDict:
    """A dict whose keys are strings (the keyword arguments it becomes need them)."""

    optional: bool = False

    def __call__(self, name: str, value: Any) -> dict[str, Any] | None:
        if value is None and self.optional:
            return None
        allowed = _alternatives(self.optional, (), "a dict with string keys")
        if not isinstance(value, dict):
            refuse(name, value, allowed)
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            refuse(name, value, f"{allowed} (key {describe(bad[0])} is not a string)")
        return dict(value)


# A JAX env's step counter is an int32: a time limit beyond it would overflow in the program.
TIME_LIMIT = Int(1, 2**31 - 1)


def checked_elsewhere(name: str, value: Any) -> Any:
    """The table entry of a setting whose check needs more than its value (the env, the mapping
    function): ``validate()`` checks it with what it depends on."""
    return value


def require_bool(name: str, value: Any) -> bool:
    """A call argument that must be a real bool (``explore``): ``TypeError`` otherwise."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name}={describe(value)}; use True or False")


__all__ = [
    "Bool",
    "Check",
    "Choice",
    "Int",
    "Number",
    "StrKeyDict",
    "Widths",
    "checked_elsewhere",
    "describe",
    "is_int",
    "is_real",
    "refuse",
    "require_bool",
]
