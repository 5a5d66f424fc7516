"""Settings declared once (rljax/algorithms/settings.py): the setters, tables and frozen records
derived from the declarations agree with them."""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from typing import Any, NamedTuple

import numpy as np
import pytest

from rljax.algorithms import registry
from rljax.algorithms.algorithm_config import UNSET, AlgorithmConfig
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.dqn.learner import DQNHyperparams
from rljax.algorithms.off_policy import OffPolicyConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.learner import PPOHyperparams
from rljax.algorithms.sac.learner import SACHyperparams
from rljax.algorithms.settings import Setting, frozen_from_config
from rljax.algorithms.td3.learner import TD3Hyperparams
from rljax.utils.checks import Int
from rljax.utils.errors import ConfigError

# Every config class users build: the registry's (checkpoints and the CLI read it); their
# bases' settings are theirs too. Multi-agent PPO is configured by PPOConfig itself
# (.multi_agent(...)): there is no separate class.
CONFIGS = [registry.config_class(name) for name in registry.algorithm_names()]
ids = [cls.__name__ for cls in CONFIGS]


def _keywords(setter: Any) -> list[str]:
    params = inspect.signature(setter).parameters.values()
    return [p.name for p in params if p.name != "self" and p.kind is not p.VAR_KEYWORD]


@pytest.mark.parametrize("cls", CONFIGS, ids=ids)
def test_each_setter_takes_exactly_its_sections_settings(cls):
    for section, keys in cls._SECTIONS.items():
        setter = getattr(cls, section, None)
        assert callable(setter), f"{cls.__name__} has no setter .{section}() for {keys}"
        expected = [cls.SETTINGS[k].setter_keyword for k in keys]
        assert _keywords(setter) == expected, (cls.__name__, section)


@pytest.mark.parametrize("cls", CONFIGS, ids=ids)
def test_every_setting_is_documented_and_its_default_passes_its_check(cls):
    assert cls._all_keys() == list(cls.SETTINGS)
    for name, setting in cls.SETTINGS.items():
        assert setting.name == name
        assert setting.doc.strip(), f"{cls.__name__}.{name} has no doc"
        setting.check(name, setting.fresh_default())  # raises ConfigError if it fails
        # The setter's docstring (its Args generated from the docs) names every keyword.
        keyword = setting.setter_keyword
        assert f"  {keyword}:" in getattr(cls, setting.section).__doc__, (cls.__name__, name)


def _admits(hint: Any, value: Any) -> bool:
    """Whether ``value`` has the type ``hint`` (unions, Any and generic aliases by origin)."""
    if hint is Any:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_admits(h, value) for h in typing.get_args(hint))
    if hint is None or hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, typing.get_origin(hint) or hint)


@pytest.mark.parametrize("cls", CONFIGS, ids=ids)
def test_setter_annotations_admit_the_declared_defaults(cls):
    for section in cls._SECTIONS:
        setter = getattr(cls, section)
        hints = typing.get_type_hints(setter)
        names = {cls.SETTINGS[k].setter_keyword: k for k in cls._SECTIONS[section]}
        for key in _keywords(setter):
            default = cls.SETTINGS[names[key]].default
            assert _admits(hints[key], default), (cls.__name__, key, hints[key], default)


def test_tables_are_derived_from_the_declarations():
    assert PPOConfig._SECTIONS["training"][:8] == AlgorithmConfig._SECTIONS["training"]
    assert "clip_param" in PPOConfig._PER_MODULE_KEYS and "gamma" in PPOConfig._PER_MODULE_KEYS
    assert "train_batch_size_per_learner" not in PPOConfig._PER_MODULE_KEYS
    assert PPOConfig._CHECKS["clip_param"] is PPOConfig.clip_param.check
    assert "model_config" in PPOConfig._CHECKED_ON_SET
    # A subclass's own default is one entry: the base keeps its default, the key its place.
    assert (AlgorithmConfig().lr, PPOConfig().lr) == (1e-3, 5e-5)
    assert AlgorithmConfig._all_keys().index("lr") == PPOConfig._all_keys().index("lr")
    # PPO's rate also takes a schedule: its check wraps the base's number check.
    assert PPOConfig.lr.check.number == AlgorithmConfig.lr.check
    assert "lr" in PPOConfig._PER_MODULE_KEYS and not AlgorithmConfig._PER_MODULE_KEYS


