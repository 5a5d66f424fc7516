"""Config types are strict where a wrong type would silently change meaning.

One table of wrong-typed settings, at least one row per kind of setting (bools, ints, seeds,
floats, strings from a set, layer widths, dicts, replay settings, schedules, multi-agent
settings); each must raise ``ConfigError`` from the setter or ``validate()`` naming the setting,
the value given and its type, and what is allowed. Then the right types, as user code, numpy and
YAML give them, must still pass and come out in their normal form. Nothing here builds an
algorithm, so the file runs in seconds.
"""

from __future__ import annotations

import types

import gymnasium as gym
import numpy as np
import pytest
import yaml

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.dqn.dqn import DQN
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.sac import SACConfig
from rljax.algorithms.td3 import TD3Config
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole
from rljax.utils.errors import ConfigError
from rljax.utils.seeding import MAX_SEED, derive_seed


def ppo(**training):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(**{"train_batch_size_per_learner": 256, "minibatch_size": 64, **training})
    )


def dqn(**training):
    return DQNConfig().environment("CartPole-v1").training(**training)


def sac(**training):
    return SACConfig().environment("Pendulum-v1").training(**training)


def model(**model_config):
    return ppo().rl_module(model_config=model_config)


def multi(**multi_agent):
    kw = {"policies": ["p0", "p1"], "policy_mapping_fn": lambda agent_id, *a, **k: f"p{agent_id}"}
    kw.update(multi_agent)
    return (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .training(train_batch_size_per_learner=256, minibatch_size=64)
        .multi_agent(**kw)
    )


