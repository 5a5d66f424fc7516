"""An algorithm's config is read-only once built, as RLlib's (``Algorithm.__init__`` freezes
it): an edit could not change the running algorithm, but a checkpoint saves the config."""

from __future__ import annotations

import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.ppo import PPOConfig


def test_the_built_algorithms_config_refuses_edits_and_its_checkpoint_keeps_the_built_one(
    tmp_path,
):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(lr=1e-3, train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    with config.build_algo() as algo:
        assert algo.get_config() is algo.config
        # Was: accepted, ignored by the running learner, and saved into the checkpoint, so a
        # restored run trained with lr 0.25.
        with pytest.raises(
            AttributeError, match=r"Cannot set attribute \(lr\) of an already frozen"
        ):
            algo.get_config().training(lr=0.25)
        with pytest.raises(AttributeError, match="already frozen"):
            algo.config.gamma = 0.5
        assert algo.config.lr == 1e-3 and algo.config.gamma == 0.99
        # The user's own config stays theirs to change; a copy of the algorithm's is not frozen.
        config.training(lr=2e-3)
        editable = algo.config.copy()
        editable.training(lr=5e-4)
        assert editable.lr == 5e-4
        path = algo.save_to_path(tmp_path / "ckpt")
    restored = Algorithm.from_checkpoint(path)
    try:
        assert restored.config.lr == 1e-3
    finally:
        restored.stop()
    # Built directly (PPO(config=...)), the algorithm freezes a copy, as RLlib's: the caller's
    # config stays theirs to change and build again (it was frozen with the algorithm's).
    from rljax.algorithms.ppo import PPO

    with PPO(config=config) as algo:
        assert algo.config is not config
        config.training(lr=3e-3)
        assert algo.config.lr == 2e-3
