"""Multi-agent PPO: stacked policies, frozen policies, per-policy metrics, slot streams, learning."""

import json
import shutil
from pathlib import Path

import jax
import numpy as np
import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.ppo import PPOConfig
from rljax.env import make_multi_agent
from rljax.utils import once
from rljax.utils.errors import CheckpointError, ConfigError

MultiAgentCartPole = make_multi_agent("CartPole-v1")


def agent_to_policy(agent_id, episode, **kwargs):
    return f"p{agent_id}"


def _config(**training):
    kw = dict(train_batch_size_per_learner=400, minibatch_size=64, num_epochs=2, lr=1e-3)
    kw.update(training)
    return (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .env_runners(num_envs_per_env_runner=2)
        .multi_agent(policies=["p0", "p1"], policy_mapping_fn=agent_to_policy)
        .training(**kw)
        .rl_module(model_config={"fcnet_hiddens": [32, 32], "vf_share_layers": False})
        .debugging(seed=0)
    )


@pytest.mark.parametrize("mode, runners", [("SYNC", 0), ("ASYNC", 0), ("SYNC", 2)])
@pytest.mark.slow
def test_each_slot_holds_one_agent_stream_with_its_policy(mode, runners):
    algo = _config().env_runners(gym_env_vectorize_mode=mode, num_env_runners=runners).build_algo()
    try:
        traj = jax.device_get(algo._runners.sample().traj)
        obs, policy = traj.obs["obs"], traj.obs["policy"]
        done = traj.terminated | traj.truncated
        assert traj.valid.shape[1] == 4 * max(1, runners)  # slots of every runner, side by side
        for slot in range(traj.valid.shape[1]):  # (runner * 2 + copy) * 2 + agent
            rows = np.nonzero(traj.valid[:, slot])[0]
            assert len(rows) > 20
            assert set(policy[rows, slot]) == {slot % 2}
            # CartPole's Euler step between consecutive transitions of the stream.
            for a, b in zip(rows[:-1], rows[1:], strict=True):
                if not done[a, slot]:
                    assert abs(obs[b, slot, 0] - obs[a, slot, 0] - 0.02 * obs[a, slot, 1]) < 1e-5
    finally:
        algo.stop()


@pytest.mark.slow
def test_frozen_policy_keeps_its_parameters_bit_for_bit_and_metrics_are_per_policy():
    algo = _config().multi_agent(policies_to_train=["p0"]).build_algo()
    try:
        before = jax.device_get(algo._params())
        result = algo.train()
        result = algo.train()
        after = jax.device_get(algo._params())
        i0, i1 = algo.policy_ids.index("p0"), algo.policy_ids.index("p1")
        for b, a in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True):
            np.testing.assert_array_equal(b[i1], a[i1])
            assert b[i0].shape == a[i0].shape
        assert any(
            not np.array_equal(b[i0], a[i0])
            for b, a in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True)
        )
        # As RLlib's: a module outside policies_to_train has no learner metrics (it had a
        # full set, its losses computed over a batch it was not updated on).
        assert set(result["learners"]) == {"p0", "__all_modules__"}
        assert result["learners"]["p0"]["num_module_steps_trained"] > 0
        runners = result["env_runners"]
        assert set(runners["module_episode_returns_mean"]) == {"p0", "p1"}
        assert set(runners["agent_episode_returns_mean"]) == {"0", "1"}
        # An episode's return is the sum of its agents' returns.
        assert runners["episode_return_mean"] == pytest.approx(
            sum(runners["agent_episode_returns_mean"].values()), rel=1e-5
        )
        assert sum(runners["num_agent_steps_sampled"].values()) > runners["num_env_steps_sampled"]
    finally:
        algo.stop()