# (id, the call, words the message must hold)
WRONG = [
    # bools: a string, an int or None is not a bool
    (
        "clip_actions str",
        lambda: ppo().environment(clip_actions="no"),
        ["clip_actions='no' (str)", "True or False"],
    ),
    (
        "sample_async int",
        lambda: ppo().env_runners(sample_async=1),
        ["sample_async=1 (int)", "True or False"],
    ),
    (
        "restart_failed_sub_environments None",
        lambda: ppo().fault_tolerance(restart_failed_sub_environments=None),
        ["restart_failed_sub_environments=None (NoneType)", "True or False"],
    ),
    (
        "use_kl_loss str",
        lambda: ppo(use_kl_loss="false"),
        ["use_kl_loss='false' (str)", "True or False"],
    ),
    ("use_gae str", lambda: ppo(use_gae="no"), ["use_gae='no' (str)", "True or False"]),
    ("double_q int", lambda: dqn(double_q=0), ["double_q=0 (int)", "True or False"]),
    ("noisy str", lambda: dqn(noisy="yes"), ["noisy='yes' (str)", "True or False"]),
    ("twin_q str", lambda: sac(twin_q="True"), ["twin_q='True' (str)", "True or False"]),
    (
        "store_buffer_in_checkpoints str",
        lambda: dqn(store_buffer_in_checkpoints="no"),
        ["store_buffer_in_checkpoints='no' (str)", "True or False"],
    ),
    (
        "vf_share_layers str",
        lambda: model(vf_share_layers="no"),
        ["model_config.vf_share_layers='no' (str)"],
    ),
    (
        "free_log_std int",
        lambda: model(free_log_std=1),
        ["model_config.free_log_std=1 (int)", "True or False"],
    ),
    # ints: not a bool, not a float (even a whole one), not a string
    (
        "num_env_runners bool",
        lambda: ppo().env_runners(num_env_runners=True),
        ["num_env_runners=True (bool)", "an int in [0, 1024]"],
    ),
    (
        "num_envs_per_env_runner str",
        lambda: ppo().env_runners(num_envs_per_env_runner="4"),
        ["num_envs_per_env_runner='4' (str)", "int >= 1", "without quotes"],
    ),
    (
        "train_batch_size_per_learner float",
        lambda: ppo(train_batch_size_per_learner=256.5),
        ["train_batch_size_per_learner=256.5 (float)", "int >= 1"],
    ),
    (
        "train_batch_size str",
        lambda: ppo(train_batch_size="4000"),
        ["train_batch_size='4000' (str)", "None or an int >= 1"],
    ),
    (
        "minibatch_size whole float",
        lambda: ppo(minibatch_size=64.0),
        ["minibatch_size=64.0 (float)", "int >= 1"],
    ),
    (
        "num_epochs str",
        lambda: ppo(num_epochs="3"),
        ["num_epochs='3' (str)", "an int in [1, 1000]"],
    ),
    (
        "rollout_fragment_length str",
        lambda: ppo().env_runners(rollout_fragment_length="long"),
        ["rollout_fragment_length='long' (str)", "'auto' or an int in [1, 1000000]"],
    ),
    (
        "evaluation_interval float",
        lambda: ppo().evaluation(evaluation_interval=0.5),
        ["evaluation_interval=0.5 (float)", "None or an int >= 1"],
    ),
    (
        "max_num_env_runner_restarts negative",
        lambda: ppo().fault_tolerance(max_num_env_runner_restarts=-1),
        ["max_num_env_runner_restarts=-1 (int)", "int >= 0"],
    ),
    (
        "async_batch_size str",
        lambda: ppo().env_runners(async_batch_size="2"),
        ["async_batch_size='2' (str)", "None or an int >= 1"],
    ),
    (
        "learning starts float",
        lambda: dqn(num_steps_sampled_before_learning_starts=1e3),
        ["num_steps_sampled_before_learning_starts=1000.0 (float)", "int >= 0"],
    ),
    (
        "target_network_update_freq None",
        lambda: dqn(target_network_update_freq=None),
        ["target_network_update_freq=None (NoneType)", "int >= 0"],
    ),
    ("num_atoms float", lambda: dqn(num_atoms=51.0), ["num_atoms=51.0 (float)", "int >= 1"]),
    (
        "min_sample_timesteps_per_iteration bool",
        lambda: dqn().reporting(min_sample_timesteps_per_iteration=True),
        ["min_sample_timesteps_per_iteration=True (bool)", "an int in [1, 10000000]"],
    ),
    # seeds: refused outside [0, 2**31 - 1], never an OverflowError from JAX or numpy
    (
        "seed 2**80",
        lambda: ppo().debugging(seed=2**80),
        [f"seed={2**80} (int)", "None or an int in [0, 2147483647]"],
    ),
    (
        "seed 2**31",
        lambda: ppo().debugging(seed=2**31),
        ["seed=2147483648 (int)", "[0, 2147483647]"],
    ),
    ("seed negative", lambda: ppo().debugging(seed=-1), ["seed=-1 (int)", "[0, 2147483647]"]),
    ("seed float", lambda: ppo().debugging(seed=1.5), ["seed=1.5 (float)", "[0, 2147483647]"]),
    ("seed str", lambda: ppo().debugging(seed="0"), ["seed='0' (str)", "[0, 2147483647]"]),
    # floats: numbers (not bools or strings), finite, in range
    (
        "lr YAML string",
        lambda: ppo(lr="1e-3"),
        ["lr='1e-3' (str)", "number >= 0", "YAML reads 1e-3 as a string", "1.0e-3"],
    ),
    ("lr nan", lambda: ppo(lr=float("nan")), ["lr=nan (float)", "finite number >= 0"]),
    ("gamma bool", lambda: ppo(gamma=True), ["gamma=True (bool)", "number in [0, 1]"]),
    (
        "grad_clip inf",
        lambda: ppo(grad_clip=float("inf")),
        ["grad_clip=inf (float)", "None or a finite number > 0"],
    ),
    ("lambda_ out of range", lambda: ppo(lambda_=1.5), ["lambda_=1.5 (float)", "number in [0, 1]"]),
    (
        "entropy_coeff negative",
        lambda: ppo(entropy_coeff=-0.1),
        ["entropy_coeff=-0.1 (float)", "number >= 0"],
    ),
    (
        "vf_clip_param str",
        lambda: ppo(vf_clip_param="none"),
        ["vf_clip_param='none' (str)", "None or a finite number > 0"],
    ),
    (
        "sample_timeout_s zero",
        lambda: ppo().env_runners(sample_timeout_s=0),
        ["sample_timeout_s=0 (int)", "None or a finite number > 0"],
    ),
    (
        "num_gpus_per_learner str",
        lambda: ppo().learners(num_gpus_per_learner="1"),
        ["num_gpus_per_learner='1' (str)", "number >= 0"],
    ),
    (
        "num_cpus_per_env_runner negative",
        lambda: ppo().env_runners(num_cpus_per_env_runner=-1),
        ["num_cpus_per_env_runner=-1 (int)", "number >= 0"],
    ),
    ("tau above 1", lambda: dqn(tau=2), ["tau=2 (int)", "number in (0, 1]"]),
    (
        "training_intensity inf",
        lambda: dqn(training_intensity=float("inf")),
        ["training_intensity=inf (float)", "None or a number in (0, 10000]"],
    ),
    ("actor_lr zero", lambda: sac(actor_lr=0), ["actor_lr=0 (int)", "number > 0"]),
    (
        "target_entropy str",
        lambda: sac(target_entropy="high"),
        ["target_entropy='high' (str)", "'auto' or a finite number"],
    ),
    ("v_min str", lambda: dqn(v_min="-10"), ["v_min='-10' (str)", "a finite number"]),
    ("sigma0 negative", lambda: dqn(sigma0=-1), ["sigma0=-1 (int)", "number > 0"]),
    (
        "log_std_clip_param negative",
        lambda: model(log_std_clip_param=-1),
        ["model_config.log_std_clip_param=-1 (int)", "number > 0"],
    ),
    # strings from a set
    (
        "evaluation_duration_unit",
        lambda: ppo().evaluation(evaluation_duration_unit="hours"),
        ["evaluation_duration_unit='hours' (str)", "'episodes' or 'timesteps'"],
    ),
    (
        "on_non_finite_update",
        lambda: ppo().fault_tolerance(on_non_finite_update="ignore"),
        ["on_non_finite_update='ignore' (str)", "'skip' or 'raise'"],
    ),
    (
        "grad_clip_by",
        lambda: ppo(grad_clip_by="by_value"),
        ["grad_clip_by='by_value' (str)", "'global_norm', 'norm' or 'value'"],
    ),
    (
        "log_level",
        lambda: ppo().debugging(log_level="verbose"),
        ["log_level='verbose' (str)", "'WARN'"],
    ),
    (
        "td_error_loss_fn",
        lambda: dqn(td_error_loss_fn="l1"),
        ["td_error_loss_fn='l1' (str)", "'huber' or 'mse'"],
    ),
    (
        "fcnet_activation",
        lambda: model(fcnet_activation="sigmoid"),
        ["model_config.fcnet_activation='sigmoid' (str)", "'tanh'"],
    ),
    (
        "gym_env_vectorize_mode",
        lambda: ppo().env_runners(gym_env_vectorize_mode=1),
        ["gym_env_vectorize_mode=1 (int)", "'SYNC', 'ASYNC'"],
    ),
    (
        "env int",
        lambda: ppo().environment(3),
        ["env=3 (int)", "an id string, a gymnasium.Env class"],
    ),
    # layer widths: a list of ints, never a string split into digits or a bare int
    (
        "fcnet_hiddens str",
        lambda: model(fcnet_hiddens="64"),
        ["model_config.fcnet_hiddens='64' (str)", "a list of ints >= 1"],
    ),
    (
        "fcnet_hiddens float",
        lambda: model(fcnet_hiddens=[64.5]),
        ["fcnet_hiddens=[64.5] (list)", "entry 0 is 64.5 (float)"],
    ),
    (
        "fcnet_hiddens bool",
        lambda: model(fcnet_hiddens=[True]),
        ["fcnet_hiddens=[True] (list)", "entry 0 is True (bool)"],
    ),
    (
        "fcnet_hiddens str entry",
        lambda: model(fcnet_hiddens=["64"]),
        ["fcnet_hiddens=['64'] (list)", "entry 0 is '64' (str)"],
    ),
    (
        "fcnet_hiddens int",
        lambda: model(fcnet_hiddens=64),
        ["fcnet_hiddens=64 (int)", "a list of ints >= 1"],
    ),
    (
        "fcnet_hiddens zero",
        lambda: model(fcnet_hiddens=[64, 0]),
        ["fcnet_hiddens=[64, 0] (list)", "entry 1 is 0 (int)"],
    ),
    (
        "head_fcnet_hiddens str",
        lambda: model(head_fcnet_hiddens="256"),
        ["head_fcnet_hiddens='256' (str)"],
    ),
    (
        "conv_filters short entry",
        lambda: model(conv_filters=[[32, 8]]),
        ["conv_filters=[[32, 8]] (list)", "[out_channels, kernel, stride]", "entry 0 is [32, 8]"],
    ),
    (
        "conv_filters str",
        lambda: model(conv_filters="nature"),
        ["conv_filters='nature' (str)", "None or a list"],
    ),
    # dicts
    (
        "env_config list",
        lambda: ppo().environment(env_config=[("a", 1)]),
        ["env_config=[('a', 1)] (list)", "a dict with string keys"],
    ),
    (
        "env_config int key",
        lambda: ppo().environment(env_config={1: "a"}),
        ["env_config={1: 'a'} (dict)", "key 1 (int) is not a string"],
    ),
    (
        "model_config str",
        lambda: ppo().rl_module(model_config="small"),
        ["model_config='small' (str)", "a dict of model settings"],
    ),
    (
        "rl_module_spec dict",
        lambda: ppo().rl_module(rl_module_spec={"module_class": None}),
        ["rl_module_spec={", "RLModuleSpec"],
    ),
    # replay_buffer_config's values
    (
        "replay config str",
        lambda: dqn(replay_buffer_config="big"),
        ["replay_buffer_config='big' (str)", "a dict with keys type, capacity"],
    ),
    (
        "replay capacity str",
        lambda: dqn(replay_buffer_config={"capacity": "100000"}),
        ["replay_buffer_config['capacity']='100000' (str)", "int >= 1"],
    ),
    (
        "replay capacity float",
        lambda: dqn(replay_buffer_config={"capacity": 1.5e5}),
        ["replay_buffer_config['capacity']=150000.0 (float)", "int >= 1"],
    ),
    (
        "replay alpha str",
        lambda: dqn(replay_buffer_config={"alpha": "0.6"}),
        ["replay_buffer_config['alpha']='0.6' (str)", "number >= 0"],
    ),
    (
        "replay beta None",
        lambda: sac(replay_buffer_config={"beta": None}),
        ["replay_buffer_config['beta']=None (NoneType)"],
    ),
    (
        "replay eps negative",
        lambda: dqn(replay_buffer_config={"eps": -1}),
        ["replay_buffer_config['eps']=-1 (int)", "number >= 0"],
    ),
    (
        "replay type",
        # (RLlib's old-stack "ReplayBuffer" is taken: the same replay as EpisodeReplayBuffer.)
        lambda: dqn(replay_buffer_config={"type": "ReservoirReplayBuffer"}),
        [
            "replay_buffer_config['type']='ReservoirReplayBuffer' (str)",
            "'PrioritizedEpisodeReplayBuffer'",
        ],
    ),
    # schedules and ranges
    (
        "epsilon str value",
        lambda: dqn(epsilon=[(0, "1.0")]),
        ["epsilon=[(0, '1.0')] (list)", "[(timestep, value), ...]"],
    ),
    (
        "epsilon float timestep",
        lambda: dqn(epsilon=[(0.5, 1.0)]),
        ["epsilon=[(0.5, 1.0)] (list)", "int timesteps >= 0"],
    ),
    (
        "epsilon triple",
        lambda: dqn(epsilon=[(0, 1.0), (100, 0.1, 3)]),
        ["epsilon=[(0, 1.0), (100, 0.1, 3)] (list)"],
    ),
    (
        "epsilon str",
        lambda: dqn(epsilon="linear"),
        ["epsilon='linear' (str)", "a number in [0, 1] or a schedule"],
    ),
    ("epsilon bool timestep", lambda: dqn(epsilon=[(True, 1.0)]), ["epsilon=[(True, 1.0)] (list)"]),
    ("epsilon empty", lambda: dqn(epsilon=[]), ["epsilon=[] (list)"]),
    ("epsilon above 1", lambda: dqn(epsilon=1.5), ["epsilon=1.5 (float)", "a number in [0, 1]"]),
    (
        "epsilon order",
        lambda: dqn(epsilon=[(100, 1.0), (0, 0.1)]),
        ["the timesteps [100, 0] do not increase"],
    ),
    (
        "n_step str",
        lambda: dqn(n_step="3"),
        ["n_step='3' (str)", "an int >= 1 or a range (low, high)"],
    ),
    (
        "n_step float bound",
        lambda: dqn(n_step=(1, 3.0)),
        ["n_step=(1, 3.0) (tuple)", "(low, high) of ints"],
    ),
    ("n_step reversed", lambda: dqn(n_step=[3, 1]), ["n_step=(3, 1) (tuple)", "1 <= low <= high"]),
    # multi-agent settings and PolicySpec
    (
        "policies str",
        lambda: multi(policies="p0"),
        ["policies='p0' (str)", "a non-empty list of policy ids"],
    ),
    (
        "policies int ids",
        lambda: multi(policies=[1, 2]),
        ["policies=[1, 2] (list)", "the id 1 (int) is not a non-empty string"],
    ),
    (
        "policies empty id",
        lambda: multi(policies={"": None}),
        ["policies={'': None} (dict)", "the id '' (str)"],
    ),
    (
        "policies_to_train str",
        lambda: multi(policies_to_train="p0"),
        ["policies_to_train='p0' (str)", "a list of policy ids"],
    ),
    (
        "policies_to_train ints",
        lambda: multi(policies_to_train=[0]),
        ["policies_to_train=[0] (list)"],
    ),
    (
        "overrides per module list",
        lambda: multi(algorithm_config_overrides_per_module={"p0": [("lr", 1)]}),
        [
            "algorithm_config_overrides_per_module={'p0': [('lr', 1)]} (dict)",
            "dict policy id -> dict of settings",
        ],
    ),
    (
        "override of a wrong type",
        lambda: multi(algorithm_config_overrides_per_module={"p1": {"lr": "fast"}}),
        ["policy 'p1''s overrides: lr='fast' (str)", "number >= 0"],
    ),
    (
        "override of layer widths",
        lambda: multi(
            algorithm_config_overrides_per_module={"p1": {"model_config": {"fcnet_hiddens": "64"}}}
        ),
        ["policy 'p1''s overrides: model_config.fcnet_hiddens='64' (str)"],
    ),
    (
        "override of model_config list",
        lambda: multi(algorithm_config_overrides_per_module={"p1": {"model_config": [32]}}),
        ["policy 'p1''s overrides: model_config=[32] (list)", "a dict with string keys"],
    ),
    (
        "PolicySpec config str",
        lambda: multi(policies={"p0": (None, None, None, "lr"), "p1": None}),
        ["policies['p0'].config='lr' (str)", "None or a dict with string keys"],
    ),
    (
        "PolicySpec space str",
        lambda: multi(policies={"p0": (None, "box", None, {}), "p1": None}),
        ["policies['p0'].observation_space='box' (str)", "gymnasium space"],
    ),
    (
        "PolicySpec model str",
        lambda: multi(policies={"p0": {"model": "small"}, "p1": None}),
        ["policies['p0'].config['model']='small' (str)"],
    ),
]


