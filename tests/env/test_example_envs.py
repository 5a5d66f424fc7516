"""The example multi-agent envs at RLlib's import paths: exact game semantics, vectorized
episodes, and multi-agent PPO with a frozen opponent."""

import gymnasium as gym
import numpy as np
import pytest

from rljax.env import MultiAgentEnv
from rljax.env.env_context import EnvContext
from rljax.env.multi_agent_vector import MultiAgentVectorEnv
from rljax.examples.envs.classes.multi_agent import (
    MultiAgentCartPole,
    RockPaperScissors,
    TicTacToe,
)

ROCK, PAPER, SCISSORS = 0, 1, 2


def one_hot(i):
    return np.eye(3, dtype=np.float32)[i]


def by_agent_id(agent_id, episode, **kwargs):
    return agent_id


# ---------------------------------------------------------------------------- MultiAgentCartPole
def test_multi_agent_cartpole_at_rllibs_path():
    env = MultiAgentCartPole(EnvContext({"num_agents": 3}))
    assert isinstance(env, MultiAgentEnv)
    assert env.possible_agents == [0, 1, 2]
    assert env.get_observation_space(2) == gym.make("CartPole-v1").observation_space
    obs, _ = env.reset(seed=0)
    assert set(obs) == {0, 1, 2} and obs[0].shape == (4,)


# ---------------------------------------------------------------------------- RockPaperScissors
# (player1's move, player2's move) -> (player1's reward, player2's reward), worked out by hand.
RPS_PAYOFFS = [
    (ROCK, ROCK, 0.0, 0.0),
    (ROCK, PAPER, -1.0, 1.0),
    (ROCK, SCISSORS, 1.0, -1.0),
    (PAPER, ROCK, 1.0, -1.0),
    (PAPER, PAPER, 0.0, 0.0),
    (PAPER, SCISSORS, -1.0, 1.0),
    (SCISSORS, ROCK, -1.0, 1.0),
    (SCISSORS, PAPER, 1.0, -1.0),
    (SCISSORS, SCISSORS, 0.0, 0.0),
]


def test_rps_spaces_and_reset():
    env = RockPaperScissors()
    assert env.possible_agents == ["player1", "player2"]
    for agent in env.possible_agents:
        assert env.get_observation_space(agent) == gym.spaces.Box(0.0, 1.0, (3,), np.float32)
        assert env.get_action_space(agent) == gym.spaces.Discrete(3)
    obs, infos = env.reset(seed=0)
    assert set(obs) == {"player1", "player2"} and infos == {}
    for o in obs.values():
        assert o.dtype == np.float32
        np.testing.assert_array_equal(o, np.zeros(3, np.float32))


@pytest.mark.parametrize(("move1", "move2", "r1", "r2"), RPS_PAYOFFS)
def test_rps_rewards_and_observations_for_every_move_pair(move1, move2, r1, r2):
    env = RockPaperScissors({})
    env.reset(seed=0)
    obs, rewards, terms, truncs, _ = env.step({"player1": move1, "player2": move2})
    assert rewards == {"player1": r1, "player2": r2}
    # Each player observes the opponent's move, one-hot.
    np.testing.assert_array_equal(obs["player1"], one_hot(move2))
    np.testing.assert_array_equal(obs["player2"], one_hot(move1))
    assert obs["player1"].dtype == np.float32
    assert terms == {"__all__": False} and truncs == {"__all__": False}


def test_rps_episode_is_ten_moves_then_all_terminated():
    env = RockPaperScissors(EnvContext({}))
    env.reset()
    returns = {"player1": 0.0, "player2": 0.0}
    for t in range(1, 11):
        # player1: rock; player2: scissors for 7 moves, then paper.
        obs, rewards, terms, truncs, _ = env.step(
            {"player1": ROCK, "player2": SCISSORS if t <= 7 else PAPER}
        )
        for agent, r in rewards.items():
            returns[agent] += r
        assert terms["__all__"] == (t == 10) and not truncs["__all__"]
        assert set(obs) == (set() if t == 10 else {"player1", "player2"})
    assert returns == {"player1": 7.0 - 3.0, "player2": -4.0}
    assert env.agents == []
    # A shorter game by config.
    env = RockPaperScissors({"num_moves": 2})
    env.reset()
    assert not env.step({"player1": 0, "player2": 0})[2]["__all__"]
    assert env.step({"player1": 0, "player2": 0})[2]["__all__"]
    with pytest.raises(ValueError, match="num_moves"):
        RockPaperScissors({"num_moves": 0})


