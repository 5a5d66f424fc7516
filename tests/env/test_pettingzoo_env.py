"""PettingZoo adapters: parallel and turn-based (AEC) envs as MultiAgentEnvs, exact per step."""

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

pettingzoo = pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test  # noqa: E402
from pettingzoo.utils import AgentSelector  # noqa: E402
from pettingzoo.utils.conversions import parallel_to_aec  # noqa: E402

from rljax import register_env  # noqa: E402
from rljax.algorithms.ppo import PPOConfig  # noqa: E402
from rljax.env.multi_agent_vector import MultiAgentVectorEnv  # noqa: E402
from rljax.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv  # noqa: E402

# PettingZoo asks for the same space object at every call (it seeds them).
OBS_SPACE = gym.spaces.Box(0.0, 100.0, (2,), np.float32)
RACE_ACTIONS, COUNT_ACTIONS = gym.spaces.Discrete(2), gym.spaces.Discrete(3)


class RaceGame(pettingzoo.ParallelEnv):
    """Both agents move at once. An action k pays the mover k + 1 ("a") or 10 * (k + 1) ("b").
    "a" terminates after its 2nd move; "b" is truncated after its 4th (or terminates, with
    ``b_terminates``). Each agent observes [t, its index]."""

    metadata = {"name": "race_v0", "render_modes": []}  # noqa: RUF012

    def __init__(self, b_terminates: bool = False):
        self.possible_agents = ["a", "b"]
        self.agents = []
        self.b_terminates = b_terminates
        self.render_mode = None
        self.last_reset = None
        self.closed = False

    def observation_space(self, agent):
        return OBS_SPACE

    def action_space(self, agent):
        return RACE_ACTIONS

    def _obs(self, agent):
        return np.array([self.t, self.possible_agents.index(agent)], np.float32)

    def reset(self, seed=None, options=None):
        self.last_reset = (seed, options)
        self.t = 0
        self.agents = list(self.possible_agents)
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        scale = {"a": 1.0, "b": 10.0}
        rewards = {a: scale[a] * (int(actions[a]) + 1) for a in self.agents}
        obs = {a: self._obs(a) for a in self.agents}
        b_end = self.t >= 4
        terms = {"a": self.t >= 2, "b": b_end and self.b_terminates}
        truncs = {"a": False, "b": b_end and not self.b_terminates}
        terms = {a: terms[a] for a in self.agents}
        truncs = {a: truncs[a] for a in self.agents}
        infos = {a: {"t": self.t} for a in self.agents}
        self.agents = [a for a in self.agents if not (terms[a] or truncs[a])]
        return obs, rewards, terms, truncs, infos

    def render(self):
        return f"t={self.t}"

    def close(self):
        self.closed = True


class CountGame(pettingzoo.AECEnv):
    """Turn-based: p0, p1, p2 in turn add k = action + 1 to a total; each move pays every other
    agent still in the game k. p2 leaves (terminates) after its first move. The move that brings
    the total to >= 10 also pays its mover 100, and then every agent terminates. Agents observe
    [total, their index]."""

    metadata = {"name": "count_v0", "render_modes": [], "is_parallelizable": False}  # noqa: RUF012

    def __init__(self):
        super().__init__()
        self.possible_agents = ["p0", "p1", "p2"]
        self.render_mode = None
        self.closed = False

    def observation_space(self, agent):
        return OBS_SPACE

    def action_space(self, agent):
        return COUNT_ACTIONS

    def observe(self, agent):
        return np.array([self.total, self.possible_agents.index(agent)], np.float32)

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.total = 0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._selector = AgentSelector(list(self.agents))
        self.agent_selection = self._selector.reset()

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        k = int(action) + 1
        self.total += k
        for other in self.agents:
            if other != agent:
                self.rewards[other] = float(k)
        if agent == "p2":
            self.terminations["p2"] = True
        if self.total >= 10:
            self.rewards[agent] += 100.0
            for a in self.agents:
                self.terminations[a] = True
        self._accumulate_rewards()
        nxt = self._selector.next()
        while nxt not in self.agents:  # p2 has left
            nxt = self._selector.next()
        self.agent_selection = nxt
        self._deads_step_first()

    def render(self):
        return f"total={self.total}"

    def close(self):
        self.closed = True


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_test_games_pass_pettingzoos_api_tests():
    api_test(CountGame(), num_cycles=50)
    parallel_api_test(RaceGame(), num_cycles=50)
    parallel_api_test(RaceGame(b_terminates=True), num_cycles=50)


