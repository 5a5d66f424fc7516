"""``AddOtherAgentsRowIndexToXYPos`` (RLlib's
``ray.rllib.examples.connectors.classes.add_other_agents_row_index_to_xy_pos``): tells each
agent of ``DoubleRowCorridorEnv`` which row the other agent walks in."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.connectors.env_to_module.observation_preprocessor import (
    MultiAgentObservationPreprocessor,
)

# The other agent's row when it is not in the observation dict (its episode is over).
DONE_ROW = 2


class AddOtherAgentsRowIndexToXYPos(MultiAgentObservationPreprocessor):
    """A multi-agent preprocessor for ``DoubleRowCorridorEnv`` (each agent observes its
    ``[row, col]``):

    - ``agent_0`` gets ``{"agent": its cell as one index (row * length + col), "other_agent_row":
      agent_1's row, or 2 once agent_1 is done}`` (two ``Discrete`` spaces);
    - ``agent_1`` gets ``[row, col, agent_0's row (or 2)]`` as float32.

    Without the other agent's row, neither can seek the meeting the env rewards.
    """

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space:
        assert isinstance(input_observation_space, gym.spaces.Dict)
        position = input_observation_space["agent_0"]
        assert isinstance(position, gym.spaces.Box)
        self._length = int(np.asarray(position.high).reshape(-1)[1]) + 1  # high is inclusive
        return gym.spaces.Dict(
            {
                "agent_0": gym.spaces.Dict(
                    {
                        "agent": gym.spaces.Discrete(2 * self._length),
                        "other_agent_row": gym.spaces.Discrete(DONE_ROW + 1),
                    }
                ),
                "agent_1": gym.spaces.Box(0, self._length - 1, (3,), np.float32),
            }
        )

    def preprocess(self, observations: dict[Any, Any], episode: Any) -> dict[Any, Any]:
        rows = {a: int(np.asarray(o)[0]) for a, o in observations.items()}
        out: dict[Any, Any] = {}
        if "agent_0" in observations:
            row, col = (int(v) for v in np.asarray(observations["agent_0"]))
            out["agent_0"] = {
                "agent": row * self._length + col,
                "other_agent_row": rows.get("agent_1", DONE_ROW),
            }
        if "agent_1" in observations:
            row, col = (int(v) for v in np.asarray(observations["agent_1"]))
            out["agent_1"] = np.array([row, col, rows.get("agent_0", DONE_ROW)], np.float32)
        return out


__all__ = ["AddOtherAgentsRowIndexToXYPos"]
