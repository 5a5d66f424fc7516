"""RLlib's SingleAgentObservationPreprocessor, subclassed as RLlib's example does: NumPy code run
on the host through a callback, or array code traced into the program; by hand, inside PPO's
act step and update, and its errors before anything compiles."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.connectors.env_to_module import (
    EnvToModulePipeline,
    MultiAgentObservationPreprocessor,
    SingleAgentObservationPreprocessor,
)
from rljax.connectors.env_to_module.connector import build_env_to_module
from rljax.utils.errors import ConfigError

CARTPOLE = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)


class PositionsWithNumpy(SingleAgentObservationPreprocessor):
    """RLlib's example (single_agent_observation_preprocessor.py), with NumPy on one obs."""

    calls = 0

    def recompute_output_observation_space(self, input_observation_space, input_action_space):
        return gym.spaces.Box(-5.0, 5.0, (input_observation_space.shape[0] - 2,), np.float32)

    def preprocess(self, observation, episode):
        PositionsWithNumpy.calls += 1
        return np.array([observation[0], observation[2]], np.float32)


class PositionsTraced(PositionsWithNumpy):
    """The same with array indexing, which JAX traces."""

    def preprocess(self, observation, episode):
        return observation[::2] * 1.0


def _pipeline(preprocessor) -> EnvToModulePipeline:
    pipeline = build_env_to_module(
        lambda env, spaces, device: preprocessor, CARTPOLE, gym.spaces.Discrete(2)
    )
    assert pipeline is not None
    return pipeline


@pytest.mark.parametrize("cls", [PositionsWithNumpy, PositionsTraced], ids=["host", "traced"])
def test_positions_by_hand_in_and_out_of_jit(cls):
    pipeline = _pipeline(cls())
    assert pipeline.output_space.shape == (2,)
    assert pipeline.connectors[0].input_action_space == gym.spaces.Discrete(2)
    obs = jnp.asarray(
        [[[0.1, 1.0, -0.2, 2.0], [3.0, 4.0, 5.0, 6.0]]]
    )  # [1, 2, 4]: any leading dims
    expected = [[[0.1, -0.2], [3.0, 5.0]]]
    state = pipeline.init_state()
    np.testing.assert_allclose(jax.jit(pipeline.transform)(state, obs), expected, rtol=1e-6)
    np.testing.assert_allclose(pipeline.transform(state, obs), expected, rtol=1e-6)
    # Under vmap (a population's programs) too.
    stacked = jnp.stack([obs, obs + 1.0])
    out = jax.jit(jax.vmap(pipeline.transform, in_axes=(None, 0)))(state, stacked)
    np.testing.assert_allclose(out[1], np.asarray(expected) + 1.0, rtol=1e-6)
    assert pipeline.connectors[0]._on_host is (cls is PositionsWithNumpy)


class OneHot(SingleAgentObservationPreprocessor):
    """RLlib's docs' one-hot preprocessor: ``preprocess`` reads ``self.observation_space``."""

    def recompute_output_observation_space(self, input_observation_space, input_action_space):
        return gym.spaces.Box(0.0, 1.0, (input_observation_space.n,), np.float32)

    def preprocess(self, observation, episode):
        new_obs = np.zeros(shape=self.observation_space.shape, dtype=np.float32)
        new_obs[observation] = 1.0
        return new_obs


def test_a_preprocessor_reads_its_own_spaces_as_rllibs_docs_do():
    """Was: AttributeError: no attribute 'observation_space'."""
    piece = OneHot()
    pipeline = build_env_to_module(
        lambda env, spaces, device: piece, gym.spaces.Discrete(4), gym.spaces.Discrete(2)
    )
    assert pipeline is not None
    assert piece.observation_space == gym.spaces.Box(0.0, 1.0, (4,), np.float32)
    assert piece.input_observation_space == gym.spaces.Discrete(4)
    assert piece.action_space == gym.spaces.Discrete(2)
    out = pipeline.transform(pipeline.init_state(), jnp.asarray([2, 0]))
    np.testing.assert_array_equal(out, [[0, 0, 1, 0], [1, 0, 0, 0]])