def _play(env, moves):
    """Steps ``env`` with ``{agent: moves[agent].pop(0)}`` for the agents that act next;
    returns the reset's obs keys and each step's (obs keys, rewards, terminateds, truncateds)."""
    moves = {a: list(m) for a, m in moves.items()}
    obs, _ = env.reset(seed=3)
    first, steps = list(obs), []
    active = list(obs)
    while True:
        obs, rew, term, trunc, _ = env.step({a: moves[a].pop(0) for a in active})
        steps.append((list(obs), rew, term, trunc))
        active = [a for a in obs if not (term.get(a) or trunc.get(a))]
        if term["__all__"] or trunc["__all__"]:
            break
        assert len(steps) < 20
    assert all(not m for m in moves.values()), f"moves left over: {moves}"
    return first, steps


def _returns(steps):
    out = {}
    for _, rew, _, _ in steps:
        for a, r in rew.items():
            out[a] = out.get(a, 0.0) + r
    return out


F, T = False, True


@pytest.mark.parametrize("b_terminates", [False, True])
def test_parallel_env_steps_early_finisher_and_all_flags(b_terminates):
    raw = RaceGame(b_terminates=b_terminates)
    env = ParallelPettingZooEnv(raw)
    assert env.possible_agents == ["a", "b"] and env.par_env is raw and env.env is raw
    assert env.observation_spaces == {"a": OBS_SPACE, "b": OBS_SPACE}
    assert env.get_action_space("b") == gym.spaces.Discrete(2)
    obs, infos = env.reset(seed=7, options={"x": 1})
    assert raw.last_reset == (7, {"x": 1})
    assert list(obs) == ["a", "b"] and env.agents == ["a", "b"]
    np.testing.assert_array_equal(obs["b"], [0.0, 1.0])

    obs, rew, term, trunc, info = env.step({"a": 1, "b": 0})
    assert list(obs) == ["a", "b"] and rew == {"a": 2.0, "b": 10.0}
    assert term == {"a": F, "b": F, "__all__": F} and trunc == {"a": F, "b": F, "__all__": F}
    assert info == {"a": {"t": 1}, "b": {"t": 1}}

    # "a" finishes: its final observation comes with terminated=True, the episode goes on.
    obs, rew, term, trunc, _ = env.step({"a": 0, "b": 1})
    assert list(obs) == ["a", "b"] and rew == {"a": 1.0, "b": 20.0}
    np.testing.assert_array_equal(obs["a"], [2.0, 0.0])
    assert term == {"a": T, "b": F, "__all__": F} and trunc == {"a": F, "b": F, "__all__": F}
    assert env.agents == ["b"]

    obs, rew, term, trunc, _ = env.step({"b": 1})
    assert list(obs) == ["b"] and rew == {"b": 20.0}
    assert term == {"b": F, "__all__": F} and trunc == {"b": F, "__all__": F}

    obs, rew, term, trunc, _ = env.step({"b": 0})
    assert list(obs) == ["b"] and rew == {"b": 10.0} and env.agents == []
    # The last agent's own ending decides which "__all__" flag is set.
    assert term == {"b": b_terminates, "__all__": b_terminates}
    assert trunc == {"b": not b_terminates, "__all__": not b_terminates}
    assert env.render() == "t=4"
    env.close()
    assert raw.closed


def test_parallel_to_aec_is_turn_based_and_loses_no_reward():
    env = PettingZooEnv(parallel_to_aec(RaceGame()))
    assert env.possible_agents == ["a", "b"]
    first, steps = _play(env, {"a": [1, 0], "b": [0, 1, 1, 0]})
    assert first == ["a"]
    # (obs keys, rewards, terminateds, truncateds); rewards come when the cycle's last mover
    # has moved and the parallel game steps.
    expected = [
        (["b"], {"a": 0.0, "b": 0.0}, {"b": F, "__all__": F}, {"b": F, "__all__": F}),
        (["a"], {"a": 2.0, "b": 10.0}, {"a": F, "__all__": F}, {"a": F, "__all__": F}),
        (["b"], {"a": 0.0, "b": 0.0}, {"b": F, "__all__": F}, {"b": F, "__all__": F}),
        # "a" terminated: stepped out here (its final obs, terminated=True), "b" moves next.
        (
            ["a", "b"],
            {"a": 1.0, "b": 20.0},
            {"a": T, "b": F, "__all__": F},
            {"a": F, "b": F, "__all__": F},
        ),
        (["b"], {"b": 20.0}, {"b": F, "__all__": F}, {"b": F, "__all__": F}),
        (["b"], {"b": 10.0}, {"b": F, "__all__": F}, {"b": T, "__all__": T}),
    ]
    assert steps == expected
    # The same totals as the parallel game's with the same actions.
    assert _returns(steps) == {"a": 3.0, "b": 60.0}


