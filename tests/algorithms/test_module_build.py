"""A module on its own, outside an algorithm (RLlib's RL-module guide): ``RLModuleSpec.build()``,
``RLModule.save_to_path`` / ``restore_from_path`` / ``from_checkpoint``, and
``as_multi_rl_module``."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from rljax.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from rljax.core.rl_module.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from rljax.core.rl_module.rl_module import RLModule, RLModuleSpec
from rljax.examples.rl_modules.classes.random_rlm import RandomRLModule
from rljax.utils.errors import CheckpointError, ConfigError

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = gym.spaces.Discrete(2)


def _hidden_widths(module: RLModule) -> list[int]:
    encoder = module.get_state()["default_policy"]["params"]["pi_encoder"]
    return [int(encoder[name]["kernel"].shape[1]) for name in sorted(encoder)]


def test_built_modules_save_and_load_into_modules_and_algorithms(tmp_path):
    obs = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    spec = PPOConfig().get_default_rl_module_spec()
    spec.observation_space, spec.action_space = OBS, ACT
    spec.model_config = {"fcnet_hiddens": [16]}
    module = spec.build()
    assert _hidden_widths(module) == [16]  # the spec's model_config, not the defaults
    named = RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        observation_space=OBS,
        action_space=ACT,
        model_config={"fcnet_hiddens": [16]},
    ).build()
    path = named.save_to_path(str(tmp_path / "module"))
    loaded = RLModule.from_checkpoint(path)
    expected = named.forward_inference({"obs": obs})["action_dist_inputs"]
    np.testing.assert_allclose(
        loaded.forward_inference({"obs": obs})["action_dist_inputs"], expected
    )
    assert not np.allclose(module.forward_inference({"obs": obs})["action_dist_inputs"], expected)
    module.restore_from_path(path)  # another module of the same architecture
    np.testing.assert_allclose(
        module.forward_inference({"obs": obs})["action_dist_inputs"], expected
    )
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .build_algo()
    )
    try:
        algo.restore_from_path(path, component="learner_group/learner/rl_module/default_policy")
        out = algo.get_module().forward_inference({"obs": obs})["action_dist_inputs"]
        np.testing.assert_allclose(out, expected)
    finally:
        algo.stop()
    multi = named.as_multi_rl_module()
    assert isinstance(multi, MultiRLModule) and multi["default_policy"] is named


def test_forward_modules_and_other_algorithms_build_and_what_is_refused():
    random_module = RLModuleSpec(
        module_class=RandomRLModule, observation_space=OBS, action_space=ACT
    ).build()
    assert isinstance(random_module, RandomRLModule)
    actions = random_module.forward_inference({"obs": np.zeros((5, 4), np.float32)})["actions"]
    assert actions.shape == (5,) and set(actions.tolist()) <= {0, 1}
    with pytest.raises(CheckpointError, match="has no weights to save"):
        random_module.save_to_path()
    dqn = RLModuleSpec(
        module_class=DefaultDQNTorchRLModule,
        observation_space=OBS,
        action_space=ACT,
        model_config={"fcnet_hiddens": [8]},
    ).build()
    q = dqn.forward_inference({"obs": np.zeros((2, 4), np.float32)})["action_dist_inputs"]
    assert q.shape == (2, 2)
    both = MultiRLModuleSpec(
        rl_module_specs={
            "random": RLModuleSpec(
                module_class=RandomRLModule, observation_space=OBS, action_space=ACT
            )
        }
    ).build()
    assert list(both) == ["random"] and isinstance(both["random"], RandomRLModule)
    with pytest.raises(ConfigError, match="does not say which"):
        RLModuleSpec(observation_space=OBS, action_space=ACT).build()
    with pytest.raises(ConfigError, match="needs observation_space and action_space"):
        RLModuleSpec(module_class=DefaultPPOTorchRLModule).build()


def test_a_configs_spec_builds_the_network_the_config_describes():
    from rljax.algorithms.dqn import DQNConfig
    from rljax.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    env = gym.make("CartPole-v1")
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .training(dueling=False, num_atoms=11, v_min=-10.0, v_max=10.0)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .callbacks(on_algorithm_init=lambda **kw: pytest.fail("building a module runs no hook"))
    )
    spec = config.get_rl_module_spec(env=env)  # RLlib's: the env's spaces filled in
    assert (spec.observation_space, spec.action_space) == (env.observation_space, env.action_space)
    heads = spec.build().get_state()["q"]["params"]
    # One head of 2 actions x 11 atoms (no dueling streams), after the config's 8 units.
    assert sorted(heads) == ["_MLP_0", "q"] and heads["q"]["kernel"].shape == (8, 22)
    wider = dataclasses.replace(spec, model_config={"fcnet_hiddens": [16]})  # keeps the config
    assert wider.build().get_state()["q"]["params"]["q"]["kernel"].shape == (16, 22)
    masked = RLModuleSpec(
        module_class=ActionMaskingTorchRLModule, observation_space=OBS, action_space=ACT
    )
    assert _hidden_widths(masked.build()) == [256, 256]  # PPO's default networks
    multi = PPOConfig().multi_agent(
        policies={"p0", "p1"}, policy_mapping_fn=lambda a, *_, **k: "p0"
    )
    one = multi.rl_module(model_config={"fcnet_hiddens": [4]}).get_rl_module_spec(env=env).build()
    assert _hidden_widths(one) == [4]  # a multi-agent config's default module
    # A spec of the config's own: merged over the config's model_config (RLlib's), a copy.
    given = RLModuleSpec(model_config={"fcnet_activation": "relu"})
    mine = PPOConfig().rl_module(model_config={"fcnet_hiddens": [4]}, rl_module_spec=given)
    mine.env_runners(num_gpus_per_env_runner=1)  # no GPU here: building a module needs none
    merged = mine.get_rl_module_spec(env=env)
    assert merged.model_config["fcnet_hiddens"] == [4] and _hidden_widths(merged.build()) == [4]
    merged.model_config["fcnet_hiddens"] = [2]
    assert mine.rl_module_spec.model_config == {"fcnet_activation": "relu"}


def test_the_multi_agent_spec_of_a_config_builds_each_policys_module():
    """RLlib's ``config.get_multi_rl_module_spec(env=...)``. Was: no such method."""
    from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole
    from rljax.policy.policy import PolicySpec

    env = MultiAgentCartPole({"num_agents": 2})
    box = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    config = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(
            policies={"p0": PolicySpec(observation_space=box), "p1": None},
            policy_mapping_fn=lambda aid, *a, **kw: f"p{aid}",
        )
        .rl_module(
            model_config={"fcnet_hiddens": [8]},
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={"p1": RLModuleSpec(model_config={"fcnet_hiddens": [4]})}
            ),
        )
    )
    spec = config.get_multi_rl_module_spec(env=env)
    assert isinstance(spec, MultiRLModuleSpec) and sorted(spec.rl_module_specs) == ["p0", "p1"]
    p0, p1 = spec.rl_module_specs["p0"], spec.rl_module_specs["p1"]
    assert p0.observation_space == box  # the policy's own, before its agent's
    assert p1.observation_space == env.get_observation_space(1)
    assert p1.action_space == env.get_action_space(1)
    modules = spec.build()
    assert isinstance(modules, MultiRLModule)
    assert _hidden_widths(modules["p0"]) == [8] and _hidden_widths(modules["p1"]) == [4]
    obs = np.zeros((3, 4), np.float32)
    out = modules.forward_inference({"p0": {"obs": obs}, "p1": {"obs": obs}})
    assert out["p1"]["action_dist_inputs"].shape == (3, 2)
    # Spaces given by policy id; a policy with none stays unbuilt-able, as RLlib's.
    given = config.get_multi_rl_module_spec(spaces={"p1": (box, env.get_action_space(1))})
    assert given.rl_module_specs["p1"].observation_space == box
    assert given.rl_module_specs["p0"].action_space is None
    single = (
        PPOConfig().environment("CartPole-v1").get_multi_rl_module_spec(env=gym.make("CartPole-v1"))
    )
    assert list(single.rl_module_specs) == ["default_policy"]
    assert single.rl_module_specs["default_policy"].action_space == gym.spaces.Discrete(2)
    with pytest.raises(TypeError, match="unexpected keywords \\['envs'\\]"):
        config.get_multi_rl_module_spec(envs=env)
