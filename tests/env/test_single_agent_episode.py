"""``SingleAgentEpisode`` and its ``InfiniteLookbackBuffer`` by hand, with RLlib's semantics:
lists until ``to_numpy()``, lookback parts, ``neg_index_as_lookback``, ``fill``, one-hot
actions, ``cut``, slices, ``concat_episode`` and states. The values follow RLlib 2.60's
episode guide (``sa_episode.py``), whose script gives the same results through RLlib's
class."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rljax.env.single_agent_episode import SingleAgentEpisode, start_episode
from rljax.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from rljax.utils.spaces.space_utils import (
    batch,
    get_dummy_batch_for_space,
    unbatch,
)


def _five_steps() -> SingleAgentEpisode:
    episode = SingleAgentEpisode()
    episode.add_env_reset(observation="obs_0", infos={"i": 0})
    for i in range(5):
        episode.add_env_step(f"obs_{i + 1}", f"act_{i}", float(i), {"i": i + 1})
    return episode


def test_an_episode_built_step_by_step_reads_as_rllibs():
    episode = SingleAgentEpisode()
    assert len(episode) == 0 and not episode.is_reset
    episode = _five_steps()
    assert len(episode) == 5 and episode.t == 5 and not episode.is_done
    assert episode.get_observations(0) == episode.observations[0] == "obs_0"
    assert episode.get_observations([1, 2]) == ["obs_1", "obs_2"]
    assert episode.get_observations(slice(1, 3)) == ["obs_1", "obs_2"]
    assert episode.get_rewards(-1) == episode.rewards[-1] == 4.0
    assert episode.get_actions() == [f"act_{i}" for i in range(5)]
    assert [info["i"] for info in episode.get_infos()] == [0, 1, 2, 3, 4, 5]
    assert episode.get_return() == 10.0 and not episode.is_numpy
    piece = episode[3:4]  # one step, its observations before and after it
    assert list(piece.observations) == ["obs_3", "obs_4"] and list(piece.actions) == ["act_3"]
    assert piece.t_started == 3 and len(piece) == 1 and piece.id_ == episode.id_
    # The slice's lookback defaults to the episode's (none): nothing before its step 0.
    assert piece.get_rewards(slice(-2, None), neg_index_as_lookback=True, fill=-1.0) == [
        -1.0,
        -1.0,
        3.0,
    ]


def test_to_numpy_turns_the_lists_into_arrays():
    episode = _five_steps()
    assert episode.to_numpy() is episode and episode.is_numpy
    np.testing.assert_array_equal(episode.get_rewards(), [0.0, 1.0, 2.0, 3.0, 4.0])
    assert episode.get_observations().tolist() == [f"obs_{i}" for i in range(6)]
    assert isinstance(episode.get_infos(), list)  # infos stay dicts, as RLlib's
    episode.add_env_step("obs_6", "act_5", 5.0, terminated=True)  # still appends
    np.testing.assert_array_equal(episode.get_rewards(slice(-2, None)), [4.0, 5.0])
    assert episode.is_terminated and episode.is_done


def test_cut_continues_the_episode_and_concat_joins_the_chunks():
    episode = _five_steps()
    episode.custom_data["seen"] = [1]
    chunk = episode.cut(len_lookback_buffer=2)
    assert (len(chunk), chunk.t_started, chunk.t, chunk.id_) == (0, 5, 5, episode.id_)
    assert chunk.get_observations(-1) == "obs_5"
    assert chunk.get_rewards(slice(-2, None), neg_index_as_lookback=True) == [3.0, 4.0]
    assert chunk.custom_data == {"seen": [1]} and chunk.custom_data is not episode.custom_data
    chunk.add_env_step("obs_6", "act_5", 5.0, {"i": 6}, terminated=True)
    episode.concat_episode(chunk)
    assert len(episode) == 6 and episode.is_terminated
    assert episode.get_observations(slice(-3, None)) == ["obs_4", "obs_5", "obs_6"]
    assert episode.get_rewards() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(ValueError, match="does not continue this one"):
        episode.concat_episode(SingleAgentEpisode(id_=episode.id_, t_started=6))


def test_lookback_data_and_negative_indices_with_and_without_fill():
    # RLlib's guide: three steps given, all lookback -> an episode of length 0.
    episode = SingleAgentEpisode(
        observations=["o0", "o1", "o2", "o3"],
        actions=["a0", "a1", "a2"],
        rewards=[0.0, 1.0, 2.0],
        len_lookback_buffer=3,
    )
    assert len(episode) == 0 and episode.get_observations(0) == "o3"
    with pytest.raises(IndexError, match="index 0 is outside"):
        episode.get_rewards(0)
    assert episode.get_rewards(slice(-3, None)) == [0.0, 1.0, 2.0]
    padded = episode.get_rewards(slice(-5, None), fill=0.0)
    assert [float(r) for r in padded] == [0.0, 0.0, 0.0, 1.0, 2.0]
    # Three lookback steps and three episode steps: -1 is the last lookback step.
    episode = SingleAgentEpisode(
        observations=["o-3", "o-2", "o-1", "o0", "o1", "o2", "o3"],
        actions=["a-3", "a-2", "a-1", "a0", "a1", "a2"],
        rewards=[-3.0, -2.0, -1.0, 0.0, 1.0, 2.0],
        len_lookback_buffer=3,
    )
    assert len(episode) == 3
    windows = [
        episode.get_rewards(slice(t - 2, t + 1), neg_index_as_lookback=True) for t in range(3)
    ]
    assert windows == [[-2.0, -1.0, 0.0], [-1.0, 0.0, 1.0], [0.0, 1.0, 2.0]]
    assert episode.get_rewards(-1) == 2.0  # from the end without the flag
    assert episode.get_rewards(-1, neg_index_as_lookback=True) == -1.0
    before = episode.get_rewards(slice(-4, 0), neg_index_as_lookback=True, fill=0.0)
    assert [float(r) for r in before] == [0.0, -3.0, -2.0, -1.0]
    # Before the lookback part: an error, also once numpy (never a wrapped-around item).
    episode.to_numpy()
    with pytest.raises(IndexError, match="neg_index_as_lookback=True"):
        episode.get_rewards(-4, neg_index_as_lookback=True)
    assert episode.get_rewards(-4, neg_index_as_lookback=True, fill=9.0) == 9.0


def test_fill_and_one_hot_follow_the_action_space():
    space = gym.spaces.Dict(
        {
            "a": gym.spaces.Discrete(3),
            "b": gym.spaces.MultiDiscrete([2, 3]),
            "c": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
        }
    )
    episode = SingleAgentEpisode(action_space=space)
    episode.add_env_reset(observation=0)
    action = {"a": 2, "b": np.array([1, 2]), "c": np.array([0.5, -0.5], np.float32)}
    episode.add_env_step(observation=1, action=action, reward=1.0)
    window = episode.get_actions(slice(-2, None), fill=0.0, one_hot_discrete=True)
    assert len(window) == 2
    pad, last = window
    # A fill is zero-hot (all zeros), the action one-hot; MultiDiscrete's parts side by side.
    np.testing.assert_array_equal(pad["a"], [0, 0, 0])
    np.testing.assert_array_equal(pad["b"], [0, 0, 0, 0, 0])
    np.testing.assert_array_equal(last["a"], [0, 0, 1])
    np.testing.assert_array_equal(last["b"], [0, 1, 0, 0, 1])
    np.testing.assert_array_equal(last["c"], [0.5, -0.5])
    stacked = batch(window)
    assert stacked["a"].shape == (2, 3) and stacked["c"].shape == (2, 2)
    # A space's start shifts the one-hot: action 5 of Discrete(3, start=4) is the second slot.
    shifted = start_episode(0.0, action_space=gym.spaces.Discrete(3, start=4))
    shifted.add_env_step(1.0, 5, 0.0)
    np.testing.assert_array_equal(shifted.get_actions(0, one_hot_discrete=True), [0, 1, 0])
    with pytest.raises(ValueError, match="needs the buffer's space"):
        _five_steps().get_actions(0, one_hot_discrete=True)


def test_misuse_is_refused_with_what_to_do():
    with pytest.raises(TypeError, match="first argument is its id_"):
        SingleAgentEpisode(np.zeros(2))  # the old positional observation
    episode = _five_steps()
    with pytest.raises(RuntimeError, match="already has its first observation"):
        episode.add_env_reset("again")
    with pytest.raises(TypeError, match="indexed by a slice only"):
        episode[0]
    with pytest.raises(RuntimeError, match="before add_env_reset"):
        SingleAgentEpisode().add_env_step("o", "a", 0.0)
    episode.add_env_step("obs_6", "act_5", 0.0, truncated=True)
    with pytest.raises(RuntimeError, match="is done"):
        episode.add_env_step("obs_7", "act_6", 0.0)
    with pytest.raises(ValueError, match="only an unfinished episode is cut"):
        episode.cut()
    with pytest.raises(ValueError, match="2 observations, 2 infos, 0 actions, 1 rewards"):
        SingleAgentEpisode(observations=["o0", "o1"], rewards=[1.0], len_lookback_buffer=0)
    with pytest.raises(KeyError, match="no model output 'vf'"):
        episode.get_extra_model_outputs("vf")


def test_model_outputs_sets_and_states_round_trip():
    episode = start_episode(np.zeros(2, np.float32), {"r": 1}, env_index=3)
    for t in range(3):
        episode.add_env_step(
            np.full(2, t + 1, np.float32), t % 2, 1.0, extra_model_outputs={"logp": -0.5 * t}
        )
    assert episode.get_extra_model_outputs("logp") == [0.0, -0.5, -1.0]
    episode.set_rewards(new_data=[2.0, 3.0], at_indices=slice(1, None))
    assert episode.get_rewards() == [1.0, 2.0, 3.0]
    with pytest.raises(IndexError, match="3 new items for 2 places"):
        episode.set_rewards(new_data=[1.0, 1.0, 1.0], at_indices=slice(1, None))
    episode.custom_data["note"] = "kept"
    copy = SingleAgentEpisode.from_state(episode.get_state())
    assert (copy.id_, copy.env_index, len(copy), copy.t) == (episode.id_, 3, 3, 3)
    assert copy.get_rewards() == [1.0, 2.0, 3.0] and copy.custom_data == {"note": "kept"}
    assert copy.observations == episode.observations and copy.get_infos(0) == {"r": 1}
    data = episode.to_numpy().get_data_dict()
    np.testing.assert_array_equal(data["obs"][:, 0], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(data["terminateds"], [False, False, False])
    np.testing.assert_array_equal(data["t"], [0, 1, 2])
    np.testing.assert_allclose(data["logp"], [0.0, -0.5, -1.0])


def test_the_buffer_and_the_space_helpers():
    buffer = InfiniteLookbackBuffer([1, 2, 3, 4, 5], lookback=2)
    assert len(buffer) == 3 and buffer.get() == [3, 4, 5] and list(buffer) == [3, 4, 5]
    assert buffer.get(slice(-4, None), neg_index_as_lookback=True, fill=0) == [0, 0, 1, 2, 3, 4, 5]
    assert (buffer + 10).get() == [13, 14, 15] and (buffer + [6]).get() == [3, 4, 5, 6]
    buffer[0] = 30
    buffer.finalize()
    np.testing.assert_array_equal(buffer.get(), [30, 4, 5])
    np.testing.assert_array_equal(buffer.get([0, -1]), [30, 5])
    buffer.append(6)
    np.testing.assert_array_equal(buffer.get(slice(-2, None)), [5, 6])
    with pytest.raises(RuntimeError, match="finalized"):
        buffer + 1
    rows = [{"x": np.array([1.0, 2.0]), "y": (1, 2)}, {"x": np.array([3.0, 4.0]), "y": (3, 4)}]
    stacked = batch(rows)
    np.testing.assert_array_equal(stacked["x"], [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(stacked["y"][1], [2, 4])
    back = unbatch(stacked)
    assert back[1]["y"] == (3, 4) and back[0]["x"].tolist() == [1.0, 2.0]
    np.testing.assert_array_equal(batch([np.array([1, 2]), 0]), [[1, 2], [0, 0]])
    with pytest.raises(ValueError, match="empty list"):
        batch([])
    # RLlib's batch goes into lists inside the items (dm-tree): one array per position.
    listed = batch([{"a": [1, 2.5]}, {"a": [3, 4.5]}])
    assert isinstance(listed["a"], list) and len(listed["a"]) == 2
    np.testing.assert_array_equal(listed["a"][0], [1, 3])
    np.testing.assert_array_equal(listed["a"][1], [2.5, 4.5])
    joined = batch(
        [{"a": [np.zeros((2, 1))]}, {"a": [np.ones((1, 1))]}],
        individual_items_already_have_batch_dim=True,
    )
    assert joined["a"][0].ravel().tolist() == [0.0, 0.0, 1.0]
    dummy = get_dummy_batch_for_space(
        gym.spaces.Tuple((gym.spaces.Discrete(4), gym.spaces.Box(0, 1, (2,)))),
        batch_size=3,
        fill_value=1.0,
        one_hot_discrete=True,
    )
    assert dummy[0].shape == (3, 4) and dummy[1].shape == (3, 2) and dummy[0].max() == 1.0
    box = gym.spaces.Box(0, 1, (2,), np.float32)
    assert get_dummy_batch_for_space(box, 3, time_size=5).shape == (3, 5, 2)
    timed = get_dummy_batch_for_space(box, 3, fill_value="random", time_size=5, time_major=True)
    assert timed.shape == (5, 3, 2) and timed.dtype == np.float32 and timed.min() >= 0
    assert get_dummy_batch_for_space(gym.spaces.Discrete(3), 0, fill_value="random").shape == ()
    with pytest.raises(ValueError, match="both sizes must be at least 1"):
        get_dummy_batch_for_space(box, 0, time_size=5)


def test_empty_infos_restored_copies_and_empty_chunks():
    episode = SingleAgentEpisode(observations=["o0", "o1"], infos=[], actions=["a0"], rewards=[1.0])
    assert episode.get_infos() == [{}] and len(episode) == 0  # RLlib's: infos filled in
    started = _five_steps()
    copy = SingleAgentEpisode.from_state(started.get_state())
    started.add_env_step("obs_6", "act_5", 5.0)
    assert len(copy) == 5 and len(copy.get_observations()) == 6  # not the original's lists
    numpy = _five_steps().to_numpy()
    numpy.concat_episode(numpy.cut())  # an empty chunk adds nothing
    assert len(numpy) == 5 and numpy.get_observations().tolist()[-1] == "obs_5"
