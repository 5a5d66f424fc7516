"""Env-to-module connectors on multi-agent PPO (``rljax.connectors.env_to_module.multi_agent``):
pieces on each env step's observation dict, on the host; MeanStdFilter's statistics per agent."""

from __future__ import annotations

import gymnasium as gym
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.connectors.env_to_module import (
    FlattenObservations,
    MeanStdFilter,
    MultiAgentObservationPreprocessor,
)
from rljax.connectors.env_to_module.multi_agent import (
    ConnectedMultiAgentEnv,
    build_multi_agent_connectors,
    flatten_observation,
)
from rljax.env.multi_agent_env import MultiAgentEnv
from rljax.utils.errors import ConfigError

DICT = gym.spaces.Dict(
    {"pos": gym.spaces.Box(-1.0, 1.0, (2,), np.float32), "flag": gym.spaces.Discrete(3, start=1)}
)


class TwoKinds(MultiAgentEnv):
    """Agent ``a`` sees a Discrete(3) counter, ``b`` a Dict; 4 steps an episode; each is paid
    1 for action 1."""

    def __init__(self, config=None):
        self.possible_agents = ["a", "b"]
        self.agents = list(self.possible_agents)
        super().__init__()
        self.observation_spaces = {"a": gym.spaces.Discrete(3), "b": DICT}
        self.action_spaces = {"a": gym.spaces.Discrete(2), "b": gym.spaces.Discrete(2)}
        self.t = 0

    def _obs(self):
        pos = np.array([0.5, -0.25 * self.t], np.float32)
        return {"a": self.t % 3, "b": {"pos": pos, "flag": 1 + self.t % 3}}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {}

    def step(self, action_dict):
        self.t += 1
        done = self.t >= 4
        rewards = {a: float(action_dict[a] == 1) for a in action_dict}
        return (
            self._obs(),
            rewards,
            {"a": done, "b": done, "__all__": done},
            {"a": False, "b": False, "__all__": False},
            {},
        )


def test_flatten_observation_by_hand_and_as_the_jitted_connector():
    # Dict keys sorted: "flag" (Discrete(3) from 1, one-hot) before "pos".
    obs = {"pos": np.array([0.5, -1.0], np.float32), "flag": 2}
    np.testing.assert_array_equal(flatten_observation(DICT, obs), [0, 1, 0, 0.5, -1.0])
    piece = FlattenObservations()
    piece.check_space(DICT)
    piece.init_state(DICT)
    for _ in range(5):
        sample = DICT.sample()
        jitted = piece.transform({}, {k: jnp.asarray(v) for k, v in sample.items()})
        np.testing.assert_allclose(flatten_observation(DICT, sample), np.asarray(jitted))


def test_connected_env_flattens_the_listed_agents_only():
    env = TwoKinds()
    spaces = {a: env.get_observation_space(a) for a in env.possible_agents}
    acts = {a: env.get_action_space(a) for a in env.possible_agents}
    connectors = build_multi_agent_connectors(
        lambda env, spaces, device: FlattenObservations(multi_agent=True, agent_ids={"b"}),
        spaces,
        acts,
    )
    assert connectors is not None
    assert connectors.observation_spaces["a"] == gym.spaces.Discrete(3)
    assert connectors.observation_spaces["b"].shape == (5,)
    assert connectors.config_value() == [
        {"type": "FlattenObservations", "multi_agent": True, "agent_ids": ["b"]}
    ]
    wrapped = ConnectedMultiAgentEnv(env, connectors)
    obs, _ = wrapped.reset()
    assert obs["a"] == 0
    np.testing.assert_array_equal(obs["b"], [1, 0, 0, 0.5, 0.0])
    obs, rewards, *_ = wrapped.step({"a": 1, "b": 0})
    assert obs["a"] == 1 and rewards == {"a": 1.0, "b": 0.0}
    np.testing.assert_array_equal(obs["b"], [0, 1, 0, 0.5, -0.25])
    assert wrapped.t == 1  # anything else is the wrapped env's


