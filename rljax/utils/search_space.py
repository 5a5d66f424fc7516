"""Search-space primitives: the ``Domain`` classes, their constructors with Ray Tune 2.x's names
and semantics, and the walk that finds search spaces inside a tree of settings.

They sit below both the configs (whose setters keep a search space as given and whose
``validate()`` refuses one) and ``rljax.tune`` (which samples them into variants), so that a
config needs nothing from ``rljax.tune``. ``rljax.tune`` / ``rljax.tune.sample`` /
``rljax.tune.variants`` re-export every name here.

Search spaces with Ray Tune 2.x's names and semantics.

Each constructor returns a ``Domain``: ``grid_search`` (every value, crossed with the other grids),
``choice``, ``uniform``, ``quniform``, ``loguniform``, ``qloguniform``, ``randint``,
``qrandint``, ``lograndint``, ``qlograndint``, ``randn``, ``qrandn`` and ``sample_from`` (drawn
once per variant). A domain stores what it was given and is checked when it
is used, where the key it sits under is known (``generate_variants``, a config's setters), so an
error names the key path, the value given and what is allowed. ``Domain.check(where)`` runs the
same check directly.

Bounds, as Tune's:

- ``uniform(lower, upper)``, ``loguniform(lower, upper)``: floats in ``[lower, upper)``.
- ``quniform(lower, upper, q)``: a uniform draw rounded to the nearest multiple of ``q``, so the
  upper bound is included (as Tune, ``lower`` and ``upper`` must be multiples of ``q``).
- ``randint(lower, upper)``: an int in ``[lower, upper)`` (``upper`` excluded).
- ``qrandint(lower, upper, q)``: a multiple of ``q`` in ``[lower, upper]`` (``upper`` included).
  Each multiple is equally likely (Tune rounds a uniform draw, which gives the two end multiples
  half the weight of the others).
- ``qloguniform(lower, upper, q)``: a log-uniform draw rounded to the nearest multiple of
  ``q`` (bounds multiples of ``q``, as ``quniform``).
- ``lograndint(lower, upper)``: an int in ``[lower, upper)`` whose logarithm is uniform (the
  floor of a log-uniform draw, as Tune's); ``lower`` at least 1.
- ``qlograndint(lower, upper, q)``: a multiple of ``q`` in ``[lower, upper]``, log-uniform
  over the multiples (Tune's: the floor of a log-uniform draw over their indices, times ``q``).
- ``randn(mean, sd)``: a normal draw; ``qrandn(mean, sd, q)`` rounds it to a multiple of ``q``.

Where Tune's code and its documentation differ, this follows the documentation: with ``q=1``
Tune's quantized sampler skips the rounding, so its ``qrandint(lower, upper, 1)`` never draws
``upper`` and its ``quniform(lower, upper, 1)`` draws non-integers; here ``q=1`` rounds as any
other ``q`` does.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NoReturn

import numpy as np

from rljax.utils.errors import ConfigError

Path = tuple[Any, ...]


class UnresolvedValueError(LookupError):
    """Raised when a ``sample_from`` function reads a value that is not resolved yet; the
    variant generator calls it again once the other values are resolved."""


def _is_real(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(
        x, (bool, np.bool_)
    )


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _fail(where: str, domain: Domain, problem: str) -> NoReturn:
    raise ConfigError(f"{where}: {domain!r} {problem}")


class Domain:
    """A search space: the values one key of a ``param_space`` (or one config setting) may take.

    Subclasses implement ``_problem`` (what is wrong with the arguments, or None) and ``_draw``.
    """

    def check(self, where: str = "search space") -> None:
        """Raises ``ConfigError`` naming ``where`` (a key path), the domain as given and what is
        allowed, when the domain cannot be sampled."""
        problem = self._problem()
        if problem is not None:
            _fail(where, self, problem)

    def sample(
        self, rng: np.random.Generator | None = None, spec: Any = None, where: str = "search space"
    ) -> Any:
        """One value drawn with ``rng`` (a fresh unseeded generator if None), after ``check``.

        Args:
          rng: The numpy generator to draw with.
          spec: What ``sample_from`` functions receive (see ``Function``); others ignore it.
          where: The key path, for error messages.
        """
        self.check(where)
        return self._draw(rng if rng is not None else np.random.default_rng(), spec, where)

    def _problem(self) -> str | None:
        raise NotImplementedError

    def _draw(self, rng: np.random.Generator, spec: Any, where: str) -> Any:
        raise NotImplementedError


def _as_list(values: Any) -> Any:
    """``values`` as a list when it is an iterable of values; otherwise as given, for the check
    to refuse (a string or a dict is one value, not a list of them)."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        return values
    return list(values)