@pytest.mark.parametrize("cls", [PositionsWithNumpy, PositionsTraced], ids=["host", "traced"])
def test_ppo_acts_and_learns_on_the_preprocessed_observations(cls):
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_env_runners=1,
            num_envs_per_env_runner=2,
            env_to_module_connector=lambda env, spaces, device: cls(),
        )
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
        .build_algo()
    )
    try:
        # The module sees two numbers per observation: its first layer has 2 inputs.
        kernels = {leaf.shape for leaf in jax.tree.leaves(algo.get_module().params)}
        assert (2, 8) in kernels and (4, 8) not in kernels, kernels
        PositionsWithNumpy.calls = 0
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] >= 64
        assert np.isfinite(result["learners"]["default_policy"]["total_loss"])
        # NumPy's version runs once per observation acted on (and per row of the update).
        if cls is PositionsWithNumpy:
            assert PositionsWithNumpy.calls >= 64
        else:
            assert PositionsWithNumpy.calls == 0
        # compute_single_action applies it to a raw 4-number observation as well.
        action = algo.compute_single_action(np.zeros(4, np.float32))
        assert int(action) in (0, 1)
    finally:
        algo.stop()


def test_errors_name_the_class_and_the_shapes_before_anything_compiles():
    class WrongShape(PositionsWithNumpy):
        def preprocess(self, observation, episode):
            return np.zeros(3, np.float32)

    with pytest.raises(ConfigError, match=r"WrongShape.preprocess returned .* \(3,\).*\(2,\)"):
        _pipeline(WrongShape())

    class ReadsTheEpisode(PositionsWithNumpy):
        def preprocess(self, observation, episode):
            return np.full(2, len(episode.get_observations()), np.float32)

    with pytest.raises(ConfigError, match=r"read episode\.get_observations.*no episode object"):
        _pipeline(ReadsTheEpisode())

    class NotABox(PositionsWithNumpy):
        def recompute_output_observation_space(self, input_observation_space, input_action_space):
            return gym.spaces.Discrete(3)

    with pytest.raises(ConfigError, match="NotABox.recompute_output_observation_space returned"):
        _pipeline(NotABox())

    with pytest.raises(ConfigError, match="takes observations of Dict"):
        _pipeline(PositionsWithNumpy()).connectors[0].check_space(gym.spaces.Dict({"a": CARTPOLE}))

    class Multi(MultiAgentObservationPreprocessor):
        pass

    with pytest.raises(ConfigError, match="Multi is a MultiAgentObservationPreprocessor"):
        _pipeline(Multi())  # it runs on multi-agent PPO (test_multi_agent_connectors.py)


def test_a_saved_config_names_the_class_and_does_not_import_it():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(env_to_module_connector=[PositionsWithNumpy()])
    )
    saved = config.to_dict()["env_to_module_connector"]
    assert saved == [
        {
            "type": "ObservationPreprocessor",
            "import": f"{__name__}:PositionsWithNumpy",
        }
    ]
    loaded = {"env": "CartPole-v1", "env_to_module_connector": saved}
    with pytest.raises(ConfigError, match="never imports code it names unless you opt in"):
        PPOConfig.from_dict(loaded)
    allowed = PPOConfig.from_dict(loaded, allow_imports=[__name__])
    assert type(allowed.env_to_module_connector[0]) is PositionsWithNumpy
    with pytest.raises(
        ConfigError,
        match="not a SingleAgentObservationPreprocessor, MultiAgentObservationPreprocessor or ConnectorV2 subclass",
    ):
        wrong = [{**saved[0], "import": f"{__name__}:_pipeline"}]
        PPOConfig.from_dict({**loaded, "env_to_module_connector": wrong}, allow_imports=[__name__])
