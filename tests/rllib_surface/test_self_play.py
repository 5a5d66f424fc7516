"""What RLlib's self-play examples (``multi_agent/self_play_with_open_spiel.py``) use: the
example callback that grows a league through ``add_module``, the old stack's random policy,
the RLlib helpers at their paths, and ``import torch`` in a ported script without PyTorch."""

from __future__ import annotations

import functools
import types

import flax.linen as nn
import gymnasium as gym
import jax
import numpy as np
import pytest

from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.core.rl_module.rl_module import RLModuleSpec
from rljax.examples._old_api_stack.policy.random_policy import RandomPolicy
from rljax.examples.multi_agent.utils import (
    SelfPlayCallback,
    SelfPlayLeagueBasedCallback,
    ask_user_for_action,
)
from rljax.examples.rl_modules.classes.random_rlm import RandomRLModule
from rljax.utils.errors import ConfigError
from rljax.utils.port import port_source
from rljax.utils.torch_classes import TorchClassError


def test_a_ported_import_torch_binds_a_stand_in_without_pytorch():
    ported = port_source("import torch\n\n\ndef play(x):\n    return torch.from_numpy(x)\n")
    assert "except ImportError" in ported.source
    assert any("`import torch`" in note for note in ported.notes)
    namespace: dict = {}
    exec(compile(ported.source, "ported", "exec"), namespace)  # noqa: S102 - our own text
    torch = namespace["torch"]
    if isinstance(torch, types.ModuleType):  # PyTorch is installed: the real module
        return
    assert not torch
    with pytest.raises(TorchClassError, match="torch.from_numpy"):
        namespace["play"](np.zeros(2))


def test_an_import_torch_sharing_its_line_is_left_as_it_is():
    """The guard's lines would take ``import numpy as np`` into its ``except``."""
    ported = port_source("import torch; import numpy as np\nx = np.zeros(1)\n")
    assert ported.source.startswith("import torch; import numpy as np")


def test_the_old_stacks_random_policy_acts_at_random():
    policy = RandomPolicy(gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(3), {})
    actions, state, extra = policy.compute_actions(np.zeros((5, 2)))
    assert len(actions) == 5 and all(0 <= a < 3 for a in actions) and state == [] and extra == {}
    assert policy.learn_on_batch(None) == {} and policy.get_weights() == {}


def test_a_random_module_takes_the_runs_default_model_config():
    """RLlib's league script gives RandomRLModule the run's DefaultModelConfig; was refused."""
    spec = RLModuleSpec(module_class=RandomRLModule, model_config=DefaultModelConfig())
    assert isinstance(spec.model_config, dict)
    with pytest.raises(ConfigError, match="got a DefaultModelConfig"):
        RLModuleSpec(module_class=_Flax, model_config=DefaultModelConfig())


class _Flax(nn.Module):  # a Flax module class: its settings are its keyword arguments
    @nn.compact
    def __call__(self, x):
        return x


def test_refused_helpers_say_what_to_use_and_the_user_is_asked_until_legal(monkeypatch):
    with pytest.raises(ConfigError, match="algorithm.add_module"):
        SelfPlayLeagueBasedCallback(win_rate_threshold=0.9)
    answers = iter(["x", "7", "2"])
    monkeypatch.setattr("builtins.input", lambda: next(answers))
    step = types.SimpleNamespace(observations={"current_player": 1, "legal_actions": [[], [2, 3]]})
    assert ask_user_for_action(step) == 2


@pytest.mark.slow  # builds, trains, rebuilds with the new module and trains (about 15 s)
def test_self_play_callback_adds_a_frozen_copy_of_main():
    pyspiel = pytest.importorskip("pyspiel")
    from self_play_config import main_vs_random

    from rljax import register_env
    from rljax.env.wrappers.open_spiel import OpenSpielEnv

    register_env("rljax_test_selfplay", lambda _: OpenSpielEnv(pyspiel.load_game("tic_tac_toe")))
    config = main_vs_random(
        "rljax_test_selfplay",
        lambda aid, ep, **kw: "main" if hash(ep.id_) % 2 == aid else "random",
        16,
        128,
    )
    # A threshold every win rate passes: a copy joins after each iteration.
    config.callbacks(functools.partial(SelfPlayCallback, win_rate_threshold=-1.0))
    with config.build_algo() as algo:
        first = algo.train()
        assert 0.0 <= first["env_runners"]["win_rate"] <= 1.0
        assert first["league_size"] == 3
        main, copy = (algo.get_weights()[p] for p in ("main", "main_v1"))
        assert all(
            np.array_equal(a, b)
            for a, b in zip(jax.tree.leaves(main), jax.tree.leaves(copy), strict=True)
        )
        second = algo.train()
        assert second["league_size"] == 4 and "main_v2" in algo.config.policies
        # "main" now plays its copies only, and only "main" learns.
        returns = second["env_runners"]["module_episode_returns_mean"]
        assert np.isnan(returns.get("random", np.nan)) and set(second["learners"]) == {
            "main",
            "__all_modules__",
        }
