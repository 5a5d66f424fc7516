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
    with pytest.raises(ValueError, match="needs OfflineWriter"):
        OfflineWriter(tmp_path / "rows", OBS, ACT).add_episode_state(good)
