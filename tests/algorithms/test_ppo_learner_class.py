"""PPO with a learner class (``.training(learner_class=...)``): the loss its
``compute_loss_for_module`` returns is the one the update minimises, its logged metrics are
reported, its settings come from ``learner_config_dict``; refusals; configs and checkpoints
that name a learner class load only by the caller's opt-in."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.ppo_learner import PPOLearner
from rljax.core.columns import Columns
from rljax.core.rl_module.rl_module import RLModule
from rljax.examples.learners.classes.custom_ppo_loss_fn_learner import (
    PPOTorchLearnerWithWeightRegularizerLoss,
)
from rljax.utils.errors import CheckpointError, ConfigError


class LogsKL(PPOLearner):
    """Logs a metric under a name PPO's update reports itself."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        self.metrics.log_value("mean_kl_loss", 123.0)
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )


class ValueOnly(PPOLearner):
    """Only the value loss (no policy gradient), and the batch's column means as metrics."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        mask = batch[Columns.LOSS_MASK].astype(jnp.float32)
        err = jnp.square(fwd_out[Columns.VF_PREDS] - batch[Columns.VALUE_TARGETS])
        vf = jnp.sum(err * mask) / jnp.sum(mask)
        self.metrics.log_dict({"my_vf_loss": vf, "real_rows": jnp.sum(mask)})
        return config.learner_config_dict["scale"] * vf


def _config(**training) -> PPOConfig:
    # One minibatch step an iteration: its metrics are those of the initial parameters.
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4)
        .training(train_batch_size_per_learner=64, minibatch_size=64, num_epochs=1, **training)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=3)
    )


def _policy_params(algo):
    return jax.tree.leaves(algo.get_weights()["default_policy"])


def test_the_learner_loss_is_minimised_and_its_metrics_reported_by_hand():
    coeff = 0.5
    custom = _config(
        learner_class=PPOTorchLearnerWithWeightRegularizerLoss,
        learner_config_dict={"regularizer_coeff": coeff},
    ).build_algo()
    plain = _config().build_algo()
    try:
        leaves = _policy_params(custom)
        mean_weight = float(np.mean([np.mean(w) for w in leaves]))  # by hand, before the step
        mine = custom.train()["learners"]["default_policy"]
        base = plain.train()["learners"]["default_policy"]
        # The same seed, envs and parameters: the same batch and PPO terms; the total is
        # PPO's plus the regularizer, and the logged mean weight is the parameters'.
        np.testing.assert_allclose(mine["mean_weight"], mean_weight, rtol=1e-4)
        for key in ("policy_loss", "vf_loss", "entropy", "mean_kl_loss"):
            np.testing.assert_allclose(mine[key], base[key], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(
            mine["total_loss"], base["total_loss"] + coeff * mean_weight, rtol=1e-5
        )
        assert isinstance(custom.learner, PPOTorchLearnerWithWeightRegularizerLoss)
    finally:
        custom.stop()
        plain.stop()


def test_a_value_only_loss_leaves_the_policy_head_alone():
    algo = _config(learner_class=ValueOnly, learner_config_dict={"scale": 2.0}).build_algo()
    try:
        before = algo.get_weights()["default_policy"]["default_policy"]["params"]
        out = algo.train()["learners"]["default_policy"]
        after = algo.get_weights()["default_policy"]["default_policy"]["params"]
        # Only the value loss has gradients: the policy head's weights stay bit for bit, the
        # value head's move.
        for a, b in zip(jax.tree.leaves(before["pi"]), jax.tree.leaves(after["pi"]), strict=True):
            np.testing.assert_array_equal(a, b)
        moved = [
            not np.array_equal(a, b)
            for a, b in zip(
                jax.tree.leaves(before["vf"]), jax.tree.leaves(after["vf"]), strict=True
            )
        ]
        assert all(moved)
        assert out["real_rows"] == 64.0  # every row of the one minibatch is a transition
        np.testing.assert_allclose(out["total_loss"], 2.0 * out["my_vf_loss"], rtol=1e-6)
    finally:
        algo.stop()


def test_learner_classes_are_refused_where_they_cannot_train():
    with pytest.raises(ConfigError, match="must subclass rljax's JAX PPOLearner"):
        PPOConfig().training(learner_class=dict).validate()
    with pytest.raises(ConfigError, match="DQN takes no learner class"):
        DQNConfig().environment("CartPole-v1").training(learner_class=ValueOnly).validate()
    multi = _config(learner_class=ValueOnly).multi_agent(
        policies={"p0"}, policy_mapping_fn=lambda aid, ep, **kw: "p0"
    )
    with pytest.raises(ConfigError, match="multi-agent PPO takes none"):
        multi.validate()
    lstm = _config(learner_class=ValueOnly).rl_module(model_config={"use_lstm": True})
    with pytest.raises(ConfigError, match="non-recurrent PPO only"):
        lstm.validate()
    with pytest.raises(ConfigError, match=r"learner_config_dict\['f'\] is a builtin_function"):
        PPOConfig().training(learner_config_dict={"f": print}).validate()
    from rljax.execution.population import population_refusal

    grid = [_config(learner_class=ValueOnly, lr=lr) for lr in (1e-3, 1e-4)]
    assert "learner_class train one trial at a time" in population_refusal(grid)
    learner = ValueOnly(config=None)
    with pytest.raises(RuntimeError, match="only inside compute_loss_for_module"):
        learner.module["default_policy"]
    with pytest.raises(RuntimeError, match="only inside compute_loss_for_module"):
        learner.metrics.log_value("x", 1.0)
    # PPO adapts its KL coefficient from its own mean_kl_loss: a learner may not replace it.
    logs_kl = _config(learner_class=LogsKL).build_algo()
    try:
        with pytest.raises(ValueError, match="'mean_kl_loss'.*reports that metric itself"):
            logs_kl.train()
    finally:
        logs_kl.stop()


@pytest.mark.slow  # trains, saves and restores (about 3 s)
def test_a_saved_learner_class_loads_only_by_opt_in(tmp_path):
    config = _config(learner_class=ValueOnly, learner_config_dict={"scale": 1.0})
    d = config.to_dict()
    assert d["learner_class"] == {"import": f"{__name__}:ValueOnly"}
    assert d["learner_config_dict"] == {"scale": 1.0}
    with pytest.raises(ConfigError, match="learner_class names code to import.*learner_class="):
        PPOConfig.from_dict(d)
    assert PPOConfig.from_dict(d, learner_class=ValueOnly).learner_class is ValueOnly
    # rljax's own example learner needs no opt-in.
    example = _config(
        learner_class=PPOTorchLearnerWithWeightRegularizerLoss,
        learner_config_dict={"regularizer_coeff": 0.1},
    ).to_dict()
    assert PPOConfig.from_dict(example).learner_class is PPOTorchLearnerWithWeightRegularizerLoss
    algo = config.build_algo()
    try:
        algo.train()
        path = algo.save_to_path(str(tmp_path / "ckpt"))
    finally:
        algo.stop()
    with pytest.raises(CheckpointError, match="learner_class names code to import"):
        Algorithm.from_checkpoint(path)
    restored = Algorithm.from_checkpoint(path, learner_class=ValueOnly)
    try:
        assert restored.config.learner_class is ValueOnly and restored.train()
    finally:
        restored.stop()
    # For inference the learner class is not needed, so it is not loaded.
    module = RLModule.from_checkpoint(path)
    assert module is not None


@pytest.mark.slow  # two algorithms (about 4 s)
def test_separate_optimizers_step_each_network_at_its_own_rate():
    from rljax.examples.learners.classes.separate_vf_lr_and_optimizer_learner import (
        PPOTorchLearnerWithSeparateVfOptimizer,
    )

    def build(learner_class=None, **training):
        return (
            _config(learner_class=learner_class, **training)
            .rl_module(model_config={"fcnet_hiddens": [16], "vf_share_layers": False})
            .build_algo()
        )

    def moves(algo):
        before = algo.get_weights()["default_policy"]["default_policy"]["params"]
        algo.train()
        after = algo.get_weights()["default_policy"]["default_policy"]["params"]
        return {
            k: [
                np.asarray(b) - np.asarray(a)
                for a, b in zip(jax.tree.leaves(before[k]), jax.tree.leaves(after[k]), strict=True)
            ]
            for k in before
        }

    lr = 1e-3
    plain = build(lr=lr)
    split = build(
        PPOTorchLearnerWithSeparateVfOptimizer, lr=lr, learner_config_dict={"lr_vf": 4 * lr}
    )
    try:
        a, b = moves(plain), moves(split)
        # One minibatch step from the same parameters on the same batch: Adam's first step is
        # the same direction for both; the value network's step is 4x as long, the policy's
        # the same (Adam's first step is about lr per weight).
        for k in ("pi", "pi_encoder"):
            for x, y in zip(a[k], b[k], strict=True):
                np.testing.assert_allclose(y, x, rtol=1e-4, atol=1e-9)
        for k in ("vf", "vf_encoder"):
            for x, y in zip(a[k], b[k], strict=True):
                np.testing.assert_allclose(y, 4 * x, rtol=1e-4, atol=1e-9)
    finally:
        plain.stop()
        split.stop()
    with pytest.raises(ConfigError, match="vf_share_layers=False"):
        _config(learner_class=PPOTorchLearnerWithSeparateVfOptimizer).rl_module(
            model_config={"vf_share_layers": True}
        ).build_algo()
    with pytest.raises(ConfigError, match="grad_clip=None"):
        build(PPOTorchLearnerWithSeparateVfOptimizer, grad_clip=0.5)