def _values_problem(values: Any, what: str) -> str | None:
    if not isinstance(values, list):
        return f"needs a list of {what}; got {values!r} ({type(values).__name__})"
    if not values:
        return f"has no {what}; give at least one"
    return None


class GridSearch(Domain):
    """``grid_search(values)``: every value is tried; several grids give their cross product."""

    def __init__(self, values: Iterable[Any]):
        self.values: list[Any] = _as_list(values)

    def __repr__(self) -> str:
        return f"grid_search({self.values!r})"

    def _problem(self) -> str | None:
        return _values_problem(self.values, "values")

    def _draw(self, rng: np.random.Generator, spec: Any, where: str) -> Any:
        raise ConfigError(
            f"{where}: {self!r} is not sampled; generate_variants() tries each of its values"
        )


class Categorical(Domain):
    """``choice(categories)``: one category, each equally likely, returned as given."""

    def __init__(self, categories: Iterable[Any]):
        self.categories: list[Any] = _as_list(categories)

    def __repr__(self) -> str:
        return f"choice({self.categories!r})"

    def _problem(self) -> str | None:
        return _values_problem(self.categories, "categories")

    def _draw(self, rng: np.random.Generator, spec: Any, where: str) -> Any:
        # An index, not rng.choice(categories): that would turn the categories into one array.
        return self.categories[int(rng.integers(len(self.categories)))]


def _bounds_problem(lower: Any, upper: Any, need_int: bool = False) -> str | None:
    ok = _is_int if need_int else _is_real
    kind = "integers" if need_int else "finite numbers"
    for name, v in (("lower", lower), ("upper", upper)):
        if not ok(v) or not math.isfinite(v):
            return f"needs {kind} as bounds; {name}={v!r} ({type(v).__name__})"
    if not lower < upper:
        return f"is empty: lower={lower!r} must be below upper={upper!r}"
    return None


class Float(Domain):
    """``uniform``, ``quniform``, ``loguniform`` and ``qloguniform``: a float between ``lower``
    and ``upper``.

    Attributes:
      lower, upper: The bounds.
      log: Whether the draw is uniform in log space (``loguniform``, ``qloguniform``).
      q: The quantization step (``quniform``, ``qloguniform``), or None.
      base: ``loguniform``'s base, as given; a log-uniform draw does not depend on it.
    """

    def __init__(
        self,
        lower: float,
        upper: float,
        *,
        log: bool = False,
        q: float | None = None,
        base: float = 10,
    ):
        self.lower = lower
        self.upper = upper
        self.log = log
        self.q = q
        self.base = base

    def __repr__(self) -> str:
        if self.log:
            base = "" if self.base == 10 else f", base={self.base!r}"
            if self.q is not None:
                return f"qloguniform({self.lower!r}, {self.upper!r}, {self.q!r}{base})"
            return f"loguniform({self.lower!r}, {self.upper!r}{base})"
        if self.q is not None:
            return f"quniform({self.lower!r}, {self.upper!r}, {self.q!r})"
        return f"uniform({self.lower!r}, {self.upper!r})"

    def _problem(self) -> str | None:
        if self.log:
            for name, v in (("lower", self.lower), ("upper", self.upper)):
                if _is_real(v) and not v > 0:
                    return (
                        f"needs positive bounds (a log-uniform draw is uniform in log space); "
                        f"{name}={v!r}; use uniform() for a range that includes 0 or negatives"
                    )
            if not _is_real(self.base) or not self.base > 0 or self.base == 1:
                return f"needs a positive base other than 1; base={self.base!r}"
        bad = _bounds_problem(self.lower, self.upper)
        if bad is not None or self.q is None:
            return bad
        q = self.q
        if not _is_real(q) or not math.isfinite(q) or not q > 0:
            return f"needs a positive quantization step; q={q!r}"
        for name, v in (("lower", self.lower), ("upper", self.upper)):
            if not math.isclose(v / q, round(v / q)):
                return f"needs bounds that are multiples of q={q!r} (as Tune); {name}={v!r}"
        return None

    def _draw(self, rng: np.random.Generator, spec: Any, where: str) -> float:
        if self.log:
            value = float(np.exp(rng.uniform(np.log(self.lower), np.log(self.upper))))
        else:
            value = float(rng.uniform(self.lower, self.upper))
        if self.q is not None:
            value = float(np.round(value / self.q) * self.q)
        return value


