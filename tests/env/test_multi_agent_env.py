"""Multi-agent env semantics: early finishers, "__all__", turn-based dicts, slots and mapping."""

import os

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from turn_game import TurnGame

from rljax.env import MultiAgentEnv, make_multi_agent
from rljax.env.multi_agent_vector import MultiAgentVectorEnv
from rljax.runners.acting import init_actor_state, make_act_step
from rljax.utils.errors import ConfigError


def test_make_multi_agent_agents_finish_early_and_all_ends_the_episode():
    cls = make_multi_agent("CartPole-v1")
    env = cls({"num_agents": 2})
    assert env.possible_agents == [0, 1] and env.get_action_space(1) == gym.spaces.Discrete(2)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {0, 1}
    # Agent 0 pushes right forever (falls fast), agent 1 alternates (lasts longer).
    t, done0_at = 0, None
    active = {0, 1}
    while True:
        t += 1
        obs, rew, term, trunc, _ = env.step({a: (1 if a == 0 else t % 2) for a in active})
        if 0 in active and (term.get(0) or trunc.get(0)):
            done0_at = t
        active = {a for a in active if not (term.get(a) or trunc.get(a))}
        if term["__all__"]:
            break
        assert not term["__all__"] and active  # "__all__" only once every agent is done
    assert done0_at is not None and done0_at < t
    assert env.agents == []


def test_spaces_must_be_given():
    class NoSpaces(MultiAgentEnv):
        possible_agents = ["x"]

    with pytest.raises(KeyError, match="get_observation_space"):
        NoSpaces().get_observation_space("x")


def test_turn_based_slots_rewards_and_mapping_calls():
    calls = []

    def mapping(agent_id, episode, **kwargs):
        calls.append((agent_id, episode.id_))
        return "p_a" if agent_id == "a" else "p_b"

    vec = MultiAgentVectorEnv([TurnGame, TurnGame], ["p_a", "p_b"], mapping, seed=0)
    assert vec.num_slots == 4  # 2 copies x 2 agents: slot = copy * 2 + agent
    r = vec.reset()
    np.testing.assert_array_equal(r.present, [True, False, True, False])
    rows = [r]
    for _ in range(5):
        rows.append(vec.step(np.zeros(4, np.int32)))
    present = np.array([x.present for x in rows])
    # t: 0 a moves, 1 b moves, 2 a, 3 b, then the end (both get final rows), then the reset.
    np.testing.assert_array_equal(present[:, 0], [1, 0, 1, 0, 1, 1])
    np.testing.assert_array_equal(present[:, 1], [0, 1, 0, 1, 1, 0])
    final = rows[4]
    assert final.terminated[0] and final.terminated[1] and not final.truncated[:2].any()
    # b is paid 0.5 when a moves after it; that reward waits for b's next turn. At the end b
    # gets -1 (its return: -0.5).
    np.testing.assert_allclose([x.reward[1] for x in rows], [0, 0, 0, 0.5, -1.0, 0])
    np.testing.assert_allclose([x.reward[0] for x in rows], [0, 0, 0, 0, 1.0, 0])
    np.testing.assert_array_equal(final.policy, [0, 1, 0, 1])
    # Mapping: once per agent per episode (2 copies x 2 agents, then a new episode for a x 2).
    episodes = {e for _, e in calls}
    assert len(calls) == len(set(calls)) == 6 and len(episodes) == 4
    assert [e.agent_returns for e in vec.finished_episodes] == [{"a": 1.0, "b": -0.5}] * 2


def test_act_step_ignores_absent_slots():
    vec = MultiAgentVectorEnv([TurnGame], ["p"], lambda a, e, **k: "p", seed=0)

    def policy(params, obs, key):
        return jnp.zeros(obs.shape[0], jnp.int32), {"v": obs[:, 0]}

    act = jax.jit(make_act_step(policy, bootstrap_keys=("v",)))
    result = vec.reset()
    actor = init_actor_state(policy, None, jnp.asarray(result.obs[0]), vec.num_slots)
    transitions = []
    for _ in range(5):
        action, actor, tr = act(
            None, jax.random.PRNGKey(0), actor, jax.tree.map(jnp.asarray, result)
        )
        transitions.append(jax.device_get(tr))
        result = vec.step(np.asarray(action))
    valid = np.array([t.valid for t in transitions])
    # Slot a finishes a transition at t=2 (its second move) and b at t=3; none elsewhere.
    np.testing.assert_array_equal(valid, [[0, 0], [0, 0], [1, 0], [0, 1], [1, 1]])
    # a's first transition: from its obs at t=0 (value 0) to its obs at t=2 (value 2).
    assert transitions[2].extras["v"][0] == 0.0 and transitions[2].next_extras["v"][0] == 2.0
    # b's: from t=1 to t=3, reward 0.5 credited to its move at t=1.
    assert transitions[3].extras["v"][1] == 1.0 and transitions[3].reward[1] == 0.5
    assert transitions[4].terminated.all() and transitions[4].episode_done.all()
    np.testing.assert_allclose(transitions[4].episode_return, [1.0, -0.5])


