"""DQN with Rainbow's double-Q, dueling heads, n-step returns and prioritized replay."""

from rljax.algorithms.dqn.dqn import DQN, DQNConfig

__all__ = ["DQN", "DQNConfig"]
