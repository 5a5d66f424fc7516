"""RLlib 2.x's way to the old API stack on a config object (``api_stack(...=False)``), RLlib's
``ModelV2ToRLModule`` that moves an old-stack model to the new stack, and an
``RLModuleSpec``'s own ``model_config`` for the default networks."""

from __future__ import annotations

import flax.linen as nn
import gymnasium as gym
import jax
import numpy as np
import pytest

from rljax import tune
from rljax.agents import trainer_class
from rljax.agents.config_table import translate
from rljax.agents.trainer import old_stack_config
from rljax.algorithms.bc import BCConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.examples.rl_modules.classes.modelv2_to_rlm import ModelV2ToRLModule
from rljax.utils import test_utils
from rljax.utils.errors import ConfigError
from rljax.utils.test_utils import add_rllib_example_script_args


class TinyNet(nn.Module):
    """A user's Flax module (logits and value)."""

    num_outputs: int
    hidden: int = 4

    @nn.compact
    def __call__(self, obs):
        x = nn.tanh(nn.Dense(self.hidden)(obs))
        return nn.Dense(self.num_outputs)(x), nn.Dense(1)(x)[..., 0]


def _tiny(config: PPOConfig) -> PPOConfig:
    return (
        config.environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .debugging(seed=3)
    )


def _old(model: dict | None = None) -> PPOConfig:
    config = PPOConfig().api_stack(
        enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False
    )
    return config.training(model=model) if model is not None else config


def _kernel_shapes(algo) -> list[tuple[int, ...]]:
    weights = algo.get_weights()["default_policy"]
    return sorted(np.shape(x) for x in jax.tree.leaves(weights) if np.ndim(x) == 2)


def test_api_stack_switches_are_kept_and_round_trip_through_to_dict():
    """Was: ``api_stack(enable_rl_module_and_learner=False)`` raised ("rljax has only RLlib's
    new API stack"), so RLlib 2.x scripts that ask for the old stack stopped at once."""
    config = _old({"fcnet_hiddens": [16], "fcnet_activation": "linear"})
    assert config.is_old_api_stack and not config.enable_rl_module_and_learner
    assert config.model == {"fcnet_hiddens": [16], "fcnet_activation": "linear"}
    config.training(model={"vf_share_layers": True})  # merged, as RLlib's config.model.update
    assert config.model["fcnet_hiddens"] == [16] and config.model["vf_share_layers"]
    data = config.to_dict()
    assert data["enable_rl_module_and_learner"] is False and data["model"] == config.model
    back = PPOConfig().update_from_dict(data)
    assert back.is_old_api_stack and back.model == config.model
    # RLlib's migration: a copy switched back to the new stack, where the old dict does nothing.
    new = config.copy(copy_frozen=False).api_stack(True, True)
    assert not new.is_old_api_stack and "enable_rl_module_and_learner" not in new.to_dict()
    assert PPOConfig().to_dict().get("model") is None  # a new-stack dict has no old model
    frozen = PPOConfig()
    frozen.freeze()
    with pytest.raises(AttributeError, match="already frozen"):
        frozen.api_stack(enable_rl_module_and_learner=False)
    with pytest.raises(AttributeError, match="already frozen"):
        frozen.training(model={"fcnet_hiddens": [8]})


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: PPOConfig().api_stack(enable_rl_module_and_learner="no"), "expected True or"),
        (
            lambda: BCConfig().api_stack(enable_rl_module_and_learner=False),
            "BC has none: use the new stack",
        ),
        # On the new stack the old dict's custom model is refused as RLlib's new stack does.
        (
            lambda: PPOConfig().training(model={"custom_model": TinyNet}),
            "is RLlib's old-stack API",
        ),
    ],
)
def test_api_stack_refusals_name_what_to_do(call, message):
    with pytest.raises(ConfigError, match=message):
        call()


def test_the_algorithm_class_refuses_an_old_stack_config():
    from rljax.algorithms.ppo import PPO

    with pytest.raises(ConfigError, match="build it with config.build_algo"):
        PPO(_tiny(_old({"fcnet_hiddens": [16]})))


