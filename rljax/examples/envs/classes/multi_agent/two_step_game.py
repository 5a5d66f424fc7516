"""RLlib's ``TwoStepGame`` and ``TwoStepGameWithGroupedAgents``
(``ray.rllib.examples.envs.classes.multi_agent.two_step_game``): the two-step cooperative
matrix game of the QMIX paper."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Dict, Discrete, MultiDiscrete, Tuple

from rljax.env.multi_agent_env import MultiAgentDict, MultiAgentEnv

#: The key of the global state in observations with ``separate_state_space`` (RLlib's name).
ENV_STATE = "state"


class TwoStepGame(MultiAgentEnv):
    """Agents 0 and 1, both paid half of a shared reward.

    The state is one-hot over three: it starts at ``[1, 0, 0]``. In the first step agent 0's
    action picks the second state (0: ``[0, 1, 0]``, 1: ``[0, 0, 1]``), paying 0. In the second
    step the episode terminates: from ``[0, 1, 0]`` the reward is 7 whatever the actions; from
    ``[0, 0, 1]`` it is 0 if both act 0, 8 if both act 1, and 1 otherwise.

    ``env_config``: ``one_hot_state_encoding`` (False: observations ``Discrete(6)``, agent 0
    sees the state's index, agent 1 the index + 3; True: ``MultiDiscrete([2, 2, 2, 3])``, the
    one-hot state and the agent's number 1 or 2), ``separate_state_space`` (with one-hot: a Dict
    ``{"obs": ..., "state": one-hot state}``), ``actions_are_logits`` (actions are
    probabilities of 0 and 1, sampled by the env).
    """

    def __init__(self, env_config: dict[str, Any] | None = None):
        env_config = env_config or {}
        self.possible_agents = [0, 1]
        self.agents = [0, 1]
        super().__init__()
        self.actions_are_logits = bool(env_config.get("actions_are_logits", False))
        self.one_hot_state_encoding = bool(env_config.get("one_hot_state_encoding", False))
        self.with_state = self.one_hot_state_encoding and bool(
            env_config.get("separate_state_space", False)
        )
        obs_space: Any
        if not self.one_hot_state_encoding:
            obs_space = Discrete(6)
        elif self.with_state:
            obs_space = Dict(
                {"obs": MultiDiscrete([2, 2, 2, 3]), ENV_STATE: MultiDiscrete([2, 2, 2])}
            )
        else:
            obs_space = MultiDiscrete([2, 2, 2, 3])
        self.observation_space = obs_space
        self.action_space = Discrete(2)
        self.observation_spaces = {0: obs_space, 1: obs_space}
        self.action_spaces = {0: Discrete(2), 1: Discrete(2)}
        self.state = np.array([1, 0, 0])
        self._rng = np.random.default_rng()

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.state = np.array([1, 0, 0])
        return self._obs(), {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        if self.actions_are_logits:
            action_dict = {k: int(self._rng.choice(2, p=v)) for k, v in action_dict.items()}
        index = int(np.flatnonzero(self.state)[0])
        if index == 0:
            self.state = np.array([0, 1, 0]) if int(action_dict[0]) == 0 else np.array([0, 0, 1])
            reward, terminated = 0.0, False
        elif index == 1:
            reward, terminated = 7.0, True
        else:
            a0, a1 = int(action_dict[0]), int(action_dict[1])
            reward = 0.0 if a0 == a1 == 0 else 8.0 if a0 == a1 == 1 else 1.0
            terminated = True
        rewards: MultiAgentDict = {0: reward / 2.0, 1: reward / 2.0}
        infos: MultiAgentDict = {0: {"done": terminated}, 1: {"done": terminated}}
        return self._obs(), rewards, {"__all__": terminated}, {"__all__": False}, infos

    def _agent_obs(self, agent: int) -> Any:
        if self.one_hot_state_encoding:
            return np.concatenate([self.state, [agent + 1]])
        return int(np.flatnonzero(self.state)[0]) + 3 * agent

    def _obs(self) -> MultiAgentDict:
        if self.with_state:
            return {a: {"obs": self._agent_obs(a), ENV_STATE: self.state} for a in (0, 1)}
        return {a: self._agent_obs(a) for a in (0, 1)}


class TwoStepGameWithGroupedAgents(MultiAgentEnv):
    """``TwoStepGame`` with its two agents acting as one, ``"agents"``: the observation and the
    action are 2-tuples (agent 0's, agent 1's) and the reward is the two agents' sum."""

    def __init__(self, env_config: dict[str, Any] | None = None):
        self.possible_agents = ["agents"]
        self.agents = ["agents"]
        super().__init__()
        self.env = TwoStepGame(env_config)
        inner_obs, inner_act = self.env.get_observation_space(0), self.env.get_action_space(0)
        self.observation_spaces = {"agents": Tuple([inner_obs, inner_obs])}
        self.action_spaces = {"agents": Tuple([inner_act, inner_act])}

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        obs, _ = self.env.reset(seed=seed, options=options)
        return {"agents": (obs[0], obs[1])}, {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        a0, a1 = action_dict["agents"]
        obs, rew, term, trunc, infos = self.env.step({0: a0, 1: a1})
        done = term["__all__"]
        return (
            {"agents": (obs[0], obs[1])},
            {"agents": rew[0] + rew[1]},
            {"agents": done, "__all__": done},
            {"agents": False, "__all__": False},
            {"agents": {"_group_info": [infos[0], infos[1]]}},
        )


__all__ = ["ENV_STATE", "TwoStepGame", "TwoStepGameWithGroupedAgents"]