@pytest.mark.slow
def test_actions_per_policy_and_checkpoint_round_trip(tmp_path):
    """Also: each module's ``num_module_steps_trained_lifetime``, and the agent steps sampled
    per agent and per module (``env_runners/num_agent_steps_sampled_lifetime``,
    ``num_module_steps_sampled_lifetime``) carry on from a checkpoint and through
    ``get_state`` / ``set_state``. Was: they started again from 0 (the checkpoint's counters
    held only totals)."""
    algo = _config().build_algo()
    try:
        first_result = algo.train()
        first = first_result["learners"]
        sampled_keys = ("num_agent_steps_sampled_lifetime", "num_module_steps_sampled_lifetime")
        sampled_before = {k: dict(first_result["env_runners"][k]) for k in sampled_keys}
        assert sampled_before["num_agent_steps_sampled_lifetime"]["0"] > 0
        assert algo.num_agent_steps_sampled_lifetime == sum(
            sampled_before["num_agent_steps_sampled_lifetime"].values()
        )
        saved = {p: first[p]["num_module_steps_trained_lifetime"] for p in ("p0", "p1")}
        assert saved["p0"] > 0 and saved["p0"] == first["p0"]["num_module_steps_trained"]
        evaluation = algo.evaluate()["env_runners"]  # evaluation_duration: 10 episodes
        assert evaluation["num_episodes"] == 10
        assert set(evaluation["module_episode_returns_mean"]) == {"p0", "p1"}
        assert evaluation["episode_len_mean"] >= 8  # CartPole cannot fall sooner
        assert algo.states is algo.state  # the attribute's earlier name still reads it
        # RLlib's multi-agent env runner state: each policy's weights, by policy id.
        runner_weights = algo.env_runner.get_state()["rl_module"]
        assert set(runner_weights) == {"p0", "p1"}
        np.testing.assert_array_equal(
            jax.tree.leaves(runner_weights["p1"])[0],
            np.asarray(jax.tree.leaves(algo.get_weights()["p1"])[0]),
        )
        obs = np.zeros(4, np.float32)
        assert algo.compute_single_action(obs, policy_id="p1") in (0, 1)
        with pytest.raises(ValueError, match="unknown policy_id"):
            algo.compute_single_action(obs, policy_id="nope")
        with pytest.raises(ValueError, match="unknown policy_id"):
            algo.compute_single_action(obs)  # two policies: say which
        batch = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
        logits = {
            p: algo.get_module(p).forward_inference({"obs": batch})["action_dist_inputs"]
            for p in ("p0", "p1")
        }
        assert not np.allclose(logits["p0"], logits["p1"])
        # As RLlib's: None for a policy the algorithm does not have ("default_policy" too).
        assert algo.get_module("nope") is None and algo.get_module() is None
        # set_weights: p1 takes p0's weights and then acts as p0 did; wrong shapes are refused.
        weights = algo.get_weights()
        assert set(weights) == {"p0", "p1"}
        version = algo._runners.version
        algo.set_weights({"p1": weights["p0"]})
        assert algo._runners.version == version  # weights swapped, the on-policy count kept
        copied = algo.get_module("p1").forward_inference({"obs": batch})["action_dist_inputs"]
        np.testing.assert_array_equal(copied, logits["p0"])
        algo.set_weights({"p1": weights["p1"]})
        wrong = jax.tree.map(lambda x: np.zeros((*x.shape, 2)), weights["p0"])
        with pytest.raises(ValueError, match="parameters given for 'p0' have shapes"):
            algo.set_weights({"p0": wrong})
        with pytest.raises(ValueError, match="unknown policy_id"):
            algo.get_weights(["p7"])
        algo.save_to_path(tmp_path / "ma")
        # A checkpoint whose per-agent counters name an agent the run does not have is refused
        # before anything is loaded.
        crafted = tmp_path / "crafted"
        shutil.copytree(tmp_path / "ma", crafted)
        meta_file = crafted / (crafted / "LATEST").read_text() / "rljax_checkpoint.json"
        meta = json.loads(meta_file.read_text())
        meta["counters"]["num_agent_steps_sampled_lifetime"] = {"zzz": 4}
        meta_file.write_text(json.dumps(meta))
        other = _config().debugging(seed=1).build_algo()
        try:
            with pytest.raises(CheckpointError, match="'zzz' is not one of the agents"):
                other.restore_from_path(crafted)
            assert other.num_agent_steps_sampled_lifetime == 0 and other.iteration == 0
        finally:
            other.stop()
        other = _config().debugging(seed=1).build_algo()
        try:
            other.restore_from_path(tmp_path / "ma")
            for p in ("p0", "p1"):
                restored = other.get_module(p).forward_inference({"obs": batch})[
                    "action_dist_inputs"
                ]
                np.testing.assert_array_equal(restored, logits[p])
            # RLlib's module swap: p0's saved module directory loaded into p1 (self-play).
            modules = "learner_group/learner/rl_module"
            other.restore_from_path(tmp_path / "ma" / modules / "p0", component=f"{modules}/p1")
            swapped = other.get_module("p1").forward_inference({"obs": batch})
            np.testing.assert_array_equal(swapped["action_dist_inputs"], logits["p0"])
            assert other.num_agent_steps_sampled_lifetime == algo.num_agent_steps_sampled_lifetime
            after_result = other.train()
            after = after_result["learners"]
            runners = after_result["env_runners"]
            for key, now in (
                ("num_agent_steps_sampled_lifetime", "num_agent_steps_sampled"),
                ("num_module_steps_sampled_lifetime", "num_module_steps_sampled"),
            ):
                assert runners[key] == {
                    k: n + runners[now][k] for k, n in sampled_before[key].items()
                }, key
            for p in ("p0", "p1"):
                assert after[p]["num_module_steps_trained_lifetime"] == (
                    saved[p] + after[p]["num_module_steps_trained"]
                ), (p, saved, after[p])
            state = other.get_state()
            assert state["counters"]["num_module_steps_trained_lifetime"] == {
                p: int(after[p]["num_module_steps_trained_lifetime"]) for p in ("p0", "p1")
            }
            algo.set_state(state)  # the counters as well as the weights
            assert (
                algo._module_steps_trained == state["counters"]["num_module_steps_trained_lifetime"]
            )
            bad_counts: list[tuple[object, str]] = [
                ([1], "got list"),
                ({"zzz": 5}, "'zzz' is not one of the modules"),  # was: taken, p0 and p1 lost
                ({"p0": 2**62 + 1}, r"'p0''s count must be an int in \[0, 2\*\*62\]"),
                ({"p0": 1.5}, "got float"),
            ]
            with pytest.raises(ValueError, match="'zzz' is not one of the agents"):
                algo.set_state(
                    {
                        "counters": {
                            **state["counters"],
                            "num_agent_steps_sampled_lifetime": {"zzz": 1},
                        }
                    }
                )
            assert (
                state["counters"]["num_agent_steps_sampled_lifetime"]
                == (runners["num_agent_steps_sampled_lifetime"])
            )
            algo.set_state(state)
            assert algo.num_agent_steps_sampled_lifetime == sum(
                runners["num_agent_steps_sampled_lifetime"].values()
            )
            for bad, match in bad_counts:
                with pytest.raises(ValueError, match=match):
                    algo.set_state(
                        {
                            "counters": {
                                **state["counters"],
                                "num_module_steps_trained_lifetime": bad,
                            }
                        }
                    )
        finally:
            other.stop()
    finally:
        algo.stop()