def test_turn_based_aec_env_pays_waiting_agents_and_skips_the_agent_that_left():
    env = PettingZooEnv(CountGame())
    assert env.possible_agents == ["p0", "p1", "p2"]
    obs, infos = env.reset()
    assert list(obs) == ["p0"] and list(infos) == ["p0"]
    np.testing.assert_array_equal(obs["p0"], [0.0, 0.0])
    # Totals: 3, 4, 6 (p2 leaves), 9, 10 (p1 wins).
    first, steps = _play(env, {"p0": [2, 2], "p1": [0, 0], "p2": [1]})
    none = {"__all__": F}
    expected = [
        (["p1"], {"p0": 0.0, "p1": 3.0, "p2": 3.0}, {"p1": F, **none}, {"p1": F, **none}),
        (["p2"], {"p0": 1.0, "p1": 0.0, "p2": 1.0}, {"p2": F, **none}, {"p2": F, **none}),
        (
            ["p2", "p0"],
            {"p0": 2.0, "p1": 2.0, "p2": 0.0},
            {"p2": T, "p0": F, **none},
            {"p2": F, "p0": F, **none},
        ),
        (["p1"], {"p0": 0.0, "p1": 3.0}, {"p1": F, **none}, {"p1": F, **none}),
        (
            ["p0", "p1"],
            {"p0": 1.0, "p1": 100.0},
            {"p0": T, "p1": T, "__all__": T},
            {"p0": F, "p1": F, "__all__": F},
        ),
    ]
    assert steps == expected
    assert env.agents == [] and env.render() == "total=10"
    with pytest.raises(ValueError, match="episode is over"):
        env.step({"p0": 0})
    env.close()
    assert env.env.closed


def test_aec_returns_match_pettingzoos_own_cumulative_rewards():
    moves = {"p0": [0, 2], "p1": [2, 1], "p2": [1]}
    _, steps = _play(PettingZooEnv(CountGame()), moves)
    # The same game played the AEC way: env.last()'s cumulative reward at each agent's turn.
    raw, queue, totals = CountGame(), {a: list(m) for a, m in moves.items()}, {}
    raw.reset()
    for agent in raw.agent_iter():
        _, reward, term, trunc, _ = raw.last()
        totals[agent] = totals.get(agent, 0.0) + reward
        raw.step(None if term or trunc else queue[agent].pop(0))
    # Totals 1, 4, 6 (p2 leaves), 9, 11 (p1 wins).
    assert totals == {"p0": 7.0, "p1": 106.0, "p2": 4.0}
    assert _returns(steps) == totals


def test_aec_action_dict_must_hold_exactly_the_agent_to_move():
    env = PettingZooEnv(CountGame())
    env.reset()
    with pytest.raises(ValueError, match=r"it is agent 'p0'.s turn.*got agents \['p1'\]"):
        env.step({"p1": 0})
    with pytest.raises(ValueError, match=r"got agents \['p0', 'p1'\]"):
        env.step({"p0": 0, "p1": 0})
    with pytest.raises(ValueError, match=r"got agents \[\]"):
        env.step({})
    obs, *_ = env.step({"p0": 0})  # nothing was stepped by the refused calls
    np.testing.assert_array_equal(obs["p1"], [1.0, 1.0])


def test_wrong_kind_of_env_is_refused():
    with pytest.raises(TypeError, match="wrap it with ParallelPettingZooEnv"):
        PettingZooEnv(RaceGame())
    with pytest.raises(TypeError, match="wrap it with PettingZooEnv"):
        ParallelPettingZooEnv(CountGame())


