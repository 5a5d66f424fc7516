"""rljax's own envs written in JAX, selected as ``"rljax:CartPole-v1"``, ``"rljax:Pendulum-v1"``
and ``"rljax:Breakout-MinAtar"`` (``rljax.env.jax_adapters.minatar``): no extra library, so the
fused JAX-env path runs (and is tested) wherever rljax does.

``CartPole`` follows gymnasium's ``CartPole-v1``: the same constants, Euler integration, reward
1 per step, termination when the pole leans past 12 degrees or the cart leaves [-2.4, 2.4], a
time limit of 500 steps (truncation), and the first state drawn uniformly from [-0.05, 0.05].

``Pendulum`` follows gymnasium's ``Pendulum-v1``: g = 10, unit mass and length, dt = 0.05, the
torque clipped to [-2, 2] and the speed to [-8, 8], reward ``-(angle^2 + 0.1 speed^2 + 0.001
torque^2)`` with the angle normalised to [-pi, pi), a time limit of 200 steps, and the first
angle drawn uniformly from [-pi, pi] and speed from [-1, 1]. Observation ``[cos, sin, speed]``.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.env.jax_adapters.minatar import BreakoutMinAtar
from rljax.utils.checks import TIME_LIMIT
from rljax.utils.errors import ConfigError

GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
TOTAL_MASS = MASS_CART + MASS_POLE
HALF_POLE_LENGTH = 0.5
POLE_MASS_LENGTH = MASS_POLE * HALF_POLE_LENGTH
FORCE = 10.0
TAU = 0.02  # seconds per step
THETA_LIMIT = 12 * 2 * math.pi / 360
X_LIMIT = 2.4


class CartPole:
    """Gymnasium's ``CartPole-v1`` in JAX, following ``rljax.env.jax_env``'s protocol (not
    derived from ``JaxEnv``: that module imports this one). State and observation: ``[x,
    x_dot, theta, theta_dot]`` (float32); actions: 0 pushes left, 1 right."""

    max_episode_steps: int | None = 500

    def __init__(self, config: dict[str, Any] | None = None):
        config = dict(config or {})
        if config:
            raise ConfigError(
                f"rljax:CartPole-v1 takes no env_config but max_episode_steps; got {sorted(config)}"
            )
        high = np.array([X_LIMIT * 2, np.inf, THETA_LIMIT * 2, np.inf], np.float32)
        self.observation_space = gym.spaces.Box(-high, high, (4,), np.float32)
        actions: gym.spaces.Discrete[Any] = gym.spaces.Discrete(2)
        self.action_space = actions

    def reset(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        state = jax.random.uniform(key, (4,), jnp.float32, -0.05, 0.05)
        return state, state

    def step(
        self, state: jax.Array, action: Any, key: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        x, x_dot, theta, theta_dot = state[0], state[1], state[2], state[3]
        force = jnp.where(action == 1, FORCE, -FORCE)
        cos, sin = jnp.cos(theta), jnp.sin(theta)
        temp = (force + POLE_MASS_LENGTH * theta_dot**2 * sin) / TOTAL_MASS
        theta_acc = (GRAVITY * sin - cos * temp) / (
            HALF_POLE_LENGTH * (4.0 / 3.0 - MASS_POLE * cos**2 / TOTAL_MASS)
        )
        x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
        new = jnp.stack(
            [
                x + TAU * x_dot,
                x_dot + TAU * x_acc,
                theta + TAU * theta_dot,
                theta_dot + TAU * theta_acc,
            ]
        ).astype(jnp.float32)
        terminated = (jnp.abs(new[0]) > X_LIMIT) | (jnp.abs(new[2]) > THETA_LIMIT)
        return new, new, jnp.float32(1.0), terminated, jnp.asarray(False), {}

    def render(self, state: Any) -> np.ndarray:
        """Gymnasium's CartPole picture of ``state`` (needs pygame: the ``video`` extra)."""
        return _gymnasium_picture("CartPole-v1", np.asarray(state, np.float64))


PENDULUM_G, PENDULUM_DT, MAX_SPEED, MAX_TORQUE = 10.0, 0.05, 8.0, 2.0


