"""``MultiAgentEpisode``'s getters by hand, in RLlib's shapes: ``{agent_id: data}`` indexed by
env step, ``env_steps=False`` by each agent's own steps, ``return_list=True`` one dict per env
step; rewards that reach an agent between its actions belong to its last action."""

from __future__ import annotations

import numpy as np
import pytest

from rljax.env.multi_agent_episode import MultiAgentEpisode


def _three_steps() -> MultiAgentEpisode:
    episode = MultiAgentEpisode({0: "o0_0", 1: "o1_0"}, {0: {}, 1: {}}, 0, {0: "p0", 1: "p1"})
    episode.add_env_step(
        {0: "o0_1", 1: "o1_1"}, {0: "a0_0", 1: "a1_0"}, {0: 1.0, 1: 2.0}, {}, {}, {}
    )
    # Agent 1 sits this step out, yet is paid 5: the reward of its last action (a1_0).
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
    assert episode.get_rewards() == {0: [1.0, 1.0, 1.0], 1: [7.0, -1.0]}
    assert episode.get_observations() == {
        0: ["o0_0", "o0_1", "o0_2", "o0_3"],
        1: ["o1_0", "o1_1", "o1_3"],
    }
    assert episode.get_observations(-1) == {0: "o0_3", 1: "o1_3"}
    assert episode.get_actions(1) == {0: "a0_1"}  # agent 1 did not act in env step 1
    assert episode.get_actions(1, fill="-") == {0: "a0_1", 1: "-"}
    assert episode.get_rewards(agent_ids=1) == {1: [7.0, -1.0]}
    assert episode.get_rewards(return_list=True) == [{0: 1.0, 1: 7.0}, {0: 1.0}, {0: 1.0, 1: -1.0}]
    assert episode.get_rewards(-1, env_steps=False) == {0: 1.0, 1: -1.0}  # each agent's last
    with pytest.raises(ValueError, match="cannot be combined"):
        episode.get_rewards(env_steps=False, return_list=True)
    # RLlib's self-play callback reads the last reward of an agent so.
    assert episode.get_rewards()[1][-1] == -1.0
    assert episode.get_return() == 9.0 and episode.get_agent_returns() == {0: 3.0, 1: 6.0}
    assert episode.get_terminateds() == {0: True, 1: True, "__all__": True}
    assert episode.get_agents_that_stepped() == {0, 1} and episode.get_agents_to_act() == set()
    assert episode.module_for(1) == "p1" and episode.agent_ids == {0, 1}
    episode.to_numpy()
    assert episode.is_numpy
    np.testing.assert_array_equal(episode.get_rewards()[1], [7.0, -1.0])


def test_rewards_before_an_agents_first_action_go_to_its_first_step():
    episode = MultiAgentEpisode({0: "o0_0"}, {})
    episode.add_env_step({0: "o0_1", 1: "o1_1"}, {0: "a0_0"}, {0: 0.0, 1: 3.0}, {}, {}, {})
    assert episode.get_return() == 0.0 and episode.get_return(include_hanging_rewards=True) == 3.0
    episode.add_env_step({0: "o0_2", 1: "o1_2"}, {0: "a0_1", 1: "a1_1"}, {1: 1.0}, {}, {}, {})
    assert episode.get_rewards() == {0: [0.0, 0.0], 1: [4.0]}
    assert episode.get_observations(0) == {0: "o0_0"}  # agent 1 joined at env step 1
    assert episode.get_observations(1) == {0: "o0_1", 1: "o1_1"}