class Integer(Domain):
    """``randint`` and ``lograndint`` (``upper`` excluded), ``qrandint`` and ``qlograndint``
    (multiples of ``q``, ``upper`` included).

    Attributes:
      lower, upper: The bounds, as given to the constructor.
      q: The step of ``qrandint`` and ``qlograndint``, or None.
      log: Whether the draw is uniform in log space (``lograndint``, ``qlograndint``).
      base: The log draws' base, as given; the draw does not depend on it.
    """

    def __init__(
        self, lower: int, upper: int, *, q: int | None = None, log: bool = False, base: float = 10
    ):
        self.lower = lower
        self.upper = upper
        self.q = q
        self.log = log
        self.base = base

    def __repr__(self) -> str:
        name = "lograndint" if self.log else "randint"
        q = "" if self.q is None else f", {self.q!r}"
        base = "" if not self.log or self.base == 10 else f", base={self.base!r}"
        return f"{'q' if self.q is not None else ''}{name}({self.lower!r}, {self.upper!r}{q}{base})"

    def _multiples(self) -> tuple[int, int]:
        """The first and last ``k`` with ``k * q`` in ``[lower, upper]``."""
        q = int(self.q or 1)
        return -(-int(self.lower) // q), int(self.upper) // q

    def _problem(self) -> str | None:
        bad = _bounds_problem(self.lower, self.upper, need_int=True)
        if bad is not None:
            return bad
        if self.log:
            if not self.lower >= 1:
                return (
                    f"needs lower >= 1 (a log-uniform draw is uniform in log space); "
                    f"lower={self.lower!r}; use randint() for a range that includes 0"
                )
            if not _is_real(self.base) or not self.base > 0 or self.base == 1:
                return f"needs a positive base other than 1; base={self.base!r}"
        if self.q is None:
            return None
        if not _is_int(self.q) or self.q < 1:
            return f"needs a positive integer step; q={self.q!r}"
        first, last = self._multiples()
        if first > last:
            return f"is empty: no multiple of q={self.q} lies in [{self.lower}, {self.upper}]"
        return None

    def _draw(self, rng: np.random.Generator, spec: Any, where: str) -> int:
        # The integers drawn from: [lower, upper) or, with q, the multiples' indices.
        first, stop = (self.lower, self.upper) if self.q is None else self._multiples()
        if self.q is not None:
            stop += 1
        if self.log:  # the floor of a log-uniform draw in [first, stop), as Tune's
            value = int(np.floor(np.exp(rng.uniform(np.log(first), np.log(stop)))))
            value = min(max(value, int(first)), int(stop) - 1)  # rounding at the ends
        else:
            value = int(rng.integers(first, stop))
        return value * int(self.q or 1)


class Normal(Domain):
    """``randn(mean, sd)``: a float drawn from a normal distribution; ``qrandn(mean, sd, q)``:
    rounded to the nearest multiple of ``q`` (attribute ``q``, else None)."""

    def __init__(self, mean: float = 0.0, sd: float = 1.0, *, q: float | None = None):
        self.mean = mean
        self.sd = sd
        self.q = q

    def __repr__(self) -> str:
        if self.q is not None:
            return f"qrandn({self.mean!r}, {self.sd!r}, {self.q!r})"
        return f"randn({self.mean!r}, {self.sd!r})"

    def _problem(self) -> str | None:
        if not _is_real(self.mean) or not math.isfinite(self.mean):
            return f"needs a finite mean; mean={self.mean!r}"
        if not _is_real(self.sd) or not math.isfinite(self.sd) or not self.sd > 0:
            return f"needs a positive standard deviation; sd={self.sd!r}"
        q = self.q
        if q is not None and (not _is_real(q) or not math.isfinite(q) or not q > 0):
            return f"needs a positive quantization step; q={q!r}"
        return None

    def _draw(self, rng: np.random.Generator, spec: Any, where: str) -> float:
        value = float(rng.normal(self.mean, self.sd))
        if self.q is not None:
            value = float(np.round(value / self.q) * self.q)
        return value


class Function(Domain):
    """``sample_from(fn)``: the value ``fn(spec)`` returns, or ``fn()`` for a function of no
    arguments.

    ``spec`` is Tune's: ``spec.config`` is the variant being resolved, with its grid values and
    other domains already drawn (``spec.config.a`` or ``spec.config["a"]``; nested dicts the same
    way). ``spec`` itself also reads as that config (``spec["a"]``, as newer Tune passes the
    config directly). Reading a value that is another unresolved ``sample_from`` defers this one
    until that one is resolved; a cycle is an error naming the keys. The function draws its own
    randomness: a variant is reproducible for a seed only if the function's is.
    """

    def __init__(self, func: Callable[..., Any]):
        self.func = func

    def __repr__(self) -> str:
        name = getattr(self.func, "__qualname__", None) or repr(self.func)
        return f"sample_from({name})"

    def _arity(self) -> int | None:
        """1 when ``func`` takes the spec, 0 when it takes nothing, None when neither."""
        try:
            sig = inspect.signature(self.func)
        except (TypeError, ValueError):
            return 1  # a builtin without a signature: assume it takes the spec
        for args in ((None,), ()):
            try:
                sig.bind(*args)
            except TypeError:
                continue
            return len(args)
        return None

    def _problem(self) -> str | None:
        if not callable(self.func):
            return f"needs a callable fn(spec) -> value; got {self.func!r} ({type(self.func).__name__})"
        if self._arity() is None:
            return "needs a function of one argument (the spec) or of none"
        return None

    def _draw(self, rng: np.random.Generator, spec: Any, where: str) -> Any:
        if self._arity() == 0:
            return self.func()
        return self.func(spec if spec is not None else ConfigView({}))


class ConfigView(Mapping[str, Any]):
    """A read-only view of a partly resolved variant, as ``sample_from`` functions receive it.

    Keys read as items or attributes (``view["lr"]``, ``view.lr``); nested dicts come back as
    views; ``view.config`` is the whole variant (Tune's ``spec.config``). Reading a value that is
    still a search space raises ``UnresolvedValueError``.
    """

    def __init__(self, data: Mapping[str, Any], root: ConfigView | None = None, path: str = ""):
        self._data = data
        self._root = root if root is not None else self
        self._path = path

    @property
    def config(self) -> ConfigView:
        """The whole variant (Tune's ``spec.config``)."""
        return self._root

    def __getitem__(self, key: str) -> Any:
        if key == "config" and key not in self._data and self is self._root:
            return self  # Tune's older ``spec["config"]``
        value = self._data[key]
        where = f"{self._path}[{key!r}]"
        if _holds_domain(value):
            raise UnresolvedValueError(where)
        if isinstance(value, Mapping):
            return ConfigView(value, self._root, where)
        return value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"ConfigView({dict(self._data)!r})"


def _holds_domain(value: Any) -> bool:
    """Whether ``value`` is a search space or a list/tuple holding one (a dict is read key by
    key, so only its own unresolved keys count)."""
    if isinstance(value, Domain) or is_grid_dict(value):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_domain(v) for v in value)
    return False