@pytest.mark.parametrize("call, words", [row[1:] for row in WRONG], ids=[row[0] for row in WRONG])
def test_wrong_types_are_refused_with_a_message_naming_them(call, words):
    with pytest.raises(ConfigError) as info:
        call().validate()
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)


def test_every_setting_has_a_declared_check():
    for cls in (PPOConfig, DQNConfig, SACConfig, TD3Config):
        assert set(cls._CHECKS) == set(cls._all_keys()), cls.__name__


RIGHT = [
    # numpy ints and floats, as computed settings often are; stored as Python scalars
    (
        "numpy scalars",
        lambda: (
            ppo(
                train_batch_size_per_learner=np.int64(256),
                minibatch_size=np.int32(64),
                num_epochs=np.int64(2),
                lr=np.float32(1e-3),
                gamma=np.float64(0.9),
            )
            .env_runners(num_envs_per_env_runner=np.int64(4))
            .environment(clip_actions=np.bool_(False))
            .debugging(seed=np.int64(7))
        ),
        {
            "train_batch_size_per_learner": 256,
            "minibatch_size": 64,
            "num_envs_per_env_runner": 4,
            "seed": 7,
            "clip_actions": False,
        },
    ),
    ("seed at the top of the range", lambda: ppo().debugging(seed=MAX_SEED), {"seed": MAX_SEED}),
    ("seed None", lambda: ppo().debugging(seed=None), {"seed": None}),
    (
        "auto literals",
        lambda: ppo().learners(num_cpus_per_learner="auto"),
        {"rollout_fragment_length": "auto"},
    ),
    (
        "whole-number float settings given as ints",
        lambda: ppo(lr=1, grad_clip=40),
        {"lr": 1, "grad_clip": 40},
    ),
    ("SAC target_entropy", lambda: sac(target_entropy=-1), {"target_entropy": -1}),
    ("epsilon constant", lambda: dqn(epsilon=0.1), {"epsilon": [(0, 0.1)]}),
    (
        "epsilon of numpy pairs",
        lambda: dqn(epsilon=[(np.int64(0), np.float32(1.0)), (100, 0)]),
        {"epsilon": [(0, 1.0), (100, 0.0)]},
    ),
    ("n_step range", lambda: dqn(n_step=(np.int64(1), 3)), {"n_step": (1, 3)}),
    (
        "replay numpy capacity",
        lambda: dqn(replay_buffer_config={"capacity": np.int64(4096), "alpha": 1}),
        {
            "replay_buffer_config": {
                "type": "PrioritizedEpisodeReplayBuffer",
                "capacity": 4096,
                "alpha": 1,
                "beta": 0.4,
            }
        },
    ),
]


