"""Offline files of whole episodes, RLlib's ``output_write_episodes=True`` format: read from
RLlib 2.60's own recording, written so RLlib reads them, refused when malformed."""

from pathlib import Path

import gymnasium as gym
import msgpack
import numpy as np
import pytest

from rljax.env.single_agent_episode import SingleAgentEpisode
from rljax.offline.data import OfflineWriter, read_offline_data
from rljax.utils.errors import ConfigError
from rljax.utils.serialization import pack_msgpack_numpy

pytest.importorskip("pyarrow")

RLLIB_FILES = Path(__file__).parents[1] / "data" / "rllib_2_60_episodes"
CARTPOLE = gym.make("CartPole-v1")
OBS = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
ACT = gym.spaces.Discrete(3)


def test_reads_an_episode_rllib_recorded():
    data = read_offline_data(str(RLLIB_FILES), CARTPOLE.observation_space, CARTPOLE.action_space)
    # RLlib's own SingleAgentEpisode.from_state(msgpack.unpackb(item,
    # object_hook=msgpack_numpy.decode)) read these values from the file (its README).
    assert data.num_rows == 11
    np.testing.assert_allclose(
        data.obs[:2],
        [
            [0.04461687, -0.0405954, 0.04073466, -0.01066401],
            [0.04380496, -0.23627715, 0.04052138, 0.29458782],
        ],
        rtol=1e-6,
    )
    np.testing.assert_array_equal(data.new_obs[:-1], data.obs[1:])
    np.testing.assert_allclose(
        data.new_obs[-1], [-0.07053892, -1.028171, 0.2165541, 1.7515926], rtol=1e-6
    )
    assert data.actions.tolist() == [0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0]
    assert data.rewards.tolist() == [1.0] * 11
    assert data.terminateds.tolist() == [False] * 10 + [True] and not data.truncateds.any()
    assert data.episode_index.tolist() == [0] * 11


def _episode(rewards, actions, terminated=False, truncated=False):
    episode = SingleAgentEpisode(observation_space=OBS, action_space=ACT)
    episode.add_env_reset(np.zeros(2, np.float32), {})
    for i, (r, a) in enumerate(zip(rewards, actions, strict=True)):
        last = i == len(rewards) - 1
        episode.add_env_step(
            np.full(2, i + 1, np.float32),
            a,
            r,
            {"step": i},
            terminated=terminated and last,
            truncated=truncated and last,
        )
    return episode


def test_written_episodes_read_back_as_their_steps_and_rllib_reads_them(tmp_path):
    writer = OfflineWriter(tmp_path, OBS, ACT, max_rows_per_file=2, episodes=True)
    episodes = [
        _episode([1.0, 2.0], [2, 0], terminated=True),
        _episode([0.5], [1], truncated=True),
        _episode([3.0, 4.0, 5.0], [1, 1, 2]),  # cut: neither flag
    ]
    for episode in episodes:
        writer.add_episode_state(episode.get_state())
    assert len(writer.files) == 1 and writer.pending_rows == 1  # two episodes a file
    writer.flush()
    data = read_offline_data(str(tmp_path), OBS, ACT)
    assert data.num_rows == 6
    assert data.rewards.tolist() == [1.0, 2.0, 0.5, 3.0, 4.0, 5.0]
    assert data.actions.tolist() == [2, 0, 1, 1, 1, 2]
    assert data.obs[:, 0].tolist() == [0, 1, 0, 0, 1, 2]
    assert data.new_obs[:, 0].tolist() == [1, 2, 1, 1, 2, 3]
    assert data.terminateds.tolist() == [False, True, False, False, False, False]
    assert data.truncateds.tolist() == [False, False, True, False, False, False]
    assert data.episode_index.tolist() == [0, 0, 1, 2, 2, 2]

    # RLlib 2.60's reader: msgpack-numpy's decoder and its SingleAgentEpisode.from_state.
    mnp = pytest.importorskip("msgpack_numpy")
    rllib_episode = pytest.importorskip("ray.rllib.env.single_agent_episode")
    import pyarrow.parquet as pq

    items = [i for f in writer.files for i in pq.read_table(f).column("item").to_pylist()]
    theirs = rllib_episode.SingleAgentEpisode.from_state(
        msgpack.unpackb(items[0], object_hook=mnp.decode)
    )
    theirs.validate()
    assert theirs.id_ == episodes[0].id_ and theirs.is_terminated
    assert theirs.get_rewards() == [1.0, 2.0] and theirs.get_actions() == [2, 0]
    assert theirs.observation_space == OBS and theirs.action_space == ACT
    assert theirs.get_infos() == [{}, {"step": 0}, {"step": 1}]


def _item_file(tmp_path, name, items):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / name
    path.mkdir()
    pq.write_table(pa.table({"item": pa.array(items, pa.binary())}), path / "x.parquet")
    return str(path)


