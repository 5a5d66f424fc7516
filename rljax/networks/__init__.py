"""Flax modules and action distributions."""

from rljax.networks.distributions import (
    ActionDistribution,
    Categorical,
    DiagGaussian,
    make_distribution,
)
from rljax.networks.models import ActorCritic, build_module

__all__ = [
    "ActionDistribution",
    "ActorCritic",
    "Categorical",
    "DiagGaussian",
    "build_module",
    "make_distribution",
]
