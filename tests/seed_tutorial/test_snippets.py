"""The RLlib tutorial's snippets (sections 4-6, RLlib 1.x's old Trainer API), each making the
snippet's own calls with only its imports rewritten (``ray.rllib.agents.X`` ->
``rljax.agents.X``, ``from ray import tune`` -> ``from rljax import tune``) and its gym loops on
gymnasium's API (``obs, info = env.reset()``; ``step`` returns five values; no ``render()``
without a render mode). ``ray.init()`` / ``ray.shutdown()`` are dropped (rljax starts nothing).

The fast tier runs each snippet's config with a small budget (``train_batch_size`` and PPO's
epochs, added and named in each test); the slow tier runs the snippets as written where
they train (4.1-4.2, 5.2, 5.3, 6.1's stop at 195) and the off-policy ones on a short budget.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rljax.agents.ppo import PPOTrainer
from rljax.utils.errors import ConfigError

# The budget the fast tests add to a snippet's config.
TINY = {"train_batch_size": 200, "sgd_minibatch_size": 100, "num_sgd_iter": 1}

# Section 4.1's config, as written.
CONFIG_4_1 = {
    "env": "CartPole-v1",
    "num_workers": 2,
    "framework": "torch",  # or "tf" for TensorFlow
    "num_gpus": 1,  # if there is a GPU
}


def play(act, episodes: int, seed: int = 0) -> list[float]:
    """4.3's loop on gymnasium's API: the return of each of ``episodes`` episodes."""
    env = gym.make("CartPole-v1")
    obs, info = env.reset(seed=seed)
    returns, total = [], 0.0
    while len(returns) < episodes:
        action = act(obs)
        assert action in (0, 1)
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            returns.append(total)
            total = 0.0
            obs, info = env.reset()
    env.close()
    return returns


@pytest.fixture(scope="module")
def trainer_4_1():
    """4.1's trainer, with the fast tier's budget."""
    trainer = PPOTrainer(config={**CONFIG_4_1, **TINY, "seed": 0})
    yield trainer
    trainer.stop()


# ---------------------------------------------------------------------- 4.1-4.4
def test_4_1_creates_the_trainer(trainer_4_1):
    from rljax.algorithms.ppo import PPO

    assert isinstance(trainer_4_1, PPO)
    assert trainer_4_1.config.num_env_runners == 2
    assert trainer_4_1.config.num_gpus_per_learner in (0, 1)  # 0 where JAX sees no GPU


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (6 s alone)
def test_4_2_trains_saves_and_restores(trainer_4_1, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trainer = trainer_4_1
    for _ in range(2):
        result = trainer.train()
        assert np.isfinite(result["episode_reward_mean"])
        assert result["episode_reward_mean"] == result["env_runners"]["episode_return_mean"]
    assert result["training_iteration"] == trainer.iteration
    assert result["timesteps_total"] == result["num_env_steps_sampled_lifetime"] >= 400
    assert (
        result["info"]["learner"]["default_policy"]["learner_stats"]["total_loss"]
        == (result["learners"]["default_policy"]["total_loss"])
    )
    path = trainer.save("ppo_cartpole")
    assert path == "ppo_cartpole" and (tmp_path / "ppo_cartpole").is_dir()

    restored = PPOTrainer(config={**CONFIG_4_1, **TINY, "seed": 1})
    try:
        before = restored.get_weights()["default_policy"]
        restored.restore("ppo_cartpole")
        after = restored.get_weights()["default_policy"]
        want = trainer.get_weights()["default_policy"]
        import jax

        assert any(
            not np.array_equal(a, b)
            for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(want), strict=True)
        )
        for a, b in zip(jax.tree.leaves(after), jax.tree.leaves(want), strict=True):
            np.testing.assert_array_equal(a, b)
        assert restored.iteration == trainer.iteration
    finally:
        restored.stop()


def test_4_3_uses_the_model(trainer_4_1):
    returns = play(trainer_4_1.compute_action, episodes=3)
    assert len(returns) == 3 and all(r >= 1 for r in returns)
    env = gym.make("CartPole-v1")
    with pytest.raises(TypeError, match=r"obs, info = env.reset\(\)"):
        trainer_4_1.compute_action(env.reset())  # gym's old obs = env.reset()
    obs, _ = env.reset(seed=0)
    assert trainer_4_1.compute_action(obs) == trainer_4_1.compute_single_action(obs)
    action, state, extra = trainer_4_1.get_policy().compute_single_action(obs)
    assert action == trainer_4_1.compute_action(obs) and state == [] and extra == {}


def test_4_4_evaluates_with_a_rollout_worker(trainer_4_1):
    from rljax.evaluation.rollout_worker import RolloutWorker
    from rljax.policy.policy import Policy  # the snippet's import

    trainer = trainer_4_1
    config = CONFIG_4_1
    rollout_worker = RolloutWorker(
        env_creator=lambda config: gym.make("CartPole-v1"),
        policy=trainer.get_policy(),
        config=config,
    )
    assert isinstance(trainer.get_policy(), Policy)
    total_reward = 0.0
    num_episodes = 3
    lengths = []
    for _ in range(num_episodes):
        episode_reward = 0.0
        obs, info = rollout_worker.env.reset()
        done = False
        steps = 0
        while not done:
            action = rollout_worker.compute_action(obs)
            obs, reward, terminated, truncated, info = rollout_worker.env.step(action)
            done = terminated or truncated
            episode_reward += reward
            steps += 1
        lengths.append(steps)
        total_reward += episode_reward
    assert total_reward == sum(lengths)  # CartPole pays 1 per step
    with pytest.raises(NotImplementedError, match=r"trainer\.evaluate\(\)"):
        rollout_worker.sample()
    with pytest.raises(ConfigError, match="trainer.get_policy"):
        RolloutWorker(env_creator=lambda c: gym.make("CartPole-v1"), policy=object)


def test_evaluate_has_the_old_and_new_keys(trainer_4_1):
    result = trainer_4_1.evaluate()
    assert result["episode_reward_mean"] == result["env_runners"]["episode_return_mean"]
    assert result["evaluation"]["episode_reward_mean"] == result["episode_reward_mean"]


# ---------------------------------------------------------------------- 5.1
def test_5_1_a_torch_model_ends_in_the_flax_form():
    # The snippet's imports (torch is not needed: the error comes before anything uses it).
    from rljax.models import ModelCatalog
    from rljax.models.torch.torch_modelv2 import TorchModelV2
    from rljax.utils.annotations import override

    class CustomModel(TorchModelV2):
        def __init__(self, obs_space, action_space, num_outputs, model_config, name):
            super().__init__(obs_space, action_space, num_outputs, model_config, name)

        @override(TorchModelV2)
        def forward(self, input_dict, state, seq_lens):
            raise AssertionError("never called")

        @override(TorchModelV2)
        def value_function(self):
            raise AssertionError("never called")

    config = {
        "env": "CartPole-v1",
        "model": {
            "custom_model": CustomModel,
        },
    }
    with pytest.raises(ConfigError) as e:
        PPOTrainer(config=config)
    msg = str(e.value)
    assert "CustomModel is a TorchModelV2" in msg
    assert "class CustomModel(nn.Module)" in msg
    assert 'ModelCatalog.register_custom_model("my_model", CustomModel)' in msg
    with pytest.raises(ConfigError, match="is a TorchModelV2"):
        ModelCatalog.register_custom_model("torch_one", CustomModel)
    with pytest.raises(ConfigError, match="is a TorchModelV2"):
        CustomModel(None, None, 2, {}, "m")


def flax_example() -> dict:
    """The namespace of the Flax code the 5.1 error shows, run."""
    from rljax.models import ModelCatalog
    from rljax.models.torch.torch_modelv2 import FLAX_EXAMPLE

    namespace: dict = {}
    exec(FLAX_EXAMPLE, namespace)
    assert ModelCatalog.get_custom_model("my_model") is namespace["CustomModel"]
    return namespace


def test_5_1_the_flax_counterpart_is_the_module_spec():
    from rljax.agents import trainer_class

    namespace = flax_example()
    config = {**namespace["config"], "model": {**namespace["config"]["model"]}}
    config["model"]["custom_model_config"] = {}
    c = trainer_class("PPO").to_config(config)
    assert c.rl_module_spec.module_class is namespace["CustomModel"]
    assert c.rl_module_spec.model_config == {}


@pytest.mark.slow
def test_5_1_the_flax_counterpart_trains():
    namespace = flax_example()
    config = {**namespace["config"], **TINY, "seed": 0}
    trainer = PPOTrainer(config=config)
    try:
        assert trainer.config.rl_module_spec.module_class is namespace["CustomModel"]
        result = trainer.train()
        assert np.isfinite(result["info"]["learner"]["default_policy"]["total_loss"])
        import jax

        shapes = sorted(
            np.shape(x) for x in jax.tree.leaves(trainer.get_weights()["default_policy"])
        )
        # Dense 4->64, 64->64, 64->2 (policy), 64->1 (value): the tutorial's network.
        assert shapes == sorted([(4, 64), (64,), (64, 64), (64,), (64, 2), (2,), (64, 1), (1,)])
        assert play(trainer.compute_action, episodes=1)[0] >= 1
    finally:
        trainer.stop()


def test_custom_model_unregistered_and_not_flax():
    with pytest.raises(ConfigError, match="'nope' is not registered"):
        PPOTrainer(config={"env": "CartPole-v1", "model": {"custom_model": "nope"}})
    with pytest.raises(ConfigError, match="not a flax.linen.Module"):
        PPOTrainer(config={"env": "CartPole-v1", "model": {"custom_model": dict}})


# ---------------------------------------------------------------------- 5.2
def config_5_2(tune):
    return {
        "env": "CartPole-v1",
        "num_workers": 2,
        "framework": "torch",
        "learning_rate": tune.grid_search([1e-3, 5e-4, 1e-4]),
        "num_sgd_iter": tune.choice([3, 5, 10]),
        "sgd_minibatch_size": tune.choice([32, 64, 128]),
    }


def test_5_2_as_written_is_refused_before_any_trial(tmp_path):
    from rljax import tune

    with pytest.raises(ConfigError) as e:
        tune.run(
            PPOTrainer,
            config=config_5_2(tune),
            stop={"episode_reward_mean": 195},
            num_samples=1,
            metric="episode_reward_mean",
            mode="max",
            storage_path=str(tmp_path),
        )
    assert "'learning_rate' is unknown (did you mean 'lr'?)" in str(e.value)
    assert not any(tmp_path.iterdir())  # nothing ran


@pytest.mark.slow
def test_5_2_finds_the_best_config(tmp_path):
    from rljax import tune

    config = config_5_2(tune)
    config["lr"] = config.pop("learning_rate")  # the tutorial's typo: RLlib calls it lr
    config["train_batch_size"] = 256  # budget
    analysis = tune.run(
        PPOTrainer,
        config=config,
        stop={"episode_reward_mean": 195, "training_iteration": 2},
        num_samples=1,
        metric="episode_reward_mean",
        mode="max",
        local_dir=str(tmp_path),
        verbose=0,
    )
    trials = analysis.trials
    assert len(trials) == 3
    assert sorted(t.config["lr"] for t in trials) == [1e-4, 5e-4, 1e-3]
    best = max(trials, key=lambda t: t.metrics["episode_reward_mean"])
    assert analysis.best_config == best.config
    assert analysis.best_result["episode_reward_mean"] == best.metrics["episode_reward_mean"]
    assert analysis.best_config["num_sgd_iter"] in (3, 5, 10)
    assert analysis.best_config["sgd_minibatch_size"] in (32, 64, 128)
    assert (
        analysis.get_best_config("episode_reward_mean", "min")
        == min(trials, key=lambda t: t.metrics["episode_reward_mean"]).config
    )
    assert all(t.metrics["training_iteration"] <= 2 for t in trials)


def test_tune_run_by_name_with_old_keys_picks_the_old_trainer():
    from rljax.agents.ppo import PPOTrainer as Trainer
    from rljax.tune.tuner import _old_api_trainable

    assert _old_api_trainable("PPO", {"num_sgd_iter": 1}) is Trainer
    assert _old_api_trainable("PPO", {"num_epochs": 1}) == "PPO"  # new keys: the new PPO


@pytest.mark.slow
def test_tune_run_by_name_with_old_keys_trains_the_old_trainer(tmp_path):
    from rljax import tune

    analysis = tune.run(
        "PPO",
        config={"env": "CartPole-v1", "num_sgd_iter": 1, **TINY},
        stop={"training_iteration": 1},
        storage_path=str(tmp_path),
        verbose=0,
    )
    (trial,) = analysis.trials
    assert (
        trial.metrics["episode_reward_mean"] == trial.metrics["env_runners"]["episode_return_mean"]
    )
    assert trial.metrics["timesteps_total"] == 200


def test_old_stop_keys_on_new_api_algorithms_are_refused_with_the_new_name(tmp_path):
    from rljax import tune
    from rljax.algorithms.ppo import PPO

    for trainable in ("PPO", PPO):
        with pytest.raises(ConfigError) as e:
            tune.run(
                trainable,
                config={"env": "CartPole-v1"},
                stop={"episode_reward_mean": 195},
                storage_path=str(tmp_path),
            )
        assert "'episode_reward_mean' -> 'env_runners/episode_return_mean'" in str(e.value)


# ---------------------------------------------------------------------- 5.3
CONFIG_5_3 = {
    "env": "CartPole-v1",
    "num_workers": 4,  # worker processes
    "num_envs_per_worker": 2,  # envs per worker
    "framework": "torch",
    "num_gpus": 1,  # one GPU
    "train_batch_size": 4000,
    "sgd_minibatch_size": 128,
}


def test_5_3_distributed_settings():
    from rljax.agents import trainer_class

    c = trainer_class("PPO").to_config(CONFIG_5_3)
    assert (c.num_env_runners, c.num_envs_per_env_runner, c.minibatch_size) == (4, 2, 128)
    assert c.train_batch_size == 4000


@pytest.mark.xla_optimized
@pytest.mark.slow
def test_5_3_as_written():
    trainer = PPOTrainer(config={**CONFIG_5_3, "seed": 0})
    try:
        c = trainer.config
        assert (c.num_env_runners, c.num_envs_per_env_runner, c.minibatch_size) == (4, 2, 128)
        for _ in range(20):
            result = trainer.train()
            # 4 runners x 2 sub-envs share each iteration's batch: 500 steps each.
            assert result["env_runners"]["num_env_steps_sampled"] == 4000
            if result["episode_reward_mean"] > 195:
                break
        assert result["timesteps_total"] == 4000 * result["training_iteration"]
        assert result["episode_reward_mean"] > 100  # it learns; 195 within 20 is the target
    finally:
        trainer.stop()


# ---------------------------------------------------------------------- 5.4
def multi_agent_cartpole_class():
    """5.4's env, its gym calls on gymnasium's API; its own protocol is RLlib 1.x's (reset
    returns the obs dict alone, step four dicts, no '__all__')."""
    from gymnasium.spaces import Box, Discrete

    from rljax.env.multi_agent_env import MultiAgentEnv

    class MultiAgentCartPole(MultiAgentEnv):
        def __init__(self, config):
            self.env = gym.make("CartPole-v1")
            self.action_space = Discrete(2)
            self.observation_space = Box(low=-4.8, high=4.8, shape=(4,), dtype=np.float32)
            self.agents = ["agent_1"]

        def reset(self):
            obs, _ = self.env.reset()
            return {"agent_1": obs}

        def step(self, action_dict):
            action = action_dict["agent_1"]
            obs, reward, terminated, truncated, info = self.env.step(action)
            done = terminated or truncated
            return {"agent_1": obs}, {"agent_1": reward}, {"agent_1": done}, info

        def render(self, mode="human"):
            return self.env.render()

    return MultiAgentCartPole


def test_5_4_the_old_env_protocol_becomes_the_new_one():
    from rljax.agents.multi_agent import OldMultiAgentEnv

    env = OldMultiAgentEnv(multi_agent_cartpole_class()({}))
    assert env.possible_agents == ["agent_1"]
    assert env.get_observation_space("agent_1").shape == (4,)
    obs, infos = env.reset(seed=3)
    assert set(obs) == {"agent_1"} and infos == {"agent_1": {}}
    steps = 0
    while True:
        obs, rewards, terms, truncs, infos = env.step({"agent_1": 0})
        steps += 1
        assert rewards == {"agent_1": 1.0}
        assert truncs == {"agent_1": False, "__all__": False}
        if terms["agent_1"]:
            assert terms["__all__"] is True
            break
        assert terms["__all__"] is False
    assert 5 <= steps < 100  # always pushing left ends CartPole early


def test_5_4_config_builds_multi_agent_ppo():
    from gymnasium.spaces import Box, Discrete

    from rljax.algorithms.ppo.multi_agent import MultiAgentPPO
    from rljax.tune.registry import register_env

    MultiAgentCartPole = multi_agent_cartpole_class()
    register_env("multiagent_cartpole", lambda config: MultiAgentCartPole(config))
    config = {
        "env": "multiagent_cartpole",
        "multiagent": {
            "policies": {
                "policy_1": (
                    None,
                    Box(low=-4.8, high=4.8, shape=(4,), dtype=np.float32),
                    Discrete(2),
                    {},
                )
            },
            "policy_mapping_fn": lambda agent_id: "policy_1",
        },
        "num_workers": 2,
        "framework": "torch",
    }
    from rljax.agents import trainer_class

    c = trainer_class("PPO").to_config(config)
    assert c.checked_algo_class().__name__ == "MultiAgentPPOTrainer"
    assert issubclass(c.checked_algo_class(), MultiAgentPPO)
    assert list(c.policies) == ["policy_1"]


@pytest.mark.slow
def test_5_4_trains_multi_agent(tmp_path):
    from gymnasium.spaces import Box, Discrete

    from rljax.tune.registry import register_env

    MultiAgentCartPole = multi_agent_cartpole_class()
    register_env("multiagent_cartpole", lambda config: MultiAgentCartPole(config))
    config = {
        "env": "multiagent_cartpole",
        "multiagent": {
            "policies": {
                "policy_1": (
                    None,
                    Box(low=-4.8, high=4.8, shape=(4,), dtype=np.float32),
                    Discrete(2),
                    {},
                )
            },
            "policy_mapping_fn": lambda agent_id: "policy_1",
        },
        "num_workers": 2,
        "framework": "torch",
        **TINY,
    }
    trainer = PPOTrainer(config=config)
    try:
        steps = 0
        for _ in range(2):
            result = trainer.train()
            assert np.isfinite(result["episode_reward_mean"])
            runners = result["env_runners"]
            # The 200 rows of an iteration are env steps plus one reset row per finished
            # episode (the multi-agent runners reset next-step); an episode that ends on a
            # runner's last row resets in the next iteration, so each of the 2 runners may
            # shift one row across. The run is not deterministic (2 runner threads): measured
            # 190-195 env steps with 5-10 episodes, steps + episodes 199-201.
            assert abs(runners["num_env_steps_sampled"] + runners["num_episodes"] - 200) <= 2
            steps += runners["num_env_steps_sampled"]
        assert list(result["info"]["learner"]) == ["policy_1"]
        assert result["timesteps_total"] == steps
        path = trainer.save(str(tmp_path / "ma"))
        trainer.restore(path)
        assert trainer.iteration == 2
    finally:
        trainer.stop()


# ---------------------------------------------------------------------- 6.1
@pytest.mark.slow
def test_6_1_ppo_cartpole_reaches_its_stop(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = {
        "env": "CartPole-v1",
        "num_workers": 2,
        "framework": "torch",
        "num_gpus": 1,  # if there is a GPU
        "train_batch_size": 2000,
        "sgd_minibatch_size": 64,
        "num_sgd_iter": 10,
        "gamma": 0.99,
        "lambda": 0.95,
        "clip_param": 0.2,
        "entropy_coeff": 0.01,
        "vf_loss_coeff": 0.5,
        "learning_rate": 5e-4,
    }
    with pytest.raises(ConfigError, match=r"'learning_rate' is unknown \(did you mean 'lr'\?\)"):
        PPOTrainer(config=config)
    config["lr"] = config.pop("learning_rate")  # the tutorial's typo
    config["seed"] = 0
    trainer = PPOTrainer(config=config)
    try:
        for _ in range(20):
            result = trainer.train()
            if result["episode_reward_mean"] > 195:
                break
        assert result["episode_reward_mean"] > 195, (
            result["training_iteration"],
            result["episode_reward_mean"],
        )
        assert trainer.save("ppo_cartpole") == "ppo_cartpole"
        returns = play(trainer.compute_action, episodes=3)
        assert np.mean(returns) > 195
    finally:
        trainer.stop()


# ---------------------------------------------------------------------- 6.2
@pytest.mark.slow
def test_6_2_dqn_atari_short_budget(tmp_path, monkeypatch):
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    from gymnasium.wrappers import FrameStackObservation, GrayscaleObservation, ResizeObservation

    from rljax.agents.dqn import DQNTrainer
    from rljax.tune.registry import register_env

    monkeypatch.chdir(tmp_path)

    # The snippet's wrappers under gymnasium's names; its creator takes env_config, as
    # register_env's creators do (the tutorial's takes none, which RLlib could not call either).
    def make_env(env_name):
        def _env(env_config=None):
            env = gym.make(env_name)
            env = ResizeObservation(env, (84, 84))
            env = GrayscaleObservation(env)
            env = FrameStackObservation(env, 4)
            return env

        return _env

    register_env("breakout", make_env("BreakoutNoFrameskip-v4"))
    config = {
        "env": "breakout",
        "num_workers": 4,
        "framework": "torch",
        "num_gpus": 1,
        "buffer_size": 100000,
        "learning_starts": 10000,
        "train_batch_size": 32,
        "gamma": 0.99,
        "lr": 5e-4,
        "target_network_update_freq": 1000,
        "exploration_fraction": 0.1,
        "exploration_final_eps": 0.01,
        "model": {
            "fcnet_hiddens": [256],
            "conv_filters": [[32, [8, 8], 4], [64, [4, 4], 2], [64, [3, 3], 1]],
        },
    }
    # Budget: a small buffer, learning after 200 steps, 200 env steps per iteration.
    config.update(buffer_size=2000, learning_starts=200, timesteps_per_iteration=200)
    trainer = DQNTrainer(config=config)
    try:
        assert trainer.config.epsilon == [(0, 1.0), (10_000, 0.01)]
        assert trainer.observation_space.shape == (4, 84, 84)
        result = trainer.train()
        # About 200 env steps (each runner's first row is its envs' reset, not a step).
        assert 190 <= result["timesteps_total"] == result["num_env_steps_sampled_lifetime"]
        assert "info" in result and "learner" in result["info"]
        assert trainer.save("dqn_breakout") == "dqn_breakout"
        env = make_env("BreakoutNoFrameskip-v4")()
        obs, info = env.reset(seed=0)
        for _ in range(20):
            action = trainer.compute_action(obs)
            assert 0 <= action < env.action_space.n
            obs, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                obs, info = env.reset()
        env.close()
    finally:
        trainer.stop()


# ---------------------------------------------------------------------- 6.3
@pytest.mark.slow
def test_6_3_sac_pendulum_short_budget(tmp_path, monkeypatch):
    from rljax.agents.sac import SACTrainer

    monkeypatch.chdir(tmp_path)
    config = {
        "env": "Pendulum-v1",
        "num_workers": 2,
        "framework": "torch",
        "num_gpus": 1,
        "buffer_size": 100000,
        "learning_starts": 1000,
        "train_batch_size": 256,
        "gamma": 0.99,
        "tau": 0.005,
        "q_model_config": {
            "fcnet_hiddens": [256, 256],
        },
        "policy_model_config": {
            "fcnet_hiddens": [256, 256],
        },
        "optimization": {
            "actor_learning_rate": 3e-4,
            "critic_learning_rate": 3e-4,
            "entropy_learning_rate": 3e-4,
        },
    }
    # Budget: learning after 200 steps, 200 env steps per iteration, smaller networks.
    config.update(learning_starts=200, timesteps_per_iteration=200, train_batch_size=64)
    config["q_model_config"] = config["policy_model_config"] = {"fcnet_hiddens": [32, 32]}
    trainer = SACTrainer(config=config)
    try:
        c = trainer.config
        assert (c.actor_lr, c.critic_lr, c.alpha_lr, c.tau) == (3e-4, 3e-4, 3e-4, 0.005)
        for _ in range(3):
            result = trainer.train()
        # Pendulum's episodes are 200 steps: each runner's sub-env finished one in its ~300.
        assert 570 <= result["timesteps_total"] == result["num_env_steps_sampled_lifetime"]
        assert -2000 < result["episode_reward_mean"] < 0
        assert trainer.save("sac_pendulum") == "sac_pendulum"
        env = gym.make("Pendulum-v1")
        obs, info = env.reset(seed=0)
        total_reward = 0.0
        for _ in range(200):
            action = trainer.compute_action(obs)
            assert env.action_space.contains(np.asarray(action, dtype=np.float32))
            obs, reward, terminated, truncated, info = env.step(action)
            total_reward += reward
            if terminated or truncated:
                break
        assert truncated and total_reward < 0
        env.close()
    finally:
        trainer.stop()


# ---------------------------------------------------------------------- the rest of the API
def test_new_api_class_with_a_dict_says_what_to_call():
    from rljax.algorithms.ppo import PPO

    with pytest.raises(ConfigError) as e:
        PPO(config={"env": "CartPole-v1"})
    msg = str(e.value)
    assert "PPOConfig().update_from_dict(d).build_algo()" in msg
    assert "rljax.agents.ppo.PPOTrainer(config=d)" in msg


def test_a_class_without_an_old_api_trainer_names_none():
    from rljax.algorithms.algorithm import Algorithm

    with pytest.raises(ConfigError) as e:
        Algorithm(config={"env": "CartPole-v1"})
    msg = str(e.value)
    assert "AlgorithmConfig().update_from_dict(d).build_algo()" in msg
    assert "rljax.agents" not in msg  # it has no trainer there


def test_port_rewrites_the_tutorials_imports():
    from rljax.utils.port import port_source

    source = "\n".join(
        [
            "import ray",
            "from ray import tune",
            "from ray.rllib.agents.ppo import PPOTrainer",
            "from ray.rllib.agents.dqn import DQNTrainer",
            "from ray.rllib.evaluation.rollout_worker import RolloutWorker",
            "from ray.rllib.policy.policy import Policy",
            "from ray.rllib.models.torch.torch_modelv2 import TorchModelV2",
            "from ray.rllib.utils.annotations import override",
            "from ray.rllib.env.multi_agent_env import MultiAgentEnv",
            "from ray.tune.registry import register_env",
            "ray.init()",
            "",
        ]
    )
    ported = port_source(source)
    lines = ported.source.splitlines()
    assert lines[2] == "from rljax.agents.ppo import PPOTrainer"
    assert lines[3] == "from rljax.agents.dqn import DQNTrainer"
    assert lines[4] == "from rljax.evaluation.rollout_worker import RolloutWorker"
    namespace: dict = {}
    exec(ported.source, namespace)  # every ported import exists
    assert namespace["PPOTrainer"].__module__ == "rljax.agents.ppo"
    assert any("line 3:" in n and "RLlib 1.x's old API" in n for n in ported.notes)
    assert not any("does not have" in n for n in ported.notes)
    missing = port_source("from ray.rllib.agents.nonesuch import XTrainer\n")
    assert missing.notes == [
        "line 1: `ray.rllib.agents.nonesuch` -> `rljax.agents.nonesuch`, which rljax does not have"
    ]