def test_agents_spaces_that_differ_are_padded_or_refused():
    class MixedActions(TurnGame):
        def __init__(self, config=None):
            super().__init__(config)
            self.action_spaces = {"a": gym.spaces.Discrete(3), "b": gym.spaces.Discrete(4)}

    env = MultiAgentVectorEnv([MixedActions], ["p"], lambda a, e, **k: "p")
    assert env.action_space == gym.spaces.Discrete(4)  # Discrete spaces: the largest
    env.close()

    class BoxAction(TurnGame):
        def __init__(self, config=None):
            super().__init__(config)
            self.action_spaces = {"a": gym.spaces.Discrete(3), "b": gym.spaces.Box(-1, 1, (2,))}

    with pytest.raises(ConfigError, match=r"one shared\s+action space, or Discrete\(n\)"):
        MultiAgentVectorEnv([BoxAction], ["p"], lambda a, e, **k: "p")

    class MixedObs(TurnGame):
        def __init__(self, config=None):
            super().__init__(config)
            self.observation_spaces = {**self.observation_spaces, "b": gym.spaces.Box(0, 1, (3,))}

    env = MultiAgentVectorEnv([MixedObs], ["p"], lambda a, e, **k: "p")
    assert env.observation_space.shape == (3,)  # the largest agent's, flat
    env.close()
    spaces: dict[str, gym.Space] = {"p": gym.spaces.Box(0, 1, (3,))}
    with pytest.raises(ValueError, match="returned 'p', whose observation space is Box"):
        MultiAgentVectorEnv(
            [MixedObs], ["p"], lambda a, e, **k: "p", policy_observation_spaces=spaces
        ).reset()
    with pytest.raises(ValueError, match="the policies are"):
        MultiAgentVectorEnv([TurnGame], ["p"], lambda a, e, **k: "q").reset()


def test_observations_without_a_shape_are_refused():
    # Dict / Tuple spaces of arrays are slots of their own (TicTacToe's action mask); a space
    # without a shape that is neither is refused by name.
    class TextObs(TurnGame):
        def __init__(self, config=None):
            super().__init__(config)
            self.observation_spaces = {a: gym.spaces.Text(5) for a in self.possible_agents}

    with pytest.raises(ConfigError, match="has no fixed shape"):
        MultiAgentVectorEnv([TextObs], ["p"], lambda a, e, **k: "p")


class CrashingGame(TurnGame):
    """TurnGame whose third move raises."""

    def step(self, action_dict):
        if self.t == 2:
            raise ArithmeticError("move three is broken")
        return super().step(action_dict)


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (5 s alone)
def test_async_copies_run_in_processes_and_match_sync_step_for_step():
    def mapping(agent, episode, **kw):
        return "p_a" if agent == "a" else "p_b"

    vecs = {
        mode: MultiAgentVectorEnv([TurnGame] * 3, ["p_a", "p_b"], mapping, seed=0, mode=mode)
        for mode in ("SYNC", "ASYNC")
    }
    try:
        remote = vecs["ASYNC"].envs[0]
        assert remote._process.is_alive() and remote._process.pid != os.getpid()
        results = {mode: [vec.reset()] for mode, vec in vecs.items()}
        rng = np.random.default_rng(0)
        for _ in range(11):  # two episodes and a bit, resets included
            actions = rng.integers(0, 3, size=6)
            for mode, vec in vecs.items():
                results[mode].append(vec.step(actions))
        for sync, async_ in zip(results["SYNC"], results["ASYNC"], strict=True):
            for a, b in zip(sync, async_, strict=True):
                np.testing.assert_array_equal(a, b)
        assert len(vecs["ASYNC"].finished_episodes) == 6  # 3 copies x 2 episodes of 4 moves
        assert [ep.agent_returns for ep in vecs["ASYNC"].finished_episodes] == [
            ep.agent_returns for ep in vecs["SYNC"].finished_episodes
        ]
        assert vecs["ASYNC"].num_env_steps == vecs["SYNC"].num_env_steps == 27
    finally:
        for vec in vecs.values():
            vec.close()
    assert not remote._process.is_alive()


def test_async_env_error_names_the_env_traceback_and_does_not_hang():
    vec = MultiAgentVectorEnv([CrashingGame], ["p"], lambda a, e, **k: "p", mode="ASYNC")
    try:
        vec.reset()
        vec.step(np.zeros(2, np.int64))
        vec.step(np.zeros(2, np.int64))
        with pytest.raises(RuntimeError, match="(?s)during step.*move three is broken"):
            vec.step(np.zeros(2, np.int64))
    finally:
        vec.close()
    with pytest.raises(ConfigError, match="mode='FAST'"):
        MultiAgentVectorEnv([TurnGame], ["p"], lambda a, e, **k: "p", mode="FAST")


