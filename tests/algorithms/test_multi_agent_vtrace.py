"""Multi-agent IMPALA and APPO: each policy's V-trace column, its update, settings per policy,
checkpoints, refusals and learning."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.appo import APPOConfig
from rljax.algorithms.impala import IMPALAConfig
from rljax.algorithms.impala.learner import VTraceTrainBatch, make_impala_update
from rljax.algorithms.impala.losses import VTraceBatch
from rljax.algorithms.impala.multi_agent import MultiAgentAPPO, MultiAgentIMPALA
from rljax.env import make_multi_agent
from rljax.execution.population import population_refusal
from rljax.utils.errors import ConfigError

MultiAgentCartPole = make_multi_agent("CartPole-v1")


def agent_to_policy(agent_id, episode, **kwargs):
    return f"p{agent_id}"


def _config(cls=IMPALAConfig, **training):
    kw = dict(train_batch_size_per_learner=200, lr=5e-4, vf_loss_coeff=0.01, entropy_coeff=0.0)
    kw.update(training)
    return (
        cls()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .env_runners(num_envs_per_env_runner=2)
        .multi_agent(policies=["p0", "p1"], policy_mapping_fn=agent_to_policy)
        .training(**kw)
        .rl_module(model_config={"fcnet_hiddens": [16], "vf_share_layers": True})
        .debugging(seed=0)
    )


def _flat_batch(policy, valid, cut):
    """A stream-ordered batch of len(policy) rows: observation i is (i, i, i, i)."""
    n = len(policy)
    obs = np.repeat(np.arange(n, dtype=np.float32)[:, None], 4, axis=1)
    return VTraceTrainBatch(
        obs={"obs": jnp.asarray(obs), "policy": jnp.asarray(policy, jnp.int32)},
        vtrace=VTraceBatch(
            action=jnp.zeros(n, jnp.int32),
            behaviour_logp=jnp.zeros(n),
            reward=jnp.arange(n, dtype=jnp.float32),
            terminated=jnp.zeros(n, bool),
            truncated=jnp.asarray(cut, bool),
            mask=jnp.asarray(valid, jnp.float32),
        ),
        bootstrap_value=jnp.zeros(n),
    )


def test_each_policy_gets_its_rows_in_stream_order_cut_where_its_stream_stops():
    algo = _config().build_algo()
    try:
        assert type(algo) is MultiAgentIMPALA
        # Rows 0-2: a slot of p0, its stream ending at 2; 3-4: a slot of p1; 5-6: a slot whose
        # agent played p0 (row 6 is its padding); 7: a slot of p1. Row 1 of p0 is followed in
        # p0's column by row 2 (the next row: no cut), row 2 by row 5 (its stream's cut), row 5
        # by padding (cut).
        policy = np.array([0, 0, 0, 1, 1, 0, 0, 1])
        valid = np.array([1, 1, 1, 1, 1, 1, 0, 1], bool)
        cut = np.array([0, 0, 1, 0, 1, 0, 1, 1], bool)
        flat = _flat_batch(policy, valid, cut)
        batch, size, counts = algo._per_policy_batches(flat, policy, valid, 0)
        assert size == 32 and list(counts) == [4, 3]  # the smallest bucket holds both
        k0, k1 = (algo.local_of[algo.policy_ids.index(p)] for p in ("p0", "p1"))
        obs = np.asarray(batch.obs)
        assert obs.shape == (2, 32, 1, 4)
        np.testing.assert_array_equal(obs[k0, :4, 0, 0], [0, 1, 2, 5])
        np.testing.assert_array_equal(obs[k1, :3, 0, 0], [3, 4, 7])
        trunc, mask = np.asarray(batch.vtrace.truncated), np.asarray(batch.vtrace.mask)
        np.testing.assert_array_equal(trunc[k0, :4, 0], [False, False, True, True])
        np.testing.assert_array_equal(trunc[k1, :3, 0], [False, True, True])
        np.testing.assert_array_equal(mask[k0, :, 0], [1] * 4 + [0] * 28)
        assert trunc[:, 4:, 0][k0].all() and trunc[:, 3:, 0][k1].all()  # padding: all cut
        np.testing.assert_array_equal(np.asarray(batch.vtrace.reward)[k1, :3, 0], [3, 4, 7])

        # A slot whose agent changed policy between episodes: p0's rows 0-1, p1's row 2, p0's
        # row 3 (the same slot): p0's row 1 is followed by row 3, not its next row, so it is cut
        # whatever order_by_stream said.
        policy = np.array([0, 0, 1, 0])
        valid = np.ones(4, bool)
        flat = _flat_batch(policy, valid, np.array([0, 0, 0, 1], bool))
        batch, _, _ = algo._per_policy_batches(flat, policy, valid, 0)
        trunc = np.asarray(batch.vtrace.truncated)
        np.testing.assert_array_equal(trunc[k0, :3, 0], [False, True, True])
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_policy_update_is_impalas_own_on_its_column_and_frozen_policies_stay():
    algo = _config().multi_agent(policies_to_train=["p0"]).build_algo()
    try:
        sample = algo._runners.sample()
        flat = jax.tree.map(
            lambda x: x.reshape((-1, *x.shape[2:])), algo._loop.postprocess(sample.traj)[0]
        )
        policy = np.asarray(flat.obs["policy"])
        valid = np.asarray(flat.mask) > 0
        batch, size, counts = algo._per_policy_batches(flat, policy, valid, 0)
        assert counts.sum() == valid.sum() > 100
        group = algo.groups[0]
        before = jax.device_get(algo.state[0])
        new, metrics = algo._update_fn(0, size)(algo.state[0], batch)
        new = jax.device_get(new)
        learner = group.hp
        single = make_impala_update(
            group.module.apply, group.dist, group.optimizer, learner.hp, learner.dynamic
        )
        k0, k1 = (algo.local_of[algo.policy_ids.index(p)] for p in ("p0", "p1"))
        own, own_metrics = single(
            jax.tree.map(lambda x: jnp.asarray(x[k0]), before),
            jax.tree.map(lambda x: x[k0], batch),
        )
        own = jax.device_get(own)
        for a, b in zip(jax.tree.leaves(new.params), jax.tree.leaves(own.params), strict=True):
            np.testing.assert_allclose(a[k0], b, rtol=1e-5, atol=1e-7)
        assert float(metrics["vf_loss"][k0]) == pytest.approx(float(own_metrics["vf_loss"]), 1e-5)
        assert int(new.env_steps[k0]) == counts[0]
        # p1 is frozen: every leaf of its state as it was.
        for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(before), strict=True):
            np.testing.assert_array_equal(a[k1], b[k1])
        assert any(
            not np.array_equal(a[k0], b[k0])
            for a, b in zip(
                jax.tree.leaves(new.params), jax.tree.leaves(before.params), strict=True
            )
        )
    finally:
        algo.stop()


@pytest.mark.slow
def test_appo_per_policy_schedules_results_and_checkpoint_round_trip(tmp_path):
    config = _config(APPOConfig, train_batch_size_per_learner=100).multi_agent(
        algorithm_config_overrides_per_module={"p1": {"lr": [[0, 1e-3], [100, 1e-5]]}}
    )
    algo = config.build_algo()
    try:
        assert type(algo) is MultiAgentAPPO and len(algo.groups) == 2  # p1's lr is its own
        first = algo.train()
        assert first["learners"]["p1"]["default_optimizer_learning_rate"] == pytest.approx(1e-3)
        sampled = first["num_env_steps_sampled_lifetime"]
        assert 50 < sampled <= 100
        result = algo.train()
        learners = result["learners"]
        assert learners["p0"]["default_optimizer_learning_rate"] == pytest.approx(5e-4)
        # p1's schedule at the run's env steps sampled before the update, as RLlib's learners
        # read it: linear from 1e-3 at 0 to 1e-5 at 100.
        expected = 1e-3 + (1e-5 - 1e-3) * sampled / 100
        assert learners["p1"]["default_optimizer_learning_rate"] == pytest.approx(expected, 1e-5)
        for p in ("p0", "p1"):
            assert learners[p]["num_module_steps_trained"] > 0
            assert {"vf_loss", "mean_kl_loss", "curr_kl_coeff", "num_target_updates"} <= set(
                learners[p]
            )
        assert set(result["env_runners"]["module_episode_returns_mean"]) == {"p0", "p1"}
        algo.save_to_path(tmp_path / "ma")
        saved = jax.device_get(algo.state)
        other = config.copy().debugging(seed=1).build_algo()
        try:
            other.restore_from_path(tmp_path / "ma")
            for a, b in zip(
                jax.tree.leaves(saved), jax.tree.leaves(jax.device_get(other.state)), strict=True
            ):
                np.testing.assert_array_equal(a, b)  # target policies and KL weights included
        finally:
            other.stop()
    finally:
        algo.stop()


@pytest.mark.slow
def test_multi_agent_appo_learns_cartpole():
    config = _config(APPOConfig, train_batch_size_per_learner=500, lr=1e-3)
    algo = config.rl_module(model_config={"fcnet_hiddens": [64, 64]}).build_algo()
    try:
        best = 0.0
        for _ in range(60):  # about 30 iterations (15,000 env steps) when measured
            returns = algo.train()["env_runners"]["episode_return_mean"]
            best = max(best, returns if returns == returns else 0.0)
            if best >= 150:
                break
        # Two agents' returns summed; a random policy's is about 44.
        assert best >= 150
    finally:
        algo.stop()


def test_multi_agent_vtrace_refusals():
    with pytest.raises(ConfigError, match="minibatch_size=100 with a multi-agent config"):
        _config(minibatch_size=100).build_algo()
    with pytest.raises(ConfigError, match="num_learners=2 with a multi-agent config"):
        _config(APPOConfig).learners(num_learners=2).build_algo()
    with pytest.raises(ConfigError, match="use_lstm=True with a multi-agent IMPALA config"):
        _config().rl_module(model_config={"use_lstm": True}).build_algo()
    refusal = population_refusal([_config(APPOConfig)])
    assert refusal == "APPO trains no populations (PPO does)"


def test_make_multi_agent_gives_the_creator_the_config_without_num_agents():
    seen = []

    def creator(config):
        seen.append(dict(config))
        return MultiAgentCartPole({"num_agents": 1}).envs[0]

    env = make_multi_agent(creator)({"num_agents": 2, "frameskip": 1})
    assert seen == [{"frameskip": 1}] * 2 and len(env.envs) == 2


def _old_config(**extra):
    return {
        "env": MultiAgentCartPole,
        "env_config": {"num_agents": 2},
        "multiagent": {"policies": ["p0", "p1"], "policy_mapping_fn": agent_to_policy},
        "train_batch_size": 200,
        "model": {"fcnet_hiddens": [16]},
        **extra,
    }


def test_old_api_trainers_build_their_multi_agent_classes():
    from rljax.agents import trainer_class
    from rljax.agents.appo import MultiAgentAPPOTrainer
    from rljax.agents.impala import MultiAgentImpalaTrainer

    for name, cls, base in (
        ("IMPALA", MultiAgentImpalaTrainer, MultiAgentIMPALA),
        ("APPO", MultiAgentAPPOTrainer, MultiAgentAPPO),
    ):
        config = trainer_class(name).to_config(_old_config())
        assert config.checked_algo_class() is cls and issubclass(cls, base)
        assert list(config.policies) == ["p0", "p1"]


@pytest.mark.slow
def test_old_api_multi_agent_impala_trains():
    from rljax.agents.impala import ImpalaTrainer

    trainer = ImpalaTrainer(config=_old_config())
    try:
        result = trainer.train()
        assert np.isfinite(result["episode_reward_mean"])
        assert set(result["info"]["learner"]) >= {"p0", "p1"}
    finally:
        trainer.stop()


@pytest.mark.slow
def test_runner_threads_sample_free_running_fragments_for_each_update():
    config = _config(APPOConfig).env_runners(num_env_runners=2)
    assert config.fragments_per_batch == 2  # 200 env steps in fragments of 50 x 2 sub-envs
    algo = config.build_algo()
    try:
        assert algo._runners.exchange.free_running and algo.fragment_length == 50
        total = 0
        for _ in range(3):
            result = algo.train()
            # One update a train(): two fragments of 100 rows, from whichever runners had them
            # ready (a sub-env's reset after an episode's end takes a row, not an env step).
            sampled = result["env_runners"]["num_env_steps_sampled"]
            assert 150 < sampled <= 200
            total += sampled
            for p in ("p0", "p1"):
                assert result["learners"][p]["num_module_steps_trained"] > 100
        assert result["num_env_steps_sampled_lifetime"] == total
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_policy_without_rows_in_a_batch_keeps_its_whole_state():
    algo = _config(APPOConfig, use_kl_loss=True).build_algo()
    try:
        algo.train()
        sample = algo._runners.sample()
        flat = jax.tree.map(
            lambda x: x.reshape((-1, *x.shape[2:])), algo._loop.postprocess(sample.traj)[0]
        )
        policy = np.asarray(flat.obs["policy"])
        valid = (np.asarray(flat.mask) > 0) & (policy == algo.policy_ids.index("p0"))
        batch, size, counts = algo._per_policy_batches(flat, policy, valid, 0)
        k0, k1 = (algo.local_of[algo.policy_ids.index(p)] for p in ("p0", "p1"))
        assert counts[k1] == 0 < counts[k0]
        before = jax.device_get(algo.state[0])
        new = jax.device_get(algo._update_fn(0, size)(algo.state[0], batch)[0])
        for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(before), strict=True):
            np.testing.assert_array_equal(a[k1], b[k1])  # parameters, Adam, step, KL weight
        assert int(new.step[k0]) == int(before.step[k0]) + 2  # APPO's 2 updates per batch
    finally:
        algo.stop()
