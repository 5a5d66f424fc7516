"""RLlib's ``EnvWithSubprocess`` (``ray.rllib.examples.envs.classes.env_with_subprocess``): an
env that starts a child process, for testing that runners clean up after their envs."""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
from typing import Any

import gymnasium as gym
from gymnasium.spaces import Discrete


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class EnvWithSubprocess(gym.Env):
    """Starts ``sleep 20`` when made (killed at interpreter exit). ``config`` names four files
    (``tmp_file1`` .. ``tmp_file4``) that the env removes to show it was cleaned up: at exit
    the first (worker index 0) or the second (other workers), on ``close()`` the third or the
    fourth. Every episode is one step of reward 0."""

    UNIQUE_CMD = "sleep 20"

    def __init__(self, config: Any):
        self.files = [config[f"tmp_file{i}"] for i in range(1, 5)]
        self.worker_index = int(getattr(config, "worker_index", 0))
        self.action_space = Discrete(2)
        self.observation_space = Discrete(2)
        self.subproc = subprocess.Popen(self.UNIQUE_CMD.split(" "), shell=False)
        self.config = config
        atexit.register(self.subproc.kill)
        atexit.register(_remove, self.files[0 if self.worker_index == 0 else 1])

    def close(self) -> None:
        _remove(self.files[2 if self.worker_index == 0 else 3])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        return 0, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        return 0, 0.0, True, False, {}


__all__ = ["EnvWithSubprocess"]
