"""RLlib's old-stack ``RandomPolicy``
(``ray.rllib.examples._old_api_stack.policy.random_policy``) at its path.

On its own it acts as RLlib's does: uniformly random actions of its action space, no learning,
no weights. rljax builds every policy of a config from RLModules, so a config naming it
(``PolicySpec(policy_class=RandomPolicy)``, RLlib's old-stack scripts with
``--old-api-stack``) is refused, saying so; the new stack's random opponent is
``RLModuleSpec(module_class=RandomRLModule)``
(``rljax.examples.rl_modules.classes.random_rlm``), which RLlib's new-stack scripts use.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax


class RandomPolicy:
    """A policy acting uniformly at random in ``action_space`` (RLlib's constructor).

    ``config["ignore_action_bounds"]``: sample a ``Box`` as unbounded (RLlib's option)."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, config: Any = None):
        self.observation_space = observation_space
        self.action_space = action_space
        self.config = dict(config or {})
        self.action_space_for_sampling = action_space
        if self.config.get("ignore_action_bounds", False) and isinstance(
            action_space, gym.spaces.Box
        ):
            dtype: Any = action_space.dtype
            self.action_space_for_sampling = gym.spaces.Box(
                -float("inf"), float("inf"), action_space.shape, dtype
            )

    def compute_actions(self, obs_batch: Any, *args: Any, **kwargs: Any) -> tuple[list, list, dict]:
        """``(actions, [], {})``: one random action per observation of the batch."""
        size = len(jax.tree.leaves(obs_batch)[0]) if jax.tree.leaves(obs_batch) else 0
        return [self.action_space_for_sampling.sample() for _ in range(size)], [], {}

    def compute_single_action(
        self, obs: Any = None, *args: Any, **kwargs: Any
    ) -> tuple[Any, list, dict]:
        """``(action, [], {})``: one random action."""
        return self.action_space_for_sampling.sample(), [], {}

    def learn_on_batch(self, samples: Any) -> dict:
        """No learning: ``{}``."""
        return {}

    def get_weights(self) -> dict:
        """No weights: ``{}``."""
        return {}

    def set_weights(self, weights: Any) -> None:
        """No weights to set."""


__all__ = ["RandomPolicy"]
