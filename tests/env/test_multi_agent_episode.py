"""``MultiAgentEpisode``'s getters by hand, in RLlib's shapes: ``{agent_id: data}`` indexed by
env step, ``env_steps=False`` by each agent's own steps, ``return_list=True`` one dict per env
step; an agent's step runs from its observation to its next one (turn-based games), with the
rewards paid in between. The turn-based case's values are those RLlib 2.60's class gives for the
same calls."""

from __future__ import annotations

import numpy as np
import pytest

from rljax.env.multi_agent_episode import MultiAgentEpisode


def _three_steps() -> MultiAgentEpisode:
    episode = MultiAgentEpisode({0: "o0_0", 1: "o1_0"}, {0: {}, 1: {}}, 0, {0: "p0", 1: "p1"})
    episode.add_env_step(
        {0: "o0_1", 1: "o1_1"}, {0: "a0_0", 1: "a1_0"}, {0: 1.0, 1: 2.0}, {}, {}, {}
    )
    # Agent 1 sits this step out, yet is paid 5: it counts for its next step.
    episode.add_env_step({0: "o0_2"}, {0: "a0_1"}, {0: 1.0, 1: 5.0}, {}, {}, {})
    episode.add_env_step(
        {0: "o0_3", 1: "o1_3"},
        {0: "a0_2", 1: "a1_2"},
        {0: 1.0, 1: -1.0},
        {},
        {"__all__": True},
        {},
    )
    return episode


def test_getters_are_dicts_by_agent_indexed_by_env_step():
    episode = _three_steps()
    assert len(episode) == 3 and episode.agent_steps() == 5 and episode.is_done
    assert episode.get_rewards() == {0: [1.0, 1.0, 1.0], 1: [2.0, 4.0]}
    assert episode.get_observations() == {
        0: ["o0_0", "o0_1", "o0_2", "o0_3"],
        1: ["o1_0", "o1_1", "o1_3"],
    }
    assert episode.get_observations(-1) == {0: "o0_3", 1: "o1_3"}
    assert episode.get_actions(1) == {0: "a0_1"}  # agent 1 did not act in env step 1
    assert episode.get_actions(1, fill="-") == {0: "a0_1", 1: "-"}
    assert episode.get_rewards(agent_ids=1) == {1: [2.0, 4.0]}
    assert episode.get_rewards(return_list=True) == [{0: 1.0, 1: 2.0}, {0: 1.0}, {0: 1.0, 1: 4.0}]
    assert episode.get_rewards(-1, env_steps=False) == {0: 1.0, 1: 4.0}  # each agent's last
    with pytest.raises(ValueError, match="cannot be combined"):
        episode.get_rewards(env_steps=False, return_list=True)
    # RLlib's self-play callback reads the last reward of an agent so.
    assert episode.get_rewards()[1][-1] == 4.0
    assert episode.get_return() == 9.0 and episode.get_agent_returns() == {0: 3.0, 1: 6.0}
    assert episode.get_terminateds() == {0: True, 1: True, "__all__": True}
    assert episode.get_agents_that_stepped() == {0, 1} and episode.get_agents_to_act() == set()
    assert episode.module_for(1) == "p1" and episode.agent_ids == {0, 1}
    episode.to_numpy()
    assert episode.is_numpy
    np.testing.assert_array_equal(episode.get_rewards()[1], [2.0, 4.0])


def test_turn_based_steps_wait_for_the_agents_next_observation():
    # Two players taking turns (as TicTacToe): each gets an observation only on its turn.
    episode = MultiAgentEpisode({"p1": 0}, {})
    episode.add_env_step({"p2": 1}, {"p1": "a1_0"}, {"p1": 0.0, "p2": 1.0}, {}, {}, {})
    assert episode.get_observations(-1) == {"p2": 1} and episode.get_rewards() == {}
    episode.add_env_step({"p1": 2}, {"p2": "a2_0"}, {"p1": 0.5, "p2": 0.0}, {}, {}, {})
    episode.add_env_step({"p2": 3}, {"p1": "a1_1"}, {"p1": 0.0, "p2": 0.0}, {}, {}, {})
    episode.add_env_step({"p1": 4}, {"p2": "a2_1"}, {"p1": 2.0, "p2": 0.0}, {}, {}, {})
    episode.add_env_step(
        {"p1": 6, "p2": 5}, {"p1": "a1_2"}, {"p1": 1.0, "p2": -1.0}, {}, {"__all__": True}, {}
    )
    assert episode.get_observations() == {"p1": [0, 2, 4, 6], "p2": [1, 3, 5]}
    assert episode.get_rewards() == {"p1": [0.5, 2.0, 1.0], "p2": [0.0, -1.0]}
    assert episode.get_actions() == {"p1": ["a1_0", "a1_1", "a1_2"], "p2": ["a2_0", "a2_1"]}
    assert episode.get_rewards(return_list=True) == [
        {"p1": 0.5},
        {"p2": 0.0},
        {"p1": 2.0},
        {"p2": -1.0},
        {"p1": 1.0},
    ]
    assert episode.get_terminateds() == {"p1": True, "p2": True, "__all__": True}
    # p2's reward before its first observation stays outside its steps (and, as in RLlib,
    # goes with it when it is done).
    assert episode.get_return() == episode.get_return(include_hanging_rewards=True) == 2.5


def test_an_agent_done_while_waiting_closes_its_step_with_its_last_observation():
    episode = MultiAgentEpisode({"p1": 0, "p2": 10}, {})
    episode.add_env_step({"p2": 11}, {"p1": "a1_0", "p2": "a2_0"}, {"p2": 1.0}, {}, {}, {})
    assert episode.get_return(include_hanging_rewards=True) == 1.0  # p1's step still open
    episode.add_env_step({}, {}, {"p1": 3.0}, {}, {"__all__": True}, {})
    assert episode.get_observations() == {"p1": [0, 0], "p2": [10, 11]}
    assert episode.get_rewards() == {"p1": [3.0], "p2": [1.0]}
    assert episode.get_terminateds() == {"p1": True, "p2": True, "__all__": True}