def is_grid_dict(value: Any) -> bool:
    """Tune's plain-dict form of a grid, ``{"grid_search": [...]}`` (as YAML files write it)."""
    return isinstance(value, dict) and len(value) == 1 and "grid_search" in value


def as_domain(value: Any) -> Domain | None:
    """``value`` as a search space: a ``Domain`` as is, Tune's ``{"grid_search": [...]}`` as a
    ``GridSearch``; None for any other value."""
    if isinstance(value, Domain):
        return value
    if is_grid_dict(value):
        return GridSearch(value["grid_search"])
    return None


# ------------------------------------------------------------------------------ constructors


def grid_search(values: Iterable[Any]) -> GridSearch:
    """Tries every value in ``values``; several grids give every combination.

    With ``num_samples=n`` every combination is repeated ``n`` times (the other domains drawn
    anew for each).
    """
    return GridSearch(values)


def choice(categories: Iterable[Any]) -> Categorical:
    """One of ``categories``, each equally likely (``np.random.choice`` without its dtype
    coercion: a category comes back as the object given)."""
    return Categorical(categories)


def uniform(lower: float, upper: float) -> Float:
    """A float drawn uniformly from ``[lower, upper)``."""
    return Float(lower, upper)


def quniform(lower: float, upper: float, q: float) -> Float:
    """A uniform float rounded to the nearest multiple of ``q``; ``upper`` is included.

    As Tune, ``lower`` and ``upper`` must be multiples of ``q``.
    """
    return Float(lower, upper, q=q)


def loguniform(lower: float, upper: float, base: float = 10) -> Float:
    """A float whose logarithm is uniform between ``log(lower)`` and ``log(upper)``.

    Both bounds must be positive. ``base`` is accepted as Tune's; a log-uniform draw is the same
    in any base.
    """
    return Float(lower, upper, log=True, base=base)


