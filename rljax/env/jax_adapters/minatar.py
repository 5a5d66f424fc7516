"""MinAtar's Breakout written in JAX, selected as ``"rljax:Breakout-MinAtar"``: no extra library,
so a conv network on the fused JAX-env path learns (and is tested) wherever rljax runs.

It follows MinAtar's Breakout (Young & Tian, 2019) as gymnax's ``Breakout-MinAtar`` does, with
its minimal action set and the same observations, and is checked against gymnax step by step
(``tests/env/test_jax_env_gymnax.py``):

- a 10x10 grid of four channels (float32 ``[10, 10, 4]``): the paddle (bottom row), the ball,
  its trail (the ball's previous cell) and the bricks (rows 1-3 at the start);
- actions 0: stay, 1: left, 2: right (the paddle moves one cell, within the grid);
- the ball moves one cell diagonally a step, bounces off the side walls and the top, breaks a
  brick it enters (reward 1, the ball turns back), and on the bottom row bounces off the
  paddle (up and on where the paddle stands under the ball's previous cell, back the way it
  came where it stands under its new one) or ends the episode (terminated);
- when the ball reaches the bottom with no brick left, rows 1-3 are filled again;
- a time limit of 1,000 steps (truncation), and the ball starting at row 3 of the left or the
  right wall, heading down and inwards, with equal probability.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.utils.errors import ConfigError

SIZE = 10
# Ball directions 0: up-left, 1: up-right, 2: down-right, 3: down-left.
_DX = np.array([-1, 1, 1, -1], np.int32)
_DY = np.array([-1, -1, 1, 1], np.int32)
_FLIP_X = np.array([1, 0, 3, 2], np.int32)  # off a side wall
_FLIP_Y = np.array([3, 2, 1, 0], np.int32)  # off the top, a brick, the paddle under the old cell
_BACK = np.array([2, 3, 0, 1], np.int32)  # off the paddle under the ball's new cell
_BRICK_ROWS = np.zeros((SIZE, SIZE), bool)
_BRICK_ROWS[1:4, :] = True


class BreakoutState(NamedTuple):
    """The game's state: the ball's cell and direction, the paddle's column, the bricks, whether
    the ball is inside a brick it just struck, and the ball's previous cell (int32 / bool)."""

    ball_y: jax.Array
    ball_x: jax.Array
    ball_dir: jax.Array
    pos: jax.Array
    bricks: jax.Array
    strike: jax.Array
    last_y: jax.Array
    last_x: jax.Array


class BreakoutMinAtar:
    """MinAtar's Breakout in JAX (``rljax.env.jax_env``'s protocol; see the module)."""

    max_episode_steps: int | None = 1000

    def __init__(self, config: dict[str, Any] | None = None):
        config = dict(config or {})
        if config:
            raise ConfigError(
                "rljax:Breakout-MinAtar takes no env_config but max_episode_steps; got "
                f"{sorted(config)}"
            )
        self.observation_space = gym.spaces.Box(0.0, 1.0, (SIZE, SIZE, 4), np.float32)
        actions: gym.spaces.Discrete[Any] = gym.spaces.Discrete(3)
        self.action_space = actions

    @staticmethod
    def observe(s: BreakoutState) -> jax.Array:
        """The ``[10, 10, 4]`` grid of ``s``: paddle, ball, trail, bricks."""
        obs = jnp.zeros((SIZE, SIZE, 4), jnp.float32)
        obs = obs.at[SIZE - 1, s.pos, 0].set(1.0)
        obs = obs.at[s.ball_y, s.ball_x, 1].set(1.0)
        obs = obs.at[s.last_y, s.last_x, 2].set(1.0)
        return obs.at[:, :, 3].set(s.bricks.astype(jnp.float32))

    def reset(self, key: jax.Array) -> tuple[BreakoutState, jax.Array]:
        right = jax.random.bernoulli(key)
        x = jnp.where(right, SIZE - 1, 0).astype(jnp.int32)
        y = jnp.int32(3)
        state = BreakoutState(
            ball_y=y,
            ball_x=x,
            ball_dir=jnp.where(right, 3, 2).astype(jnp.int32),
            pos=jnp.int32(4),
            bricks=jnp.asarray(_BRICK_ROWS),
            strike=jnp.asarray(False),
            last_y=y,
            last_x=x,
        )
        return state, self.observe(state)

    def step(
        self, state: BreakoutState, action: Any, key: jax.Array
    ) -> tuple[BreakoutState, jax.Array, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        s = state
        move = jnp.where(action == 1, -1, jnp.where(action == 2, 1, 0))
        pos = jnp.clip(s.pos + move, 0, SIZE - 1).astype(jnp.int32)
        d = s.ball_dir
        x = s.ball_x + jnp.asarray(_DX)[d]
        y = s.ball_y + jnp.asarray(_DY)[d]
        side = (x < 0) | (x > SIZE - 1)
        x = jnp.clip(x, 0, SIZE - 1)
        d = jnp.where(side, jnp.asarray(_FLIP_X)[d], d)
        top = y < 0
        y = jnp.maximum(y, 0)
        d = jnp.where(top, jnp.asarray(_FLIP_Y)[d], d)
        # Entering a brick breaks it, unless the ball is still inside the one it just struck.
        in_brick = ~top & s.bricks[y, x]
        hit = in_brick & ~s.strike
        bricks = s.bricks.at[y, x].set(s.bricks[y, x] & ~hit)
        d = jnp.where(hit, jnp.asarray(_FLIP_Y)[d], d)
        y = jnp.where(hit, s.ball_y, y)  # back to the row it came from
        bottom = ~top & ~in_brick & (y == SIZE - 1)
        bricks = jnp.where(bottom & ~jnp.any(bricks), jnp.asarray(_BRICK_ROWS), bricks)
        under_old = bottom & (s.ball_x == pos)
        under_new = bottom & ~under_old & (x == pos)
        d = jnp.where(under_old, jnp.asarray(_FLIP_Y)[d], d)
        d = jnp.where(under_new, jnp.asarray(_BACK)[d], d)
        y = jnp.where(under_old | under_new, s.ball_y, y)
        terminated = bottom & ~under_old & ~under_new
        new = BreakoutState(
            ball_y=y.astype(jnp.int32),
            ball_x=x.astype(jnp.int32),
            ball_dir=d.astype(jnp.int32),
            pos=pos,
            bricks=bricks,
            strike=in_brick,
            last_y=s.ball_y,
            last_x=s.ball_x,
        )
        reward = hit.astype(jnp.float32)
        return new, self.observe(new), reward, terminated, jnp.asarray(False), {}

    def render(self, state: BreakoutState) -> np.ndarray:
        """The grid as a 160x160 RGB picture (16 pixels a cell): bricks red, the paddle white,
        the ball yellow, its trail grey; for evaluation videos (not traced)."""
        obs = np.asarray(self.observe(jax.tree.map(jnp.asarray, state)))
        image = np.zeros((SIZE, SIZE, 3), np.uint8)
        for channel, color in ((3, (200, 50, 50)), (2, (90, 90, 90)), (0, (230, 230, 230))):
            image[obs[..., channel] > 0] = color
        image[obs[..., 1] > 0] = (250, 220, 40)
        return np.repeat(np.repeat(image, 16, axis=0), 16, axis=1)


__all__ = ["BreakoutMinAtar", "BreakoutState"]
