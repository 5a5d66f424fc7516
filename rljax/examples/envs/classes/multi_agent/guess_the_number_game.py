"""RLlib's ``GuessTheNumberGame``
(``ray.rllib.examples.envs.classes.multi_agent.guess_the_number_game``): one agent picks a
number, the other finds it by asking higher/lower questions."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rljax.env.multi_agent_env import MultiAgentDict, MultiAgentEnv


class GuessTheNumberGame(MultiAgentEnv):
    """Agents 0 and 1; both observe 0 always and act ``MultiDiscrete([3, max_number])``,
    ``(direction, number)``.

    First agent 0 acts alone: the number part of its action is the secret. Then agent 1 asks,
    each step, whether the secret is lower (direction 0) or higher (1) than ``number``, or
    equal (2) to it. For "lower"/"higher" it is paid 1 if true, 0 if not, and agent 0 is paid 1 (a step
    wasted). "Equal" pays agent 1 +100 and agent 0 -100 if right (the episode terminates), 0
    both if wrong. After ``max_steps`` (20) questions the episode is truncated, and if agent 1
    has not guessed it, agent 0 is paid 100. ``config``: ``max_number`` (3), ``max_steps``.
    """

    MAX_NUMBER = 3
    MAX_STEPS = 20

    def __init__(self, config: dict[str, Any] | None = None):
        config = config or {}
        self.possible_agents = [0, 1]
        self.agents = [0, 1]
        super().__init__()
        self.max_number = int(config.get("max_number", self.MAX_NUMBER))
        self.max_steps = int(config.get("max_steps", self.MAX_STEPS))
        self.observation_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.MultiDiscrete([3, self.max_number])
        self.observation_spaces = {a: self.observation_space for a in (0, 1)}
        self.action_spaces = {a: self.action_space for a in (0, 1)}
        self._number: int | None = None
        self._step = 0

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self._step = 0
        self._number = None
        return {0: 0}, {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        if action_dict.get(0) is not None:
            self._number = int(action_dict[0][1])
            not_done = {0: False, "__all__": False}
            return {1: 0}, {0: 0.0}, not_done, dict(not_done), {}
        if self._number is None:
            raise ValueError("agent 0 has not picked a number; reset the env first")
        direction, number = (int(x) for x in action_dict[1])
        guessed = False
        terminated: MultiAgentDict = {1: False, "__all__": False}
        truncated: MultiAgentDict = {1: False, "__all__": False}
        reward: MultiAgentDict
        if direction == 0:
            reward = {1: float(number > self._number), 0: 1.0}
        elif direction == 1:
            reward = {1: float(number < self._number), 0: 1.0}
        else:
            guessed = number == self._number
            reward = {1: 100.0 * guessed, 0: -100.0 * guessed}
            terminated = {1: guessed, "__all__": guessed}
        self._step += 1
        if self._step >= self.max_steps:
            truncated["__all__"] = True
            if not guessed:
                reward[0] = 100.0
        return {1: 0}, reward, terminated, truncated, {}


__all__ = ["GuessTheNumberGame"]
