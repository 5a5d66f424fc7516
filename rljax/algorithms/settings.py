"""Settings declared once, and the frozen records that jitted code receives, built from them.

A config class declares each setting as a class attribute::

    class PPOConfig(AlgorithmConfig):
        lr = AlgorithmConfig.lr.replace(default=5e-5, per_module=True)
        clip_param = Setting(0.3, Number(0, low_open=True), "The surrogate's clip range ...")

The declaration holds the name (the attribute's), the default (its type is the setting's type
for type checkers: ``config.clip_param`` is a ``float``), the check (``rljax.utils.checks``), a
doc and the setter that sets it (``section``). ``AlgorithmConfig`` derives from the declarations
every table it reads: the setters' keys, the checks ``validate()`` runs, the keys ``to_dict`` /
``from_dict`` know and the "did you mean" hints, the defaults, the settings a policy may
override. A test checks that each setter's keywords are exactly its section's settings.

``frozen_from_config`` builds a frozen hyper-parameter record (a dataclass or ``NamedTuple``)
from a config: each field takes the same-named setting, normalised to its declared type, so a
record lists its fields once and no ``from_config`` copies them one by one.
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Iterable
from typing import Any, Generic, TypeVar, overload

from rljax.utils.checks import Check

T = TypeVar("T")
R = TypeVar("R")


@dataclasses.dataclass(frozen=True, eq=False)
class Setting(Generic[T]):
    """One setting of a config class, declared as a class attribute.

    On an instance the attribute is the setting's value (``config.lr``); on the class it is
    this declaration (``AlgorithmConfig.lr.default``).

    Attributes:
      default: The value of a new config; mutable defaults are copied for each config.
      check: ``check(name, value) -> value in normal form``, raising ``ConfigError`` with what
        is allowed (``validate()`` runs it).
      doc: What the setting does, for the setter's docstring.
      section: The setter that sets it (``"training"``: ``config.training(name=...)``).
      per_module: Whether one policy of a multi-agent config may override it.
      checked_on_set: Whether the setters run the check too, storing the normal form at once
        (a model dict becomes a ``DefaultModelConfig``) for code that reads it before
        ``validate()``.
      name: The attribute name, filled in when the class body binds the declaration.
      keyword: The setter's keyword for it, where that differs from the name (RLlib's
        ``.callbacks(on_episode_end=...)`` sets ``callbacks_on_episode_end``); "": the name.
    """

    default: T
    check: Check
    doc: str
    section: str = "training"
    per_module: bool = False
    checked_on_set: bool = False
    name: str = ""
    keyword: str = ""

    @property
    def setter_keyword(self) -> str:
        """The keyword of the setter that sets it."""
        return self.keyword or self.name

    def __set_name__(self, owner: type, name: str) -> None:
        if self.name and self.name != name:
            raise TypeError(f"the setting {self.name!r} is bound again as {name!r}")
        object.__setattr__(self, "name", name)

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Setting[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> Setting[T] | T:
        if obj is None:
            return self
        try:
            return obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None

    def __set__(self, obj: object, value: T) -> None:
        obj.__dict__[self.name] = value

    def replace(self, **changes: Any) -> Setting[T]:
        """This declaration with some fields changed: a subclass's own default, say."""
        return dataclasses.replace(self, **changes)

    def fresh_default(self) -> T:
        """The default for a new config (a copy, so that configs never share a dict)."""
        return copy.deepcopy(self.default)


def declared_settings(cls: type) -> dict[str, Setting[Any]]:
    """``cls``'s settings, grouped by section in the order sections first appear, then in
    declaration order (a base class's first); a subclass's redeclaration keeps the place of
    the one it replaces."""
    found: dict[str, Setting[Any]] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, Setting):
                found[name] = value
    sections = dict.fromkeys(s.section for s in found.values())
    return {n: s for section in sections for n, s in found.items() if s.section == section}


# Passes over a train batch per update (``num_epochs``): RLlib's tuned examples use up to ~30.
MAX_NUM_EPOCHS = 1000

