"""``try_import_torch`` without PyTorch: RLlib's example scripts name torch's initializers in
their model configs; rljax maps those by name and refuses any other torch use with one error."""

from __future__ import annotations

import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.utils import framework
from rljax.utils.torch_classes import TorchClassError


@pytest.fixture
def no_torch(monkeypatch):
    real = framework._optional
    monkeypatch.setattr(framework, "_optional", lambda n: None if n == "torch" else real(n))
    return framework.try_import_torch()


def test_torch_initializers_in_a_model_config_map_to_rljax_s(no_torch):
    torch, nn = no_torch
    assert not torch and not nn  # falsy, as RLlib's None placeholders
    assert nn.init.xavier_uniform_.__name__ == "xavier_uniform_"
    assert torch.nn.init.constant_.__name__ == "constant_"
    # The mean_std_filtering example's model config: built, and the biases are the constant.
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(
            model_config={
                "fcnet_hiddens": [8],
                "fcnet_kernel_initializer": torch.nn.init.xavier_uniform_,
                "fcnet_bias_initializer": torch.nn.init.constant_,
                "fcnet_bias_initializer_kwargs": {"val": 0.25},
            }
        )
        .build_algo()
    )
    try:
        biases = [
            np.asarray(leaf)
            for path, leaf in _leaves_with_paths(algo.get_module().params)
            if "'bias'" in path and leaf.shape == (8,)
        ]
        assert biases and all(np.all(b == np.float32(0.25)) for b in biases)
    finally:
        algo.stop()


def _leaves_with_paths(tree):
    import jax

    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        yield jax.tree_util.keystr(path), leaf


def test_any_other_torch_use_names_what_the_script_used(no_torch):
    torch, nn = no_torch
    with pytest.raises(TorchClassError, match=r"uses torch\.from_numpy, which is PyTorch.*Flax"):
        torch.from_numpy(np.zeros(2))
    with pytest.raises(TorchClassError, match=r"uses torch\.nn\.Module, which is PyTorch"):
        _ = nn.Module
    with pytest.raises(TorchClassError, match=r"torch\.nn\.init\.xavier_uniform_\(\.\.\.\)"):
        nn.init.xavier_uniform_(np.zeros((2, 2)))
    with pytest.raises(ImportError, match="pip install torch"):
        framework.try_import_torch(error=True)
