"""Small names of RLlib's and Tune's surface that RLlib's example scripts import, with the
behaviour they have here."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

from rljax import tune
from rljax.tune import progress as progress_module
from rljax.tune import resources as resources_module
from rljax.tune.search import BasicVariantGenerator
from rljax.utils import once
from rljax.utils.errors import ConfigError

# ---- Tune: with_resources, PlacementGroupFactory, BasicVariantGenerator, CLIReporter ----------


def test_placement_group_factory_records_its_bundles():
    pgf = tune.PlacementGroupFactory([{"CPU": 1, "GPU": 0}, {"CPU": 2}, {"CPU": 2}])
    assert pgf.bundles == [{"CPU": 1, "GPU": 0}, {"CPU": 2}, {"CPU": 2}]
    assert pgf.required_resources == {"CPU": 5, "GPU": 0}
    assert pgf.head_cpus == 1 and not pgf.head_bundle_is_empty and pgf.strategy == "PACK"
    assert pgf == tune.PlacementGroupFactory([{"CPU": 1, "GPU": 0}, {"CPU": 2}, {"CPU": 2}])
    with pytest.raises(ConfigError, match="non-empty list"):
        tune.PlacementGroupFactory([])
    with pytest.raises(ConfigError, match="strategy"):
        tune.PlacementGroupFactory([{"CPU": 1}], strategy="NEAR")
    with pytest.raises(ConfigError, match=r"\['CPU'\]=-1"):
        tune.PlacementGroupFactory([{"CPU": -1}])


def test_with_resources_records_and_calls_through(monkeypatch):
    monkeypatch.setitem(once.SAID, "tune", set())  # not said yet

    def train_fn(config):
        return config["x"] * 2

    pgf = tune.PlacementGroupFactory([{"CPU": 1}])
    with pytest.warns(UserWarning, match="reserves nothing"):
        wrapped = tune.with_resources(train_fn, pgf)
    assert wrapped({"x": 4}) == 8 and wrapped.__name__ == "train_fn"
    assert resources_module.trainable_resources(wrapped) is pgf
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once only
        again = tune.with_resources(train_fn, {"cpu": 2, "gpu": 0})
    assert resources_module.trainable_resources(again) == {"cpu": 2, "gpu": 0}
    from rljax.algorithms.ppo import PPO

    assert tune.with_resources(PPO, {"cpu": 1}) is PPO
    with pytest.raises(ConfigError, match="PlacementGroupFactory"):
        tune.with_resources(train_fn, 3)  # type: ignore[arg-type]


def test_with_resources_function_trains_in_tuner(tmp_path, monkeypatch):
    monkeypatch.setitem(once.SAID, "tune", {"tune.with_resources"})  # said

    def train_fn(config):
        tune.report({"score": config["a"] + 1})

    results = tune.Tuner(
        tune.with_resources(train_fn, {"cpu": 1}),
        param_space={"a": tune.grid_search([1, 2])},
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="wr", verbose=0),
    ).fit()
    assert sorted(r.metrics["score"] for r in results) == [2, 3]


def test_basic_variant_generator_folds_into_tune_config():
    config = tune.TuneConfig(search_alg=BasicVariantGenerator(max_concurrent=3, random_state=7))
    assert config.search_alg is None and config.seed == 7 and config.max_concurrent_trials == 3
    both = tune.TuneConfig(
        max_concurrent_trials=2, search_alg=BasicVariantGenerator(max_concurrent=4)
    )
    assert both.max_concurrent_trials == 2 and both.seed is None
    unbounded = tune.TuneConfig(search_alg=BasicVariantGenerator())
    assert unbounded.max_concurrent_trials is None
    # A numpy generator gives one int seed, the same for the same state.
    a = BasicVariantGenerator(random_state=np.random.default_rng(5)).seed
    assert a == BasicVariantGenerator(random_state=np.random.default_rng(5)).seed
    assert isinstance(a, int)
    with pytest.raises(ConfigError, match="differ"):
        tune.TuneConfig(seed=1, search_alg=BasicVariantGenerator(random_state=2))
    with pytest.raises(ConfigError, match="points_to_evaluate"):
        BasicVariantGenerator(points_to_evaluate=[{"a": 1}])
    with pytest.raises(ConfigError, match="max_concurrent=-1"):
        BasicVariantGenerator(max_concurrent=-1)
    # TuneConfig's own values are checked before the generator's are folded into them.
    with pytest.raises(ConfigError, match=r"max_concurrent_trials='4': use an int >= 1"):
        tune.TuneConfig(
            max_concurrent_trials="4", search_alg=BasicVariantGenerator(max_concurrent=2)
        )
    with pytest.raises(ConfigError, match=r"TuneConfig.seed='2': use an int >= 0"):
        tune.TuneConfig(seed="2", search_alg=BasicVariantGenerator(random_state=2))


def test_basic_variant_generator_gives_the_default_variants(tmp_path):
    space = {"a": tune.grid_search([1, 2]), "b": tune.uniform(0.0, 1.0)}
    expected = tune.generate_variants(space, num_samples=2, seed=11)

    def train_fn(config):
        tune.report({"a": config["a"], "b": config["b"]})

    results = tune.Tuner(
        train_fn,
        param_space=space,
        tune_config=tune.TuneConfig(
            num_samples=2, search_alg=BasicVariantGenerator(random_state=11)
        ),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="bvg", verbose=0),
    ).fit()
    got = sorted((r.metrics["a"], r.metrics["b"]) for r in results)
    assert got == sorted((v["a"], v["b"]) for v in expected)
    assert len(got) == 4


def test_cli_reporter_chooses_the_columns():
    reporter = tune.CLIReporter(
        metric_columns={
            "training_iteration": "iter",
            "env_runners/episode_return_mean": "return",
        },
        max_report_frequency=30,
    )
    reporter.add_metric_column("time_total_s", "total time (s)")
    assert reporter.metric_columns == {
        "training_iteration": "iter",
        "env_runners/episode_return_mean": "return",
        "time_total_s": "total time (s)",
    }
    with pytest.raises(ValueError, match="already"):
        reporter.add_metric_column("time_total_s")
    table = reporter.table([("lr",)], "env_runners/episode_return_mean", "max")
    table.add("t0", "PPO_t0", {"lr": 0.01})
    table.add("t1", "PPO_t1", {"lr": 0.001})
    table.report(
        "t0",
        {
            "training_iteration": 3,
            "time_total_s": 1.5,
            "env_runners": {"episode_return_mean": 20.0},
        },
    )
    table.report(
        "t1",
        {
            "training_iteration": 2,
            "time_total_s": 1.0,
            "env_runners": {"episode_return_mean": 35.5},
        },
    )
    text = table.render()
    lines = text.splitlines()
    head = next(line for line in lines if line.startswith("| Trial name"))
    assert [c.strip() for c in head.strip("|").split("|")] == [
        "Trial name",
        "status",
        "lr",
        "iter",
        "return",
        "total time (s)",
    ]
    row = next(line for line in lines if line.startswith("| PPO_t1"))
    assert [c.strip() for c in row.strip("|").split("|")] == [
        "PPO_t1",
        "PENDING",
        "0.001",
        "2",
        "35.5",
        "1",
    ]
    assert "Current best trial: PPO_t1 with env_runners/episode_return_mean=35.5" in text
    # max_report_frequency is how often the table prints; given, off a terminal too.
    clock = [0.0]
    shown = reporter.reporter(table)
    assert shown.interval_s == 30.0 and shown.redraw_s == 30.0 and shown.intermediate is True
    out = io.StringIO()
    shown = progress_module.ProgressReporter(
        table, stream=out, tty=False, interval_s=30.0, clock=lambda: clock[0], intermediate=True
    )
    shown.update()
    clock[0] = 10.0
    shown.update()
    clock[0] = 31.0
    shown.update()
    assert out.getvalue().count("| Trial name") == 2
    with pytest.raises(ConfigError, match="max_report_frequency"):
        tune.CLIReporter(max_report_frequency=-1)
    with pytest.raises(ConfigError, match="progress_reporter"):
        tune.RunConfig(progress_reporter="table")


def test_cli_reporter_in_a_tuner_run(tmp_path, capsys):
    def train_fn(config):
        for i in range(2):
            tune.report({"score": config["a"] * 10 + i, "hidden": 123456})

    reporter = tune.CLIReporter(
        metric_columns=["score"], parameter_columns={"a": "A"}, max_report_frequency=0
    )
    tune.Tuner(
        train_fn,
        param_space={"a": tune.grid_search([1, 2])},
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), name="cli", verbose=1, progress_reporter=reporter
        ),
    ).fit()
    out = capsys.readouterr().out
    last = out[out.rindex("Trial status") :]
    head = next(line for line in last.splitlines() if line.startswith("| Trial name"))
    assert [c.strip() for c in head.strip("|").split("|")] == ["Trial name", "status", "A", "score"]
    rows = [line for line in last.splitlines() if line.startswith("| train_fn")]
    assert sorted(line.split("|")[-2].strip() for line in rows) == ["11", "21"]
    assert "123456" not in out


# ---- .training(model={...}): RLlib 2.60's old-stack model dict ----------------------------


def test_training_model_dict_is_checked_and_configures_nothing(monkeypatch, caplog):
    from rljax.algorithms import old_model_dict
    from rljax.algorithms.ppo import PPOConfig

    monkeypatch.setitem(once.SAID, "old_model_dict", set())
    with caplog.at_level("WARNING", logger="rljax"):
        config = PPOConfig().training(
            lr=1e-3, model={"fcnet_hiddens": [8], "post_fcnet_hiddens": [4], "dim": 84}
        )
    # As on RLlib's new API stack: the networks keep their settings, the rest is set.
    assert config.model_config.fcnet_hiddens == (256, 256) and config.lr == 1e-3
    assert (
        ".rl_module(model_config={'fcnet_hiddens': [8], 'head_fcnet_hiddens': [4]})" in caplog.text
    )
    assert old_model_dict.model_config_part({"post_fcnet_activation": "relu", "grayscale": 1}) == {
        "head_fcnet_activation": "relu"
    }
    caplog.clear()
    with caplog.at_level("WARNING", logger="rljax"):
        PPOConfig().update_from_dict({"model": {"vf_share_layers": True}})
    assert caplog.text == ""  # once only
    with pytest.raises(ConfigError, match="custom_model.*RLModuleSpec"):
        PPOConfig().training(model={"custom_model": "my_model"})
    with pytest.raises(ConfigError, match="use a dict"):
        PPOConfig().training(model=[1])
    PPOConfig().training(model={"custom_model": None, "custom_model_config": {}})  # defaults


# ---- rljax.core's ids and checkpoint component names ---------------------------------------


def test_core_constants_have_rllibs_values():
    from rljax import core

    assert (core.DEFAULT_MODULE_ID, core.DEFAULT_POLICY_ID) == ("default_policy",) * 2
    assert core.DEFAULT_AGENT_ID == "default_agent" and core.ALL_MODULES == "__all_modules__"
    assert {k: getattr(core, k) for k in dir(core) if k.startswith("COMPONENT_")} == {
        "COMPONENT_ENV_RUNNER": "env_runner",
        "COMPONENT_ENV_TO_MODULE_CONNECTOR": "env_to_module_connector",
        "COMPONENT_EVAL_ENV_RUNNER": "eval_env_runner",
        "COMPONENT_LEARNER": "learner",
        "COMPONENT_LEARNER_GROUP": "learner_group",
        "COMPONENT_METRICS_LOGGER": "metrics_logger",
        "COMPONENT_MODULE_TO_ENV_CONNECTOR": "module_to_env_connector",
        "COMPONENT_OPTIMIZER": "optimizer",
        "COMPONENT_RL_MODULE": "rl_module",
    }
    assert core.rl_module_path() == "learner_group/learner/rl_module/default_policy"
    assert core.Columns.OBS == "obs"


def test_rl_module_from_checkpoint_reads_the_component_path(monkeypatch, tmp_path):
    import os

    from rljax.algorithms.algorithm import RLModule
    from rljax.core import (
        COMPONENT_LEARNER,
        COMPONENT_LEARNER_GROUP,
        COMPONENT_RL_MODULE,
    )
    from rljax.execution import checkpoints

    seen = {}

    class Loaded:
        def _policy_ids(self):
            return ["p0", "p1"]

        def _module(self, policy_id):
            return ("module", policy_id)

    def for_inference(path, **kwargs):
        seen["path"] = str(path)
        return Loaded()

    monkeypatch.setattr(checkpoints, "for_inference", for_inference)
    path = os.path.join(tmp_path, COMPONENT_LEARNER_GROUP, COMPONENT_LEARNER, COMPONENT_RL_MODULE)
    assert RLModule.from_checkpoint(os.path.join(path, "p1")) == ("module", "p1")
    assert seen["path"] == str(tmp_path)
    # The rl_module directory itself: every policy, as RLlib's MultiRLModule.
    every = RLModule.from_checkpoint(path)
    assert dict(every) == {"p0": ("module", "p0"), "p1": ("module", "p1")}


# ---- rljax.utils.images --------------------------------------------------------------------


def test_image_helpers(tmp_path):
    pytest.importorskip("cv2")
    from rljax.utils import images

    img = np.zeros((4, 4, 3), np.uint8)
    img[:2, :2] = (200, 100, 0)  # one 2x2 block of one colour
    small = images.resize(img, 2, 2)
    assert small.shape == (2, 2, 3) and small.dtype == np.uint8
    assert small[0, 0].tolist() == [200, 100, 0] and small[1, 1].tolist() == [0, 0, 0]
    wide = images.resize(np.arange(8, dtype=np.float32).reshape(2, 4), 1, 2)
    assert wide.tolist() == [[2.5, 4.5]]  # means of the 2x2 areas: (0+1+4+5)/4, (2+3+6+7)/4
    gray = images.rgb2gray(np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255]]], np.uint8))
    assert gray.shape == (1, 3) and gray.tolist() == [[76, 150, 29]]  # 0.299, 0.587, 0.114
    import cv2

    path = tmp_path / "a.png"
    cv2.imwrite(str(path), img)  # OpenCV writes and reads BGR
    back = images.imread(path)
    assert back.dtype == np.float32 and back.shape == (4, 4, 3)
    assert back[0, 0].tolist() == [200.0, 100.0, 0.0]
    with pytest.raises(FileNotFoundError, match="no image"):
        images.imread(tmp_path / "missing.png")


# ---- MultiAgentEnv.__init__ fills in possible_agents -----------------------------------------


def test_multi_agent_env_derives_possible_agents_from_agents():
    import gymnasium as gym

    from rljax.env.multi_agent_env import MultiAgentEnv

    class TwoSpaces(MultiAgentEnv):  # as RLlib's different_spaces_for_agents.py env
        def __init__(self, config=None):
            self.agents = ["agent0", "agent1"]
            self.observation_spaces = {
                "agent0": gym.spaces.Box(-1.0, 1.0, (10,)),
                "agent1": gym.spaces.Box(-1.0, 1.0, (20,)),
            }
            self.action_spaces = {
                "agent0": gym.spaces.Discrete(2),
                "agent1": gym.spaces.Discrete(3),
            }
            super().__init__()

    env = TwoSpaces()
    assert env.possible_agents == ["agent0", "agent1"] and env.max_num_agents == 2
    env.agents.remove("agent1")  # the lists are the instance's own, not shared
    assert env.possible_agents == ["agent0", "agent1"] and MultiAgentEnv.agents == []
    assert env.get_action_space("agent1") == gym.spaces.Discrete(3)

    class OldIds(MultiAgentEnv):
        def __init__(self):
            self._agent_ids = {"a"}
            super().__init__()

    assert OldIds().agents == ["a"] and OldIds().possible_agents == ["a"]

    class BothSet(MultiAgentEnv):
        def __init__(self):
            self.possible_agents = ["x", "y"]
            self.agents = ["x"]
            super().__init__()

    assert (BothSet().agents, BothSet().possible_agents) == (["x"], ["x", "y"])
    assert MultiAgentEnv().possible_agents == []

    class Computed(MultiAgentEnv):  # agents computed (the PettingZoo wrappers): left alone
        def __init__(self):
            super().__init__()
            self.possible_agents = ["p"]

        @property
        def agents(self):  # type: ignore[override]
            return self.possible_agents

    assert Computed().agents == ["p"]


# ---- RLlib's PyTorch bases: one clear error where a class on them is used -------------------


def test_torch_module_class_fails_at_spec_build():
    from rljax.algorithms.ppo import PPOConfig
    from rljax.core.rl_module import RLModuleSpec
    from rljax.core.rl_module.apis import ValueFunctionAPI
    from rljax.core.rl_module.torch import TorchRLModule
    from rljax.utils.annotations import override
    from rljax.utils.torch_classes import TorchClassError

    class MyTorchModule(TorchRLModule, ValueFunctionAPI):  # a script's class loads
        @override(TorchRLModule)
        def setup(self):
            raise AssertionError("never built")

        @override(ValueFunctionAPI)
        def compute_values(self, batch, embeddings=None):
            raise AssertionError("never called")

    with pytest.raises(TorchClassError) as caught:
        RLModuleSpec(module_class=MyTorchModule, model_config={"hidden": 8})
    text = str(caught.value)
    assert text.startswith(
        "RLModuleSpec(module_class=...): MyTorchModule subclasses RLlib's PyTorch class "
        "ray.rllib.core.rl_module.torch.torch_rl_module.TorchRLModule; rljax runs JAX"
    )
    assert "flax.linen.Module" in text and "RLModuleSpec(module_class=YourFlaxModule" in text
    assert isinstance(caught.value, ConfigError)
    with pytest.raises(TorchClassError, match="MyTorchModule subclasses"):
        MyTorchModule(observation_space=None)
    with pytest.raises(TorchClassError, match=r"^\.rl_module\(rl_module_spec=\.\.\.\)"):
        PPOConfig().rl_module(rl_module_spec=MyTorchModule)  # type: ignore[arg-type]
    # Python before 3.12 wraps __set_name__'s TypeError in a RuntimeError.
    with pytest.raises((TypeError, RuntimeError)) as wrong:

        class NotDerived:
            @override(TorchRLModule)
            def setup(self):
                pass

    error = wrong.value.__cause__ or wrong.value
    assert "NotDerived must be a subclass of TorchRLModule" in str(error)


def test_torch_learner_class_fails_where_it_is_given():
    from rljax.algorithms.dqn.torch.dqn_torch_learner import DQNTorchLearner
    from rljax.algorithms.ppo import PPOConfig
    from rljax.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from rljax.core.learner.torch.torch_learner import TorchLearner
    from rljax.utils.torch_classes import TorchClassError

    class WithRegularizer(PPOTorchLearner):
        def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
            raise AssertionError("never called")

    with pytest.raises(TorchClassError) as caught:
        PPOConfig().training(learner_class=WithRegularizer, lr=1e-4)
    text = str(caught.value)
    assert text.startswith(
        ".training(learner_class=...): WithRegularizer subclasses RLlib's PyTorch class "
        "ray.rllib.algorithms.ppo.torch.ppo_torch_learner.PPOTorchLearner"
    )
    assert "subclass of rljax's JAX PPOLearner" in text and ".training(" in text
    with pytest.raises(TorchClassError, match="TorchLearner is RLlib's PyTorch class"):
        TorchLearner()
    with pytest.raises(TorchClassError, match="DQNTorchLearner"):
        DQNTorchLearner(config=None)


# ---- RLlib's example env classes -----------------------------------------------------------


def _cartpole_state(env):
    return np.array(env.unwrapped.state, np.float32)


def test_cartpole_with_dict_observation_space():
    import gymnasium as gym

    from rljax.examples.envs.classes.cartpole_with_dict_observation_space import (
        CartPoleWithDictObservationSpace,
    )

    env = CartPoleWithDictObservationSpace()
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    x, v, th, w = _cartpole_state(env)
    assert obs["x-pos"].tolist() == [x] and float(obs["angular-pos"]["value"]) == th
    assert obs["velocs"][0].tolist() == [v] and float(obs["velocs"][1]) == w
    ref = gym.make("CartPole-v1").unwrapped
    ref.reset(seed=3)
    expected, r, term, trunc, _ = ref.step(1)
    obs, reward, terminated, truncated, _ = env.step(1)
    assert reward == r == 1.0 and (terminated, truncated) == (term, trunc)
    assert np.allclose(
        [obs["x-pos"][0], obs["velocs"][0][0], obs["angular-pos"]["value"], obs["velocs"][1]],
        expected,
    )
    assert obs["angular-pos"]["some_random_stuff"] in (0, 1, 2)


def test_multi_agent_cartpole_with_dict_observation_space():
    from rljax.examples.envs.classes.multi_agent import (
        MultiAgentCartPoleWithDictObservationSpace,
        MultiAgentNestedSpaceRepeatAfterMeEnv,
    )

    env = MultiAgentCartPoleWithDictObservationSpace({"num_agents": 2})
    obs, _ = env.reset(seed=0)
    assert sorted(obs) == [0, 1] and env.possible_agents == [0, 1]
    assert all(env.get_observation_space(i).contains(obs[i]) for i in (0, 1))
    obs, rew, term, trunc, _ = env.step({0: 0, 1: 1})
    assert rew == {0: 1.0, 1: 1.0} and term["__all__"] is False
    assert set(obs[0]) == {"x-pos", "angular-pos", "velocs"}
    nested = MultiAgentNestedSpaceRepeatAfterMeEnv({"num_agents": 2})
    obs, _ = nested.reset(seed=0)
    _, rew, _, _, _ = nested.step({0: obs[0], 1: obs[1]})
    assert rew == {0: 1.0, 1: 1.0}  # repeated exactly: +1 for the Discrete, 0 off the Box
    assert MultiAgentCartPoleWithDictObservationSpace.__name__ == (
        "MultiAgentCartPoleWithDictObservationSpace"
    )


def test_cartpole_with_large_observation_space():
    from rljax.examples.envs.classes.cartpole_with_large_observation_space import (
        CartPoleWithLargeObservationSpace,
    )

    env = CartPoleWithLargeObservationSpace()
    obs, _ = env.reset(seed=0)
    assert len(obs) == 101 and env.observation_space.contains(obs)
    assert obs["actually-useful-stuff"].tolist() == _cartpole_state(env).tolist()
    obs, reward, *_ = env.step(0)
    assert reward == 1.0 and obs["actually-useful-stuff"].shape == (4,)
    assert obs["7"][1].shape == (30,)


def test_cartpole_sparse_rewards_pays_at_termination():
    from rljax.examples.envs.classes.cartpole_sparse_rewards import CartPoleSparseRewards

    env = CartPoleSparseRewards()
    obs, _ = env.reset(seed=0)
    assert obs["action_mask"].tolist() == [1, 1] and obs["obs"].shape == (4,)
    rewards, done = [], False
    while not done:
        _, r, terminated, truncated, _ = env.step(0)  # always left: falls in ~10 steps
        rewards.append(r)
        done = terminated or truncated
    assert terminated and rewards[:-1] == [0.0] * (len(rewards) - 1)
    assert rewards[-1] == float(len(rewards))
    env.reset(seed=1)
    env.step(1)
    state = env.get_state()
    assert state[1] == 1.0
    restored = env.set_state(state)
    assert restored["obs"].tolist() == _cartpole_state(env.env).tolist()


def test_stateless_pendulum():
    from rljax.examples.envs.classes.stateless_pendulum import StatelessPendulum

    env = StatelessPendulum({"g": 9.81, "max_episode_steps": 2})
    obs, _ = env.reset(seed=0)
    th, thdot = env.unwrapped.state  # type: ignore[attr-defined]
    assert obs.shape == (2,) and np.allclose(obs, [np.cos(th), np.sin(th)])
    assert env.g == 9.81
    obs, reward, term, trunc, _ = env.step(np.zeros(1, np.float32))
    # Pendulum's cost: th^2 + 0.1 thdot^2 + 0.001 u^2, th normalized to [-pi, pi).
    norm = ((th + np.pi) % (2 * np.pi)) - np.pi
    assert np.isclose(reward, -(norm**2 + 0.1 * thdot**2)) and (term, trunc) == (False, False)
    assert env.step(np.zeros(1, np.float32))[3] is True


def test_repeat_initial_obs_env():
    from rljax.examples.envs.classes.repeat_initial_obs_env import RepeatInitialObsEnv

    env = RepeatInitialObsEnv(episode_len=2)
    token, _ = env.reset(seed=0)
    assert token in (0, 1)
    assert env.step(token)[:4] == (0, 1.0, False, False)
    assert env.step(1 - token)[:4] == (0, -1.0, True, True)


def test_repeat_after_me_env():
    from rljax.examples.envs.classes.repeat_after_me_env import RepeatAfterMeEnv

    env = RepeatAfterMeEnv({"repeat_delay": 1, "episode_len": 3})
    first, _ = env.reset(seed=0)
    second, r, *_ = env.step(0)  # target: the 0 before the start
    assert r == 1.0
    third, r, *_ = env.step(1 - first)  # target: the first token
    assert r == -1.0
    _, r, term, trunc, _ = env.step(second)
    assert r == 1.0 and term and trunc
    box = RepeatAfterMeEnv({"continuous": True, "repeat_delay": 0})
    obs, _ = box.reset(seed=0)
    _, r, *_ = box.step(obs + np.array([0.5, -0.25], np.float32))
    assert np.isclose(r, -0.75) and obs.shape == (2,)


def test_deterministic_envs():
    from rljax.examples.envs.classes.deterministic_envs import (
        create_cartpole_deterministic,
        create_pendulum_deterministic,
    )

    a, b = create_cartpole_deterministic({"seed": 5}), create_cartpole_deterministic({"seed": 5})
    assert np.array_equal(a.unwrapped.state, b.unwrapped.state)  # type: ignore[attr-defined]
    p = create_pendulum_deterministic({})
    assert p.observation_space.shape == (3,)


def test_cliff_walking_wall_env():
    from rljax.examples.envs.classes.cliff_walking_wall_env import (
        ACTION_DOWN,
        ACTION_LEFT,
        ACTION_RIGHT,
        ACTION_UP,
        CliffWalkingWallEnv,
    )

    env = CliffWalkingWallEnv()
    assert env.reset()[0] == 36
    assert env.step(ACTION_RIGHT)[:4] == (36, -1.0, False, False)  # the wall
    assert env.step(ACTION_UP)[0] == 24
    assert env.step(ACTION_DOWN)[0] == 36
    env.step(ACTION_UP)
    for _ in range(11):
        pos = env.step(ACTION_RIGHT)[0]
    assert pos == 35 and env.step(ACTION_DOWN)[:4] == (47, 10.0, True, False)
    assert env.step(ACTION_LEFT)[0] == 47
    with pytest.raises(ValueError, match="action 4"):
        env.step(4)


def test_correlated_actions_env():
    from rljax.examples.envs.classes.correlated_actions_env import CorrelatedActionsEnv

    env = CorrelatedActionsEnv()
    obs, _ = env.reset(seed=0)
    assert obs.shape == (1,) and -1 <= obs[0] <= 1
    o = float(obs[0])
    _, r, term, trunc, _ = env.step((1, np.array([0.5], np.float32)))
    assert np.isclose(r, -abs(1 - (o + 1)) - abs(o + 1 + 0.5)) and term and not trunc


def test_debug_counter_envs():
    from rljax.examples.envs.classes.debug_counter_env import (
        DebugCounterEnv,
        MultiAgentDebugCounterEnv,
    )

    env = DebugCounterEnv({"start_at_t": 1})
    assert env.reset()[0].tolist() == [1.0]
    steps = [env.step(0) for _ in range(15)]
    assert [s[1] for s in steps[:4]] == [2.0, 0.0, 1.0, 2.0]
    assert steps[-1][0].tolist() == [16.0] and steps[-1][3] and not steps[-2][3]
    ma = MultiAgentDebugCounterEnv({"num_agents": 2, "base_episode_len": 1})
    obs, _ = ma.reset()
    assert obs[1].tolist() == [1.0, 0.0, 0.0, 0.0] and ma.possible_agents == [0, 1]
    obs, rew, _, trunc, _ = ma.step({0: np.array([0.5, -0.5]), 1: np.array([1.0, 2.0])})
    assert obs[1].tolist() == [1.0, 1.0, 2.0, 1.0] and rew == {0: 1.0, 1: 1.0}
    assert trunc == {0: False, 1: False, "__all__": False}
    _, _, _, trunc, _ = ma.step({0: np.zeros(2), 1: np.zeros(2)})
    assert trunc == {0: True, 1: False, "__all__": False}
    _, _, _, trunc, _ = ma.step({1: np.zeros(2)})
    assert trunc == {1: True, "__all__": True}


def test_fast_image_env():
    from rljax.examples.envs.classes.fast_image_env import FastImageEnv

    env = FastImageEnv({})
    obs, _ = env.reset()
    assert obs.shape == (84, 84, 4) and obs.dtype == np.float32 and not obs.any()
    results = [env.step(0) for _ in range(1001)]
    assert results[0][1] == 1.0 and not results[999][2] and results[1000][2]


def test_look_and_push_and_one_hot():
    from rljax.examples.envs.classes.look_and_push import LookAndPush, OneHot

    env = LookAndPush()
    state, _ = env.reset(seed=0)
    assert state == 2
    case, r, *_ = env.step(0)  # look
    assert case == env._case and r == -1.0
    states = [env.step(1)[0] for _ in range(3)]  # back to 2 if the case was 0, then up
    assert states == ([2, 3, 4] if case == 0 else [2, 3, 4])
    _, r, done, _, _ = env.step(case)
    assert done and r == (10.0 if case == 1 else -10.0)
    hot = OneHot(LookAndPush())
    obs, _ = hot.reset(seed=0)
    assert obs.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]


def test_memory_leaking_env():
    import gymnasium as gym

    from rljax.examples.envs.classes.memory_leaking_env import MemoryLeakingEnv

    env = MemoryLeakingEnv({"observation_space": gym.spaces.Box(-1, 1, (3,)), "p_terminated": 0})
    for _ in range(2):
        obs, _ = env.reset(seed=0)
        for _ in range(3):
            env.step(0)
    assert obs.shape == (3,) and len(env._leak) == 2  # one entry per episode


def test_ten_step_error_env():
    from rljax.examples.envs.classes.ten_step_error_env import TenStepErrorEnv

    env = TenStepErrorEnv({})
    obs, info = env.reset(seed=0)
    assert obs.shape == (1,) and info == {"last_eps_errored": False}
    steps = [env.step(np.zeros(1)) for _ in range(10)]
    assert [s[2] for s in steps] == [False] * 9 + [True]
    assert env.reset()[1] == {"last_eps_errored": True}
    for _ in range(9):
        env.step(np.zeros(1))
    with pytest.raises(RuntimeError, match="Test error"):
        env.step(np.zeros(1))


def test_mock_envs():
    from rljax.examples.envs.classes.mock_env import MockEnv, MockEnv2, MockEnv3

    env = MockEnv(2)
    assert env.reset() == (0, {})
    assert env.step(1)[:4] == (0, 1.0, False, False) and env.step(0)[:4] == (0, 1.0, True, True)
    env2 = MockEnv2(3)
    assert env2.reset(seed=7) == (0, {}) and env2.rng_seed == 7
    assert env2.step(0)[:2] == (1, 100.0) and env2.render().shape == (300, 400, 3)
    env3 = MockEnv3(2)
    assert env3.reset() == (0, {"timestep": 0})
    assert env3.step(0) == (1, 1.0, False, False, {"timestep": 1})
    assert env3.step(0) == (2, 2.0, True, True, {"timestep": 2})


def test_nested_space_repeat_after_me_env():
    import gymnasium as gym

    from rljax.examples.envs.classes.nested_space_repeat_after_me_env import (
        NestedSpaceRepeatAfterMeEnv,
    )

    env = NestedSpaceRepeatAfterMeEnv({"episode_len": 2})
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    action = (1 - obs[0], {"a": obs[1]["a"] + np.array([0.25, 0.5], np.float32)})
    _, r, term, trunc, _ = env.step(action)
    assert np.isclose(r, -0.75) and (term, trunc) == (False, False)  # Discrete wrong: +0
    new = env.current_obs
    _, r, _, trunc, _ = env.step(new)
    assert r == 1.0 and trunc
    custom = NestedSpaceRepeatAfterMeEnv(
        {"space": gym.spaces.Dict({"x": gym.spaces.Discrete(3), "y": gym.spaces.Discrete(2)})}
    )
    obs, _ = custom.reset(seed=1)
    assert custom.step(obs)[1] == 2.0


def test_parametric_actions_cartpole():
    from rljax.examples.envs.classes.parametric_actions_cartpole import (
        ParametricActionsCartPole,
        ParametricActionsCartPoleNoEmbeddings,
    )

    env = ParametricActionsCartPole(6)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    mask = obs["action_mask"]
    assert mask.sum() == 2 and mask[env.left_idx] == mask[env.right_idx] == 1
    assert np.allclose(obs["avail_actions"][env.left_idx], env.left_action_embed)
    assert not obs["avail_actions"][mask == 0].any()
    x_before = obs["cart"][1]
    obs, r, *_ = env.step(env.right_idx)  # "right" pushes the cart's velocity up
    assert r == 1.0 and obs["cart"][1] > x_before
    wrong = next(i for i in range(6) if obs["action_mask"][i] == 0)
    with pytest.raises(ValueError, match="not valid"):
        env.step(wrong)
    fixed = ParametricActionsCartPoleNoEmbeddings(4)
    obs, _ = fixed.reset(seed=0)
    assert obs["valid_avail_actions_mask"].sum() == 2 and fixed.step(fixed.left_idx)[1] == 1.0


def test_transformed_action_space_env():
    import gymnasium as gym

    from rljax.examples.envs.classes.transformed_action_space_env import (
        ActionTransform,
        TransformedActionPendulum,
        transform_action_space,
    )

    env = TransformedActionPendulum({"low": -15.0})
    assert isinstance(env, ActionTransform)
    space = env.action_space
    assert isinstance(space, gym.spaces.Box)
    assert space.low.tolist() == [-15.0] and space.high.tolist() == [1.0]
    assert env.action(np.array([-15.0])).tolist() == [-2.0]  # Pendulum's [-2, 2]
    assert env.action(np.array([-7.0])).tolist() == [0.0]
    assert env.action(np.array([1.0])).tolist() == [2.0]
    made = transform_action_space(lambda config: gym.make("Pendulum-v1"))
    assert made({}).action_space == gym.spaces.Box(-1.0, 1.0, (1,), np.float32)


def test_six_room_env():
    from rljax.examples.envs.classes.six_room_env import SixRoomEnv

    env = SixRoomEnv({"time_limit": 3})
    assert env.reset()[0] == 14  # row 1, col 1 of a 13-wide map
    assert env.step(0)[:4] == (14, -0.01, False, False)  # up: a wall
    assert env.step(3)[0] == 15 and env.step(1)[:4] == (28, -0.01, False, True)
    near = SixRoomEnv({"custom_map": ["WWWW", "W GW", "WWWW"]})
    near.reset()
    assert near.step(3)[:4] == (6, 10.0, True, False)


def test_hierarchical_six_room_env():
    from rljax.examples.envs.classes.six_room_env import HierarchicalSixRoomEnv

    env = HierarchicalSixRoomEnv({"custom_map": ["WWWWW", "W  GW", "WWWWW"]})
    assert env.possible_agents == ["high_level_agent", *(f"low_level_agent_{i}" for i in range(3))]
    obs, _ = env.reset()
    assert obs == {"high_level_agent": 6}
    obs, rew, term, _, _ = env.step({"high_level_agent": (7, 2)})
    assert obs == {"low_level_agent_2": (6, 7)}
    dist = HierarchicalSixRoomEnv.eucl_dist(6, 7, env.map)
    assert np.isclose(rew["high_level_agent"], dist / (3**2 + 5**2) ** 0.5 - 1.0)
    obs, rew, term, _, _ = env.step({"low_level_agent_2": 3})
    assert obs == {"high_level_agent": 7} and rew == {
        "high_level_agent": 1.0,
        "low_level_agent_2": 1.0,
    }
    env.step({"high_level_agent": (8, 0)})
    obs, rew, term, _, _ = env.step({"low_level_agent_0": 3})
    assert rew == {"high_level_agent": 10.0, "low_level_agent_0": 1.0} and term["__all__"]


def test_windy_maze_envs():
    from rljax.examples.envs.classes.windy_maze_env import (
        HierarchicalWindyMazeEnv,
        WindyMazeEnv,
    )

    env = WindyMazeEnv({})
    (pos, wind), _ = env.reset(seed=0)
    assert pos.tolist() == [1.0, 1.0] and wind in range(4) and env.end_pos == (6, 1)
    assert env._get_new_pos((1, 1), 0) == (1, 1) and env._get_new_pos((1, 1), 1) == (1, 2)
    (pos, _), r, done, trunc, _ = env.step(0)
    assert pos.tolist() == [1.0, 1.0] and (r, done, trunc) == (0.0, False, False)
    env.pos = (6, 2)
    env.wind_direction = 3
    (pos, _), r, done, _, _ = env.step(1)
    assert pos.tolist() == [6.0, 1.0] and r == 100.0 and done
    h = HierarchicalWindyMazeEnv({})
    obs, _ = h.reset(seed=0)
    assert list(obs) == ["high_level_agent"]
    obs, rew, _, _, _ = h.step({"high_level_agent": 1})
    assert (
        list(obs) == ["low_level_1"] and obs["low_level_1"][1] == 1 and rew == {"low_level_1": 0.0}
    )
    h.flat_env.wind_direction = 1  # east, as the goal says
    obs, rew, _, _, _ = h.step({"low_level_1": 1})
    assert obs["low_level_1"][0][0].tolist() == [1.0, 2.0] and rew == {"low_level_1": 1.0}


def test_env_with_subprocess(tmp_path):
    from rljax.env.env_context import EnvContext
    from rljax.examples.envs.classes.env_with_subprocess import EnvWithSubprocess

    files = {f"tmp_file{i}": str(tmp_path / f"f{i}") for i in range(1, 5)}
    for path in files.values():
        open(path, "w").close()
    env = EnvWithSubprocess(EnvContext(files, worker_index=1))
    try:
        assert env.subproc.poll() is None  # running
        assert env.reset() == (0, {}) and env.step(1) == (0, 0.0, True, False, {})
        env.close()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["f1", "f2", "f3"]
    finally:
        env.subproc.kill()
        env.subproc.wait()


def test_two_step_game():
    from rljax.examples.envs.classes.multi_agent import TwoStepGame, TwoStepGameWithGroupedAgents

    env = TwoStepGame({})
    assert env.reset() == ({0: 0, 1: 3}, {}) and env.possible_agents == [0, 1]
    obs, rew, term, _, _ = env.step({0: 1, 1: 0})
    assert obs == {0: 2, 1: 5} and rew == {0: 0.0, 1: 0.0} and not term["__all__"]
    _, rew, term, _, _ = env.step({0: 1, 1: 1})
    assert rew == {0: 4.0, 1: 4.0} and term["__all__"]
    env.reset()
    env.step({0: 0, 1: 1})
    assert env.step({0: 0, 1: 0})[1] == {0: 3.5, 1: 3.5}
    hot = TwoStepGame({"one_hot_state_encoding": True, "separate_state_space": True})
    obs, _ = hot.reset()
    assert obs[1]["obs"].tolist() == [1, 0, 0, 2] and obs[0]["state"].tolist() == [1, 0, 0]
    assert hot.get_observation_space(0).contains(obs[0])
    grouped = TwoStepGameWithGroupedAgents({})
    assert grouped.reset() == ({"agents": (0, 3)}, {})
    grouped.step({"agents": (1, 0)})
    obs, rew, term, _, _ = grouped.step({"agents": (0, 1)})
    assert rew == {"agents": 1.0} and term == {"agents": True, "__all__": True}


def test_guess_the_number_game():
    from rljax.examples.envs.classes.multi_agent import GuessTheNumberGame

    env = GuessTheNumberGame({"max_number": 5, "max_steps": 3})
    assert env.reset() == ({0: 0}, {})
    obs, rew, *_ = env.step({0: np.array([0, 3])})  # the secret is 3
    assert obs == {1: 0} and rew == {0: 0.0}
    assert env.step({1: np.array([0, 4])})[1] == {1: 1.0, 0: 1.0}  # lower than 4: yes
    assert env.step({1: np.array([1, 4])})[1] == {1: 0.0, 0: 1.0}  # higher than 4: no
    _, rew, term, trunc, _ = env.step({1: np.array([2, 3])})
    assert rew == {1: 100.0, 0: -100.0} and term["__all__"] and trunc["__all__"]
    env.reset()
    env.step({0: np.array([0, 1])})
    for _ in range(2):
        env.step({1: np.array([2, 0])})
    _, rew, _, trunc, _ = env.step({1: np.array([2, 0])})
    assert rew == {1: 0.0, 0: 100.0} and trunc["__all__"]


def test_double_row_corridor_env():
    import gymnasium as gym

    from rljax.examples.envs.classes.multi_agent.double_row_corridor_env import (
        DoubleRowCorridorEnv,
    )

    env = DoubleRowCorridorEnv({"length": 2})
    obs, _ = env.reset()
    assert {a: o.tolist() for a, o in obs.items()} == {"agent_0": [0, 0], "agent_1": [1, 1]}
    assert env.get_action_space("agent_0") == gym.spaces.Discrete(4) and env.possible_agents == [
        "agent_0",
        "agent_1",
    ]
    obs, rew, term, _, _ = env.step({"agent_0": 1, "agent_1": 0})  # each to the other row
    assert obs["agent_0"].tolist() == [1, 0] and obs["agent_1"].tolist() == [0, 1]
    assert np.allclose([rew["agent_0"], rew["agent_1"]], [-0.1, -0.1])
    obs, rew, term, _, _ = env.step({"agent_0": 3, "agent_1": 1})  # both to [1, 1]: meet
    assert np.allclose([rew["agent_0"], rew["agent_1"]], [4.9, 4.9]) and not term["__all__"]
    obs, rew, term, _, _ = env.step({"agent_0": 0, "agent_1": 2})  # both reach their goals
    assert np.allclose([rew["agent_0"], rew["agent_1"]], [9.9, 9.9])
    assert term == {"agent_0": True, "agent_1": True, "__all__": True}
    assert {a: o.tolist() for a, o in obs.items()} == {"agent_0": [0, 1], "agent_1": [1, 0]}
    assert env.step({})[0] == {}  # done agents observe no more


def test_contextual_bandits():
    from rljax.examples.envs.classes.multi_agent.bandit_envs_discrete import (
        LinearDiscreteEnv,
        SimpleContextualBandit,
        WheelBanditEnv,
    )

    env = SimpleContextualBandit()
    obs, _ = env.reset(seed=0)
    c = obs[0]
    _, r, term, _, info = env.step(0)
    assert r == (10.0 if c == 1 else -10.0) and term and info["regret"] == 10.0 - r
    lin = LinearDiscreteEnv({"num_actions": 3, "feature_dim": 2, "reward_noise_std": 0.0})
    x, _ = lin.reset(seed=0)
    assert x.shape == (2,) and np.allclose(np.linalg.norm(lin.thetas, axis=1), 1.0)
    best = int(np.argmax(lin.thetas @ x))
    _, r, _, _, info = lin.step(best)
    assert np.isclose(r, lin.thetas[best] @ x) and info == {"regret": 0.0, "opt_action": best}
    assert WheelBanditEnv.best_arm(np.array([0.1, 0.1]), 0.5) == 0
    assert [WheelBanditEnv.best_arm(np.array(p), 0.5) for p in ([0.6, 0.6], [0.6, -0.6])] == [1, 4]
    assert [WheelBanditEnv.best_arm(np.array(p), 0.5) for p in ([-0.6, 0.6], [-0.6, -0.6])] == [
        2,
        3,
    ]
    wheel = WheelBanditEnv({"std": 0.0})
    x, _ = wheel.reset(seed=0)
    assert np.linalg.norm(x) <= 1
    arm = WheelBanditEnv.best_arm(x, 0.5)
    _, r, _, _, info = wheel.step(arm)
    assert r == (50.0 if arm else 1.2) and info["regret"] == 0.0


def test_multi_agent_connect4():
    pytest.importorskip("pettingzoo")
    from rljax.examples.envs.classes.multi_agent.pettingzoo_connect4 import MultiAgentConnect4

    env = MultiAgentConnect4()
    assert env.possible_agents == ["player_0", "player_1"]
    obs, _ = env.reset(seed=0)
    assert list(obs) == ["player_0"] and obs["player_0"]["observation"].shape == (6, 7, 2)
    assert obs["player_0"]["action_mask"].tolist() == [1] * 7
    for column in (0, 1, 0, 1, 0, 1):  # player_0 stacks column 0, player_1 column 1
        obs, rew, term, _, _ = env.step({env.agent_selection: column})
    saved = env.get_state()
    obs, rew, term, _, _ = env.step({"player_0": 0})  # four in column 0
    assert rew == {"player_0": 1.0, "player_1": -1.0} and term["__all__"]
    back = env.set_state(saved)
    assert env.agent_selection == "player_0" and back["action_mask"].sum() == 7
    _, rew, term, _, _ = env.step({"player_0": 0})  # the restored game, won again
    assert rew == {"player_0": 1.0, "player_1": -1.0} and term["__all__"]


def test_parametric_rec_sys():
    from rljax.examples.envs.classes.multi_agent.bandit_envs_recommender_system import (
        ParametricRecSys,
    )

    env = ParametricRecSys(
        embedding_size=3,
        num_docs_to_select_from=4,
        slate_size=2,
        num_docs_in_db=6,
        num_users_in_db=1,
        user_time_budget=1.0,
    )
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs) and len(obs["doc"]) == 4
    docs = [obs["doc"][str(i)] for i in range(4)]
    dots = np.array([obs["user"] @ d for d in docs])
    scores, probs = env.click_probabilities([2, 0])
    expect = np.exp(dots - dots.max()) / np.exp(dots - dots.max()).sum()
    assert np.allclose(scores, expect)
    overlaps = np.array([expect[2], expect[0], 0.0])
    assert np.allclose(probs, np.exp(overlaps) / np.exp(overlaps).sum())
    for _ in range(50):  # until the one click the budget allows
        scores, _ = env.click_probabilities([2, 0])
        obs, r, done, trunc, _ = env.step(np.array([2, 0]))
        if done:
            break
        assert r == 0.0
    clicks = [resp["click"] for resp in obs["response"]]
    assert done and trunc and sum(clicks) == 1
    clicked_doc = [2, 0][clicks.index(1)]
    assert np.isclose(r, (1 - (scores.max() - scores[clicked_doc])) * 100)
    assert obs["response"][clicks.index(1)]["engagement"] == np.float32(r)
    assert any(np.array_equal(obs["doc"]["0"], d) for d in env.docs_db or [])


def test_default_resource_request_records_the_configs_knobs(monkeypatch):
    from rljax.algorithms.ppo import PPO, PPOConfig

    monkeypatch.setitem(once.SAID, "tune", {"tune.with_resources"})  # said

    config = (
        PPOConfig()
        .env_runners(num_env_runners=2, num_cpus_per_env_runner=2)
        .evaluation(evaluation_interval=1, evaluation_num_env_runners=1)
    )
    pgf = PPO.default_resource_request(config)
    assert pgf.bundles == [{"CPU": 1.0, "GPU": 0.0}] + [{"CPU": 2.0, "GPU": 0.0}] * 3
    assert PPO.default_resource_request({}).bundles == [{"CPU": 1.0, "GPU": 0.0}]
    two = PPO.default_resource_request(PPOConfig().learners(num_learners=2))
    assert two.bundles == [{"CPU": 1.0, "GPU": 0.0}] * 3 and two.required_resources["CPU"] == 3
    assert tune.with_resources(PPO, pgf) is PPO


def test_cartpole_with_protobuf_observation_space():
    pytest.importorskip("google.protobuf")
    from rljax.examples.envs.classes.cartpole_with_protobuf_observation_space import (
        CartPoleWithProtobufObservationSpace,
        from_protobuf,
        to_protobuf,
    )
    from rljax.examples.envs.classes.utils.cartpole_observations_proto import CartPoleObservation

    env = CartPoleWithProtobufObservationSpace()
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs) and obs.shape == (36,)
    assert np.allclose(from_protobuf(obs), _cartpole_state(env))
    obs, reward, *_ = env.step(1)
    assert reward == 1.0 and np.allclose(from_protobuf(obs), _cartpole_state(env))
    # Each field: a tag byte (number << 3 | 1, a 64-bit value) and 8 little-endian bytes.
    data = to_protobuf([0.0, 1.0, 0.0, -2.0]).tobytes()
    assert data[0] == (1 << 3) | 1 and data[9] == (2 << 3) | 1 and len(data) == 36
    assert (
        np.frombuffer(data[10:18], "<f8")[0] == 1.0 and np.frombuffer(data[28:36], "<f8")[0] == -2.0
    )
    parsed = CartPoleObservation()
    parsed.ParseFromString(data)
    assert (parsed.x_pos, parsed.x_veloc, parsed.angle_veloc) == (0.0, 1.0, -2.0)
