"""Learning thresholds and the fused path's compile/determinism properties."""

import pathlib

import flax.linen as nn
import jax
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.core.rl_module.rl_module import RLModuleSpec

TUNED = pathlib.Path(__file__).parents[2] / "rljax" / "tuned_examples"


@pytest.mark.slow
def test_ppo_envpool_cartpole_reaches_450_within_150k_steps(train_until):
    algo = PPOConfig.from_yaml(TUNED / "ppo_cartpole.yaml").build_algo()
    try:
        assert algo.fused
        result = train_until(algo, 450, 150_000)
        assert result["env_runners"]["episode_return_mean"] >= 450, result["env_runners"]
        assert result["num_env_steps_sampled_lifetime"] <= 150_000
        # One compilation of the fused rollout+update, however many iterations ran.
        assert algo._train_step._cache_size() == 1
        evaluation = algo.evaluate()["env_runners"]
        assert evaluation["episode_return_mean"] >= 400
    finally:
        algo.stop()


@pytest.mark.xla_optimized  # 500k env steps of running: measured 23 s of CPU, 42 s without
@pytest.mark.slow
def test_ppo_at_purejaxrl_settings_reaches_and_holds_450_within_500k_steps():
    # PureJaxRL's CartPole defaults with its value loss (ppo_cartpole_purejaxrl.yaml: the
    # prediction clipped, vf_clip_mode="prediction"), scored as PureJaxRL scores: the mean
    # return of the episodes finished per 25k env steps. With that clipping seeds 0-5 all held
    # 498-500 in every window from 300k env steps on, on an AMD EPYC (benchmarks/README.md,
    # purejaxrl_parity.py); without it (the value loss unclipped) seed 0 peaked at 493 and ended
    # at 160. Float details move runs between CPUs, so what is checked leaves room: a window
    # past 450, the last 100k env steps at 450 on average, and the rate annealed to 0 (the last
    # update's: 2.5e-4 x (1 - 499,712 / 500,000)).
    algo = PPOConfig.from_yaml(TUNED / "ppo_cartpole_purejaxrl.yaml").build_algo()
    windows: dict[int, list[float]] = {}
    try:
        while algo.num_env_steps_sampled_lifetime < 500_000:
            result = algo.train()
            window = result["num_env_steps_sampled_lifetime"] // 25_000
            windows.setdefault(window, []).extend(algo.episodes.returns)
        learner = result["learners"]["default_policy"]
        assert learner["default_optimizer_learning_rate"] == pytest.approx(1.44e-7, rel=1e-3)
    finally:
        algo.stop()
    means = [float(np.mean(v)) for _, v in sorted(windows.items()) if v]
    assert len(means) >= 20 and max(means) >= 450 and np.mean(means[-4:]) >= 450, means


@pytest.mark.slow
def test_fused_path_is_deterministic():
    # Same config and seed: the same losses, returns and parameters, bit for bit, over 5
    # iterations.
    def run():
        cfg = PPOConfig.from_yaml(TUNED / "ppo_cartpole.yaml").env_runners(
            num_envs_per_env_runner=8
        )
        algo = cfg.training(
            train_batch_size_per_learner=512, minibatch_size=128, num_epochs=2
        ).build_algo()
        results = [algo.train() for _ in range(5)]
        out = [
            (
                r["learners"]["default_policy"]["policy_loss"],
                r["env_runners"]["episode_return_mean"],
            )
            for r in results
        ]
        params = jax.device_get(algo.state.params)
        algo.stop()
        return out, params

    (a, pa), (b, pb) = run(), run()
    assert a == b
    assert all(jax.tree.leaves(jax.tree.map(np.array_equal, pa, pb)))


class SeparateHeads(nn.Module):
    """The tutorial's custom model: two shared 64-unit layers, separate policy and value heads."""

    num_outputs: int
    hidden: int = 64

    @nn.compact
    def __call__(self, obs):
        x = nn.relu(nn.Dense(self.hidden, name="fc1")(obs))
        x = nn.relu(nn.Dense(self.hidden, name="fc2")(x))
        logits = nn.Dense(self.num_outputs, name="fc3")(x)
        value = nn.Dense(1, name="value_fc")(x)[..., 0]
        return logits, value


@pytest.mark.slow
def test_user_flax_module_plugs_in_and_learns(train_until):
    cfg = PPOConfig.from_yaml(TUNED / "ppo_cartpole.yaml").rl_module(
        rl_module_spec=RLModuleSpec(module_class=SeparateHeads, model_config={"hidden": 64})
    )
    algo = cfg.build_algo()
    try:
        names = set(algo.state.params["default_policy"]["params"])
        assert names == {"fc1", "fc2", "fc3", "value_fc"}
        result = train_until(algo, 300, 150_000)
        assert result["env_runners"]["episode_return_mean"] >= 300
    finally:
        algo.stop()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["SYNC", "ASYNC"])
def test_ppo_gymnasium_cartpole_learns(mode, train_until):
    import gymnasium as gym

    import rljax

    rljax.register_env("gym-cartpole", lambda cfg: gym.make("CartPole-v1"))
    cfg = (
        PPOConfig.from_yaml(TUNED / "ppo_cartpole.yaml")
        .environment("gym-cartpole")
        .env_runners(num_envs_per_env_runner=8, gym_env_vectorize_mode=mode)
        .training(train_batch_size_per_learner=2048, minibatch_size=128, num_epochs=6)
    )
    algo = cfg.build_algo()
    try:
        assert not algo.fused
        result = train_until(algo, 200, 60_000)
        assert result["env_runners"]["episode_return_mean"] >= 200, result["env_runners"]
    finally:
        algo.stop()


@pytest.mark.slow
def test_ppo_pendulum_improves(train_until):
    algo = PPOConfig.from_yaml(TUNED / "ppo_pendulum.yaml").build_algo()
    try:
        first = algo.train()["env_runners"]["episode_return_mean"]
        result = train_until(algo, -400, 300_000)
        last = result["env_runners"]["episode_return_mean"]
        assert last > first + 400 and last > -700, (first, last)
    finally:
        algo.stop()


@pytest.mark.slow
def test_atari_gets_the_nature_cnn_and_standard_preprocessing():
    algo = (
        PPOConfig()
        .environment("Pong-v5")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=16)
        # One rollout (4 envs x 16 steps) and two minibatches: what runs the network and the
        # preprocessing end to end (the default batch, 4,000 rows, only repeats them).
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .debugging(seed=0)
        .build_algo()
    )
    try:
        assert algo.fused and algo.observation_space.shape == (84, 84, 4)
        assert algo.observation_space.dtype == np.uint8
        encoder = algo.state.params["default_policy"]["params"]["pi_encoder"]
        assert [encoder[f"Conv_{i}"]["kernel"].shape for i in range(3)] == [
            (8, 8, 4, 32),
            (4, 4, 32, 64),
            (3, 3, 64, 64),
        ]
        assert algo._env.config["episodic_life"] and algo._env.config["reward_clip"]
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] > 50
        assert np.isfinite(result["learners"]["default_policy"]["policy_loss"])
        assert algo.compute_single_action(np.zeros((84, 84, 4), np.uint8)) in range(6)
    finally:
        algo.stop()