def test_multi_agent_config_errors():
    with pytest.raises(ConfigError, match="policy_mapping_fn"):
        _config().multi_agent(policy_mapping_fn=None).validate()
    with pytest.raises(ConfigError, match="not in policies"):
        _config().multi_agent(policies_to_train=["p7"]).validate()
    with pytest.raises(ConfigError, match="restart_failed_sub_environments=True is not built"):
        _config().fault_tolerance(restart_failed_sub_environments=True).validate()
    with pytest.raises(ConfigError, match="async_batch_size=1 does not apply"):
        _config().env_runners(gym_env_vectorize_mode="ASYNC", async_batch_size=1).validate()
    with pytest.raises(ConfigError, match="MARWIL: multi-agent configs are not built"):
        from rljax.algorithms.marwil import MARWILConfig

        data = Path(__file__).parents[1] / "data" / "rllib_2_60_episodes"
        MARWILConfig().environment(MultiAgentCartPole).offline_data(input_=str(data)).multi_agent(
            policies=["p"]
        ).build_algo()


# Learning: tests/test_notebooks.py::test_multi_agent_notebook_runs trains two CartPole agents
# with a policy each, 4 env copies per runner, until both reach 400 (and greedy evaluation
# does too); the notebook's run is the learning test, so the suite trains it once.


def rps_mapping(agent_id, episode, **kwargs):
    return "learner" if agent_id == "player1" else "opponent"


