"""Ray Tune's resource names: ``PlacementGroupFactory`` and ``with_resources``.

In Ray, a trial's resources ask the cluster for CPUs and GPUs before the trial starts. rljax
runs every trial on this one host, and what a trial uses is what its config says
(``num_env_runners``, ``num_envs_per_env_runner``, ``num_learners``, the devices JAX sees) and
``TuneConfig(max_concurrent_trials=...)``. These names are accepted, and what they are given is
recorded (``PlacementGroupFactory.bundles``, ``trainable_resources(trainable)``), but nothing is
reserved, limited or scheduled by them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rljax.tune.tune_config import note_no_effect
from rljax.utils.errors import ConfigError

_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")


def _check_bundle(bundle: Any, where: str) -> dict[str, float]:
    if not isinstance(bundle, Mapping):
        raise ConfigError(f"{where}={bundle!r}: use a dict of resource names to amounts")
    out: dict[str, float] = {}
    for name, amount in bundle.items():
        if not isinstance(name, str):
            raise ConfigError(f"{where}: resource name {name!r} is not a string")
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0:
            raise ConfigError(f"{where}[{name!r}]={amount!r}: use a number >= 0")
        out[name] = amount
    return out


class PlacementGroupFactory:
    """A trial's resource request as bundles (Tune's ``PlacementGroupFactory``).

    ``bundles`` is a list of dicts of resource name to amount (``[{"CPU": 1, "GPU": 0},
    {"CPU": 2}]``); the first is the trial's own process, the others its workers. On one host
    nothing is reserved: the bundles are recorded and can be read back (``bundles``,
    ``required_resources``), and a trial's use is set by its config's knobs alone.

    Args:
      bundles: A non-empty list of resource dicts.
      strategy: Ray's placement strategy (``"PACK"``, ``"SPREAD"``, ``"STRICT_PACK"``,
        ``"STRICT_SPREAD"``), recorded.
    """

    def __init__(
        self,
        bundles: Sequence[Mapping[str, float]],
        strategy: str = "PACK",
        *args: Any,
        **kwargs: Any,
    ):
        if isinstance(bundles, Mapping) or not isinstance(bundles, Sequence) or not bundles:
            raise ConfigError(
                f"PlacementGroupFactory(bundles={bundles!r}): use a non-empty list of resource "
                "dicts ([{'CPU': 1}, {'CPU': 1}])"
            )
        if strategy not in _STRATEGIES:
            raise ConfigError(
                f"PlacementGroupFactory(strategy={strategy!r}): use one of {list(_STRATEGIES)}"
            )
        self._bundles = [
            _check_bundle(b, f"PlacementGroupFactory bundles[{i}]") for i, b in enumerate(bundles)
        ]
        self.strategy = strategy
        self._args, self._kwargs = args, dict(kwargs)

    @property
    def bundles(self) -> list[dict[str, float]]:
        """The bundles as given (copies)."""
        return [dict(b) for b in self._bundles]

    @property
    def head_bundle_is_empty(self) -> bool:
        """Whether the first bundle asks for nothing (Tune's name)."""
        return not any(self._bundles[0].values())

    @property
    def head_cpus(self) -> float:
        """The CPUs of the first bundle."""
        return self._bundles[0].get("CPU", 0)

    @property
    def required_resources(self) -> dict[str, float]:
        """Every bundle's amounts summed per resource name."""
        total: dict[str, float] = {}
        for bundle in self._bundles:
            for name, amount in bundle.items():
                total[name] = total.get(name, 0) + amount
        return total

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PlacementGroupFactory)
            and self._bundles == other._bundles
            and self.strategy == other.strategy
        )

    def __hash__(self) -> int:
        return hash((repr(self._bundles), self.strategy))

    def __repr__(self) -> str:
        return f"PlacementGroupFactory({self._bundles!r}, strategy={self.strategy!r})"


Resources = Mapping[str, float] | PlacementGroupFactory | Callable[[Any], Any]


class _FunctionWithResources:
    """A function trainable with its recorded resources; calling it calls the function."""

    def __init__(self, function: Callable[..., Any], resources: Resources):
        self.function = function
        self.resources = resources
        functools.update_wrapper(self, function)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


def with_resources(trainable: Any, resources: Resources) -> Any:
    """The trainable, with a resource request recorded (Tune's ``tune.with_resources``).

    ``resources`` is a dict (``{"cpu": 2, "gpu": 1}``), a ``PlacementGroupFactory`` or a
    function of the config returning either. On one host it means nothing beyond what the
    config's knobs already say: nothing is reserved and trials are not spread by it (a warning
    says so once). A function trainable comes back wrapped, calling through to the function,
    with the request as ``trainable_resources(wrapped)``; an algorithm class, a name or a
    config comes back as given.

    Raises:
      ConfigError: ``resources`` is none of those.
    """
    if isinstance(resources, Mapping):
        _check_bundle(resources, "with_resources(resources)")
    elif not isinstance(resources, PlacementGroupFactory) and not callable(resources):
        raise ConfigError(
            f"with_resources(resources={resources!r}): use a dict ({{'cpu': 1}}), a "
            "tune.PlacementGroupFactory or a function of the config returning one"
        )
    note_no_effect(
        "tune.with_resources",
        "rljax runs trials on this host and reserves nothing; a trial uses what its config "
        "sets (num_env_runners, num_learners, ...) and TuneConfig(max_concurrent_trials=...) "
        "bounds how many run at once",
    )
    if callable(trainable) and not isinstance(trainable, type):
        return _FunctionWithResources(trainable, resources)
    return trainable


def trainable_resources(trainable: Any) -> Resources | None:
    """The resources ``with_resources`` recorded for a function trainable (None: none)."""
    return trainable.resources if isinstance(trainable, _FunctionWithResources) else None


__all__ = ["PlacementGroupFactory", "trainable_resources", "with_resources"]