@pytest.mark.parametrize(
    "call, expected", [row[1:] for row in RIGHT], ids=[row[0] for row in RIGHT]
)
def test_right_types_pass_in_their_normal_form(call, expected):
    config = call()
    config.validate()
    for key, value in expected.items():
        got = getattr(config, key)
        assert got == value and type(got) is type(value), (key, got)


@pytest.mark.parametrize(
    "widths, expected",
    [
        ([64, 64], (64, 64)),
        ((32,), (32,)),
        ([np.int64(16), np.int32(8)], (16, 8)),
        (np.array([16, 16]), (16, 16)),
        ([], ()),
    ],
)
def test_layer_widths_as_lists_tuples_and_numpy(widths, expected):
    config = model(fcnet_hiddens=widths, head_fcnet_hiddens=widths)
    config.validate()
    assert config.model_config.fcnet_hiddens == expected
    assert all(type(w) is int for w in config.model_config.head_fcnet_hiddens)


YAML_DQN = """
algo: DQN
env: CartPole-v1
epsilon: [[0, 1.0], [10000, 0.02]]
n_step: [1, 3]
lr: 0.0005
training_intensity: 8
replay_buffer_config: {type: EpisodeReplayBuffer, capacity: 50000}
model_config:
  fcnet_hiddens: [256]
  conv_filters: [[32, [8, 8], 4], [64, 4, 2]]
seed: 0
"""