def test_an_old_stack_configs_dict_loads_back_its_custom_model_only_as_allowed():
    """Review findings: from_dict() refused the switches to_dict() writes, and the custom
    model's import reference came back as a dict that failed when the networks were built."""
    config = _old({"custom_model": TinyNet, "custom_model_config": {"hidden": 8}})
    data = config.to_dict()
    back = PPOConfig.from_dict(data, module_class=TinyNet)
    assert back.is_old_api_stack
    assert old_stack_config("PPO", back).rl_module_spec.module_class is TinyNet
    with pytest.raises(ConfigError, match="never imports code it names unless you opt in"):
        PPOConfig.from_dict(data)
    with pytest.raises(ConfigError, match="names code by its import path"):
        PPOConfig().update_from_dict(data)


def test_the_old_stack_reads_the_model_dict_custom_model_included():
    config = _old({"custom_model": TinyNet, "custom_model_config": {"hidden": 8}})
    trained = old_stack_config("PPO", config)
    assert trained.rl_module_spec.module_class is TinyNet
    assert trained.rl_module_spec.model_config == {"hidden": 8}
    assert not trained.is_old_api_stack and config.is_old_api_stack  # the copy only
    # A config's to_dict() names its algorithm; the old trainer's dict reading takes it.
    t = translate("PPO", {"algo": "PPO", "lr": 0.01}, list(PPOConfig.SETTINGS))
    assert t.settings == {"lr": 0.01} and not t.errors


@pytest.mark.slow  # two small PPO builds and a save (about 8 s)
def test_old_stack_config_builds_rllib_1x_trainer_and_its_checkpoint_moves_to_the_new_stack(
    tmp_path,
):
    old = _tiny(_old({"fcnet_hiddens": [16], "fcnet_activation": "linear"}))
    algo = old.build_algo()
    assert isinstance(algo, trainer_class("PPO"))
    assert _kernel_shapes(algo) == [(4, 16), (16, 1), (16, 2)]  # the old dict's network
    result = algo.train()
    assert result["episode_reward_mean"] == result["env_runners"]["episode_return_mean"]
    path = algo.save(str(tmp_path / "old"))
    # RLlib 1.x's path, and RLlib 2.x's old stack's checkpoint.path (its scripts read that).
    assert path == str(tmp_path / "old") and str(path.checkpoint.path) == path
    assert path.metrics["training_iteration"] == 1
    # It copies and pickles as the plain path did (review finding: TypeError).
    import copy
    import pickle

    for again in (copy.deepcopy(path), pickle.loads(pickle.dumps(path))):
        assert again == path and again.metrics == path.metrics
    # RLlib's migrate_modelv2_to_new_api_stack_by_policy_checkpoint.py: the new stack continues
    # from the old stack's policy, its networks and weights.
    spec = RLModuleSpec(module_class=ModelV2ToRLModule, model_config={"algo_checkpoint_dir": path})
    assert spec.module_class is None and spec.model_config["fcnet_hiddens"] == [16]
    assert str(spec.load_state_path).endswith("learner_group/learner/rl_module/default_policy")
    new = _tiny(PPOConfig()).rl_module(rl_module_spec=spec).build_algo()
    assert not isinstance(new, trainer_class("PPO"))
    before, after = jax.tree.leaves(algo.get_weights()), jax.tree.leaves(new.get_weights())
    assert len(before) == len(after) == 6
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # Made directly (RLlib's script does): the checkpoint's module, acting as the trained one.
    env = gym.make("CartPole-v1")
    module = ModelV2ToRLModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config={"policy_checkpoint_dir": path},
    )
    obs = np.array([[0.01, -0.02, 0.03, 0.04]], np.float32)
    np.testing.assert_allclose(
        module.forward_inference({"obs": obs})["action_dist_inputs"],
        algo.get_module().forward_inference({"obs": obs})["action_dist_inputs"],
        rtol=1e-6,
    )
    algo.stop()
    new.stop()


