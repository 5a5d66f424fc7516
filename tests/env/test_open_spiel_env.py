"""OpenSpiel games as multi-agent envs (RLlib's ``OpenSpielEnv``): sequential, chance and
simultaneous games step by step by hand, and multi-agent PPO against a random module."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from self_play_config import main_vs_random  # noqa: E402

from rljax import register_env  # noqa: E402
from rljax.env.utils import try_import_open_spiel, try_import_pyspiel  # noqa: E402
from rljax.env.wrappers.open_spiel import ILLEGAL_ACTION_PENALTY, OpenSpielEnv  # noqa: E402


def test_tic_tac_toe_by_hand():
    env = OpenSpielEnv(pyspiel.load_game("tic_tac_toe"))
    assert env.possible_agents == [0, 1]
    assert env.get_observation_space(0).shape == (27,) and env.get_action_space(1).n == 9
    obs, infos = env.reset(seed=0)
    assert list(obs) == [0] and obs[0].dtype == np.float32 and infos == {}
    # x: 0, 1, 2 (a row); o: 3, 4. Player 1 first tries cell 0, which is taken.
    obs, rewards, term, trunc, _ = env.step({0: 0})
    assert list(obs) == [1] and rewards == {0: 0.0, 1: 0.0} and not term["__all__"]
    obs, rewards, _, _, _ = env.step({1: 0})  # illegal: a random legal move, and -0.1
    assert rewards == {0: 0.0, 1: ILLEGAL_ACTION_PENALTY}
    assert str(env.state).count("o") == 1 and str(env.state).count("x") == 1
    env.reset()
    for move in (0, 3, 1, 4):
        player = env.state.current_player()
        env.step({player: move})
    obs, rewards, term, trunc, _ = env.step({0: 2})
    assert obs == {} and rewards == {0: 1.0, 1: -1.0}
    assert term == {0: True, 1: True, "__all__": True}
    assert trunc == {0: False, 1: False, "__all__": False}
    with pytest.raises(ValueError, match="it is player 0's move"):
        env.reset()
        env.step({1: 4})


def test_chance_nodes_are_dealt_and_a_simultaneous_game_takes_every_action():
    poker = OpenSpielEnv(pyspiel.load_game("kuhn_poker"))
    obs, _ = poker.reset(seed=1)  # the deal (two chance nodes) is resolved first
    assert list(obs) == [0] and not poker.state.is_chance_node()
    rps = OpenSpielEnv(pyspiel.load_game("matrix_rps"))
    obs, _ = rps.reset()
    assert sorted(obs) == [0, 1]
    _, rewards, term, _, _ = rps.step({0: 1, 1: 0})  # paper beats rock
    assert rewards == {0: 1.0, 1: -1.0} and term["__all__"]
    # goofspiel: a card played already is illegal; replaced, at -0.1 (was: SpielError).
    cards = OpenSpielEnv(pyspiel.load_game("goofspiel", {"num_cards": 3}))
    cards.reset(seed=0)
    cards.step({0: 0, 1: 0})
    _, rewards, _, _, _ = cards.step({0: 0, 1: 1})
    game = cards.state.rewards()
    assert rewards == pytest.approx({0: game[0] + ILLEGAL_ACTION_PENALTY, 1: game[1]})


def test_rllibs_optional_imports_and_a_wrong_env():
    assert try_import_pyspiel() is pyspiel and try_import_open_spiel() is not None
    with pytest.raises(TypeError, match="pass a loaded OpenSpiel game"):
        OpenSpielEnv("connect_four")


@pytest.mark.slow  # builds and trains multi-agent PPO (about 5 s)
def test_multi_agent_ppo_plays_connect_four_against_a_random_module():
    """RLlib's self-play example's start: "main" learns, "random" acts uniformly."""
    register_env("rljax_test_c4", lambda _: OpenSpielEnv(pyspiel.load_game("connect_four")))
    config = main_vs_random(
        "rljax_test_c4", lambda aid, *a, **kw: "main" if aid == 0 else "random", 32, 256
    )
    with config.build_algo() as algo:
        result = algo.train()
    runners = result["env_runners"]
    assert runners["num_episodes"] > 0 and 7 <= runners["episode_len_mean"] <= 42
    returns = runners["agent_episode_returns_mean"]
    # Zero-sum but for the -0.1 of each illegal move: each episode's returns sum to <= 0.
    assert set(returns) == {"0", "1"} and returns["0"] + returns["1"] <= 1e-9
    assert set(result["learners"]) == {"main", "__all_modules__"}
