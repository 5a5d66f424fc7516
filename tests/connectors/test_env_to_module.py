"""Env-to-module connectors: MeanStdFilter's statistics and transform by hand and against
numpy, the learner training on what the policy acted on, and the filter through the fused
path, runner threads, checkpoints, inference and export."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.appo import APPOConfig
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.on_policy import connected_update
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.losses import PPOBatch
from rljax.connectors.env_to_module import EnvToModulePipeline, MeanStdFilter
from rljax.core.rl_module.rl_module import RLModule
from rljax.utils.errors import ConfigError


def _box(*shape: int) -> gym.spaces.Box:
    return gym.spaces.Box(-np.inf, np.inf, shape, np.float32)


def test_statistics_equal_numpy_over_the_stream_whatever_the_merges():
    """Three runners' batches, with masked rows, folded in an interleaved order: the count,
    mean and (sample) standard deviation are numpy's over the real rows."""
    f = MeanStdFilter()
    rng = np.random.default_rng(0)
    state = f.init_state(_box(3))
    seen = []
    for i in range(9):
        n = (5, 64, 1)[i % 3]  # uneven batches, one of a single row
        x = rng.normal([1.0, -20.0, 300.0], [0.5, 3.0, 40.0], (n, 3)).astype(np.float32)
        mask = rng.uniform(size=n) < 0.8
        mask[0] = True
        state = f.update(state, jnp.asarray(x), jnp.asarray(mask))
        seen.append(x[mask])
    allx = np.concatenate(seen).astype(np.float64)
    assert int(state["count"]) == len(allx)
    np.testing.assert_allclose(state["mean"], allx.mean(0), rtol=1e-5)
    np.testing.assert_allclose(f.std(state), allx.std(0, ddof=1), rtol=1e-4)