def test_malformed_episode_files_are_refused_naming_the_file(tmp_path):
    good = _episode([1.0], [0], terminated=True).get_state()
    path = _item_file(tmp_path, "junk", [b"\xc1"])
    with pytest.raises(ConfigError, match=r"x\.parquet: episode 0: is not valid msgpack"):
        read_offline_data(path, OBS, ACT)
    path = _item_file(tmp_path, "partial", [pack_msgpack_numpy({"id_": "e"})])
    with pytest.raises(ConfigError, match=r"episode 0 is not an episode's state \(KeyError"):
        read_offline_data(path, OBS, ACT)
    wide = _item_file(tmp_path, "wide", [pack_msgpack_numpy(good)])
    with pytest.raises(ConfigError, match=r"observations have shape \(2,\), the env's .*\(3,\)"):
        read_offline_data(wide, gym.spaces.Box(-1, 1, (3,)), ACT)
    with pytest.raises(ConfigError, match="action 0 is outside the env's action space"):
        read_offline_data(wide, OBS, gym.spaces.Discrete(2, start=1))
    short = dict(good, actions={**good["actions"], "data": []})
    path = _item_file(tmp_path, "short", [pack_msgpack_numpy(short)])
    with pytest.raises(
        ConfigError, match="data disagree: 2 observations, 2 infos, 0 actions, 1 reward"
    ):
        read_offline_data(path, OBS, ACT)
    bad_rewards = dict(good, rewards={**good["rewards"], "data": [[10.0, 20.0]]})
    path = _item_file(tmp_path, "rewards", [pack_msgpack_numpy(bad_rewards)])
    with pytest.raises(ConfigError, match=r"rewards have shape \(1, 2\), expected .* \(1,\)"):
        read_offline_data(path, OBS, ACT)
    path = _item_file(tmp_path, "flag", [pack_msgpack_numpy(dict(good, is_terminated="no"))])
    with pytest.raises(ConfigError, match="is_terminated is str, not a bool"):
        read_offline_data(path, OBS, ACT)
    deep: dict = {}
    for _ in range(600):
        deep = {"d": deep}
    nested = dict(good, observations={**good["observations"], "data": deep})
    path = _item_file(tmp_path, "deep", [pack_msgpack_numpy(nested)])
    with pytest.raises(ConfigError, match="nested deeper than 64 levels"):
        read_offline_data(path, OBS, ACT)
    # The file's own spaces are never built (its rows are checked against the env's): a Box
    # bound may be large, and here one that could not be built at all is not an error.
    space = {"space": "box", "low": "@@", "high": "@@", "shape": [1 << 30], "dtype": "<f8"}
    odd = dict(good, _observation_space=space, _action_space={"space": "simplex"})
    odd["observations"] = {**good["observations"], "space": space}
    path = _item_file(tmp_path, "spaces", [pack_msgpack_numpy(odd)])
    assert read_offline_data(path, OBS, ACT).num_rows == 1
    with pytest.raises(ValueError, match="needs OfflineWriter"):
        OfflineWriter(tmp_path / "rows", OBS, ACT).add_episode_state(good)


def test_a_numpy_episode_with_clipped_actions_is_written_as_rllib_reads_it(tmp_path):
    from types import SimpleNamespace

    from rljax.offline import EpisodeRecorder
    from rljax.utils.safe_io import unpack_msgpack_numpy

    box = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    config = SimpleNamespace(
        output=str(tmp_path),
        output_max_rows_per_file=None,
        output_write_remaining_data=False,
        output_write_episodes=True,
        clip_actions=True,
    )
    recorder = EpisodeRecorder(config, OBS, box)
    episode = SingleAgentEpisode(observation_space=OBS, action_space=box)
    episode.add_env_reset(np.zeros(2, np.float32), {1: "an int key"})
    episode.add_env_step(np.ones(2, np.float32), np.array([3.0], np.float32), 1.0, {})
    episode.add_env_step(
        np.ones(2, np.float32), np.array([-0.5], np.float32), 1.0, {}, terminated=True
    )
    recorder.on_episode_end(episode=episode.to_numpy())  # a user's hook made it numpy
    recorder.end_of_sampling()
    import pyarrow.parquet as pq

    (item,) = pq.read_table(tmp_path).column("item").to_pylist()
    state = unpack_msgpack_numpy(item, "test")
    assert isinstance(state["actions"]["data"], np.ndarray)  # still an array, as RLlib reads it
    np.testing.assert_allclose(state["actions"]["data"][:, 0], [1.0, -0.5])  # clipped
    assert read_offline_data(str(tmp_path), OBS, box).actions[:, 0].tolist() == [1.0, -0.5]
    mnp = pytest.importorskip("msgpack_numpy")
    rllib_episode = pytest.importorskip("ray.rllib.env.single_agent_episode")
    theirs = rllib_episode.SingleAgentEpisode.from_state(
        msgpack.unpackb(item, object_hook=mnp.decode, strict_map_key=False)
    )
    theirs.validate()
    assert theirs.is_numpy and len(theirs) == 2