YAML_PPO = """
env: CartPole-v1
config:
  lr: 1.0e-3
  train_batch_size_per_learner: 512
  minibatch_size: 64
  vf_clip_param: null
  use_kl_loss: false
  model_config: {fcnet_hiddens: [64, 64], vf_share_layers: false}
"""


def test_yaml_lists_and_scalars_pass(tmp_path):
    path = tmp_path / "dqn.yaml"
    path.write_text(YAML_DQN)
    config = DQNConfig.from_yaml(path)
    config.validate()
    assert config.epsilon == [(0, 1.0), (10000, 0.02)] and config.n_step == (1, 3)
    assert config.model_config.fcnet_hiddens == (256,)
    assert config.model_config.conv_filters == ((32, (8, 8), 4), (64, (4, 4), 2))
    path = tmp_path / "ppo.yaml"
    path.write_text(YAML_PPO)
    config = PPOConfig.from_yaml(path)
    config.validate()
    assert config.lr == 1e-3 and config.vf_clip_param is None and config.use_kl_loss is False


def test_a_yaml_exponent_without_a_dot_is_named(tmp_path):
    path = tmp_path / "ppo.yaml"
    path.write_text("env: CartPole-v1\nlr: 3e-4\n")
    assert yaml.safe_load(path.read_text())["lr"] == "3e-4"  # YAML 1.1: a string
    with pytest.raises(ConfigError, match=r"lr='3e-4' \(str\).*write 3\.0e-4"):
        PPOConfig.from_yaml(path).validate()