def test_transform_by_hand():
    f = MeanStdFilter()
    s0 = f.init_state(_box(2))
    x = jnp.asarray([[4.0, -7.0]])
    np.testing.assert_array_equal(f.transform(s0, x), x)  # no statistics yet: unchanged
    s1 = f.update(s0, jnp.asarray([[3.0, -2.0]]), jnp.asarray([True]))
    # One row: mean [3, -2], std |mean| (RLlib's RunningStat): (4-3)/3, (-7+2)/2
    np.testing.assert_allclose(f.transform(s1, x), [[1 / 3, -2.5]], rtol=1e-6)
    s2 = f.update(s1, jnp.asarray([[1.0, 0.0], [5.0, 2.0]]), jnp.asarray([True, True]))
    # Rows 3, 1, 5 and -2, 0, 2: means 3 and 0, sample stds 2 and 2.
    np.testing.assert_allclose(s2["mean"], [3.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(f.std(s2), [2.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(f.transform(s2, x), [[0.5, -3.5]], rtol=1e-6)
    clipped = MeanStdFilter(clip_by_value=3.0).transform(s2, x)
    np.testing.assert_allclose(clipped, [[0.5, -3.0]], rtol=1e-6)
    std_only = MeanStdFilter(de_mean_to_zero=False).transform(s2, x)
    np.testing.assert_allclose(std_only, [[2.0, -3.5]], rtol=1e-6)
    frozen = MeanStdFilter(update_stats=False)
    assert frozen.update(s2, x, jnp.asarray([True])) is s2


def test_the_update_trains_on_the_observations_as_the_policy_saw_them():
    """The learner's batch is normalised with the statistics the runners acted with (those
    before the batch); the statistics learn the batch's real rows afterwards."""
    f = MeanStdFilter()
    pipeline = EnvToModulePipeline((f,), _box(1))
    before = (f.update(f.init_state(_box(1)), jnp.asarray([[0.0], [4.0]]), jnp.ones(2, bool)),)
    seen = {}

    class State:
        def __init__(self, connectors):
            self.connectors = connectors

        def replace(self, connectors):
            return State(connectors)

    def update(state, batch):
        seen["obs"] = batch.obs
        return state, {}

    raw = jnp.asarray([[[6.0], [2.0], [100.0]]])  # [D=1, n=3, 1]
    mask = jnp.asarray([[1.0, 1.0, 0.0]])
    batch = PPOBatch(raw, *([None] * 6), mask)
    state, _ = connected_update(update, pipeline)(State(before), batch)
    # mean 2, sample std sqrt(8): (6-2)/sqrt(8), 0, and 100 clipped at 10.
    np.testing.assert_allclose(seen["obs"][0, :, 0], [4 / np.sqrt(8), 0.0, 10.0], rtol=1e-6)
    np.testing.assert_allclose(state.connectors[0]["mean"], [3.0])  # 0, 4, 6, 2
    assert int(state.connectors[0]["count"]) == 4


def _config(**runners) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, **runners)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .debugging(seed=0)
    )


@pytest.fixture(scope="module")
def filtered(tmp_path_factory):
    """Fused PPO on CartPole with RLlib's function form of the setting, two iterations."""
    config = _config(
        env_to_module_connector=lambda env, spaces, device: MeanStdFilter(clip_by_value=5.0)
    )
    algo = config.build_algo()
    for _ in range(2):
        result = algo.train()
    ckpt = algo.save_to_path(tmp_path_factory.mktemp("ckpt") / "ckpt")
    yield algo, result, ckpt
    algo.stop()


def _by_hand(algo: Algorithm, obs: np.ndarray) -> np.ndarray:
    """Greedy actions from the module on observations normalised with numpy."""
    s = jax.device_get(algo.state.connectors[0])
    n = int(s["count"])
    std = np.sqrt(s["m2"] / (n - 1))
    x = np.clip((obs - s["mean"]) / (std + 1e-8), -5.0, 5.0).astype(np.float32)
    logits, _ = algo.module.apply(algo.state.params["default_policy"], x)
    return np.asarray(jnp.argmax(logits, -1))


def test_the_fused_path_learns_the_statistics_and_inference_applies_them(filtered, tmp_path):
    algo, result, ckpt = filtered
    assert algo.fused
    s = algo.state.connectors[0]
    # Every real row of both batches, once.
    assert int(s["count"]) == result["num_env_steps_trained_lifetime"] > 400
    assert algo.config.to_dict()["env_to_module_connector"] == [
        {
            "type": "MeanStdFilter",
            "multi_agent": False,
            "de_mean_to_zero": True,
            "de_std_to_one": True,
            "clip_by_value": 5.0,
            "update_stats": True,
        }
    ]
    obs = np.random.default_rng(1).normal(0, 0.3, (64, 4)).astype(np.float32)
    expected = _by_hand(algo, obs)
    assert 0 < expected.mean() < 1  # the normalisation decides some actions
    np.testing.assert_array_equal(algo.compute_actions(obs), expected)
    assert algo.compute_single_action(obs[3]) == expected[3]
    np.testing.assert_array_equal(
        algo.get_module().forward_inference({"obs": obs})["actions"], expected
    )
    # The checkpoint holds the statistics; the module loaded for inference applies them.
    restored = Algorithm.from_checkpoint(ckpt)
    jax.tree.map(np.testing.assert_array_equal, restored.state.connectors, algo.state.connectors)
    np.testing.assert_array_equal(restored.compute_actions(obs), expected)
    restored.stop()
    module = RLModule.from_checkpoint(ckpt)
    np.testing.assert_array_equal(module.forward_inference(obs)["actions"], expected)
    # The exported program has them as constants.
    from jax import export

    algo.export_policy(tmp_path / "p", platforms=("cpu",))
    program = export.deserialize((tmp_path / "p" / "policy_greedy.stablehlo").read_bytes())
    np.testing.assert_array_equal(np.asarray(program.call(obs)), expected)


@pytest.mark.slow  # integration: in the README's full run
def test_runner_threads_merge_every_runners_rows():
    algo = _config(num_env_runners=2, env_to_module_connector=[MeanStdFilter()]).build_algo()
    try:
        for _ in range(2):
            result = algo.train()
        s = algo.state.connectors[0]
        assert int(s["count"]) == result["num_env_steps_trained_lifetime"] > 400
        # CartPole's pole angle stays small; its velocities spread: the statistics say so.
        assert np.all(np.isfinite(np.asarray(s["m2"])))
        std = np.asarray(MeanStdFilter.std(s))
        assert std[2] < std[3]
    finally:
        algo.stop()


def test_appo_takes_the_older_one_argument_form():
    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_envs_per_env_runner=4,
            rollout_fragment_length=32,
            env_to_module_connector=lambda env: [MeanStdFilter(clip_by_value=None)],
        )
        .training(train_batch_size_per_learner=128)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        result = algo.train()
        assert int(algo.state.connectors[0]["count"]) == result["num_env_steps_trained_lifetime"]
    finally:
        algo.stop()


def test_what_cannot_take_connectors_is_refused_by_name():
    with pytest.raises(ConfigError, match="DQN takes no connectors"):
        DQNConfig().environment("CartPole-v1").env_runners(
            env_to_module_connector=MeanStdFilter()
        ).build_algo()
    with pytest.raises(ConfigError, match="unknown arguments \\['clip'\\]"):
        MeanStdFilter(clip=5)
    with pytest.raises(ConfigError, match="use a function"):
        _config(env_to_module_connector="MeanStdFilter").validate()
    with pytest.raises(ConfigError, match="returned 3"):
        _config(env_to_module_connector=lambda env, spaces, device: 3).build_algo()
    with pytest.raises(
        ConfigError,
        match="is not a connector.*'FlattenObservations', 'FrameStackingEnvToModule', "
        "'MeanStdFilter', 'NumpyToTensor', 'PrevActionsPrevRewards'",
    ):
        _config(env_to_module_connector=[{"type": "Nope"}]).validate()
    from rljax.connectors.env_to_module import FrameStackingEnvToModule, PrevActionsPrevRewards

    with pytest.raises(ConfigError, match=r"num_frames=0 \(int\); it takes an int >= 1"):
        FrameStackingEnvToModule(num_frames=0)
    with pytest.raises(ConfigError, match="multi_agent=True"):
        PrevActionsPrevRewards(multi_agent=True)
    with pytest.raises(ConfigError, match="normalises Box observations"):
        MeanStdFilter().check_space(gym.spaces.Discrete(3))


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (9 s alone)
def test_flatten_observations_by_hand_and_composed_with_the_filter():
    from rljax.connectors.env_to_module import FlattenObservations
    from rljax.env.spaces import zeros_batch
    from rljax.examples.envs.classes.random_env import RandomEnv

    space = gym.spaces.Dict(
        {
            "b": gym.spaces.Box(-1, 1, (2, 2), np.float32),
            "a": gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.MultiDiscrete([2, 2]))),
        }
    )
    f = FlattenObservations()
    assert f.output_space(space).shape == (3 + 4 + 4,)
    state = f.init_state(space)
    obs = jax.tree.map(jnp.asarray, zeros_batch(space, 2))
    obs = {"a": (jnp.asarray([2, 0]), jnp.asarray([[1, 0], [0, 1]])), "b": obs["b"] + 0.5}
    out = np.asarray(f.transform(state, obs))
    # Keys sorted: a's Discrete(3) one-hot, its MultiDiscrete one-hots, then b flattened.
    np.testing.assert_array_equal(out[0], [0, 0, 1, 0, 1, 1, 0, 0.5, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(out[1], [1, 0, 0, 1, 0, 0, 1, 0.5, 0.5, 0.5, 0.5])
    # In a PPO run: flattened, then normalised; the module reads the 11-wide vector.
    config = (
        PPOConfig()
        .environment(RandomEnv, env_config={"observation_space": space, "max_episode_len": 10})
        .env_runners(
            num_envs_per_env_runner=2,
            env_to_module_connector=lambda env, spaces, device: [
                FlattenObservations(),
                MeanStdFilter(),
            ],
        )
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        result = algo.train()
        flat_state = algo.state.connectors[1]
        assert flat_state["mean"].shape == (11,)
        assert int(flat_state["count"]) == result["num_env_steps_trained_lifetime"]
        kernel = algo.state.params["default_policy"]["params"]["pi_encoder"]["Dense_0"]["kernel"]
        assert kernel.shape == (11, 8)
        assert algo.config.to_dict()["env_to_module_connector"][0] == {
            "type": "FlattenObservations",
            "multi_agent": False,
        }
        assert algo.compute_single_action(space.sample()) in (0, 1)