def test_modelv2_to_rlmodule_of_an_old_config_is_its_networks():
    """RLlib's migrate_modelv2_to_new_api_stack_by_config.py. Was: ``TorchClassError``."""
    old = _old({"fcnet_hiddens": [32], "fcnet_activation": "linear", "use_lstm": True})
    spec = RLModuleSpec(
        module_class=ModelV2ToRLModule,
        model_config={"old_api_stack_algo_config": old, "max_seq_len": 20, "policy_id": "p"},
    )
    assert spec.module_class is None and spec.load_state_path is None
    shown = {k: spec.model_config[k] for k in ("fcnet_hiddens", "use_lstm", "max_seq_len")}
    assert shown == {"fcnet_hiddens": [32], "use_lstm": True, "max_seq_len": 20}
    assert spec.model_config["fcnet_activation"] == "linear"
    # The old config's algorithm settings shape the networks the spec builds (review finding:
    # an old DQN config with dueling=False built a dueling network).
    from rljax.algorithms.dqn import DQNConfig

    old_dqn = DQNConfig().api_stack(enable_rl_module_and_learner=False).training(dueling=False)
    dqn_spec = RLModuleSpec(
        module_class=ModelV2ToRLModule, model_config={"old_api_stack_algo_config": old_dqn}
    )
    assert dqn_spec._algorithm == "DQN" and dqn_spec._algorithm_config.dueling is False
    with pytest.raises(ConfigError, match="must give one of"):
        RLModuleSpec(module_class=ModelV2ToRLModule, model_config={"policy_id": "p"})
    with pytest.raises(ConfigError, match="is no directory"):
        RLModuleSpec(module_class=ModelV2ToRLModule, model_config={"algo_checkpoint_dir": "/nx"})
    with pytest.raises(ConfigError, match="must be a config object"):
        RLModuleSpec(module_class=ModelV2ToRLModule, model_config={"old_api_stack_algo_config": {}})


def test_a_spec_model_config_sets_the_default_networks_over_the_configs():
    """Was: ``.rl_module(rl_module_spec=RLModuleSpec(model_config={...}))`` with no module
    class trained the default 256x256 networks of a single-agent config."""
    config = _tiny(PPOConfig()).rl_module(
        model_config={"fcnet_hiddens": [64], "fcnet_activation": "relu"},
        rl_module_spec=RLModuleSpec(model_config={"fcnet_hiddens": [32]}),
    )
    config.checked_algo_class()
    assert config.model_config.fcnet_hiddens == (32,)  # the spec's wins, as in RLlib
    assert config.model_config.fcnet_activation == "relu"  # the config's where the spec is silent
    # The spec keeps its settings: a later model_config is merged under them again (a review
    # finding: the spec's were consumed by the first build, and the next one dropped them).
    config.rl_module(model_config={"fcnet_hiddens": [64]})
    config.checked_algo_class()
    assert config.model_config.fcnet_hiddens == (32,)


def test_a_tuner_trains_an_old_stack_config_object_with_its_trainer():
    old = _tiny(_old({"fcnet_hiddens": [16]}))
    for trainable, space in (("PPO", old), (old, {"lr": tune.grid_search([0.01, 0.02])})):
        stop = tune.RunConfig(stop={"training_iteration": 1})
        tuner = tune.Tuner(trainable, param_space=space, run_config=stop)
        assert tuner._old_api is trainer_class("PPO")
        configs = tuner._algo_configs
        assert [c.model_config.fcnet_hiddens for c in configs] == [(16,)] * len(configs)
        assert configs[0].env == "CartPole-v1"  # the config object's, not a default one's
    assert [c.lr for c in configs] == [0.01, 0.02]


def test_a_function_trainable_beside_an_old_stack_config_stays_the_trainable():
    """Review finding: a function given with an old-stack config was replaced by the trainer."""
    from rljax.tune.old_api import old_api_trainable

    def train_fn(config):
        return {"x": 1}

    old = _old({"fcnet_hiddens": [16]})
    assert old_api_trainable(train_fn, old, old_keys=False) is train_fn
    assert old_api_trainable("PPO", old, old_keys=False) is trainer_class("PPO")
    assert old_api_trainable("DQN", old, old_keys=False) == "DQN"  # another algorithm's name
    assert old_api_trainable(old, old, old_keys=False) is trainer_class("PPO")


def test_the_example_harness_old_api_stack_flag_asks_for_the_old_stack():
    """Was: ``--old-api-stack`` was refused."""
    args = add_rllib_example_script_args().parse_args(["--old-api-stack"])
    config = test_utils._apply_args(PPOConfig().environment("CartPole-v1"), args)
    assert config.is_old_api_stack
