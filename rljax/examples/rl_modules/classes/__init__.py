"""RLlib's example RLModule classes: ``from ray.rllib.examples.rl_modules.classes import
BeatLastHeuristicRLM`` becomes ``from rljax.examples.rl_modules.classes import ...``."""

from rljax.examples.rl_modules.classes.random_rlm import RandomRLModule
from rljax.examples.rl_modules.classes.rock_paper_scissors_heuristic_rlm import (
    AlwaysSameHeuristicRLM,
    BeatLastHeuristicRLM,
)

__all__ = ["AlwaysSameHeuristicRLM", "BeatLastHeuristicRLM", "RandomRLModule"]