@pytest.mark.slow
def test_episode_and_step_counts_belong_to_the_iteration_that_sampled_them():
    # Regression: finished episodes were read from the env after the new weights were
    # published, while the runner thread was already stepping the next fragment, so one
    # iteration reported 184 episodes and the next 16. RockPaperScissors' episodes are 10
    # moves and a reset step: with 128 steps per fragment, an env finishes episodes at steps
    # 10, 21, 32, ..., i.e. 11, 12, 12 in the first three fragments, and steps the env 117,
    # 116, 117 times (the other steps are resets).
    from rljax.examples.envs.classes.multi_agent import RockPaperScissors

    algo = (
        PPOConfig()
        .environment(RockPaperScissors)
        .env_runners(num_envs_per_env_runner=8, num_env_runners=1)
        .multi_agent(policies=["learner", "opponent"], policy_mapping_fn=rps_mapping)
        .training(train_batch_size_per_learner=1024, minibatch_size=256, num_epochs=1)
        .debugging(seed=0)
        .build_algo()
    )
    try:
        results = [algo.train()["env_runners"] for _ in range(3)]
    finally:
        algo.stop()
    assert [r["num_episodes"] for r in results] == [88, 96, 96]
    assert [r["num_env_steps_sampled"] for r in results] == [936, 928, 936]
    # A transition is emitted when its result arrives, one step after the action: the first
    # fragment's last actions complete in the second, so 116, 116, 117 per agent slot.
    # Per agent and per module (RLlib's dicts; was: the total only).
    assert [sum(r["num_agent_steps_sampled"].values()) for r in results] == [1856, 1856, 1872]
    for r in results:
        agents, modules = r["num_agent_steps_sampled"], r["num_module_steps_sampled"]
        assert agents["player1"] == agents["player2"]  # they move together
        assert modules == {"learner": agents["player1"], "opponent": agents["player2"]}
    lifetime = results[-1]["num_agent_steps_sampled_lifetime"]
    assert lifetime == {
        a: sum(r["num_agent_steps_sampled"][a] for r in results) for a in ("player1", "player2")
    }


def test_a_rebuilt_multi_agent_runner_gets_new_env_seeds():
    algo = _config().build_algo()
    try:
        first = algo._runners.runners[0].env.seed
        rebuilt = [algo._runner_env(0) for _ in range(2)]  # what a runner restart builds
        seeds = [env.seed for env in rebuilt]
        for env in rebuilt:
            env.close()
        assert len({first, *seeds}) == 3  # new episodes each time, not a replay of the old ones
    finally:
        algo.stop()


@pytest.mark.slow
def test_multi_agent_training_goes_on_after_a_runner_is_dropped():
    algo = (
        _config()
        .env_runners(num_env_runners=2)
        .fault_tolerance(ignore_env_runner_failures=True)
        .build_algo()
    )
    try:
        full = algo.train()["env_runners"]["num_env_steps_sampled"]
        algo._runners._drop(1, "env runner 2 failed (simulated)")  # as when it cannot restart
        result = algo.train()
        assert result["fault_tolerance"]["num_healthy_env_runners"] == 1
        assert 0 < result["env_runners"]["num_env_steps_sampled"] <= full // 2 + 1
    finally:
        algo.stop()


def test_get_module_of_a_one_policy_multi_agent_run_is_rllibs(tmp_path, caplog, monkeypatch):
    # Multi-agent by its config, however many policies: None for ids it does not have.
    mapping = lambda *a, **k: "p0"  # noqa: E731  (RLlib's scripts map with lambdas)
    config = _config().multi_agent(policies=["p0"], policy_mapping_fn=mapping)
    algo = config.build_algo()
    monkeypatch.setitem(once.SAID, "unimportable_in_checkpoint", set())
    try:
        assert algo.get_module() is None and algo.get_module("nope") is None
        assert algo.get_module("p0") is not None
        with caplog.at_level("WARNING", logger="rljax"):
            path = algo.save_to_path(tmp_path / "ckpt")
    finally:
        algo.stop()
    # The save says what loading it will need (was: silent until the load failed).
    said = [r.getMessage() for r in caplog.records if "no import reaches" in r.getMessage()]
    assert any("saves policy_mapping_fn as" in m and "policy_mapping_fn=...)" in m for m in said)
    assert any("saves env as" in m for m in said)  # make_multi_agent's class, made at run time
    assert algo.env_runner is None  # no runners after stop(): no local runner view either
    # A lambda (or a class made at run time, as make_multi_agent's) has no import path to load
    # it by: the error names the field and says to pass it, and passing works.
    with pytest.raises(
        CheckpointError,
        match=r"env names import path .*Algorithm.from_checkpoint\(path, env=",
    ):
        Algorithm.from_checkpoint(path)
    with pytest.raises(
        CheckpointError,
        match=r"policy_mapping_fn names .*Algorithm.from_checkpoint\(path, policy_mapping_fn=",
    ):
        Algorithm.from_checkpoint(path, env=MultiAgentCartPole)
    restored = Algorithm.from_checkpoint(path, env=MultiAgentCartPole, policy_mapping_fn=mapping)
    try:
        assert restored.get_module("p0") is not None
    finally:
        restored.stop()
