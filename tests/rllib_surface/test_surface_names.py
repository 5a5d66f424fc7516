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
    monkeypatch.setattr(resources_module, "_warned", False)

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
    monkeypatch.setattr(resources_module, "_warned", True)

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
    # max_report_frequency is how often the table prints.
    clock = [0.0]
    shown = reporter.reporter(table)
    assert shown.interval_s == 30.0 and shown.redraw_s == 30.0
    out = io.StringIO()
    shown = progress_module.ProgressReporter(
        table, stream=out, tty=False, interval_s=30.0, clock=lambda: clock[0]
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

    monkeypatch.setattr(old_model_dict, "_warned", False)
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

    from rljax.algorithms.algorithm import Algorithm, RLModule
    from rljax.core import (
        COMPONENT_LEARNER,
        COMPONENT_LEARNER_GROUP,
        COMPONENT_RL_MODULE,
    )

    seen = {}

    class Loaded:
        def _policy_ids(self):
            return ["p0", "p1"]

        def get_module(self, policy_id):
            return ("module", policy_id)

    def for_inference(path, **kwargs):
        seen["path"] = str(path)
        return Loaded()

    monkeypatch.setattr(Algorithm, "_for_inference", staticmethod(for_inference))
    path = os.path.join(tmp_path, COMPONENT_LEARNER_GROUP, COMPONENT_LEARNER, COMPONENT_RL_MODULE)
    assert RLModule.from_checkpoint(os.path.join(path, "p1")) == ("module", "p1")
    assert seen["path"] == str(tmp_path)


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
    assert "take no user Learner class" in text and ".training(" in text
    with pytest.raises(TorchClassError, match="TorchLearner is RLlib's PyTorch class"):
        TorchLearner()
    with pytest.raises(TorchClassError, match="DQNTorchLearner"):
        DQNTorchLearner(config=None)