class SimultaneousGame(MultiAgentEnv):
    """Both agents act each step and are paid 1 (a) and 2 (b); the third step ends the episode
    with "__all__" and still returns both agents' observations, as many envs do."""

    def __init__(self, config=None):
        self.possible_agents = ["a", "b"]
        self.agents = list(self.possible_agents)
        box = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
        self.observation_spaces = {"a": box, "b": box}
        self.action_spaces = {"a": gym.spaces.Discrete(2), "b": gym.spaces.Discrete(2)}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return {a: np.zeros(1, np.float32) for a in self.agents}, {}

    def step(self, action_dict):
        self.t += 1
        obs = {a: np.full(1, self.t, np.float32) for a in self.agents}
        done = self.t == 3
        return obs, {"a": 1.0, "b": 2.0}, {"__all__": done}, {"__all__": False}, {}


def test_rewards_of_the_last_step_count_when_the_env_also_returns_observations():
    # Regression: the final step's rewards were zeroed when the env returned observations
    # together with "__all__".
    vec = MultiAgentVectorEnv([SimultaneousGame], ["p"], lambda a, e, **k: "p", seed=0)
    vec.reset()
    for t in range(1, 4):
        r = vec.step(np.zeros(2, np.int64))
        np.testing.assert_array_equal(r.reward, [1.0, 2.0])
        np.testing.assert_array_equal(r.terminated, [t == 3, t == 3])
        np.testing.assert_array_equal(r.obs[:, 0], [t, t])
    (episode,) = vec.finished_episodes
    assert episode.agent_returns == {"a": 3.0, "b": 6.0}


def test_old_one_argument_mapping_functions_are_called_with_the_agent_id():
    calls = []
    vec = MultiAgentVectorEnv(
        [TurnGame], ["p_a", "p_b"], lambda agent: calls.append(agent) or f"p_{agent}", seed=0
    )
    vec.reset()
    vec.step(np.zeros(2, np.int64))
    assert calls == ["a", "b"]
    np.testing.assert_array_equal(vec._policy, [0, 1])
    with pytest.raises(ConfigError, match="cannot be called as"):
        MultiAgentVectorEnv([TurnGame], ["p"], lambda a, b, c, d: "p")


def test_rllib_1x_mapping_functions_with_a_worker_argument_get_none():
    """RLlib 1.x's ``policy_mapping_fn(agent_id, episode, worker, **kwargs)`` was refused."""
    seen = []

    def policy_mapping_fn(agent_id, episode, worker, **kwargs):
        seen.append((agent_id, worker))
        return f"p_{agent_id}"

    def no_kwargs(agent_id, episode, worker):
        return f"p_{agent_id}"

    for fn in (policy_mapping_fn, no_kwargs):
        vec = MultiAgentVectorEnv([TurnGame], ["p_a", "p_b"], fn, seed=0)
        vec.reset()
        vec.step(np.zeros(1, np.int64))
        np.testing.assert_array_equal(vec._policy, [0, 1])
    assert seen[:2] == [("a", None), ("b", None)]


def test_a_grouped_agents_tuple_action_reaches_its_env_part_by_part():
    """A Tuple action space (RLlib's grouped agents: ``with_agent_groups``) comes from the
    policy as a tuple of [S] arrays; each slot's env gets its own row of every part. Indexing
    the tuple by slot gave the env the first part's whole column instead (the grouped two-step
    game could not unpack its two actions)."""
    from rljax.env.vector.vector_multi_agent_env import VectorMultiAgentEnv
    from rljax.examples.envs.classes.multi_agent.two_step_game import (
        TwoStepGameWithGroupedAgents,
    )

    vec = MultiAgentVectorEnv(
        [TwoStepGameWithGroupedAgents, TwoStepGameWithGroupedAgents], ["p0"], lambda *a, **k: "p0"
    )
    try:
        assert isinstance(vec, VectorMultiAgentEnv) and vec.unwrapped is vec
        assert len(vec.envs) == vec.num_envs == 2
        vec.reset()
        # Copy 0: both agents pick 0 (state 1: reward 7 next); copy 1: both 1 (state 2).
        vec.step((np.array([0, 1]), np.array([0, 1])))
        last = vec.step((np.array([0, 1]), np.array([0, 1])))
        # State 1 pays 7 whatever the actions; state 2 with actions (1, 1) pays 8.
        np.testing.assert_allclose(last.reward, [7.0, 8.0])
    finally:
        vec.close()
