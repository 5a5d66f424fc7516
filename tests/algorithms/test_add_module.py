"""RLlib's ``Algorithm.add_module`` / ``remove_module`` (league self-play): the module set
changes while the algorithm trains; the kept modules' weights, the counters and the callbacks
carry over; an invalid change changes nothing."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.callbacks.callbacks import RLlibCallback
from rljax.core.rl_module.multi_rl_module import MultiRLModule
from rljax.core.rl_module.rl_module import RLModuleSpec
from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole
from rljax.utils.errors import ConfigError


class Counting(RLlibCallback):
    def __init__(self):
        super().__init__()
        self.results = 0

    def on_train_result(self, *, algorithm, result, **kwargs):
        self.results += 1


def _config() -> PPOConfig:
    return (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies=["p0", "p1"], policy_mapping_fn=lambda aid, *a, **kw: f"p{aid}")
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .callbacks(Counting)
        .debugging(seed=0)
    )


def _rows(algo, module_id):
    """The module's training state (its row of its group's stacked state), as numpy."""
    for g, group in enumerate(algo.groups):
        for row, m in enumerate(group.members):
            if algo.policy_ids[m] == module_id:
                state = algo.state[g]
                return jax.tree.map(
                    lambda x, r=row: np.asarray(x[r]), (state.opt_state, state.kl_coeff)
                )
    raise KeyError(module_id)


def _same(a, b) -> bool:
    return all(
        np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


@pytest.mark.slow  # builds and compiles multi-agent PPO three times (about 10 s)
def test_add_then_remove_a_module_while_training():
    with _config().build_algo() as algo:
        algo.train()
        before = algo.get_weights()
        trained_state = _rows(algo, "p0")
        callbacks, steps = algo.callbacks, algo.num_env_steps_sampled_lifetime
        agent_steps = algo.num_agent_steps_sampled_lifetime
        spec = algo.add_module(
            "p0_v1",
            RLModuleSpec.from_module(algo.get_module("p0")),
            new_agent_to_module_mapping_fn=lambda aid, *a, **kw: "p0" if aid == 0 else "p0_v1",
            new_should_module_be_updated=["p0"],
        )
        assert sorted(spec.rl_module_specs) == ["p0", "p0_v1", "p1"]
        assert spec.rl_module_specs["p0_v1"].model_config["fcnet_hiddens"] == [8]
        after = algo.get_weights()
        assert _same(after["p0"], before["p0"]) and _same(after["p1"], before["p1"])
        # Was: the optimizers' state restarted. Adam's moments and count and the KL
        # coefficient of a kept module carry over; the new module's start fresh.
        assert _same(_rows(algo, "p0"), trained_state)
        moments = [x for x in jax.tree.leaves(trained_state[0]) if np.ndim(x) > 0]
        assert moments and any(np.abs(x).max() > 0 for x in moments)
        fresh = jax.tree.leaves(_rows(algo, "p0_v1")[0])
        assert all(not np.any(x) for x in fresh if np.ndim(x) > 0)
        # RLlib's self-play callback copies "main" into the frozen copy so:
        state = algo.get_module("p0").get_state()
        algo.set_state({"learner_group": {"learner": {"rl_module": {"p0_v1": state}}}})
        assert _same(algo.get_weights()["p0_v1"], before["p0"])
        assert algo.iteration == 1 and algo.num_env_steps_sampled_lifetime == steps
        assert algo.num_agent_steps_sampled_lifetime == agent_steps  # was: reset to 0
        assert algo.callbacks is callbacks  # the same objects, their state kept
        result = algo.train()
        assert set(result["learners"]) == {"p0", "__all_modules__"}  # p0_v1 and p1: frozen
        assert "p0_v1" in result["env_runners"]["module_episode_returns_mean"]
        trained = algo.get_weights()
        assert _same(trained["p0_v1"], before["p0"]) and not _same(trained["p0"], before["p0"])
        assert callbacks.entries[0][1].results == 2
        counts = "num_module_steps_trained_lifetime"
        assert algo.get_state()["counters"][counts]["p1"] > 0  # trained in the first iteration
        algo.remove_module(
            "p1", new_agent_to_module_mapping_fn=lambda aid, *a, **kw: ["p0", "p0_v1"][aid]
        )
        assert sorted(algo.config.policies) == ["p0", "p0_v1"]
        # The removed module's count goes with it (was: kept, saved in checkpoints and added
        # to a module added again under its id).
        assert "p1" not in algo.get_state()["counters"][counts]
        after = algo.train()
        assert after["training_iteration"] == 3
        # Per-module sampled steps carry on for kept modules; the removed one's go.
        sampled = after["env_runners"]
        lifetime = sampled["num_module_steps_sampled_lifetime"]
        assert set(lifetime) == {"p0", "p0_v1"}
        assert lifetime["p0"] > sampled["num_module_steps_sampled"]["p0"] > 0
        # RLlib's multi-agent env runner holds a MultiRLModule (was: a plain dict).
        modules = algo.env_runner.module
        assert isinstance(modules, MultiRLModule) and sorted(modules) == ["p0", "p0_v1"]
        out = modules.forward_inference({"p0": {"obs": np.zeros((1, 4), np.float32)}})
        assert out["p0"]["action_dist_inputs"].shape == (1, 2)


@pytest.mark.slow  # builds multi-agent PPO twice (about 5 s)
def test_module_changes_are_checked_before_anything_changes():
    single = PPOConfig().environment("CartPole-v1")
    config = _config()
    with config.build_algo() as algo:
        with pytest.raises(ValueError, match="module_id='a/b'"):
            algo.add_module("a/b")
        with pytest.raises(ValueError, match="has that module already"):
            algo.add_module("p0")
        with pytest.raises(ConfigError, match="learners, env runners and evaluation"):
            algo.add_module("p2", add_to_eval_env_runners=False)
        with pytest.raises(ConfigError, match="lr=-1"):
            algo.add_module("p2", config_overrides={"lr": -1})
        with pytest.raises(ConfigError, match="names \\['nope'\\]"):
            algo.add_module("p2", new_should_module_be_updated=["nope"])
        with pytest.raises(ValueError, match="no such module"):
            algo.remove_module("p9")
        assert sorted(algo.config.policies) == ["p0", "p1"]  # unchanged
    with single.build_algo() as algo, pytest.raises(ConfigError, match="single-agent"):
        algo.add_module("p2")


@pytest.mark.slow  # builds multi-agent PPO and DQN (about 6 s)
def test_a_failed_rebuild_restores_the_old_modules_whole_and_off_policy_refuses():
    """A module set valid for validate() but refused by the setup (a recurrent module beside
    feed-forward ones) leaves the old modules with their whole training state (was: their
    optimizer state and KL coefficients restarted)."""
    from rljax.algorithms.dqn import DQNConfig

    with _config().build_algo() as algo:
        algo.train()
        state = algo.state
        with pytest.raises(ConfigError, match="recurrent"):
            algo.add_module("lstm", RLModuleSpec(model_config={"use_lstm": True}))
        assert algo.state is state and sorted(algo.config.policies) == ["p0", "p1"]
        assert algo.train()["training_iteration"] == 2
    dqn = (
        DQNConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies=["p0", "p1"], policy_mapping_fn=lambda aid, *a, **kw: f"p{aid}")
    )
    with dqn.build_algo() as algo, pytest.raises(ConfigError, match="built for multi-agent PPO"):
        algo.add_module("p2")
