"""RLlib's ``TenStepErrorEnv`` (``ray.rllib.examples.envs.classes.ten_step_error_env``): one good
episode, then an error, for testing env-runner recovery."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class TenStepErrorEnv(gym.Env):
    """Observations are sampled from ``Box(0, 1, (1,))``; rewards are 0. The first episode
    terminates at step 10; in any later episode of the same env object, step 10 raises
    ``RuntimeError("Test error")``, so a runner must recreate the env. Infos carry
    ``last_eps_errored`` (whether the first episode has ended)."""

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        self.step_count = 0
        self.last_eps_errored = False
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        self.step_count = 0
        return self.observation_space.sample(), {"last_eps_errored": self.last_eps_errored}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.step_count += 1
        if self.step_count == 10:
            if self.last_eps_errored:
                raise RuntimeError("Test error")
            self.last_eps_errored = True
            return self.observation_space.sample(), 0.0, True, False, {"last_eps_errored": False}
        info = {"last_eps_errored": self.last_eps_errored}
        return self.observation_space.sample(), 0.0, False, False, info


__all__ = ["TenStepErrorEnv"]