def test_rps_vectorized_rows_and_per_agent_returns():
    # Two copies; slot = copy * 2 + agent (player1, player2).
    vec = MultiAgentVectorEnv(
        [RockPaperScissors, RockPaperScissors], ["player1", "player2"], by_agent_id, seed=0
    )
    r = vec.reset()
    assert r.present.all() and r.obs.shape == (4, 3) and r.obs.dtype == np.float32
    np.testing.assert_array_equal(r.policy, [0, 1, 0, 1])
    for t in range(1, 11):
        # Copy 0: rock vs scissors for 7 moves, then rock vs paper. Copy 1: paper vs rock.
        actions = np.array([ROCK, SCISSORS if t <= 7 else PAPER, PAPER, ROCK], np.int64)
        r = vec.step(actions)
        assert r.present.all()
        # Every row carries its move's reward, the last move's included.
        expected = [1.0, -1.0] if t <= 7 else [-1.0, 1.0]
        np.testing.assert_array_equal(r.reward, [*expected, 1.0, -1.0])
        assert r.terminated.all() == (t == 10) and not r.truncated.any()
        if t < 10:
            np.testing.assert_array_equal(r.obs[0], one_hot(actions[1]))
            np.testing.assert_array_equal(r.obs[1], one_hot(actions[0]))
            np.testing.assert_array_equal(r.obs[3], one_hot(PAPER))
    episodes = sorted(vec.finished_episodes, key=lambda e: e.env_index)
    assert [e.length for e in episodes] == [10, 10]
    assert episodes[0].agent_returns == {"player1": 4.0, "player2": -4.0}
    assert episodes[1].agent_returns == {"player1": 10.0, "player2": -10.0}
    assert episodes[0].episode_return == 0.0  # zero-sum
    # The next step starts new episodes: zero observations, no rewards.
    r = vec.step(np.zeros(4, np.int64))
    assert r.present.all() and not r.reward.any() and not r.obs.any()


# ---------------------------------------------------------------------------- TicTacToe
def board(*cells):
    return np.array(cells, np.float32)


BOARD_ONLY = {"action_mask": False}  # the board alone; illegal moves are penalised


def test_ttt_spaces_and_first_player():
    env = TicTacToe(BOARD_ONLY)
    for agent in ("player1", "player2"):
        assert env.get_observation_space(agent) == gym.spaces.Box(-1.0, 1.0, (9,), np.float32)
        assert env.get_action_space(agent) == gym.spaces.Discrete(9)
    # A random first mover (as RLlib's), reproducible by seed.
    firsts = [next(iter(env.reset(seed=s)[0])) for s in range(20)]
    assert set(firsts) == {"player1", "player2"}
    assert firsts == [next(iter(env.reset(seed=s)[0])) for s in range(20)]
    obs, _ = TicTacToe({"first_player": "player2", **BOARD_ONLY}).reset(seed=0)
    assert list(obs) == ["player2"]
    np.testing.assert_array_equal(obs["player2"], np.zeros(9, np.float32))
    with pytest.raises(ValueError, match="first_player"):
        TicTacToe({"first_player": "player3"})


def test_ttt_scripted_win_for_player1():
    env = TicTacToe({"first_player": "player1", **BOARD_ONLY})
    obs, _ = env.reset(seed=0)
    assert list(obs) == ["player1"]
    # (mover, cell, the next mover, its observation: its own marks +1, the opponent's -1)
    script = [
        ("player1", 4, "player2", board(0, 0, 0, 0, -1, 0, 0, 0, 0)),
        ("player2", 0, "player1", board(-1, 0, 0, 0, 1, 0, 0, 0, 0)),
        ("player1", 2, "player2", board(1, 0, -1, 0, -1, 0, 0, 0, 0)),
        ("player2", 1, "player1", board(-1, -1, 1, 0, 1, 0, 0, 0, 0)),
    ]
    for mover, cell, nxt, expected in script:
        obs, rewards, terms, truncs, _ = env.step({mover: cell})
        assert list(obs) == [nxt]  # only the player to move
        assert obs[nxt].dtype == np.float32
        np.testing.assert_array_equal(obs[nxt], expected)
        assert rewards == {mover: 0.0}
        assert terms == {"__all__": False} and truncs == {"__all__": False}
    # player1 completes the diagonal 2-4-6: both players' final rewards, and the end.
    obs, rewards, terms, truncs, _ = env.step({"player1": 6})
    assert obs == {} and rewards == {"player1": 1.0, "player2": -1.0}
    assert terms == {"__all__": True} and truncs == {"__all__": False}
    assert env.agents == []


def test_ttt_scripted_draw():
    env = TicTacToe({"first_player": "player2", **BOARD_ONLY})
    env.reset()
    # player2 (first) X, player1 O:  X X O / O O X / X O X  -- no line for either.
    cells = [0, 4, 8, 2, 6, 3, 5, 7, 1]
    movers = ["player2", "player1"] * 4 + ["player2"]
    for k, (mover, cell) in enumerate(zip(movers, cells, strict=True)):
        obs, rewards, terms, truncs, _ = env.step({mover: cell})
        if k < 8:
            assert rewards == {mover: 0.0} and not terms["__all__"]
            assert list(obs) == [movers[k + 1]]
    assert obs == {} and rewards == {"player1": 0.0, "player2": 0.0}
    assert terms == {"__all__": True} and truncs == {"__all__": False}
    # The final board from player2's perspective.
    np.testing.assert_array_equal(env._obs("player2"), board(1, 1, -1, -1, -1, 1, 1, -1, 1))