def qloguniform(lower: float, upper: float, q: float, base: float = 10) -> Float:
    """A log-uniform float (``loguniform``) rounded to the nearest multiple of ``q``.

    Both bounds must be positive multiples of ``q``. ``base`` is accepted as Tune's.
    """
    return Float(lower, upper, log=True, q=q, base=base)


def randint(lower: int, upper: int) -> Integer:
    """An int drawn uniformly from ``[lower, upper)``: ``upper`` is excluded, as Tune's."""
    return Integer(lower, upper)


def qrandint(lower: int, upper: int, q: int = 1) -> Integer:
    """A multiple of ``q`` drawn uniformly from ``[lower, upper]``: ``upper`` is included, as
    Tune's."""
    return Integer(lower, upper, q=q)


def lograndint(lower: int, upper: int, base: float = 10) -> Integer:
    """An int in ``[lower, upper)`` whose logarithm is uniform: the floor of a log-uniform draw
    (as Tune's). ``lower`` must be at least 1; ``base`` is accepted as Tune's."""
    return Integer(lower, upper, log=True, base=base)


def qlograndint(lower: int, upper: int, q: int, base: float = 10) -> Integer:
    """A multiple of ``q`` in ``[lower, upper]`` (``upper`` included, as ``qrandint``), drawn
    log-uniformly over the multiples' indices (as Tune's). ``lower`` must be at least 1."""
    return Integer(lower, upper, q=q, log=True, base=base)


def randn(mean: float = 0.0, sd: float = 1.0) -> Normal:
    """A float drawn from a normal distribution of mean ``mean`` and standard deviation ``sd``."""
    return Normal(mean, sd)


def qrandn(mean: float, sd: float, q: float) -> Normal:
    """A normal draw (``randn``) rounded to the nearest multiple of ``q``."""
    return Normal(mean, sd, q=q)


def sample_from(func: Callable[..., Any]) -> Function:
    """The value ``func(spec)`` returns, with ``spec.config`` the variant's other values already
    resolved (see ``Function``)."""
    return Function(func)


# ------------------------------------------------------------------------------ trees


class _Inside:
    """A step of a key path into a search space's own values (a grid's or a choice's)."""

    def __init__(self, what: str, index: int):
        self.what, self.index = what, index

    def __repr__(self) -> str:
        return f"{self.what} value {self.index}"


def key_path(path: Path, root: str = "param_space") -> str:
    """``root['a']['b'][0]``: how error messages name a key."""
    return root + "".join(f"[{k!r}]" for k in path)


def _children(value: Any) -> Iterator[tuple[Any, Any]]:
    """The (key, child) pairs of a dict, list or tuple that variants are resolved inside."""
    if isinstance(value, dict) and not is_grid_dict(value):
        yield from value.items()
    elif isinstance(value, list) or type(value) is tuple:
        yield from enumerate(value)


def find_search_spaces(tree: Any, path: Path = ()) -> list[tuple[Path, Domain]]:
    """Every search space in ``tree`` (nested dicts, lists and tuples), with its key path, in the
    order the tree lists them; Tune's ``{"grid_search": [...]}`` dicts count as grids."""
    domain = as_domain(tree)
    if domain is not None:
        return [(path, domain)]
    found: list[tuple[Path, Domain]] = []
    for key, child in _children(tree):
        found.extend(find_search_spaces(child, (*path, key)))
    return found


def check_search_spaces(tree: Any, root: str = "param_space", path: Path = ()) -> None:
    """Checks every search space in ``tree``, and those inside a grid's or a choice's values.

    Raises:
      ConfigError: naming the key path, the search space as given and what is allowed.
    """
    for sub, domain in find_search_spaces(tree, path):
        domain.check(key_path(sub, root))
        if isinstance(domain, GridSearch):
            inner = [("grid_search", domain.values)]
        elif isinstance(domain, Categorical):
            inner = [("choice", domain.categories)]
        else:
            inner = []
        for what, values in inner:
            for i, value in enumerate(values):
                check_search_spaces(value, root, (*sub, _Inside(what, i)))


__all__ = [
    "Categorical",
    "ConfigView",
    "Domain",
    "Float",
    "Function",
    "GridSearch",
    "Integer",
    "Normal",
    "Path",
    "UnresolvedValueError",
    "as_domain",
    "check_search_spaces",
    "choice",
    "find_search_spaces",
    "grid_search",
    "is_grid_dict",
    "key_path",
    "lograndint",
    "loguniform",
    "qlograndint",
    "qloguniform",
    "qrandint",
    "qrandn",
    "quniform",
    "randint",
    "randn",
    "sample_from",
    "uniform",
]