def test_multi_agent_preprocessor_on_the_corridor_env():
    from rljax.examples.connectors.classes.add_other_agents_row_index_to_xy_pos import (
        AddOtherAgentsRowIndexToXYPos,
    )
    from rljax.examples.envs.classes.multi_agent.double_row_corridor_env import (
        DoubleRowCorridorEnv,
    )

    env = DoubleRowCorridorEnv({"length": 5})
    agents = env.possible_agents
    connectors = build_multi_agent_connectors(
        [
            AddOtherAgentsRowIndexToXYPos(),
            FlattenObservations(multi_agent=True, agent_ids=["agent_0"]),
        ],
        {a: env.get_observation_space(a) for a in agents},
        {a: env.get_action_space(a) for a in agents},
    )
    assert connectors is not None
    # agent_0: its cell of 2 x 5 one-hot, then the other's row of 3 one-hot; agent_1: 3 floats.
    assert connectors.observation_spaces["agent_0"].shape == (13,)
    assert connectors.observation_spaces["agent_1"].shape == (3,)
    wrapped = ConnectedMultiAgentEnv(env, connectors)
    obs, _ = wrapped.reset()
    connectors.check(env.reset()[0])
    # agent_0 at [0, 0] (index 0), agent_1 in row 1; keys sorted: "agent" before "other_agent_row".
    np.testing.assert_array_equal(obs["agent_0"], np.eye(10)[0].tolist() + [0, 1, 0])
    np.testing.assert_array_equal(obs["agent_1"], [1, 4, 0])
    obs, *_ = wrapped.step({"agent_0": 3, "agent_1": 0})  # agent_0 right, agent_1 up
    np.testing.assert_array_equal(obs["agent_0"], np.eye(10)[1].tolist() + [1, 0, 0])
    np.testing.assert_array_equal(obs["agent_1"], [0, 4, 0])


def test_refusals_name_what_was_given():
    env = TwoKinds()
    spaces = {a: env.get_observation_space(a) for a in env.possible_agents}
    acts = {a: env.get_action_space(a) for a in env.possible_agents}
    with pytest.raises(
        ConfigError, match="keeps statistics per agent; pass MeanStdFilter\\(multi_agent=True\\)"
    ):
        build_multi_agent_connectors([MeanStdFilter()], spaces, acts)
    with pytest.raises(ConfigError, match=r"names agents \['c'\] the env does not have"):
        build_multi_agent_connectors(
            [FlattenObservations(multi_agent=True, agent_ids=["c"])], spaces, acts
        )
    with pytest.raises(ConfigError, match="agent_ids needs multi_agent=True"):
        FlattenObservations(agent_ids=["a"])

    class NotADict(MultiAgentObservationPreprocessor):
        def recompute_output_observation_space(self, obs_space, act_space):
            return gym.spaces.Box(0, 1, (2,))

    with pytest.raises(ConfigError, match="returns a gymnasium.spaces.Dict keyed by"):
        build_multi_agent_connectors([NotADict()], spaces, acts)


def test_single_agent_ppo_refuses_the_multi_agent_pieces():
    from rljax.algorithms.ppo import PPOConfig

    class Whole(MultiAgentObservationPreprocessor):
        pass

    for piece, words in (
        (FlattenObservations(multi_agent=True), "is for multi-agent configs"),
        (Whole(), "Whole is a MultiAgentObservationPreprocessor"),
    ):
        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(env_to_module_connector=lambda env, spaces, device, p=piece: p)
        )
        with pytest.raises(ConfigError, match=words):
            config.build_algo()


def test_discrete_and_box_agents_share_padded_slot_rows():
    from rljax.algorithms.ppo.multi_agent_parts import unpad_observations
    from rljax.env.multi_agent_vector import pad_observation, slot_spaces

    env = TwoKinds()
    env.observation_spaces = {"a": gym.spaces.Discrete(4), "b": gym.spaces.Box(0, 1, (3,))}
    slot_obs, _, obs_spaces, _ = slot_spaces(env)
    assert slot_obs.shape == (3,) and obs_spaces["a"] == gym.spaces.Discrete(4)
    rows = np.stack([pad_observation(2, 3), pad_observation(np.array([0.5, 1, 0]), 3)])
    np.testing.assert_array_equal(rows, [[2, 0, 0], [0.5, 1, 0]])
    back = unpad_observations(jnp.asarray(rows[:1]), obs_spaces["a"], padded=True)
    assert back.shape == (1,) and int(back[0]) == 2 and jnp.issubdtype(back.dtype, jnp.integer)


