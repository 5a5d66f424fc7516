"""EnvPool's Atari tasks on ale-py, frame for frame: a single gymnasium env that preprocesses
the game exactly as EnvPool's C++ does, so that a policy trained on EnvPool can be watched
(evaluation videos render the game's RGB screen) and evaluated outside EnvPool.

The pipeline is EnvPool's (its ``AtariEnv``), with its settings read from EnvPool's own spec of
the task (``envpool.make_spec(task_id, **env_config)``), so the defaults cannot drift:

- reset: a new game, ``U{1..noop_max}`` no-ops (one fewer when the game has FIRE, which is then
  pressed once), the grayscale screen fills the whole frame stack;
- step: the action repeated ``frame_skip`` times (stopping at game over), rewards summed; the
  last two frames' grayscale screens max-pooled (only when every repeat ran), resized with
  OpenCV's ``INTER_AREA`` to ``img_height x img_width`` and pushed onto the stack (oldest
  first); truncation after ``max_episode_steps`` steps. Observations are ``[H, W, stack_num]``,
  as rljax's EnvPool Atari envs give them (RLlib's layout; ``vector.ChannelsLastAtari``);
- ``episodic_life``: a lost life is an episode end for EnvPool, whose next step is a reset
  without a new game (no-ops and FIRE again). Here an episode is the whole game, so the step
  after a lost life performs that reset instead of the action, returning its observation with
  zero reward: the observations are EnvPool's, row for row;
- ``reward_clip``: rewards are their sign (the raw sum is in ``info["reward"]``).

Needs ale-py and OpenCV (``pip install rljax[video]``); the ROM is EnvPool's own file.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from rljax.utils.errors import ConfigError

FIRE = 1  # ALE's action id


class EnvPoolAtari(gym.Env):
    """One Atari game, preprocessed as EnvPool's task ``task_id`` with ``env_config``."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    def __init__(
        self,
        task_id: str = "Pong-v5",
        env_config: dict[str, Any] | None = None,
        render_mode: str | None = None,
        seed: int = 0,
    ):
        try:
            import ale_py
            import cv2
            import envpool
        except ImportError as e:
            raise ConfigError(
                f"EnvPoolAtari needs ale-py, OpenCV and EnvPool ({e.name} is missing): pip "
                "install rljax[video]"
            ) from None
        self._cv2 = cv2
        config = envpool.make_spec(task_id, **dict(env_config or {})).config
        self.task_id = task_id
        self.max_episode_steps = int(config.max_episode_steps)
        self.stack_num = int(config.stack_num)
        self.frame_skip = int(config.frame_skip)
        self.noop_max = int(config.noop_max)
        self.episodic_life = bool(config.episodic_life)
        self.reward_clip = bool(config.reward_clip)
        self.size = (int(config.img_height), int(config.img_width))
        self.inter_area = bool(config.use_inter_area_resize)
        if not config.gray_scale:
            raise ConfigError("EnvPoolAtari reproduces EnvPool's grayscale frames only")
        self.render_mode = render_mode
        self.ale = ale_py.ALEInterface()
        self.ale.setLoggerMode(ale_py.LoggerMode.Error)
        self.ale.setFloat("repeat_action_probability", float(config.repeat_action_probability))
        self.ale.setInt("random_seed", int(seed))
        rom = os.path.join(config.base_path, "atari", "roms", f"{config.task}.bin")
        self.ale.loadROM(rom)
        actions = (
            self.ale.getLegalActionSet()
            if config.full_action_space
            else self.ale.getMinimalActionSet()
        )
        self.action_set = list(actions)
        self._noop, self._fire = ale_py.Action(0), ale_py.Action(FIRE)
        self.fire_reset = bool(config.use_fire_reset) and self._fire in self.action_set
        self.action_space = gym.spaces.Discrete(len(self.action_set))
        self.observation_space = gym.spaces.Box(0, 255, (*self.size, self.stack_num), np.uint8)
        self._rng = np.random.default_rng(seed)
        self._stack: list[np.ndarray] = []
        self._pool = [np.zeros((210, 160), np.uint8) for _ in range(2)]
        self._lives = 0
        self._elapsed = 0
        self._life_lost = False

    # ------------------------------------------------------------------ EnvPool's pipeline
    def _gray(self) -> np.ndarray:
        return self.ale.getScreenGrayscale().reshape(210, 160)

    def _push(self, push_all: bool, maxpool: bool) -> None:
        frame = np.maximum(self._pool[0], self._pool[1]) if maxpool else self._pool[0]
        if maxpool:
            self._pool[0] = frame  # EnvPool pools in place, into its first buffer
        height, width = self.size
        interpolation = self._cv2.INTER_AREA if self.inter_area else self._cv2.INTER_LINEAR
        small = self._cv2.resize(frame, (width, height), interpolation=interpolation)
        if push_all:
            self._stack = [small.copy() for _ in range(self.stack_num)]
        else:
            self._stack = [*self._stack[1:], small]

    def _obs(self) -> np.ndarray:
        return np.stack(self._stack, axis=-1)

    def _soft_reset(self, new_game: bool) -> None:
        """EnvPool's ``Reset``: a new game unless after a lost life, no-ops, FIRE."""
        noops = int(self._rng.integers(0, max(self.noop_max, 1))) + 1 - int(self.fire_reset)
        push_all = False
        if new_game:
            self.ale.reset_game()
            self._elapsed = 0
            push_all = True
        for _ in range(noops):
            self.ale.act(self._noop)
            if self.ale.game_over():
                self.ale.reset_game()
                push_all = True
        if self.fire_reset:
            self.ale.act(self._fire)
        self._pool[0] = self._gray()
        self._push(push_all, maxpool=False)
        self._lives = self.ale.lives()

    # ------------------------------------------------------------------ gymnasium's API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._life_lost = False
        self._soft_reset(new_game=True)
        return self._obs(), {"lives": self._lives}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._life_lost:  # EnvPool resets here after a lost life; the action is not used
            self._life_lost = False
            self._soft_reset(new_game=False)
            return self._obs(), 0.0, False, False, {"lives": self._lives, "reward": 0.0}
        reward, over, repeats = 0.0, False, self.frame_skip
        while repeats > 0 and not over:
            reward += self.ale.act(self.action_set[int(action)])
            over = self.ale.game_over()
            if repeats <= 2:
                self._pool[2 - repeats] = self._gray()
            repeats -= 1
        self._push(push_all=False, maxpool=repeats == 0)
        self._elapsed += 1
        truncated = self._elapsed >= self.max_episode_steps and not over
        lives = self.ale.lives()
        self._life_lost = self.episodic_life and 0 < lives < self._lives and not over
        self._lives = lives
        info = {"lives": lives, "reward": reward}
        if self.reward_clip:
            reward = float(np.sign(reward))
        return self._obs(), reward, bool(over), bool(truncated), info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return self.ale.getScreenRGB()


__all__ = ["EnvPoolAtari"]