def test_missing_pettingzoo_is_a_clear_import_error():
    code = (
        "import sys; sys.modules['pettingzoo'] = None\n"
        "from rljax.env.wrappers.pettingzoo_env import ParallelPettingZooEnv\n"
        "try:\n"
        "    ParallelPettingZooEnv(object())\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "ImportError:" in out.stdout and "pip install pettingzoo" in out.stdout


@pytest.mark.parametrize(
    "make_env, returns, length",
    [
        # Actions are all 1: "a" earns 2 twice, "b" 20 four times.
        (lambda: ParallelPettingZooEnv(RaceGame()), {"a": 4.0, "b": 80.0}, 4),
        (lambda: PettingZooEnv(parallel_to_aec(RaceGame())), {"a": 4.0, "b": 80.0}, 6),
        # Moves of 2: totals 2, 4, 6 (p2 leaves), 8, 10 (p1 wins after 5 moves).
        (lambda: PettingZooEnv(CountGame()), {"p0": 6.0, "p1": 106.0, "p2": 4.0}, 5),
    ],
    ids=["parallel", "parallel_to_aec", "aec"],
)
def test_wrapped_envs_run_through_the_vector_env(make_env, returns, length):
    agents = make_env().possible_agents
    policies = [f"pol_{a}" for a in agents]
    vec = MultiAgentVectorEnv([make_env, make_env], policies, lambda a, e, **k: f"pol_{a}", seed=0)
    vec.reset()
    for _ in range(length):
        assert not vec.finished_episodes
        vec.step(np.ones(vec.num_slots, np.int32))
    assert len(vec.finished_episodes) == 2
    for ep in vec.finished_episodes:
        assert ep.agent_returns == returns and ep.length == length
        assert ep.agent_policies == {a: f"pol_{a}" for a in agents}


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (10 s alone)
def test_multi_agent_ppo_trains_on_a_parallel_pettingzoo_env():
    register_env("rljax_test_pettingzoo_race", lambda cfg: ParallelPettingZooEnv(RaceGame()))
    config = (
        PPOConfig()
        .environment("rljax_test_pettingzoo_race")
        .env_runners(num_envs_per_env_runner=2)
        .multi_agent(policies=["pa", "pb"], policy_mapping_fn=lambda aid, ep, **kw: f"p{aid}")
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    runners = result["env_runners"]
    assert runners["num_episodes"] > 0 and runners["episode_len_mean"] == 4.0
    agent_returns = runners["agent_episode_returns_mean"]
    assert set(agent_returns) == {"a", "b"}
    assert 2.0 <= agent_returns["a"] <= 4.0 and 40.0 <= agent_returns["b"] <= 80.0
    assert set(result["learners"]) >= {"pa", "pb"}
    assert result["learners"]["pa"]["num_module_steps_trained"] > 0


@pytest.mark.slow  # builds and trains multi-agent PPO on a physics env (about 3 s)
def test_multi_agent_ppo_on_pettingzoos_waterworld_as_rllibs_examples_run_it():
    """RLlib's ``pettingzoo_independent_learning.py``: ``PettingZooEnv(waterworld_v4.env())``,
    a turn-based (AEC) env with continuous actions and one policy per pursuer. Was: the
    examples could not import it (PettingZoo 1.26 dropped waterworld; the test extra pins
    1.25 with pymunk 6, as RLlib's own test requirements pin 1.24 with pymunk 6)."""
    from pettingzoo.sisl import waterworld_v4

    register_env(
        "rljax_test_waterworld", lambda cfg: PettingZooEnv(waterworld_v4.env(max_cycles=50))
    )
    policies = ["pursuer_0", "pursuer_1"]
    config = (
        PPOConfig()
        .environment("rljax_test_waterworld")
        .multi_agent(policies=policies, policy_mapping_fn=lambda aid, *a, **kw: aid)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16], "vf_share_layers": True})
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        result = algo.train()
    runners = result["env_runners"]
    # max_cycles=50: each episode is 50 moves of each pursuer (turn-based: 100 env steps).
    assert runners["num_episodes"] >= 1 and runners["episode_len_mean"] == 100.0
    assert set(runners["agent_episode_returns_mean"]) == set(policies)
    assert all(result["learners"][p]["num_module_steps_trained"] > 0 for p in policies)
