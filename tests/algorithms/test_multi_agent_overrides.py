"""Per-policy settings in multi-agent PPO: PolicySpec, algorithm_config_overrides_per_module,
one group per distinct setting, and the old config forms scripts carry over."""

import gymnasium as gym
import jax
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.ppo import PPO
from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole
from rljax.policy.policy import PolicySpec
from rljax.utils.errors import ConfigError


def agent_to_policy(agent_id, episode, **kwargs):
    return f"p{agent_id}"


def _config(**multi_agent):
    return (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .env_runners(num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=256, minibatch_size=256, num_epochs=1, lr=1e-3)
        .rl_module(model_config={"fcnet_hiddens": [32, 32], "vf_share_layers": False})
        .multi_agent(
            policies=["p0", "p1"],
            policy_mapping_fn=agent_to_policy,
            **multi_agent,
        )
        .debugging(seed=0)
    )


def _max_change(before, after):
    return max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
        for b, a in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True)
    )


@pytest.mark.slow
def test_overrides_make_groups_with_their_own_model_and_learning_rate(tmp_path):
    config = _config(
        algorithm_config_overrides_per_module={
            "p1": PPOConfig.overrides(lr=1e-2, model_config={"fcnet_hiddens": [16]}, gamma=0.85)
        }
    )
    algo = config.build_algo()
    try:
        assert [g.members for g in algo.groups] == [[0], [1]]
        # p1's rows are discounted with its own gamma (tests/algorithms/test_ppo_postprocess.py).
        assert algo._policy_discounts() == ((0.99, 0.85), (1.0, 1.0))
        p0, p1 = (algo.get_module(p).params for p in ("p0", "p1"))
        kernels = {p: [x.shape for x in jax.tree.leaves(m)] for p, m in (("p0", p0), ("p1", p1))}
        assert (32, 32) in kernels["p0"] and (32, 32) not in kernels["p1"]
        assert (4, 16) in kernels["p1"]
        algo.train()
        # One Adam step (one epoch; 2 slots x 128 steps = 256 rows per policy, one minibatch):
        # each parameter moves by
        # lr * g / (|g| + eps), i.e. by the policy's own learning rate where gradients are
        # far above eps = 1e-5.
        assert _max_change(p0, algo.get_module("p0").params) == pytest.approx(1e-3, rel=1e-3)
        assert _max_change(p1, algo.get_module("p1").params) == pytest.approx(1e-2, rel=1e-3)
        # Each group acts with its own module: its policy's greedy actions come from it.
        obs = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
        for pid in ("p0", "p1"):
            out = algo.get_module(pid).forward_inference({"obs": obs})
            np.testing.assert_array_equal(out["actions"], out["action_dist_inputs"].argmax(-1))
        path = algo.save_to_path(tmp_path / "ckpt")
        restored = PPO.from_checkpoint(path, policy_mapping_fn=agent_to_policy)
        try:
            for pid in ("p0", "p1"):
                np.testing.assert_array_equal(
                    restored.get_module(pid).forward_inference({"obs": obs})["action_dist_inputs"],
                    algo.get_module(pid).forward_inference({"obs": obs})["action_dist_inputs"],
                )
            assert restored.config.module_overrides("p1")["lr"] == 1e-2
        finally:
            restored.stop()
    finally:
        algo.stop()


def test_rllib_policy_tuples_specs_and_one_argument_mapping_functions():
    box = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    config = (
        _config()
        .multi_agent(
            policies={
                "p0": (None, None, None, {"lr": 5e-3}),
                "p1": PolicySpec(action_space=gym.spaces.Discrete(2), config={"model": {}}),
            },
            policy_mapping_fn=lambda agent_id: f"p{agent_id}",  # an old one-argument mapping
        )
        .multi_agent(algorithm_config_overrides_per_module={"p1": {"entropy_coeff": 0.01}})
    )
    assert config.module_overrides("p0") == {"lr": 5e-3}
    assert config.module_overrides("p1") == {"model_config": {}, "entropy_coeff": 0.01}
    assert config.module_config("p1").entropy_coeff == 0.01
    assert config.module_config("p1").lr == 1e-3
    config.validate()  # the one-argument mapping function is accepted
    # The tuple as YAML or JSON gives it (a list) means the same.
    as_list = _config().multi_agent(policies={"p0": [None, None, None, {"lr": 5e-3}], "p1": None})
    assert as_list.module_overrides("p0") == {"lr": 5e-3}
    # Wrong spaces in a spec are refused when the env's spaces are known.
    bad = _config().multi_agent(
        policies={"p0": (None, box, gym.spaces.Discrete(3), {}), "p1": None}
    )
    with pytest.raises(ConfigError, match="action_space=Discrete.3."):
        bad.build_algo()


@pytest.mark.parametrize(
    "overrides, match",
    [
        (
            {"p1": {"entropy_coef": 0.1}},
            "unknown setting 'entropy_coef'; did you mean 'entropy_coeff'",
        ),
        (
            {"p1": {"train_batch_size_per_learner": 64}},
            "overrides 'train_batch_size_per_learner', which every policy of a run shares",
        ),
        ({"p1": {"clip_param": -1.0}}, "policy 'p1'.s overrides: clip_param=-1.0"),
        ({"p1": {"minibatch_size": 10_000}}, "policy 'p1'.s overrides: minibatch_size=10000"),
        ({"p9": {"lr": 1e-3}}, "names \\['p9'\\], which are not in policies"),
        ({"p1": 3}, "use a dict policy id -> dict of settings"),
    ],
)
def test_bad_overrides_fail_before_building(overrides, match):
    with pytest.raises(ConfigError, match=match):
        _config(algorithm_config_overrides_per_module=overrides).validate()


def test_bad_specs_and_mapping_functions_fail_before_building():
    with pytest.raises(ConfigError, match="policy_class"):
        _config().multi_agent(policies={"p0": (object, None, None, {})})
    with pytest.raises(ConfigError, match="use None, a PolicySpec"):
        _config().multi_agent(policies={"p0": "ppo"})
    with pytest.raises(ConfigError, match="cannot be called as"):
        _config().multi_agent(policy_mapping_fn=lambda a, b, c, d: "p0").validate()
    with pytest.raises(ConfigError, match="unknown key 'lrr'"):
        PPOConfig.overrides(lrr=1.0)
    # RLlib's old setter name, as its example scripts pass it for greedy evaluation.
    assert PPOConfig.overrides(exploration=False) == {"explore": False}
    with pytest.raises(ConfigError, match="unknown key 'exploration'"):
        PPOConfig.overrides(exploration={"type": "EpsilonGreedy"})