def test_ttt_illegal_move_penalized_and_turn_passes():
    env = TicTacToe({"first_player": "player1", **BOARD_ONLY})
    env.reset()
    env.step({"player1": 4})
    obs, rewards, terms, truncs, _ = env.step({"player2": 4})  # occupied
    assert rewards == {"player2": -1.0}
    assert list(obs) == ["player1"]  # the turn passes, as in RLlib's
    np.testing.assert_array_equal(obs["player1"], board(0, 0, 0, 0, 1, 0, 0, 0, 0))  # unchanged
    assert not terms["__all__"] and not truncs["__all__"]
    with pytest.raises(ValueError, match="player1"):
        env.step({"player2": 0})  # not player2's turn


def test_ttt_masks_taken_cells_by_default():
    """RLlib's action-masking observation: 1 for each empty cell; a taken cell raises."""
    env = TicTacToe({"first_player": "player1"})
    space = env.get_observation_space("player1")
    assert set(space.spaces) == {"action_mask", "observations"}
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs["player1"]["action_mask"], np.ones(9, np.float32))
    obs, *_ = env.step({"player1": 4})
    expected = np.ones(9, np.float32)
    expected[4] = 0.0
    np.testing.assert_array_equal(obs["player2"]["action_mask"], expected)
    np.testing.assert_array_equal(obs["player2"]["observations"], board(0, 0, 0, 0, -1, 0, 0, 0, 0))
    assert space.contains(obs["player2"])
    with pytest.raises(ValueError, match="cell 4 is taken"):
        env.step({"player2": 4})
    # The vectorized slots hold the dict observations.
    vec = MultiAgentVectorEnv(
        [lambda: TicTacToe({"first_player": "player1"})], ["player1", "player2"], by_agent_id
    )
    r = vec.reset()
    assert r.obs["action_mask"].shape == (2, 9) and r.obs["observations"].shape == (2, 9)
    r = vec.step(np.array([4, 0]))
    np.testing.assert_array_equal(r.obs["action_mask"][1], expected)


def test_ttt_moves_are_capped():
    env = TicTacToe({"first_player": "player1", "max_moves": 9, **BOARD_ONLY})
    env.reset()
    env.step({"player1": 0})
    returns = {"player1": 0.0, "player2": 0.0}
    for k in range(2, 10):  # moves 2..9: all on the occupied cell 0
        mover = "player2" if k % 2 == 0 else "player1"
        obs, rewards, terms, truncs, _ = env.step({mover: 0})
        assert rewards == {mover: -1.0}
        returns[mover] += rewards[mover]
        assert truncs["__all__"] == (k == 9) and not terms["__all__"]
    assert obs == {} and returns == {"player1": -4.0, "player2": -4.0}


def test_ttt_vectorized_turns_rewards_and_returns():
    # One game with an illegal move: p1 4, p2 4 (illegal), p1 0, p2 1, p1 8 (wins 0-4-8).
    vec = MultiAgentVectorEnv(
        [lambda: TicTacToe({"first_player": "player1", **BOARD_ONLY})],
        ["player1", "player2"],
        by_agent_id,
        seed=0,
    )
    r = vec.reset()
    np.testing.assert_array_equal(r.present, [True, False])
    rows = []
    for mover, cell in [(0, 4), (1, 4), (0, 0), (1, 1), (0, 8)]:
        actions = np.full(2, 7, np.int64)  # the absent slot's action is ignored
        actions[mover] = cell
        rows.append(vec.step(actions))
    present = np.array([x.present for x in rows])
    np.testing.assert_array_equal(present, [[0, 1], [1, 0], [0, 1], [1, 0], [1, 1]])
    # A row's reward is what its agent earned since it last acted: player2's illegal move
    # (-1) shows on its next turn; the end gives both players their final rewards.
    np.testing.assert_array_equal(
        [x.reward for x in rows], [[0, 0], [0, 0], [0, -1], [0, 0], [1, -1]]
    )
    np.testing.assert_array_equal(rows[2].obs[1], board(-1, 0, 0, 0, -1, 0, 0, 0, 0))
    np.testing.assert_array_equal(rows[3].obs[0], board(1, -1, 0, 0, 1, 0, 0, 0, 0))
    assert rows[-1].terminated.all() and not rows[-1].truncated.any()
    (episode,) = vec.finished_episodes
    assert episode.length == 5
    assert episode.agent_returns == {"player1": 1.0, "player2": -2.0}
    assert episode.agent_policies == {"player1": "player1", "player2": "player2"}


# Learning against a frozen opponent: tests/test_notebooks.py::test_multi_agent_notebook_runs
# (the learner beats a rock-playing opponent that keeps its weights bit for bit).