@pytest.mark.slow
def test_multi_agent_ppo_trains_on_flattened_observations():
    from rljax.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment(TwoKinds)
        .env_runners(
            env_to_module_connector=lambda env, spaces, device: FlattenObservations(
                multi_agent=True
            ),
            num_envs_per_env_runner=2,
        )
        .multi_agent(policies={"pa", "pb"}, policy_mapping_fn=lambda aid, episode, **kw: f"p{aid}")
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        assert algo.agent_observation_spaces["a"].shape == (3,)
        assert algo.agent_observation_spaces["b"].shape == (5,)
        assert algo.config.env_to_module_connector == [
            {"type": "FlattenObservations", "multi_agent": True}
        ]
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] > 0
        for pid in ("pa", "pb"):  # both policies trained on their flattened rows
            assert np.isfinite(result["learners"][pid]["total_loss"])
    finally:
        algo.stop()


BOX2 = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)


def _filter(**kw):
    spaces, acts = (
        {"a": BOX2, "b": BOX2},
        {"a": gym.spaces.Discrete(2), "b": gym.spaces.Discrete(2)},
    )
    return build_multi_agent_connectors([MeanStdFilter(multi_agent=True, **kw)], spaces, acts)


def test_multi_agent_mean_std_filter_keeps_rllibs_statistics_per_agent():
    connectors = _filter()
    assert connectors.stateful
    # Agent a: [1, 2], then [3, 6]; agent b: [10, 0] alone. Each observation is folded in
    # before it is normalised (RLlib's order): a's first is x - x over |x| + 1e-8 = 0, its
    # second (3 - 2) / sqrt(((1-2)^2 + (3-2)^2) / 1) = 1/sqrt(2), (6 - 4) / sqrt(8) = 1/sqrt(2).
    first = connectors({"a": np.array([1.0, 2.0]), "b": np.array([10.0, 0.0])})
    np.testing.assert_allclose(first["a"], [0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(first["b"], [0.0, 0.0], atol=1e-6)
    second = connectors({"a": np.array([3.0, 6.0])})
    np.testing.assert_allclose(second["a"], [2**-0.5, 2**-0.5], rtol=1e-6)
    assert second["a"].dtype == np.float32
    (state,) = connectors.get_state()
    assert [int(state[i]["count"]) for i in "01"] == [2, 1]
    np.testing.assert_allclose(state["0"]["mean"], [2.0, 4.0])
    np.testing.assert_allclose(state["0"]["m2"], [2.0, 8.0])
    np.testing.assert_allclose(state["1"]["mean"], [10.0, 0.0])
    np.testing.assert_allclose(state["1"]["m2"], [0.0, 0.0])

    # A frozen copy (an evaluation's) normalises with the statistics and changes nothing.
    frozen = connectors.frozen()
    np.testing.assert_allclose(frozen({"a": np.array([2.0, 4.0])})["a"], [0.0, 0.0], atol=1e-6)
    frozen({"a": np.array([100.0, 100.0])})

    def counts(c):
        return [int(c.get_state()[0][i]["count"]) for i in "01"]

    assert counts(connectors) == counts(frozen) == [2, 1]
    connectors.check({"a": np.array([5.0, 5.0]), "b": np.array([5.0, 5.0])})  # counts nothing
    assert counts(connectors) == [2, 1]

    other = _filter()
    other.set_state(connectors.get_state())
    for i in "01":
        for key in ("count", "mean", "m2"):
            np.testing.assert_array_equal(other.get_state()[0][i][key], state[i][key])
    with pytest.raises(ValueError, match="2 connector states given for 1 stateful pieces"):
        other.set_state([state, state])


def test_multi_agent_mean_std_filter_matches_rllibs_own_filter():
    filter_module = pytest.importorskip("ray.rllib.utils.filter")
    rng = np.random.default_rng(0)
    for demean in (True, False):
        ours = _filter(clip_by_value=2.0, de_mean_to_zero=demean)
        theirs = {a: filter_module.MeanStdFilter((2,), demean=demean, clip=2.0) for a in ("a", "b")}
        for step in range(30):
            obs = {a: rng.normal(3.0, 2.0, size=2) for a in ("a", "b") if step % 3 or a == "a"}
            got = ours(obs)
            for agent, x in obs.items():
                expected = theirs[agent](x, update=True)
                np.testing.assert_allclose(got[agent], expected, rtol=1e-5, atol=1e-6)
        # Frozen before an agent's first observation (RLlib's runner with update=False):
        # mean 0 and variance 0, so the observation divided by 1e-8, clipped.
        fresh = _filter(clip_by_value=2.0, de_mean_to_zero=demean).frozen()
        x = np.array([0.5, -3.0])
        expected = filter_module.MeanStdFilter((2,), demean=demean, clip=2.0)(x, update=False)
        np.testing.assert_allclose(fresh({"a": x})["a"], expected)


def test_multi_agent_mean_std_filter_refuses_async_envs():
    from rljax.algorithms.ppo import PPOConfig
    from rljax.env import make_multi_agent

    config = (
        PPOConfig()
        .environment(make_multi_agent("Pendulum-v1"), env_config={"num_agents": 2})
        .env_runners(
            gym_env_vectorize_mode="ASYNC",
            env_to_module_connector=lambda env, spaces, device: MeanStdFilter(multi_agent=True),
        )
        .multi_agent(policies=["p0"], policy_mapping_fn=lambda aid, ep, **kw: "p0")
    )
    with pytest.raises(ConfigError, match="use 'SYNC' with it"):
        config.build_algo()


@pytest.mark.slow
def test_multi_agent_mean_std_filter_trains_checkpoints_and_evaluates(tmp_path):
    from rljax.algorithms.ppo import PPOConfig
    from rljax.env import make_multi_agent

    config = (
        PPOConfig()
        .environment(make_multi_agent("Pendulum-v1"), env_config={"num_agents": 2})
        .env_runners(
            num_env_runners=2,
            env_to_module_connector=lambda env, spaces, device: MeanStdFilter(multi_agent=True),
        )
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .multi_agent(policies=["p0", "p1"], policy_mapping_fn=lambda aid, ep, **kw: f"p{aid}")
        .evaluation(evaluation_duration=2)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        result = algo.train()
        (state,) = algo._stateful_connectors().get_state()
        # Every agent observation the runners saw (steps and first observations) was counted,
        # by both runners' envs into one set of statistics.
        sampled = sum(result["env_runners"]["num_agent_steps_sampled"].values())
        assert sampled > 300
        counted = sum(int(state[i]["count"]) for i in "01")
        # + each agent's first observations: 2 runners x 2 agents, a reset or two each.
        assert sampled < counted <= sampled + 2 * 2 * 2
        for i in "01":  # Pendulum's angular velocity stays within [-8, 8]
            assert abs(state[i]["mean"][2]) < 8.0 and np.all(state[i]["m2"] > 0)
        algo.evaluate()
        (after,) = algo._stateful_connectors().get_state()
        assert [int(after[i]["count"]) for i in "01"] == [int(state[i]["count"]) for i in "01"]
        ckpt = algo.save_to_path(tmp_path / "ckpt")
        other = config.copy().debugging(seed=1).build_algo()
        try:
            other.restore_from_path(tmp_path / "ckpt")
            (restored,) = other._stateful_connectors().get_state()
            for i in "01":
                for key in ("count", "mean", "m2"):
                    np.testing.assert_array_equal(restored[i][key], state[i][key])
        finally:
            other.stop()
        # A policy's module loads for inference from the checkpoint (the statistics skipped).
        from rljax.core.rl_module.rl_module import RLModule

        module = RLModule.from_checkpoint(f"{ckpt}/learner_group/learner/rl_module/p0")
        out = module.forward_inference({"obs": np.zeros((3, 3), np.float32)})
        assert out["actions"].shape == (3, 1)
    finally:
        algo.stop()


@pytest.mark.slow
def test_multi_agent_mean_std_filter_on_agents_of_different_shapes():
    from rljax.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment(TwoKinds)
        .env_runners(
            env_to_module_connector=lambda env, spaces, device: [
                FlattenObservations(multi_agent=True),
                MeanStdFilter(multi_agent=True),
            ]
        )
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .multi_agent(policies=["pa", "pb"], policy_mapping_fn=lambda aid, ep, **kw: f"p{aid}")
    )
    algo = config.build_algo()
    try:
        algo.train()
        (state,) = algo._stateful_connectors().get_state()
        assert state["0"]["mean"].shape == (3,) and state["1"]["mean"].shape == (5,)
    finally:
        algo.stop()
