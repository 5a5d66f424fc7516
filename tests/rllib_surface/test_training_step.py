"""RLlib's ``Algorithm.training_step`` hook in a user's subclass, and ``PPO(config=...)`` with a
multi-agent config (RLlib's other way to build an algorithm)."""

from __future__ import annotations

import pytest

from rljax.algorithms.ppo import PPO, PPOConfig
from rljax.algorithms.ppo.multi_agent import MultiAgentPPO
from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole
from rljax.execution.population import population_refusal
from rljax.utils.errors import ConfigError

SMALL = {"train_batch_size_per_learner": 64, "minibatch_size": 32, "num_epochs": 1}


def _config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2)
        .training(**SMALL)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


def _multi_agent_config() -> PPOConfig:
    return (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, ep, **kw: f"p{aid}")
        .training(**SMALL)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


class Logged(PPO):
    """RLlib's pattern: work around the algorithm's step, metrics through ``self.metrics``."""

    def training_step(self):
        self.calls = getattr(self, "calls", 0) + 1
        before = self.num_env_steps_sampled_lifetime
        super().training_step()
        self.metrics.log_value("my_steps_seen", float(before), reduce="sum")


class Skips(PPO):
    def training_step(self):
        return {"info": {}}  # an old-stack dict, without the algorithm's step


class Twice(PPO):
    def training_step(self):
        super().training_step()
        super().training_step()


def test_a_subclasss_training_step_runs_in_train_around_the_algorithms_step():
    with Logged(config=_config()) as algo:
        first = algo.train()
        second = algo.train()
        assert algo.calls == 2
        # The algorithm's own step ran once per train(): 64 env steps each.
        assert first["num_env_steps_sampled_lifetime"] == 64
        assert second["num_env_steps_sampled_lifetime"] == 128
        assert second["training_iteration"] == 2
        # The logged value (sampled steps before each step) reaches the result: 0, then 0 + 64.
        assert first["my_steps_seen"] == 0.0 and second["my_steps_seen"] == 64.0
        with pytest.raises(ConfigError, match=r"Logged.training_step\(\) ran outside train\(\)"):
            algo.training_step()
        assert algo.train()["num_env_steps_sampled_lifetime"] == 192  # still trains


def test_a_training_step_that_skips_or_repeats_the_algorithms_step_fails_train():
    with Skips(config=_config()) as algo:
        with pytest.raises(ConfigError, match=r"without calling super\(\).training_step\(\)"):
            algo.train()
        assert algo.num_env_steps_sampled_lifetime == 0 and algo.iteration == 0
    with Twice(config=_config()) as algo, pytest.raises(ConfigError, match="twice in one"):
        algo.train()


def test_ppo_of_a_multi_agent_config_builds_the_multi_agent_class():
    """Was: ``PPO(config=multi_agent_config)`` failed building a single-agent PPO
    (``AttributeError: 'MultiAgentCartPole' object has no attribute 'observation_space'``)."""
    with PPO(config=_multi_agent_config()) as algo:
        assert type(algo) is MultiAgentPPO
        result = algo.train()
        assert set(result["learners"]) >= {"p0", "p1"}


class MultiLogged(MultiAgentPPO):
    def training_step(self):
        self.calls = getattr(self, "calls", 0) + 1
        super().training_step()


class ChoosesItsMultiAgentClass(Logged):
    @classmethod
    def multi_agent_class(cls):
        return MultiLogged


def test_a_subclasss_own_methods_are_not_dropped_on_a_multi_agent_config():
    # Logged's training_step would not run in MultiAgentPPO: refused, naming it, before a build.
    with pytest.raises(ConfigError, match=r"Logged defines \['training_step'\].*MultiAgentPPO"):
        Logged(config=_multi_agent_config())
    config = _multi_agent_config()
    config.algo_class = Logged
    with pytest.raises(ConfigError, match=r"Logged defines \['training_step'\]"):
        config.build_algo()
    # A subclass that names its multi-agent class gets that class, with its training_step.
    with ChoosesItsMultiAgentClass(config=_multi_agent_config()) as algo:
        assert type(algo) is MultiLogged
        algo.train()
        assert algo.calls == 1


def test_a_population_trains_subclasses_with_their_own_training_step_one_trial_at_a_time():
    config = _config()
    assert population_refusal([config, config.copy()]) is None
    config.algo_class = Logged
    why = population_refusal([config, config.copy()])
    assert why is not None and "Logged's own training_step()" in why


def test_a_subclass_loads_its_bases_checkpoint_as_itself(tmp_path):
    """``Logged.from_checkpoint`` of a PPO checkpoint builds a ``Logged`` (was: a plain PPO,
    whose train() skipped the subclass's training_step)."""
    with PPO(config=_config()) as algo:
        algo.train()
        path = algo.save_to_path(tmp_path / "ckpt")
    restored = Logged.from_checkpoint(path)
    try:
        assert type(restored) is Logged and restored.iteration == 1
        restored.train()
        assert restored.calls == 1 and restored.iteration == 2
    finally:
        restored.stop()
