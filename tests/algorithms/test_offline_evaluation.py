"""RLlib's offline evaluation of the loss (``evaluation(offline_evaluation_interval=...)``) on
BC: the loss by hand, RLlib's result layout, and training left as it was."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import pytest

from rljax.algorithms.marwil import BCConfig, MARWILConfig
from rljax.offline.data import OfflineWriter
from rljax.utils.errors import ConfigError

pytest.importorskip("pyarrow")

CARTPOLE = gym.make("CartPole-v1")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """Three short CartPole episodes of a scripted controller: 60 rows or so."""
    path = tmp_path_factory.mktemp("bc-data")
    writer = OfflineWriter(path, CARTPOLE.observation_space, CARTPOLE.action_space)
    writer.record_episodes(gym.make("CartPole-v1"), lambda o: int(o[2] > 0), episodes=3)
    writer.flush()
    return str(path)


def _bc(data_dir, **evaluation):
    return (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_=data_dir, dataset_num_iters_per_learner=2)
        .training(train_batch_size_per_learner=16)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3)
        .evaluation(**evaluation)
        .build_algo()
    )


def test_the_offline_loss_is_bcs_loss_on_the_data_and_training_is_left_alone(data_dir):
    plain = _bc(data_dir)
    rows = plain.data.num_rows
    algo = _bc(data_dir, offline_evaluation_interval=2, offline_eval_batch_size_per_runner=rows)
    try:
        first, second = algo.train(), algo.train()
        assert "evaluation" not in first  # every 2nd iteration
        plain.train()
        trained = plain.train()["learners"]["default_policy"]["policy_loss"]
        # Same seed, same batches: evaluating does not move training's random draws.
        assert second["learners"]["default_policy"]["policy_loss"] == pytest.approx(trained)
        offline = second["evaluation"]["offline_eval_runners"]
        # One batch of every row: BC's loss, -mean log pi(a|s), with the weights after
        # iteration 2, computed here by hand.
        logits, _ = algo.module.apply(algo.state.params["default_policy"], algo.data.obs)
        logp = jax.nn.log_softmax(logits)[jnp.arange(rows), algo.data.actions]
        by_hand = -float(jnp.mean(logp))
        assert offline["default_policy"]["total_eval_loss"] == pytest.approx(by_hand, rel=1e-5)
        assert offline["default_policy"]["policy_loss"] == pytest.approx(by_hand, rel=1e-5)
        assert offline["__all_modules__"]["num_env_steps_sampled"] == rows
        assert offline["__all_modules__"]["dataset_num_iters_evaluated_lifetime"] == 1
        assert offline["weights_seq_no"] == 2.0
        assert second["evaluation"]["num_healthy_offline_eval_runners"] == 0
    finally:
        algo.stop()
        plain.stop()


def test_evaluate_offline_runs_between_its_hooks_and_rllibs_names_load(data_dir):
    seen = []
    algo = (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_=data_dir, dataset_num_iters_per_learner=1)
        .training(train_batch_size_per_learner=16)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .evaluation(
            offline_eval_batch_size_per_runner=8, dataset_num_iters_per_offline_eval_runner=3
        )
        .callbacks(
            on_evaluate_offline_start=lambda algorithm, **kw: seen.append("start"),
            on_evaluate_offline_end=lambda evaluation_metrics, **kw: seen.append(
                sorted(evaluation_metrics)
            ),
        )
        .build_algo()
    )
    try:
        assert "evaluation" not in algo.train()  # no interval: only when asked
        out = algo.evaluate_offline()["offline_eval_runners"]
        assert seen == [
            "start",
            ["__all_modules__", "default_policy", "offline_sampling_timer", "weights_seq_no"],
        ]
        assert out["__all_modules__"]["num_env_steps_sampled"] == 24  # 3 batches of 8
        assert out["default_policy"]["weights_seq_no"] == 1.0
    finally:
        algo.stop()
    # RLlib's attribute name for the keyword, as its to_dict() writes it.
    config = BCConfig().update_from_dict({"dataset_num_iters_per_eval_runner": 4})
    assert config.dataset_num_iters_per_eval_runner == 4
    from rljax.algorithms.ppo import PPOConfig

    ppo = PPOConfig().environment("CartPole-v1").build_algo()
    try:
        with pytest.raises(ConfigError, match=r"PPO\.evaluate_offline\(\) computes the loss"):
            ppo.evaluate_offline()
    finally:
        ppo.stop()


def test_offline_evaluation_settings_are_checked():
    with pytest.raises(ConfigError, match="offline_evaluation_type='is' .* use 'eval_loss'"):
        BCConfig().evaluation(offline_evaluation_type="is").validate()
    with pytest.raises(ConfigError, match="is built for BC and MARWIL, not PPO"):
        from rljax.algorithms.ppo import PPOConfig

        PPOConfig().environment("CartPole-v1").evaluation(offline_evaluation_interval=1).validate()
    with pytest.raises(ConfigError, match="offline_loss_for_module_fn=.* is RLlib's"):
        MARWILConfig().evaluation(offline_loss_for_module_fn=lambda *a: 0.0)
    with pytest.raises(ConfigError, match="num_gpus_per_offline_eval_runner=1 is RLlib's"):
        BCConfig().evaluation(num_gpus_per_offline_eval_runner=1)
    BCConfig().evaluation(num_offline_eval_runners=2, offline_evaluation_timeout_s=30.0)


def test_a_batch_larger_than_the_data_is_refused(data_dir):
    with pytest.raises(ConfigError, match="fewer than offline_eval_batch_size_per_runner=100000"):
        _bc(data_dir, offline_evaluation_interval=1, offline_eval_batch_size_per_runner=100_000)


def test_a_restored_run_draws_the_next_offline_batches_not_the_first_again(data_dir, tmp_path):
    algo = _bc(data_dir, offline_eval_batch_size_per_runner=8)
    try:
        algo.evaluate_offline()
        algo.evaluate_offline()
        algo.save_to_path(tmp_path / "bc")
        expected = algo.evaluate_offline()["offline_eval_runners"]
        other = _bc(data_dir, offline_eval_batch_size_per_runner=8)
        try:
            other.restore_from_path(tmp_path / "bc")
            got = other.evaluate_offline()["offline_eval_runners"]
        finally:
            other.stop()
        # The third evaluation's batches (and so its loss) and lifetime counts, as without the
        # save and restore; a fresh run's first evaluation draws other batches.
        assert (
            got["default_policy"]["total_eval_loss"]
            == expected["default_policy"]["total_eval_loss"]
        )
        assert (
            got["__all_modules__"]["num_env_steps_sampled_lifetime"] == 3 * 8
        )  # 3 evaluations of 1 batch
        assert got["default_policy"] == expected["default_policy"]
        assert got["__all_modules__"] == expected["__all_modules__"]
    finally:
        algo.stop()
