"""RLlib's ``SingleAgentEnvRunner`` on its own (``rljax.env.single_agent_env_runner``): a
config's envs and module outside an algorithm, as RLlib's docs use it to collect episodes."""

from __future__ import annotations

import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.env.single_agent_env_runner import SingleAgentEnvRunner
from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole
from rljax.utils.errors import ConfigError


def _config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3)
    )


def test_episodes_chunks_and_metrics():
    """Was: no such class (an ImportError at RLlib's path)."""
    runner = SingleAgentEnvRunner(config=_config())
    try:
        assert runner.num_envs == 2 and runner.module.observation_space.shape == (4,)
        episodes = runner.sample(num_episodes=3)
        assert len(episodes) >= 3 and all(e.is_done for e in episodes)
        for e in episodes:  # CartPole pays 1 a step; each episode from its reset
            assert e.t_started == 0 and e.get_return() == len(e) >= 8
            assert len(e.get_observations()) == len(e) + 1
        # Timesteps after episodes start new episodes (RLlib's: the open ones are dropped).
        # Was: the episodes left open went on, so 50 steps came back as 70-odd. Every sub-env
        # steps at once, so the last step may pass the count by one (as RLlib's).
        first = runner.sample(num_timesteps=50, random_actions=True)
        assert 50 <= sum(len(e) for e in first) <= 51 and all(e.t_started == 0 for e in first)
        # Unfinished episodes come back as chunks and go on in the next call.
        open_ = {e.id_: e for e in first if not e.is_done}
        assert open_
        second = runner.sample(num_timesteps=10, random_actions=True)
        assert 10 <= sum(len(e) for e in second) <= 11
        went_on = [e for e in second if e.id_ in open_]
        assert went_on
        for e in went_on:
            before = open_[e.id_]
            assert e.t_started == before.t
            np.testing.assert_array_equal(e.get_observations(0), before.get_observations(-1))
        metrics = runner.get_metrics()
        steps_taken = sum(len(e) for e in [*episodes, *first, *second])
        assert metrics["num_env_steps_sampled"] >= steps_taken
        assert metrics["num_episodes"] >= len(episodes)
    finally:
        runner.stop()


def test_sample_with_no_count_takes_a_fragment_per_env_copy_as_rllibs():
    """RLlib's default: ``rollout_fragment_length`` env steps per env copy, unfinished
    episodes as chunks; with ``batch_mode="complete_episodes"``, one episode per env copy.
    Was: always whole episodes (36 env steps here where RLlib takes 14)."""
    config = _config().env_runners(rollout_fragment_length=7)
    runner = SingleAgentEnvRunner(config=config)
    try:
        chunks = runner.sample()
        assert 14 <= sum(len(e) for e in chunks) <= 15  # 7 x 2, the last step may pass it
        assert not all(e.is_done for e in chunks)
        with pytest.raises(ValueError, match="give one of them"):
            runner.sample(num_timesteps=5, num_episodes=1)
    finally:
        runner.stop()
    # After stop() the envs are closed: sample() says so (was: not checked).
    with pytest.raises(RuntimeError, match=r"sample\(\) after stop\(\)"):
        runner.sample(num_timesteps=5)
    runner.make_env()  # RLlib's: builds the envs again
    try:
        assert sum(len(e) for e in runner.sample(num_timesteps=4)) >= 4
    finally:
        runner.stop()
    whole = SingleAgentEnvRunner(config=config.env_runners(batch_mode="complete_episodes"))
    try:
        episodes = whole.sample()
        assert len(episodes) >= 2 and all(e.is_done and e.t_started == 0 for e in episodes)
    finally:
        whole.stop()


def test_greedy_sampling_acts_with_the_loaded_module():
    config = _config()
    runner = SingleAgentEnvRunner(config=config)
    algo = config.copy().debugging(seed=11).build_algo()
    try:
        weights = {"rl_module": algo.get_module().get_state()}
        runner.set_state(weights)
        obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
        np.testing.assert_array_equal(
            runner.module.forward_inference({"obs": obs})["action_dist_inputs"],
            algo.get_module().forward_inference({"obs": obs})["action_dist_inputs"],
        )
        (episode, *_) = runner.sample(num_episodes=1, explore=False)
        observations = np.asarray(episode.get_observations())[:-1]
        logits = algo.get_module().forward_inference({"obs": observations})["action_dist_inputs"]
        np.testing.assert_array_equal(episode.get_actions(), np.argmax(logits, -1))
        state = runner.get_state()
        assert set(state) == {"rl_module"}
        with pytest.raises(ValueError, match="'rl_module' entry"):
            runner.set_state({"weights": 1})
        with pytest.raises(ValueError, match=r"num_episodes=0.*at least 1"):
            runner.sample(num_episodes=0)
        with pytest.raises(TypeError, match="explore"):
            runner.sample(num_episodes=1, explore="no")
        with pytest.raises(TypeError, match=r"unexpected keywords \['num_episode'\]"):
            runner.sample(num_episode=1)
    finally:
        algo.stop()
        runner.stop()


def test_what_it_cannot_run_is_refused_before_anything_is_built():
    with pytest.raises(ConfigError, match="no env"):
        SingleAgentEnvRunner(config=PPOConfig())
    with pytest.raises(ConfigError, match="multi-agent"):
        SingleAgentEnvRunner(
            config=PPOConfig()
            .environment(MultiAgentCartPole, env_config={"num_agents": 2})
            .multi_agent(policies={"p0"}, policy_mapping_fn=lambda aid, *a, **kw: "p0")
        )
    with pytest.raises(ConfigError, match="written in JAX"):
        SingleAgentEnvRunner(config=PPOConfig().environment("rljax:Pendulum-v1"))
    with pytest.raises(TypeError, match="algorithm config"):
        SingleAgentEnvRunner(config={"env": "CartPole-v1"})
    with pytest.raises(TypeError, match=r"unexpected keywords \['num_env'\]"):
        SingleAgentEnvRunner(config=_config(), num_env=2)


def test_env_runner_cls_names_the_default_runners_as_rllibs_configs_do():
    """RLlib's configs pass ``env_runner_cls=SingleAgentEnvRunner`` (or the multi-agent one):
    the default runners, accepted; another class is refused. Was: both refused."""
    from rljax.env.multi_agent_env_runner import MultiAgentEnvRunner

    assert _config().env_runners(env_runner_cls=SingleAgentEnvRunner).validate() is None
    PPOConfig().env_runners(env_runner_cls=MultiAgentEnvRunner)
    with pytest.raises(ConfigError, match="env_runner_cls=.*rljax's env runners"):
        PPOConfig().env_runners(env_runner_cls=dict)
    with pytest.raises(ConfigError, match="MultiAgentEnvRunner on its own is not built"):
        MultiAgentEnvRunner(config=_config())