def test_policy_spec_with_spaces_and_config_passes():
    box = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    config = multi(policies={"p0": (None, box, gym.spaces.Discrete(2), {"lr": 5e-3}), "p1": None})
    config.validate()
    assert config.module_config("p0").lr == 5e-3


def test_derived_seeds_stay_in_range():
    assert derive_seed(MAX_SEED, 1) == 0
    for seed in (0, 12345, MAX_SEED):
        for offset in (1000 * 7 + 100_003 * 50, 7919 * 10_000, 10_007 * 10**6 + 3):
            assert 0 <= derive_seed(seed, offset) <= MAX_SEED
    assert derive_seed(5, 1000) == 1005  # small seeds derive as before


@pytest.mark.parametrize("explore", ["no", 1, None, 0.0])
def test_explore_must_be_a_bool(explore):
    # The check comes first, before the algorithm is touched, so a bare stand-in suffices.
    stand_in = types.SimpleNamespace(_infer_cache={})
    for call in (
        lambda: Algorithm.compute_actions(stand_in, np.zeros((1, 4)), explore=explore),
        lambda: Algorithm.compute_single_action(stand_in, np.zeros(4), explore=explore),
        lambda: Algorithm._infer_fn(stand_in, explore),
        lambda: DQN._infer_fn(stand_in, explore),
    ):
        with pytest.raises(
            TypeError, match=rf"explore={explore!r} \({type(explore).__name__}\); use True or False"
        ):
            call()


