"""RLlib's example classes (rl_modules, learners, algorithms) at RLlib's paths: the PyTorch
ones refuse with one named error where a script uses them, the action-masking module is
rljax's default networks, and the learner settings RLlib's example scripts pass."""

from __future__ import annotations

import importlib
import logging

import gymnasium as gym
import numpy as np
import pytest

from rljax.utils.errors import ConfigError
from rljax.utils.torch_classes import TorchClassError

# (rljax module, class, words the refusal must hold besides the class and RLlib's path)
STAND_INS = [
    ("examples.rl_modules.classes.vpg_torch_rlm", "VPGTorchRLModule", "flax.linen.Module"),
    ("examples.rl_modules.classes.mobilenet_rlm", "MobileNetTorchPPORLModule", "conv_filters"),
    ("examples.rl_modules.classes.autoregressive_actions_rlm", "AutoregressiveActionsRLM", "Flax"),
    (
        "examples.rl_modules.classes.intrinsic_curiosity_model_rlm",
        "IntrinsicCuriosityModel",
        "Flax",
    ),
    ("examples.rl_modules.classes.vpg_using_shared_encoder_rlm", "SharedEncoder", "Flax"),
    ("examples.learners.classes.vpg_torch_learner", "VPGTorchLearner", "JAX PPOLearner"),
    ("examples.algorithms.classes.vpg", "VPGConfig", "PPOConfig().training(num_epochs=1"),
    ("examples.algorithms.classes.maml_lr_meta_learner", "MAMLTorchMetaLearner", "meta-learning"),
    ("algorithms.algorithm_config", "DifferentiableAlgorithmConfig", "meta-learning"),
    ("core.learner.differentiable_learner_config", "DifferentiableLearnerConfig", "meta-learning"),
]


@pytest.mark.parametrize(("module", "name", "words"), STAND_INS, ids=[s[1] for s in STAND_INS])
def test_rllib_example_torch_class_refuses_by_name(module, name, words):
    cls = getattr(importlib.import_module(f"rljax.{module}"), name)
    rllib_path = f"ray.rllib.{module}.{name}"
    assert cls.rllib_path == rllib_path
    with pytest.raises(TorchClassError) as caught:
        cls()
    text = str(caught.value)
    assert text.startswith(f"{name} is RLlib's PyTorch class {rllib_path}; rljax runs JAX")
    assert words in text
    assert isinstance(caught.value, ConfigError)


def test_a_scripts_module_on_an_example_class_refuses_in_the_spec():
    from rljax.core.rl_module import RLModuleSpec
    from rljax.examples.rl_modules.classes.mobilenet_rlm import MobileNetTorchPPORLModule

    class Mine(MobileNetTorchPPORLModule):
        pass

    with pytest.raises(TorchClassError) as caught:
        RLModuleSpec(module_class=Mine, model_config={"conv_filters": [[16, 4, 2]]})
    assert str(caught.value).startswith(
        "RLModuleSpec(module_class=...): Mine subclasses RLlib's PyTorch class "
        "ray.rllib.examples.rl_modules.classes.mobilenet_rlm.MobileNetTorchPPORLModule"
    )


def test_learner_connector_and_algorithm_classes_say_why_they_cannot_run():
    from rljax.connectors.connector_v2 import ConnectorV2
    from rljax.connectors.env_to_module.episode_connector import ConnectorV2 as Hosted
    from rljax.examples.algorithms.classes.appo_w_shared_data_actor import (
        APPOWithSharedDataActor,
    )
    from rljax.examples.connectors.classes.count_based_curiosity import CountBasedCuriosity

    # RLlib's base at its path is the env-to-module piece base that runs in the env.
    assert ConnectorV2 is Hosted
    with pytest.raises(TorchClassError) as caught:
        CountBasedCuriosity()
    text = str(caught.value)
    assert text.startswith(
        "CountBasedCuriosity is RLlib's connector class "
        "ray.rllib.examples.connectors.classes.count_based_curiosity.CountBasedCuriosity; "
        "it is a learner connector"
    )
    assert "env_to_module_connector" in text and "PyTorch" not in text
    with pytest.raises(TorchClassError, match="Algorithm subclass .*training_step with Ray"):
        APPOWithSharedDataActor()