# What a setter's ``UNSET`` keyword defaults mean, in each setter's docstring.
UNSET_NOTE = (
    "A keyword left out (UNSET) keeps the setting's current value; in a new config, its default."
)


def setter_doc(summary: str, settings: Iterable[Setting[Any]]) -> str:
    """A setter's docstring: its summary, what a keyword left out does, then one ``Args`` entry
    per setting from its doc."""
    lines = [summary.strip(), "", UNSET_NOTE, "", "Args:"]
    for s in settings:
        words = s.doc.split()
        entry, width = f"  {s.setter_keyword}:", 96
        for word in words:
            if len(entry) + 1 + len(word) > width:
                lines.append(entry)
                entry = "    " + word
            else:
                entry += " " + word
        lines.append(entry)
    return "\n".join(lines)


# --------------------------------------------------------------------------- frozen records


def _is_record(tp: Any) -> bool:
    """A dataclass or ``NamedTuple`` class: a frozen record built field by field."""
    return isinstance(tp, type) and (
        dataclasses.is_dataclass(tp) or (issubclass(tp, tuple) and hasattr(tp, "_fields"))
    )


def _record_fields(record: type) -> list[tuple[str, bool]]:
    """``(name, has_default)`` for each field of a dataclass or ``NamedTuple`` class."""
    if dataclasses.is_dataclass(record):
        missing = dataclasses.MISSING
        return [
            (f.name, f.default is not missing or f.default_factory is not missing)
            for f in dataclasses.fields(record)
            if f.init
        ]
    defaults = getattr(record, "_field_defaults", {})
    return [(name, name in defaults) for name in record._fields]  # type: ignore[attr-defined]


def _normalise(value: Any, tp: Any, where: str) -> Any:
    """``value`` as a plain Python value of type ``tp``: float, int, bool or str, or None for
    an optional one. Records of other types are given to ``frozen_from_config`` by name."""
    if tp in (float, int, bool, str):
        return tp(value)
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if value is None:
            return None
        if len(rest) == 1:
            return _normalise(value, rest[0], where)
    raise TypeError(
        f"{where}: no generic conversion to {tp!r} for {value!r}; pass the field to "
        "frozen_from_config by keyword"
    )


def frozen_from_config(record: type[R], config: Any, **derived: Any) -> R:
    """A frozen hyper-parameter record built from a config's settings.

    Each field takes, in this order: the keyword of the same name in ``derived`` (values the
    config does not hold as such: shard sizes, a resolved ``"auto"``); for a field whose type is
    itself a record, that record built from the same config; the setting of the same name,
    converted to the field's type (``float``, ``int``, ``bool``, ``str``, optional or not) as
    jitted code wants plain Python scalars; or the field's default.

    Args:
      record: A dataclass or ``NamedTuple`` class.
      config: An ``AlgorithmConfig`` (its ``SETTINGS`` name the fields it can fill).
      **derived: Field values given directly.

    Returns:
      The record.

    Raises:
      TypeError: A keyword names no field, or a field without a default is neither given nor
        a setting of the config (so a misspelt field is found when the algorithm is built).
    """
    fields = _record_fields(record)
    names = {name for name, _ in fields}
    unknown = sorted(set(derived) - names)
    if unknown:
        raise TypeError(f"{record.__name__} has no fields {unknown}")
    hints = typing.get_type_hints(record)
    settings = type(config).SETTINGS
    values: dict[str, Any] = {}
    for name, has_default in fields:
        tp = hints[name]
        if name in derived:
            values[name] = derived[name]
        elif _is_record(tp):
            values[name] = frozen_from_config(tp, config)
        elif name in settings:
            values[name] = _normalise(getattr(config, name), tp, f"{record.__name__}.{name}")
        elif not has_default:
            raise TypeError(
                f"{record.__name__}.{name} is not a setting of {type(config).__name__}; pass "
                "it to frozen_from_config by keyword"
            )
    return record(**values)


__all__ = [
    "MAX_NUM_EPOCHS",
    "Setting",
    "declared_settings",
    "frozen_from_config",
    "setter_doc",
]
