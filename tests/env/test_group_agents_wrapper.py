"""RLlib's with_agent_groups: grouped observations, actions, rewards and ends by hand."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rljax.env.multi_agent_env import MultiAgentEnv
from rljax.env.wrappers import GroupAgentsWrapper


class Five(MultiAgentEnv):
    """Five agents; agent i observes [i, t] and is rewarded its action times (i + 1); agent a4
    reports itself terminated from its first step on (and leaves the dicts with ``drop``), the
    others end after three steps."""

    def __init__(self, config=None, drop=False):
        self.drop = drop
        self.agents = self.possible_agents = ["a0", "a1", "a2", "a3", "a4"]
        self.observation_spaces = {
            a: gym.spaces.Box(-10.0, 10.0, (2,), np.float32) for a in self.agents
        }
        self.action_spaces = {a: gym.spaces.Discrete(3) for a in self.agents}
        super().__init__()
        self.t = 0
        self.seen: list = []

    def _obs(self, agents):
        return {a: np.array([int(a[1]), self.t], np.float32) for a in agents}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(self.possible_agents), {a: {"start": a} for a in self.possible_agents}

    def step(self, action_dict):
        self.seen.append(dict(action_dict))
        self.t += 1
        live = [a for a in action_dict if not (self.drop and a == "a4" and self.t > 1)]
        rewards = {a: float(action_dict[a] * (int(a[1]) + 1)) for a in live}
        done = {a: (self.t >= 3 or a == "a4") for a in live}
        done["__all__"] = self.t >= 3
        return self._obs(live), rewards, done, {"__all__": False}, {a: {"t": self.t} for a in live}


def test_groups_act_observe_and_are_rewarded_together():
    env = Five().with_agent_groups({"g": ["a0", "a1", "a2"], "h": ["a3", "a4"]})
    assert isinstance(env, GroupAgentsWrapper)
    assert env.possible_agents == ["g", "h"]
    assert env.observation_spaces["g"] == gym.spaces.Tuple([gym.spaces.Box(-10.0, 10.0, (2,))] * 3)
    assert env.action_spaces["h"] == gym.spaces.Tuple([gym.spaces.Discrete(3)] * 2)
    obs, infos = env.reset()
    assert [o.tolist() for o in obs["g"]] == [[0, 0], [1, 0], [2, 0]]
    assert infos["h"] == {"_group_info": [{"start": "a3"}, {"start": "a4"}]}
    obs, rewards, terms, truncs, infos = env.step({"g": (1, 2, 0), "h": [2, 1]})
    # The members get the group's parts in order; the group's reward is their sum.
    assert env.env.seen[-1] == {"a0": 1, "a1": 2, "a2": 0, "a3": 2, "a4": 1}
    assert rewards == {"g": 1.0 * 1 + 2.0 * 2 + 0.0, "h": 2.0 * 4 + 1.0 * 5}
    assert infos["h"]["_group_rewards"] == [8.0, 5.0] and infos["g"]["_group_info"][0] == {"t": 1}
    # A group ends only when all its members have: a4 is done, a3 is not.
    assert terms == {"g": False, "h": False, "__all__": False}


def test_bad_groups_and_actions_are_refused():
    with pytest.raises(ValueError, match="agent 'a1' is in two groups"):
        Five().with_agent_groups({"g": ["a0", "a1"], "h": ["a1"]})
    with pytest.raises(ValueError, match="names agent 'a9', which the env does not have"):
        Five().with_agent_groups({"g": ["a0", "a9"]})
    env = Five().with_agent_groups({"g": ["a0", "a1"]})
    assert env.possible_agents == ["g", "a2", "a3", "a4"]  # ungrouped agents pass through
    env.reset()
    with pytest.raises(ValueError, match="group 'g''s action has 3 parts; the group has 2"):
        env.step({"g": (0, 1, 2), "a2": 0, "a3": 0, "a4": 0})
    # A group whose member the env left out of its dict: grouped agents report together.
    env = Five(drop=True).with_agent_groups({"g": ["a3", "a4"]})
    env.reset()
    env.step({"a0": 0, "a1": 0, "a2": 0, "g": (0, 0)})
    with pytest.raises(ValueError, match="group 'g': agent 'a4' is missing"):
        env.step({"a0": 0, "a1": 0, "a2": 0, "g": (0, 0)})


class Four(Five):
    def __init__(self, config=None):
        super().__init__(config)
        self.agents = self.possible_agents = ["a0", "a1", "a2", "a3"]


def test_groups_of_unequal_action_spaces_are_refused_naming_both():
    from rljax import register_env
    from rljax.algorithms.ppo import PPOConfig
    from rljax.utils.errors import ConfigError

    register_env(
        "rljax-test-five-grouped",
        lambda cfg: Five().with_agent_groups({"g": ["a0", "a1", "a2"], "h": ["a3", "a4"]}),
    )
    config = (
        PPOConfig()
        .environment("rljax-test-five-grouped")
        .multi_agent(policies={"g", "h"}, policy_mapping_fn=lambda aid, *a, **k: aid)
    )
    with pytest.raises(
        ConfigError,
        match=r"agent 'g' has action space Tuple\(Discrete\(3\), "
        r"Discrete\(3\), Discrete\(3\)\), agent 'h' has Tuple\(Discrete\(3\), "
        r"Discrete\(3\)\)",
    ):
        config.build_algo()


@pytest.mark.slow
def test_groups_train_as_policies_of_multi_agent_ppo():
    from rljax import register_env
    from rljax.algorithms.ppo import PPOConfig

    register_env(
        "rljax-test-four-grouped",
        lambda cfg: Four().with_agent_groups({"g": ["a0", "a1"], "h": ["a2", "a3"]}),
    )
    config = (
        PPOConfig()
        .environment("rljax-test-four-grouped")
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=12)
        .training(train_batch_size_per_learner=24, minibatch_size=12, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .multi_agent(policies={"g", "h"}, policy_mapping_fn=lambda aid, *a, **k: aid)
    )
    with config.build_algo() as algo:
        runners = algo.train()["env_runners"]
    # 12 steps of 2 env copies: 3 episodes each of 3 steps and a reset step (multi-agent
    # runners reset on the next step); each group's return is its members' rewards summed,
    # between 0 and 3 steps x (2 x 1 + 2 x 2) for g, 3 x (2 x 3 + 2 x 4) for h.
    assert runners["num_episodes"] == 6
    returns = runners["module_episode_returns_mean"]
    assert 0 <= returns["g"] <= 18 and 0 <= returns["h"] <= 42 and returns["h"] > returns["g"]