def test_rllibs_default_module_and_catalog_classes_are_the_default_networks():
    """RLlib's own default classes named in a spec (RLlib's pretraining example:
    ``RLModuleSpec(module_class=PPOTorchRLModule, catalog_class=PPOCatalog, model_config=...)``)
    mean the default networks; a subclass of one holds PyTorch code of its own and is refused,
    naming the default networks instead."""
    from rljax.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
    from rljax.algorithms.ppo.ppo_catalog import PPOCatalog
    from rljax.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from rljax.algorithms.ppo.torch.ppo_torch_rl_module import PPOTorchRLModule
    from rljax.algorithms.sac.torch.default_sac_torch_rl_module import DefaultSACTorchRLModule
    from rljax.core.rl_module import RLModuleSpec

    for cls in (
        PPOTorchRLModule,
        DefaultPPOTorchRLModule,
        DefaultDQNTorchRLModule,
        DefaultSACTorchRLModule,
    ):
        spec = RLModuleSpec(
            module_class=cls, catalog_class=PPOCatalog, model_config={"fcnet_hiddens": [8]}
        )
        assert spec.module_class is None and spec.catalog_class is None
        assert spec.model_config == {"fcnet_hiddens": [8]}

    class MyCatalog(PPOCatalog):
        pass

    class MyModule(PPOTorchRLModule):
        pass

    with pytest.raises(
        TorchClassError, match=r"MyCatalog subclasses RLlib's model catalog .*model_config"
    ):
        RLModuleSpec(catalog_class=MyCatalog)
    with pytest.raises(TorchClassError, match=r"MyModule subclasses RLlib's PyTorch class"):
        RLModuleSpec(module_class=MyModule)
    with pytest.raises(ConfigError, match="takes no catalog class"):
        RLModuleSpec(catalog_class=dict)


def test_action_masking_module_is_the_default_networks_and_masks():
    from rljax.algorithms.ppo import PPOConfig
    from rljax.core.rl_module import RLModuleSpec
    from rljax.examples.envs.classes.action_mask_env import ActionMaskEnv
    from rljax.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    spec = RLModuleSpec(
        module_class=ActionMaskingTorchRLModule, model_config={"head_fcnet_hiddens": [16]}
    )
    assert spec.module_class is None and spec.model_config == {"head_fcnet_hiddens": [16]}
    env_config = {
        "action_space": gym.spaces.Discrete(6),
        "observation_space": gym.spaces.Box(-1, 1, (3,)),
    }
    algo = (
        PPOConfig()
        .environment(ActionMaskEnv, env_config=env_config)
        .rl_module(rl_module_spec=spec)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .debugging(seed=0)
        .build_algo()
    )
    try:
        env = ActionMaskEnv(env_config)
        obs, _ = env.reset(seed=3)
        for _ in range(20):
            allowed = np.flatnonzero(obs["action_mask"])
            action = algo.compute_single_action(obs, explore=True)
            assert int(action) in allowed  # never a masked action
            obs, *_ = env.step(int(action))
    finally:
        algo.stop()


def test_learner_settings_of_rllibs_example_scripts(caplog):
    from rljax.algorithms.ppo import PPOConfig

    with caplog.at_level(logging.WARNING, logger="rljax"):
        config = PPOConfig().training(num_sgd_iter=7)  # RLlib 2.60 still takes the old name
        config.learners(num_aggregator_actors_per_learner=2)
    assert config.num_epochs == 7
    assert "num_aggregator_actors_per_learner=2 has no effect" in caplog.text
    with pytest.raises(ConfigError, match="learner_connector=.* a ConnectorV2 piece of Python"):
        PPOConfig().training(learner_connector=lambda obs_space, act_space: None)
    PPOConfig().training(learner_connector=None)  # RLlib's default: nothing to do
    with pytest.raises(ConfigError, match=r"lr=\[\[timestep, value\]"):
        PPOConfig().experimental(_torch_lr_scheduler_classes=[object])


def test_experimental_settings(caplog):
    from rljax.algorithms.ppo import PPOConfig

    with caplog.at_level(logging.WARNING, logger="rljax"):
        PPOConfig().experimental(_validate_config=True, _use_msgpack_checkpoints=True)
    assert "_validate_config=True has no effect" in caplog.text
    with pytest.raises(ConfigError, match="_torch_grad_scaler_class=.*needs none"):
        PPOConfig().experimental(_torch_grad_scaler_class=object)
    with pytest.raises(ConfigError, match="'_validate_configg', which is not one of RLlib's"):
        PPOConfig().experimental(_validate_configg=True)
