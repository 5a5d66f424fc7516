"""A callback class with its arguments bound, ``functools.partial(Cls, arg=...)``, as RLlib's
examples pass it (``.callbacks(functools.partial(SelfPlayCallback, win_rate_threshold=0.95))``):
built with its arguments, and saved in configs and checkpoints with them."""

from __future__ import annotations

import functools
import logging

import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.callbacks.callbacks import RLlibCallback
from rljax.callbacks.dispatch import Callbacks
from rljax.utils.errors import ConfigError


class ThresholdCallback(RLlibCallback):
    def __init__(self, threshold, scale=1.0):
        super().__init__()
        self.threshold = threshold * scale

    def on_train_result(self, *, algorithm, result, **kwargs):
        result["league_size"] = self.threshold


def test_a_partial_is_taken_and_built_with_its_arguments():
    """Was: refused ("expected a callback class ... got partial")."""
    bound = functools.partial(ThresholdCallback, 0.5, scale=4.0)
    config = PPOConfig().callbacks(bound)
    assert config.callbacks_class is bound
    (name, callback), *_ = Callbacks(config.callbacks_class, {}).entries
    assert callback.threshold == 2.0 and name == "functools.partial(ThresholdCallback, ...)"
    result: dict = {}
    Callbacks(bound, {})("on_train_result", algorithm=None, result=result)
    assert result == {"league_size": 2.0}


def test_a_partial_of_something_else_is_refused():
    config = PPOConfig().environment("CartPole-v1").callbacks(functools.partial(print, "x"))
    with pytest.raises(ConfigError, match="functools.partial of one"):
        config.validate()


def test_its_arguments_are_saved_and_loaded_with_it():
    config = PPOConfig().callbacks(functools.partial(ThresholdCallback, 0.5, scale=4.0))
    saved = config.to_dict()["callbacks_class"]
    assert saved == {
        "import": f"{__name__}:ThresholdCallback",
        "args": [0.5],
        "keywords": {"scale": 4.0},
    }
    loaded = PPOConfig.from_dict(config.to_dict(), allow_imports=[__name__]).callbacks_class
    assert isinstance(loaded, functools.partial) and loaded.func is ThresholdCallback
    assert loaded.args == (0.5,) and loaded.keywords == {"scale": 4.0}


def test_arguments_a_file_cannot_hold_leave_it_out_saying_so(caplog):
    config = PPOConfig().callbacks(functools.partial(ThresholdCallback, object()))
    saved = config.to_dict()
    assert saved["callbacks_class"] == {
        "import": f"{__name__}:ThresholdCallback",
        "arguments_not_saved": True,
    }
    with caplog.at_level(logging.WARNING, logger="rljax"):
        loaded = PPOConfig.from_dict(saved, allow_imports=[__name__])
    assert loaded.callbacks_class is None
    assert "arguments a file cannot hold" in caplog.text
    # A crafted entry (code in place of values) is not loaded either.
    saved["callbacks_class"] = {
        "import": f"{__name__}:ThresholdCallback",
        "args": [{"x": 1}],
        "keywords": {},
    }
    assert PPOConfig.from_dict(saved, allow_imports=[__name__]).callbacks_class is None
