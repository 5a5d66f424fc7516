"""Variant generation: the trials' configs a ``param_space`` stands for, with Ray Tune's semantics.

``generate_variants(param_space, num_samples, seed)`` crosses every grid, repeats the grid
``num_samples`` times and draws every other search space independently for each variant from
one seeded numpy ``Generator``, in a fixed order, so a seed gives the same list every time.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from rljax.utils.errors import ConfigError
from rljax.utils.search_space import (
    Categorical,
    ConfigView,
    Domain,
    Function,
    GridSearch,
    Path,
    UnresolvedValueError,
    check_search_spaces,
    find_search_spaces,
    key_path,
)

# At most this many trials per experiment: every variant is a config in memory, a trial
# directory and a row of the experiment state, so a grid of three 1,000-value lists (10^9) is
# refused when counted, before any is made.
MAX_VARIANTS = 100_000


def count_variants(tree: Any) -> int:
    """How many variants one sample of ``tree`` expands to, counted without making any: the
    product over its grids of the sum of each value's own count (a grid value may hold grids),
    times, for a ``choice`` whose categories hold grids, its largest category's count (an upper
    bound: which category is drawn is not known yet). Python ints: no overflow."""
    return _count(tree, {})


def _count(tree: Any, seen: dict[int, int]) -> int:
    """``count_variants``, each container counted once however often it is repeated."""
    key = id(tree)
    if key in seen:
        return seen[key]
    total = 1
    for _, domain in find_search_spaces(tree):
        if isinstance(domain, GridSearch) and isinstance(domain.values, list):
            total *= sum(_count(v, seen) for v in domain.values)
        elif isinstance(domain, Categorical) and isinstance(domain.categories, list):
            total *= max((_count(c, seen) for c in domain.categories), default=1)
    if isinstance(tree, (dict, list, tuple)):
        seen[key] = total
    return total


def check_variant_count(
    param_space: Any, num_samples: int, root: str = "param_space", cap: int | None = None
) -> int:
    """The number of trials ``param_space`` x ``num_samples`` stands for (see ``count_variants``).

    Raises:
      ConfigError: more than ``cap`` (default ``MAX_VARIANTS``), naming the count, its grids'
        sizes, ``num_samples`` and the cap.
    """
    cap = MAX_VARIANTS if cap is None else cap
    per_sample = count_variants(param_space)
    count = per_sample * int(num_samples)
    if count > cap:
        grids = [
            f"{key_path(p, root)}: {len(d.values):,}"
            for p, d in find_search_spaces(param_space)
            if isinstance(d, GridSearch) and isinstance(d.values, list)
        ]
        sizes = f" (grid sizes {', '.join(grids[:6])}{', ...' if len(grids) > 6 else ''})"
        raise ConfigError(
            f"{root} stands for {count:,} trials: {per_sample:,} per sample"
            f"{sizes if grids else ''} x num_samples={int(num_samples):,}; at most {cap:,} "
            "trials are run in one experiment. Use fewer grid values or a smaller num_samples "
            "(or a search algorithm, tune.TuneConfig(search_alg=...))"
        )
    return count


def _copy_tree(value: Any) -> Any:
    """``value`` with its dicts, lists and tuples copied (leaves shared), so that variants never
    share a container."""
    if isinstance(value, dict):
        return {k: _copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_tree(v) for v in value]
    if type(value) is tuple:
        return tuple(_copy_tree(v) for v in value)
    return value


def _replace(tree: Any, path: Path, value: Any) -> Any:
    """``tree`` with the value at ``path`` replaced (a tuple on the way is rebuilt)."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if type(tree) is tuple:
        items = list(tree)
        items[key] = _replace(items[key], rest, value)
        return tuple(items)
    tree[key] = _replace(tree[key], rest, value)
    return tree


def _path_order(item: tuple[Path, Domain]) -> tuple[tuple[int, Any], ...]:
    """Sorts key paths as Tune sorts its grid paths (plain tuple order for string keys), with
    int and other keys ordered too."""
    return tuple(
        (0, k) if isinstance(k, str) else (1, k) if isinstance(k, int) else (2, repr(k))
        for k in item[0]
    )


def _grid_points(grids: list[tuple[Path, GridSearch]]) -> Iterator[tuple[Any, ...]]:
    """The grids' combinations, the first grid's value changing fastest (Tune's order)."""
    for combo in itertools.product(*(g.values for _, g in reversed(grids))):
        yield combo[::-1]