def test_default_model_config_checks_itself():
    with pytest.raises(ConfigError, match=r"model_config.fcnet_hiddens='64' \(str\)"):
        DefaultModelConfig(fcnet_hiddens="64")
    assert DefaultModelConfig(fcnet_hiddens=[8]).fcnet_hiddens == (8,)


def test_model_config_reads_as_rllibs_dict():
    # RLlib's config.model_config is a dict: learner code reads it by key.
    config = PPOConfig().rl_module(model_config={"fcnet_hiddens": [8], "vf_share_layers": True})
    assert config.model_config["vf_share_layers"] is True
    assert config.model_config["fcnet_hiddens"] == [8]
    assert config.model_config.get("fcnet_activation") == "tanh"
    assert config.model_config.get("no_such_key", 3) == 3
    with pytest.raises(KeyError, match="no key 'vf_shared'.*vf_share_layers"):
        config.model_config["vf_shared"]
    assert "vf_share_layers" in config.model_config and "vf_shared" not in config.model_config
    assert 0 not in config.model_config
    assert config.model_config.keys()[:2] == ["fcnet_hiddens", "fcnet_activation"]
    with pytest.raises(TypeError, match="not iterable"):
        iter(config.model_config)
    # Merged with a dict as RLlib's doc code does (model_config | {...}): a dict, both ways.
    merged = config.model_config | {"fcnet_hiddens": [32]}
    assert type(merged) is dict and merged["fcnet_hiddens"] == [32]
    assert merged["vf_share_layers"] is True and ({"x": 1} | config.model_config)["x"] == 1
    assert dict(config.model_config.items())["fcnet_hiddens"] == [8]
    assert PPOConfig().rl_module(model_config=merged).model_config.fcnet_hiddens == (32,)
    with pytest.raises(TypeError):
        config.model_config | 3