def test_mutable_defaults_are_not_shared():
    a, b = DQNConfig(), DQNConfig()
    a.training(replay_buffer_config={"capacity": 10})
    a.env_config["x"] = 1
    assert b.replay_buffer_config["capacity"] == 50000 and b.env_config == {}
    assert OffPolicyConfig.replay_buffer_config.default["capacity"] == 50000


def test_setters_record_and_chain_on_every_config():
    # RLlib's base config has training() too, with the settings every algorithm has.
    base = AlgorithmConfig().training(lr=5e-4, gamma=0.9).learners(num_learners=0)
    assert (base.lr, base.gamma) == (5e-4, 0.9)
    expected = [
        AlgorithmConfig.SETTINGS[k].setter_keyword for k in AlgorithmConfig._SECTIONS["training"]
    ]
    assert _keywords(AlgorithmConfig.training) == expected
    for cls in CONFIGS:
        cfg = cls().training(gamma=0.5).debugging(seed=3)
        assert isinstance(cfg, cls) and (cfg.gamma, cfg.seed) == (0.5, 3)
        cfg.training(gamma=UNSET)  # UNSET leaves a setting as it is
        assert cfg.gamma == 0.5


# --------------------------------------------------------------------------- frozen records


class _Inner(NamedTuple):
    clip_param: float
    vf_clip_param: float | None


@dataclasses.dataclass(frozen=True)
class _Record:
    gamma: float
    num_epochs: int
    use_kl_loss: bool
    inner: _Inner
    shards: int
    padded: bool = False


def test_frozen_from_config_fills_fields_by_name_in_their_types():
    cfg = PPOConfig().training(
        gamma=1, num_epochs=np.int64(3), use_kl_loss=np.bool_(False), vf_clip_param=None
    )
    hp = frozen_from_config(_Record, cfg, shards=2)
    assert hp == _Record(1.0, 3, False, _Inner(0.3, None), 2)
    assert [type(x) for x in (hp.gamma, hp.num_epochs, hp.use_kl_loss)] == [float, int, bool]
    cfg.training(vf_clip_param=np.float32(0.5))
    assert type(frozen_from_config(_Record, cfg, shards=2).inner.vf_clip_param) is float


def test_frozen_from_config_refuses_fields_it_cannot_fill():
    cfg = PPOConfig()
    with pytest.raises(TypeError, match="_Record.shards is not a setting of PPOConfig"):
        frozen_from_config(_Record, cfg)
    with pytest.raises(TypeError, match=r"_Record has no fields \['shard'\]"):
        frozen_from_config(_Record, cfg, shard=2, shards=2)


@pytest.mark.parametrize(
    "record, cls, args",
    [
        (PPOHyperparams, "PPO", (2, 64)),
        (DQNHyperparams, "DQN", ()),
        (SACHyperparams, "SAC", (3,)),
        (TD3Hyperparams, "TD3", ()),
    ],
)
def test_each_hyperparams_record_is_built_from_its_config(record, cls, args):
    """Every field of each algorithm's record is one of its config's settings or given by its
    ``from_config``: a renamed setting or a misspelt field fails here, at build time."""
    hp = record.from_config(registry.config_class(cls)(), *args)
    assert isinstance(hp, record)


def test_a_setting_declared_in_a_subclass():
    """A declaration is all the tables need: the setter's key, the default, the check and its
    message, the dict round trip and the "did you mean" hint."""

    class Config(PPOConfig):
        num_passes = Setting(2, Int(1), "Passes over something.", section="extra")

        def extra(self, *, num_passes: int = UNSET, **kwargs: Any) -> Config:
            """Sets the extra settings."""
            return self._set("extra", locals())

    assert Config._SECTIONS["extra"] == ("num_passes",)
    assert "num_passes: Passes over something." in Config.extra.__doc__
    cfg = Config()
    assert cfg.num_passes == 2 and "num_passes" not in PPOConfig.SETTINGS
    cfg.extra(num_passes=4)
    assert Config.from_dict(cfg.to_dict()).num_passes == 4
    with pytest.raises(ConfigError, match=r"num_passes=0 \(int\); use an int >= 1"):
        Config().extra(num_passes=0)._check_settings()
    with pytest.raises(ConfigError, match="did you mean 'num_passes'"):
        Config.from_dict({"num_pases": 3})
    with pytest.raises(ConfigError, match="did you mean 'num_passes'"):
        Config().extra(num_pases=3)