class Pendulum:
    """Gymnasium's ``Pendulum-v1`` in JAX (``rljax.env.jax_env``'s protocol). State ``[theta,
    theta_dot]``; observation ``[cos theta, sin theta, theta_dot]``; action: the torque, a
    ``Box(-2, 2, (1,))``."""

    max_episode_steps: int | None = 200

    def __init__(self, config: dict[str, Any] | None = None):
        config = dict(config or {})
        if config:
            raise ConfigError(
                f"rljax:Pendulum-v1 takes no env_config but max_episode_steps; got {sorted(config)}"
            )
        high = np.array([1.0, 1.0, MAX_SPEED], np.float32)
        self.observation_space = gym.spaces.Box(-high, high, (3,), np.float32)
        self.action_space = gym.spaces.Box(-MAX_TORQUE, MAX_TORQUE, (1,), np.float32)

    @staticmethod
    def _obs(state: jax.Array) -> jax.Array:
        return jnp.stack([jnp.cos(state[0]), jnp.sin(state[0]), state[1]]).astype(jnp.float32)

    def reset(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        high = jnp.array([math.pi, 1.0], jnp.float32)
        state = jax.random.uniform(key, (2,), jnp.float32, -high, high)
        return state, self._obs(state)

    def step(
        self, state: jax.Array, action: Any, key: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        theta, speed = state[0], state[1]
        torque = jnp.clip(jnp.reshape(action, ()), -MAX_TORQUE, MAX_TORQUE)
        angle = ((theta + math.pi) % (2 * math.pi)) - math.pi
        cost = angle**2 + 0.1 * speed**2 + 0.001 * torque**2
        speed = speed + (3 * PENDULUM_G / 2 * jnp.sin(theta) + 3.0 * torque) * PENDULUM_DT
        speed = jnp.clip(speed, -MAX_SPEED, MAX_SPEED)
        new = jnp.stack([theta + speed * PENDULUM_DT, speed]).astype(jnp.float32)
        reward = (-cost).astype(jnp.float32)
        return new, self._obs(new), reward, jnp.asarray(False), jnp.asarray(False), {}

    def render(self, state: Any) -> np.ndarray:
        """Gymnasium's Pendulum picture of ``state``, without the torque's arrow (needs
        pygame: the ``video`` extra)."""
        return _gymnasium_picture("Pendulum-v1", np.asarray(state, np.float64))


def _gymnasium_picture(env_id: str, state: np.ndarray) -> np.ndarray:
    """Gymnasium's ``rgb_array`` frame of its env ``env_id`` set to ``state`` (one drawing env
    per id, kept)."""
    env: Any = _PICTURE_ENVS.get(env_id)
    if env is None:
        env = _PICTURE_ENVS[env_id] = gym.make(env_id, render_mode="rgb_array").unwrapped
    env.state = state
    env.last_u = None  # Pendulum draws the last torque's arrow when it has one
    return np.asarray(env.render())


_PICTURE_ENVS: dict[str, Any] = {}


ENVS: dict[str, Any] = {
    "CartPole-v1": CartPole,
    "Pendulum-v1": Pendulum,
    "Breakout-MinAtar": BreakoutMinAtar,
}


def make(name: str, env_config: dict[str, Any]) -> Any:
    """The env ``name`` of rljax's own (``"rljax:<name>"``), built with ``env_config``; its time
    limit is ``env_config["max_episode_steps"]`` (by default gymnasium's: CartPole 500, Pendulum
    200; MinAtar's Breakout 1,000), applied by the caller."""
    if name not in ENVS:
        raise ConfigError(f"rljax:{name} is not one of rljax's JAX envs: {sorted(ENVS)}")
    config = dict(env_config)
    limit = config.pop("max_episode_steps", None)
    env = ENVS[name](config)
    if limit is not None:
        env.max_episode_steps = int(TIME_LIMIT("max_episode_steps", limit))  # type: ignore[arg-type]
    return env


__all__ = ["ENVS", "CartPole", "Pendulum", "make"]
