"""Offline data (rljax.offline), and BC and MARWIL learning from it (rljax.algorithms.marwil):
the files by hand, the value targets and the loss by hand, recording from an algorithm's
training and evaluation, errors, and BC and MARWIL learning CartPole from a scripted expert.
Also a Discrete action space counting from 1, which acting (PPO, SAC, DQN) and the records
must map from the policy's index."""

from __future__ import annotations

import gymnasium as gym
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("pyarrow")

from rljax.algorithms.marwil import BCConfig, MARWILConfig  # noqa: E402
from rljax.algorithms.marwil.losses import marwil_loss  # noqa: E402
from rljax.offline import OfflineWriter, read_offline_data  # noqa: E402
from rljax.utils.errors import ConfigError  # noqa: E402

OBS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
ACT = gym.spaces.Discrete(3)


def _episode(n: int, first: float) -> tuple[list[np.ndarray], list[int], list[float]]:
    obs = [np.array([first + t, -first - t], np.float32) for t in range(n + 1)]
    return obs, [t % 3 for t in range(n)], [float(t + 1) for t in range(n)]


def test_rows_round_trip_through_files_of_a_fixed_size(tmp_path):
    writer = OfflineWriter(tmp_path / "data", OBS, ACT, max_rows_per_file=4)
    writer.add_episode(*_episode(3, 0.0), terminated=True, truncated=False, eps_id="a")
    writer.add_episode(*_episode(2, 10.0), terminated=False, truncated=True, eps_id="b")
    assert len(writer.files) == 1 and writer.pending_rows == 1  # 5 rows: one file of 4
    writer.flush()
    assert len(writer.files) == 2 and writer.rows_written == 5
    assert not list((tmp_path / "data").glob(".*"))  # no temporary file left behind
    data = read_offline_data(str(tmp_path / "data"), OBS, ACT)
    np.testing.assert_array_equal(data.episode_index, [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(data.obs[:, 0], [0, 1, 2, 10, 11])
    np.testing.assert_array_equal(data.new_obs[:, 1], [-1, -2, -3, -11, -12])
    np.testing.assert_array_equal(data.actions, [0, 1, 2, 0, 1])
    np.testing.assert_array_equal(data.rewards, [1, 2, 3, 1, 2])
    np.testing.assert_array_equal(data.terminateds, [0, 0, 1, 0, 0])
    np.testing.assert_array_equal(data.truncateds, [0, 0, 0, 0, 1])
    # A second writer in the same folder adds files; it never replaces the first one's.
    again = OfflineWriter(tmp_path / "data", OBS, ACT)
    again.add_episode(*_episode(1, 5.0), terminated=True, truncated=False)
    again.flush()
    assert read_offline_data(f"local://{tmp_path / 'data'}", OBS, ACT).num_rows == 6


def test_spaces_keep_their_values_and_dtypes(tmp_path):
    frames = gym.spaces.Box(0, 255, (2, 3), np.uint8)
    cells = gym.spaces.Discrete(16)
    shifted = gym.spaces.Discrete(3, start=1)  # the env's actions are 1, 2, 3
    writer = OfflineWriter(tmp_path / "a", frames, shifted)
    obs = [np.full((2, 3), 250 + i, np.uint8) for i in range(3)]
    writer.add_episode(obs, [1, 3], [1.0, 1.0], True, False)  # as the env took them
    writer.flush()
    import pyarrow.parquet as pq

    (file,) = writer.files
    assert pq.read_table(file).column("actions").to_pylist() == [1, 3]
    data = read_offline_data(str(tmp_path / "a"), frames, shifted)
    assert data.obs.dtype == np.uint8 and data.obs.shape == (2, 2, 3)
    np.testing.assert_array_equal(data.new_obs[1], obs[2])
    np.testing.assert_array_equal(data.actions, [0, 2])  # the policy's indexes again
    writer = OfflineWriter(tmp_path / "b", cells, ACT)
    writer.add_episode([3, 7, 15], [1, 2], [0.0, 1.0], False, True)
    writer.flush()
    data = read_offline_data(str(tmp_path / "b"), cells, ACT)
    np.testing.assert_array_equal(data.obs, [3, 7])
    np.testing.assert_array_equal(data.new_obs, [7, 15])


def test_files_without_t_duplicates_and_files_named_twice(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    # RLlib's row writer adds no t: each episode's rows in file order.
    flat = pa.array(np.arange(8, dtype=np.float32))
    obs = pa.FixedSizeListArray.from_arrays(flat, 2)
    table = pa.table(
        {
            "eps_id": ["x", "y", "x", "y"],
            "obs": obs,
            "actions": pa.array([0, 1, 2, 0], pa.int64()),
            "rewards": pa.array([1, 2, 3, 4], pa.float32()),
            "new_obs": obs,
            "terminateds": [False, False, True, True],
            "truncateds": [False] * 4,
        }
    )
    (tmp_path / "rllib").mkdir()
    pq.write_table(table, tmp_path / "rllib" / "part.parquet")
    data = read_offline_data(str(tmp_path / "rllib"), OBS, ACT)
    np.testing.assert_array_equal(data.episode_index, [0, 0, 1, 1])
    np.testing.assert_array_equal(data.rewards, [1, 3, 2, 4])
    # The same folder named twice is read once.
    twice = read_offline_data([str(tmp_path / "rllib"), f"{tmp_path}/rllib/"], OBS, ACT)
    assert twice.num_rows == 4
    # A copy of a file under another name holds the same episodes' steps: refused.
    writer = OfflineWriter(tmp_path / "ours", OBS, ACT)
    writer.add_episode(*_episode(2, 0.0), terminated=True, truncated=False, eps_id="x")
    writer.flush()
    (file,) = writer.files
    (tmp_path / "ours" / "copy.parquet").write_bytes(file.read_bytes())
    with pytest.raises(ConfigError, match="step t=0 of episode 'x' appears twice"):
        read_offline_data(str(tmp_path / "ours"), OBS, ACT)


def test_rllibs_tensor_and_list_columns_are_read(tmp_path):
    """RLlib's recordings hold Ray Data's tensor columns (an extension type over large lists)
    or plain lists. Was: refused ("expected fixed-size lists")."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    obs = np.arange(12, dtype=np.float32).reshape(6, 2)

    class Tensor(pa.ExtensionType):  # Ray Data's tensor column, as stored
        def __init__(self):
            super().__init__(pa.large_list(pa.float32()), "test.tensor")

        def __arrow_ext_serialize__(self):
            return b""

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type, serialized):
            return cls()

    def column(kind, values):
        lists = pa.array(list(values), type=pa.large_list(pa.float32()))
        return pa.ExtensionArray.from_storage(Tensor(), lists) if kind == "tensor" else lists

    for kind in ("tensor", "list"):
        folder = tmp_path / kind
        folder.mkdir()
        table = pa.table(
            {
                "eps_id": ["a"] * 3 + ["b"] * 3,
                "obs": column(kind, obs),
                "actions": pa.array([0, 1, 2, 0, 1, 2]),
                "rewards": pa.array([1.0] * 6),
                "new_obs": column(kind, obs + 1),
                "terminateds": [False, False, True] * 2,
                "truncateds": [False] * 6,
            }
        )
        pq.write_table(table, folder / "part-0.parquet")
        data = read_offline_data(str(folder), OBS, ACT)
        np.testing.assert_array_equal(data.obs, obs)
        np.testing.assert_array_equal(data.new_obs, obs + 1)
    ragged = tmp_path / "ragged"
    ragged.mkdir()
    rows = [[0.0, 1.0], [2.0, 3.0, 4.0], [5.0]]  # 6 numbers, but rows of 2, 3 and 1
    table = pa.table(
        {
            "eps_id": ["a"] * 3,
            "obs": pa.array(rows),
            "actions": pa.array([0, 1, 2]),
            "rewards": pa.array([1.0] * 3),
            "new_obs": pa.array(rows),
            "terminateds": [False, False, True],
            "truncateds": [False] * 3,
        }
    )
    pq.write_table(table, ragged / "part-0.parquet")
    with pytest.raises(ConfigError, match="expected lists of 2 numbers"):
        read_offline_data(str(ragged), OBS, ACT)
    # A Box of bools, as rljax's writer records it (review finding: refused by this reader).
    flags = gym.spaces.Box(0, 1, (3,), dtype=bool)
    writer = OfflineWriter(tmp_path / "bools", flags, ACT)
    bools = [np.array([True, False, i % 2 == 0]) for i in range(3)]
    writer.add_episode(bools, [0, 1], [1.0, 1.0], True, False)
    writer.flush()
    np.testing.assert_array_equal(
        read_offline_data(str(tmp_path / "bools"), flags, ACT).obs, bools[:2]
    )


def test_value_targets_by_hand(tmp_path):
    writer = OfflineWriter(tmp_path, OBS, ACT)
    writer.add_episode(*_episode(3, 0.0), terminated=True, truncated=False)  # rewards 1, 2, 3
    writer.add_episode(*_episode(2, 10.0), terminated=False, truncated=True)  # rewards 1, 2
    writer.flush()
    returns, discount, last = read_offline_data(str(tmp_path), OBS, ACT).returns_to_go(0.5)
    # Terminated: 1 + 0.5 * 2 + 0.25 * 3 = 2.75, 2 + 0.5 * 3 = 3.5, 3; nothing bootstrapped.
    # Truncated: 1 + 0.5 * 2 = 2, 2; the value of the last new_obs weighs 0.25, then 0.5.
    np.testing.assert_allclose(returns, [2.75, 3.5, 3.0, 2.0, 2.0])
    np.testing.assert_allclose(discount, [0, 0, 0, 0.25, 0.5])
    np.testing.assert_array_equal(last, [2, 2, 2, 4, 4])


def test_marwil_loss_by_hand():
    logp = jnp.array([-1.0, -2.0])
    values = jnp.array([1.0, 3.0])
    targets = jnp.array([2.0, 1.0])  # advantages 1 and -2: mean square 2.5
    loss, (c2, metrics) = marwil_loss(
        logp, values, targets, jnp.asarray(4.0), beta=2.0, vf_coeff=0.5, update_rate=0.5
    )
    c2_new = 4.0 + 0.5 * (2.5 - 4.0)  # 3.25, then the weights exp(2 * A / sqrt(3.25))
    w = np.exp(2.0 * np.array([1.0, -2.0]) / (1e-8 + np.sqrt(c2_new)))
    policy = -np.mean(w * np.array([-1.0, -2.0]))
    assert float(c2) == pytest.approx(c2_new)
    assert float(metrics["vf_loss"]) == pytest.approx(1.25)
    assert float(loss) == pytest.approx(policy + 0.5 * 1.25, rel=1e-6)
    # beta = 0: behaviour cloning, -mean(logp); c2 unchanged.
    loss, (c2, _) = marwil_loss(
        logp, values, targets, jnp.asarray(4.0), beta=0.0, vf_coeff=0.5, update_rate=0.5
    )
    assert float(loss) == pytest.approx(1.5) and float(c2) == 4.0


def test_bad_data_and_settings_are_refused_naming_them(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        read_offline_data(str(tmp_path / "nothing"), OBS, ACT)
    with pytest.raises(ConfigError, match="holds no"):
        read_offline_data(str(tmp_path), OBS, ACT)
    writer = OfflineWriter(tmp_path / "wide", gym.spaces.Box(-1, 1, (4,)), ACT)
    writer.add_episode([np.zeros(4)] * 2, [0], [1.0], True, False)
    writer.flush()
    with pytest.raises(ConfigError, match="expected lists of 2 numbers"):
        read_offline_data(str(tmp_path / "wide"), OBS, ACT)
    writer = OfflineWriter(tmp_path / "act", OBS, gym.spaces.Discrete(5))
    writer.add_episode([np.zeros(2)] * 2, [4], [1.0], True, False)
    writer.flush()
    with pytest.raises(ConfigError, match="action 4 is outside the env's action space"):
        read_offline_data(str(tmp_path / "act"), OBS, ACT)
    with pytest.raises(ConfigError, match="local filesystem only"):
        BCConfig().offline_data(input_="s3://bucket/data").validate()
    with pytest.raises(ConfigError, match=r"set \.offline_data\(input_=PATH\)"):
        BCConfig().environment("CartPole-v1").validate()
    with pytest.raises(ConfigError, match="beta=1.0: BC is MARWIL with beta=0"):
        BCConfig().training(beta=1.0).validate()
    with pytest.raises(ConfigError, match="lambda_=0.95: .* lambda_=1.0 only"):
        MARWILConfig().training(lambda_=0.95).validate()
    with pytest.raises(ConfigError, match="input_read_sample_batches=True"):
        BCConfig().offline_data(input_read_sample_batches=True)
    from rljax.algorithms.ppo import PPOConfig

    with pytest.raises(
        ConfigError, match="PPO samples its env; BC, MARWIL .* and CQL .* learn from offline data"
    ):
        PPOConfig().environment("CartPole-v1").offline_data(input_=str(tmp_path)).validate()
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        OfflineWriter(tmp_path / "a_file", OBS, ACT)


def test_bc_fits_a_continuous_controller(tmp_path):
    # A linear Pendulum controller with Gaussian noise: BC's greedy action is its mean.
    env = gym.make("Pendulum-v1")
    writer = OfflineWriter(tmp_path, env.observation_space, env.action_space)

    def controller(o):
        return np.clip(np.array([-1.5 * o[1] - 0.5 * o[2]], np.float32), -2.0, 2.0)

    rng = np.random.default_rng(0)
    writer.record_episodes(  # 10 episodes of 200 steps: 2,000 rows
        env, lambda o: controller(o) + rng.normal(0.0, 0.1, 1).astype(np.float32), 10
    )
    writer.flush()
    algo = (
        BCConfig()
        .environment("Pendulum-v1")
        .offline_data(input_=str(tmp_path), dataset_num_iters_per_learner=80)
        .training(lr=1e-3, train_batch_size_per_learner=256)
        .debugging(seed=0)
        .build_algo()
    )
    try:
        algo.train()
        states = rng.uniform([-1, -1, -8], [1, 1, 8], (100, 3)).astype(np.float32)
        actions = algo.compute_actions(states, explore=False)
    finally:
        algo.stop()
    want = np.stack([controller(o) for o in states])
    # Within 0.15 on average where the controller's actions average 1.5 in size.
    assert np.abs(actions - want).mean() < 0.15 and np.abs(want).mean() > 1.0


@pytest.mark.slow
@pytest.mark.parametrize("config", [BCConfig, MARWILConfig], ids=["bc", "marwil"])
def test_bc_and_marwil_learn_cartpole_from_an_expert_s_data(tmp_path, config, load_benchmark):
    # The benchmark's data: a scripted controller (500 when it plays alone), 10% random actions.
    record_expert = load_benchmark("offline_bc").record_expert
    assert record_expert(tmp_path / "expert", episodes=12) == (500.0, 6000)
    algo = (
        config()
        .environment("CartPole-v1")
        .offline_data(input_=str(tmp_path / "expert"))
        .training(lr=1e-3, train_batch_size_per_learner=512)
        .evaluation(evaluation_duration=5)
        .debugging(seed=0)
        .build_algo()
    )
    try:
        first = algo.evaluate()["env_runners"]["episode_return_mean"]
        results = [algo.train() for _ in range(8)]  # one pass over 6,000 rows each: 12 x 512
        result = results[-1]
        assert result["num_env_steps_trained_lifetime"] == 8 * 12 * 512
        metrics = result["learners"]["default_policy"]
        if config is BCConfig:  # -log pi of the expert's actions (10% of them random)
            assert metrics["policy_loss"] < 0.5 and "vf_loss" not in metrics
        else:  # the value function learns the returns (about 100 at 0.99 from the start)
            assert -1.0 <= metrics["vf_explained_variance"] <= 1.0
            vf_first = results[0]["learners"]["default_policy"]["vf_loss"]
            assert metrics["vf_loss"] < 0.8 * vf_first, (vf_first, metrics["vf_loss"])
        returns = algo.evaluate()["env_runners"]["episode_return_mean"]
        assert first < 100 and returns >= 450, (first, returns)
        # A checkpoint acts as the algorithm does.
        algo.save_to_path(tmp_path / "ckpt")
        restored = type(algo).from_checkpoint(tmp_path / "ckpt")
        obs = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
        np.testing.assert_array_equal(
            restored.compute_actions(obs, explore=False), algo.compute_actions(obs, explore=False)
        )
        restored.stop()
    finally:
        algo.stop()


def test_an_algorithm_records_its_training_and_evaluation_episodes(tmp_path):
    from rljax.algorithms.ppo import PPOConfig

    episodes = []
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .callbacks(
            on_episode_end=lambda episode, env_runner, **kw: (
                None if env_runner.config.in_evaluation else episodes.append(len(episode))
            )
        )
        .offline_data(
            output=f"local://{tmp_path}",
            output_max_rows_per_file=100,
            output_write_remaining_data=True,
            output_write_episodes=False,  # rows of env steps
        )
        .evaluation(evaluation_duration=2)
        .build_algo()
    )
    try:
        result = algo.train()
        evaluation = algo.evaluate()["env_runners"]
    finally:
        algo.stop()
    trained = result["env_runners"]["num_episodes"]
    assert trained == len(episodes) > 0
    data = read_offline_data(str(tmp_path), algo.observation_space, algo.action_space)
    assert data.episode_index.max() + 1 == trained + 2
    assert data.num_rows == sum(episodes) + evaluation["episode_len_mean"] * 2
    assert data.terminateds.sum() + data.truncateds.sum() == trained + 2  # one end each
    # Each episode's rows chain: a row's new_obs is the next row's obs.
    same = data.episode_index[1:] == data.episode_index[:-1]
    np.testing.assert_array_equal(data.new_obs[:-1][same], data.obs[1:][same])
    assert len(list(tmp_path.glob("*.parquet"))) == -(-data.num_rows // 100)


def test_recording_is_refused_where_it_cannot_record(tmp_path):
    from rljax.algorithms.ppo import PPOConfig
    from rljax.connectors.env_to_module import MeanStdFilter
    from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole

    with pytest.raises(ConfigError, match="one with env-to-module connectors"):
        (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(env_to_module_connector=lambda env, spaces, device: MeanStdFilter())
            .offline_data(output=str(tmp_path))
            .build_algo()
        )

    with pytest.raises(ConfigError, match="records single-agent runs"):
        (
            PPOConfig()
            .environment(MultiAgentCartPole, env_config={"num_agents": 2})
            .multi_agent(policies={"p0"}, policy_mapping_fn=lambda aid, *a, **k: "p0")
            .offline_data(output=str(tmp_path))
            .build_algo()
        )


def test_by_default_each_train_and_evaluate_writes_a_file(tmp_path):
    from rljax.algorithms.ppo import PPOConfig

    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .offline_data(output=str(tmp_path))  # RLlib's defaults for the rest
        .evaluation(evaluation_duration=2)
        .build_algo()
    )
    try:
        trained = algo.train()["env_runners"]["num_episodes"]
        assert len(list(tmp_path.glob("*.parquet"))) == 1
        algo.evaluate()
        assert len(list(tmp_path.glob("*.parquet"))) == 2
    finally:
        algo.stop()
    assert len(list(tmp_path.glob("*.parquet"))) == 2  # nothing was pending
    # RLlib's output_write_episodes=True: one row per episode, its state in an item column.
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path)
    assert table.column_names == ["item"] and table.num_rows == trained + 2
    data = read_offline_data(str(tmp_path), algo.observation_space, algo.action_space)
    assert data.episode_index.max() + 1 == trained + 2
    assert data.terminateds.sum() + data.truncateds.sum() == trained + 2


@pytest.mark.parametrize("episodes", [False, True], ids=["rows", "episodes"])
def test_recorded_box_actions_are_those_the_env_took(tmp_path, episodes):
    from types import SimpleNamespace

    from rljax.env.single_agent_episode import SingleAgentEpisode
    from rljax.offline import EpisodeRecorder

    box = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    config = SimpleNamespace(
        output=str(tmp_path),
        output_max_rows_per_file=None,
        output_write_remaining_data=False,
        output_write_episodes=episodes,
        clip_actions=True,
    )
    recorder = EpisodeRecorder(config, OBS, box)
    episode = SingleAgentEpisode()
    episode.add_env_reset(np.zeros(2, np.float32), {})
    episode.add_env_step(np.ones(2, np.float32), np.array([3.3], np.float32), 1.0, {})
    episode.add_env_step(
        np.ones(2, np.float32), np.array([-0.5], np.float32), 1.0, {}, terminated=True
    )
    recorder.on_episode_end(episode=episode)  # a training episode: the policy's actions
    recorder.end_of_sampling()
    data = read_offline_data(str(tmp_path), OBS, box)
    np.testing.assert_allclose(data.actions[:, 0], [2.0, -0.5])  # sampled 3.3, clipped to 2.0


class _CountsFromOne(gym.Env):
    """Actions 1 and 2 (``Discrete(2, start=1)``); the env asserts it gets one of them."""

    observation_space = OBS
    action_space = gym.spaces.Discrete(2, start=1)

    def __init__(self, config=None):
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        assert self.action_space.contains(action), f"{action!r} is outside {self.action_space}"
        self.t += 1
        return np.zeros(2, np.float32), float(action == 2), False, self.t >= 5, {}


@pytest.mark.parametrize(
    ("algo_name", "training"),
    [("PPO", {"minibatch_size": 32, "num_epochs": 1}), ("SAC", {}), ("DQN", {})],
    ids=["PPO", "SAC", "DQN"],
)
@pytest.mark.slow  # several seconds of compiling: in the full run, not the fast tier
def test_a_discrete_space_counting_from_one_gets_its_own_actions(algo_name, training):
    # The policy's index i is the env's start + i.
    from rljax.algorithms.registry import config_class

    algo = (
        config_class(algo_name)()
        .environment(_CountsFromOne)
        .training(train_batch_size_per_learner=32, **training)
        .reporting(min_sample_timesteps_per_iteration=40)
        .debugging(seed=0)
        .build_algo()
    )
    try:
        algo.train()  # the env asserts each action it gets
        assert algo.compute_single_action(np.zeros(2, np.float32), explore=False) in (1, 2)
    finally:
        algo.stop()


def test_a_discrete_space_counting_from_one_records_its_own_actions(tmp_path):
    from rljax.algorithms.ppo import PPOConfig

    algo = (
        PPOConfig()
        .environment(_CountsFromOne)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .offline_data(output=str(tmp_path))
        .evaluation(evaluation_duration=2)
        .build_algo()
    )
    try:
        algo.train()  # the env asserts each action it gets
        algo.evaluate()
        assert algo.compute_single_action(np.zeros(2, np.float32), explore=False) in (1, 2)
    finally:
        algo.stop()
    import pyarrow.parquet as pq

    from rljax.utils.safe_io import unpack_msgpack_numpy

    recorded = [  # RLlib's episode files (the default): the actions of each episode's state
        int(a)
        for item in pq.read_table(tmp_path).column("item").to_pylist()
        for a in unpack_msgpack_numpy(item, "test")["actions"]["data"]
    ]
    assert set(recorded) <= {1, 2} and len(recorded) > 10  # training's and evaluation's steps
    data = read_offline_data(str(tmp_path), OBS, _CountsFromOne.action_space)
    assert set(data.actions.tolist()) <= {0, 1}  # the policy's indexes again