def _resolve_functions(
    variant: dict[str, Any],
    functions: list[tuple[Path, Function]],
    rng: np.random.Generator,
    root: str,
) -> dict[str, Any]:
    """Calls each ``sample_from`` function with the variant resolved so far; one that reads a
    value still unresolved is called again after the others, until none is left."""
    pending = list(functions)
    while pending:
        left: list[tuple[Path, Function]] = []
        waits: list[str] = []
        for path, fn in pending:
            where = key_path(path, root)
            try:
                value = fn.sample(rng, spec=ConfigView(variant), where=where)
            except UnresolvedValueError as e:
                left.append((path, fn))
                waits.append(f"{where} reads {root}{e.args[0]}")
                continue
            except ConfigError:
                raise
            except Exception as e:
                raise ConfigError(f"{where}: {fn!r} raised {type(e).__name__}: {e}") from e
            if isinstance(value, ConfigView):  # a part of the variant itself
                value = value._data
            variant = _replace(variant, path, _copy_tree(value))
        if len(left) == len(pending):
            raise ConfigError(
                "sample_from functions wait on each other's values (a circular dependency): "
                + "; ".join(waits)
                + "; let one of them read only resolved values"
            )
        pending = left
    return variant


def _expand(variant: dict[str, Any], rng: np.random.Generator, root: str) -> list[dict[str, Any]]:
    found = find_search_spaces(variant)
    if not found:
        return [_copy_tree(variant)]
    grids = sorted(
        ((p, d) for p, d in found if isinstance(d, GridSearch)),
        key=_path_order,
    )
    draws = [(p, d) for p, d in found if not isinstance(d, (GridSearch, Function))]
    functions = [(p, d) for p, d in found if isinstance(d, Function)]
    out: list[dict[str, Any]] = []
    for combo in _grid_points(grids):
        v = _copy_tree(variant)
        for (path, _), value in zip(grids, combo, strict=True):
            v = _replace(v, path, _copy_tree(value))
        for path, domain in draws:
            v = _replace(v, path, _copy_tree(domain.sample(rng, where=key_path(path, root))))
        v = _resolve_functions(v, functions, rng, root)
        # A grid value or a drawn category may itself hold search spaces: resolve those too.
        out.extend(_expand(v, rng, root) if find_search_spaces(v) else [v])
    return out


def generate_variants(
    param_space: Mapping[str, Any],
    num_samples: int = 1,
    seed: int | np.random.Generator | None = None,
    *,
    root: str = "param_space",
) -> list[dict[str, Any]]:
    """The variants (one resolved config per trial) that ``param_space`` stands for.

    Ray Tune's semantics (its ``BasicVariantGenerator``): every combination of the
    ``grid_search`` values anywhere in the space, the whole grid repeated ``num_samples`` times,
    and every other search space drawn anew for each variant. Nested dicts, lists and tuples are
    resolved inside; other values are kept as given (containers copied, so variants never share
    one). Tune's plain-dict grid ``{"grid_search": [...]}`` is a grid too. A value a grid or a
    ``choice`` yields that itself holds search spaces is resolved in turn.

    Order, as Tune's: sample by sample (the whole grid, then the whole grid again); within one
    sample, the grids' key paths sorted, the first path's value changing fastest. So
    ``{"a": grid_search([1, 2]), "b": grid_search(["x", "y"])}`` with ``num_samples=2`` gives
    ``(a, b)`` = (1, x), (2, x), (1, y), (2, y), (1, x), (2, x), (1, y), (2, y).

    Draws come from one ``numpy.random.Generator`` made from ``seed``, variant by variant and,
    within a variant, in the order the space lists its keys; ``sample_from`` functions are called
    last, each once every value it reads is resolved. The same seed gives the same list.

    Args:
      param_space: A dict of values and search spaces.
      num_samples: How many times the grid is repeated (1 or more).
      seed: An int seed, a numpy ``Generator`` to draw from, or None for a fresh unseeded one.
      root: The name error messages give the space (a config passes its class name).

    Returns:
      ``len(grid combinations) * num_samples`` resolved dicts.

    Raises:
      ConfigError: More than ``MAX_VARIANTS`` variants (counted before any is made, see
        ``check_variant_count``); a search space that cannot be sampled (an empty grid, ``loguniform`` with a
        bound at or below 0, ``lower >= upper``, ``q <= 0``, a ``sample_from`` that is not a
        function of the spec ...), named by its key path; ``num_samples`` below 1; a
        ``sample_from`` that raises or that waits on itself through others.
    """
    if not isinstance(param_space, Mapping):
        raise ConfigError(
            f"{root} must be a dict of values and search spaces; got a {type(param_space).__name__}"
        )
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise ConfigError(f"num_samples={num_samples!r}: use an int, 1 or more")
    if num_samples < 1:
        raise ConfigError(
            f"num_samples={num_samples!r}: use 1 or more (the number of times the grid is tried)"
        )
    if not (
        seed is None
        or isinstance(seed, np.random.Generator)
        or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0)
    ):
        raise ConfigError(f"seed={seed!r}: use None, an int >= 0 or a numpy Generator")
    check_variant_count(param_space, int(num_samples), root)
    space = _copy_tree(dict(param_space))
    check_search_spaces(space, root)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    variants: list[dict[str, Any]] = []
    for _ in range(int(num_samples)):
        variants.extend(_expand(space, rng, root))
    return variants


__all__ = [
    "MAX_VARIANTS",
    "check_search_spaces",
    "check_variant_count",
    "count_variants",
    "find_search_spaces",
    "generate_variants",
    "key_path",
]
