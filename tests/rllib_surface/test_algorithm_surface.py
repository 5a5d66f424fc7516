"""What RLlib scripts call on an algorithm besides train(): its counters and config, weights,
save()/restore() return values, and the env runners (foreach_env_runner, make_env)."""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest
from gymnasium.envs.classic_control import CartPoleEnv

from rljax.algorithms.dqn import DQN
from rljax.algorithms.ppo import PPOConfig
from rljax.examples.envs.classes.simple_corridor import SimpleCorridor
from rljax.utils.errors import AlgorithmStoppedError, ConfigError


def _corridor(num_env_runners: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment(SimpleCorridor, env_config={"corridor_length": 5})
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=1)
    )


@pytest.mark.slow
def test_attributes_weights_and_save_restore_as_rllib_returns_them(tmp_path):
    config = _corridor(0)
    config.env = None
    algo = config.build(env=SimpleCorridor)  # RLlib's deprecated build(env=...)
    try:
        assert algo.config.env is SimpleCorridor and config.env is SimpleCorridor
        first = algo.train()
        assert algo.training_iteration == algo.iteration == 1
        assert algo.get_config() is algo.config
        # Ray Tune's Trainable keys, as RLlib's train() returns them.
        assert first["config"] == algo.config.to_dict() and first["trial_id"] == "default"
        assert first["pid"] == os.getpid() and isinstance(first["hostname"], str)
        assert first["iterations_since_restore"] == 1
        assert first["time_since_restore"] == first["time_total_s"] > 0
        assert len(first["date"]) == len("2026-12-06_03-16-21") and first["node_ip"]
        assert algo.env_runner.worker_index == 0  # sampling in the driver
        # RLlib's env runner state: the weights it acts with and its env-step count.
        runner_state = algo.env_runner.get_state()
        assert (
            runner_state["num_env_steps_sampled_lifetime"]
            == first["num_env_steps_sampled_lifetime"]
        )
        jax.tree.map(
            np.testing.assert_array_equal,
            runner_state["rl_module"],
            jax.tree.map(np.asarray, algo.get_weights()["default_policy"]),
        )
        weights = algo.get_weights()
        assert list(weights) == ["default_policy"]
        assert list(algo.learner_group.get_weights()) == ["default_policy"]
        assert algo.learner_group.foreach_learner(lambda learner: learner.iteration) == [1]
        # RLlib's LearnerGroup state: {"learner": {"rl_module": {id: weights}, ...}}, whole or
        # by a path inside it, and set_state of it puts those weights back.
        lg_state = algo.learner_group.get_state()
        assert set(lg_state) == {"learner"} and "rl_module" in lg_state["learner"]
        modules_only = algo.learner_group.get_state(components="learner/rl_module")
        assert algo.learner_group.get_state(components=[]) == {}  # none asked for: none
        assert set(modules_only["learner"]) == {"rl_module"}
        trained = jax.tree.map(np.asarray, modules_only["learner"]["rl_module"])
        algo.set_weights({"default_policy": jax.tree.map(np.zeros_like, weights["default_policy"])})
        algo.learner_group.set_state(modules_only)
        jax.tree.map(
            np.testing.assert_array_equal,
            jax.tree.map(np.asarray, algo.get_weights()),
            trained,
        )
        with pytest.raises(ValueError, match="unknown policy 'nope'"):
            algo.learner_group.set_state({"learner": {"rl_module": {"nope": {}}}})
        leaves = [np.asarray(x) for x in __import__("jax").tree.leaves(weights["default_policy"])]
        assert leaves and all(isinstance(x, np.ndarray) for x in leaves)
        saved = algo.save(tmp_path / "ckpt")
        # A string, as Ray's (was: a Path, which a script's `path + "/..."` or
        # `json.dumps` of it failed on).
        assert saved.checkpoint.path == str(tmp_path / "ckpt")
        assert isinstance(saved.checkpoint.path, str)
        assert saved.metrics["training_iteration"] == 1
        default_dir = algo.save_to_path()  # RLlib's default: a new directory
        assert os.path.isdir(default_dir) and "PPO_checkpoint_" in default_dir
        assert algo.train()["iterations_since_restore"] == 2
        algo.restore(saved)  # what save() returned, as RLlib's restore takes it
        assert algo.training_iteration == 1
        again = algo.train()  # the *_since_restore counters start again; the totals go on
        assert again["training_iteration"] == 2 and again["iterations_since_restore"] == 1
        assert again["time_since_restore"] == again["time_this_iter_s"] < again["time_total_s"]
        algo.restore(saved)
        restored = algo.get_weights()["default_policy"]
        for a, b in zip(
            __import__("jax").tree.leaves(restored),
            __import__("jax").tree.leaves(weights["default_policy"]),
            strict=True,
        ):
            np.testing.assert_array_equal(a, b)
    finally:
        algo.stop()
    # RLlib's from_checkpoint(path, config=...): the checkpoint's state in a changed config's
    # algorithm (was: an unexpected keyword).
    changed = config.copy(copy_frozen=False).training(lr=1e-5)
    again = type(algo).from_checkpoint(str(tmp_path / "ckpt"), config=changed)
    try:
        assert again.config.lr == 1e-5 and again.training_iteration == 1
        for a, b in zip(
            __import__("jax").tree.leaves(again.get_weights()["default_policy"]),
            __import__("jax").tree.leaves(weights["default_policy"]),
            strict=True,
        ):
            np.testing.assert_array_equal(a, b)
    finally:
        again.stop()
    with pytest.raises(ConfigError, match="builds PPO, not DQN"):
        DQN.from_checkpoint(str(tmp_path / "ckpt"), config=changed)


@pytest.mark.slow
def test_foreach_env_runner_reaches_each_runners_envs_and_make_env_rebuilds_them():
    algo = _corridor(2).build_algo()
    try:
        group = algo.env_runner_group
        # The local runner first, as RLlib's (was: [1, 2]); local_env_runner=False leaves it out.
        assert group.foreach_env_runner(lambda r: r.worker_index) == [0, 1, 2]
        assert group.foreach_env_runner(lambda r: r.worker_index, local_env_runner=False) == [1, 2]
        assert group.foreach_env_runner(lambda r: r.worker_index, remote_worker_ids=[2]) == [0, 2]
        assert group.num_healthy_remote_workers() == 2
        # sync_weights hands the learner's weights to the runners again (here over stale ones),
        # without counting a new weights version.
        exchange = algo._runners.exchange
        version = exchange.version
        algo._runners.publish(jax.tree.map(lambda x: x * 0, algo._runner_params()), advance=False)
        group.sync_weights(policies=["default_policy"], from_worker_or_learner_group=None)
        synced = jax.tree.map(np.array_equal, exchange.params, algo._runner_params())
        assert all(jax.tree.leaves(synced)) and exchange.version == version
        group.sync_weights(policies="default_policy")  # one id, as a string
        with pytest.raises(ValueError, match=r"unknown \['p9'\]; this algorithm has"):
            group.sync_weights(policies=["default_policy", "p9"])
        # The driver's runner, as RLlib's local one beside remote runners: module, no envs.
        local = algo.env_runner
        assert local.worker_index == group.local_env_runner.worker_index == 0
        assert local.config is not algo.config and local.num_envs == 0
        assert local.config.env_config == algo.config.env_config
        assert local.module.get_state()["default_policy"] is not None
        with pytest.raises(TypeError, match="local env runner has no envs"):
            next(local.sub_envs())
        assert local.foreach_env(lambda e: e) == []  # none to call, as RLlib's
        local.make_env()  # nothing samples there: nothing to rebuild
        lengths = group.foreach_env_runner(lambda r: r.foreach_env(lambda e: e.unwrapped.end_pos))
        assert lengths == [[], [5, 5], [5, 5]]
        # RLlib 2.60's other group methods (was: AttributeError for each).
        assert group.foreach_env(lambda e: e.unwrapped.end_pos) == lengths
        assert group.healthy_env_runner_ids() == [1, 2]
        assert group.num_healthy_remote_env_runners() == 2 and group.num_healthy_env_runners() == 3
        assert group.foreach_env_runner_async(lambda r: r.worker_index * 10, tag="a") == 2
        algo.env_runner_group.foreach_env_runner_async(lambda r: -1, tag="b", remote_worker_ids=[2])
        # Through a new group view each time, as RLlib's scripts call them (review finding:
        # the results were kept on the view, and a new one fetched nothing).
        assert algo.env_runner_group.fetch_ready_async_reqs(tags="a") == [(1, 10), (2, 20)]
        assert algo.env_runner_group.fetch_ready_async_reqs() == [(2, -1)]
        assert group.fetch_ready_async_reqs() == []
        assert group.probe_unhealthy_env_runners() == []
        group.sync_env_runner_states(algo.config, env_steps_sampled=0)

        def longer(runner):
            runner.config.environment(env_config={"corridor_length": 7 + runner.worker_index})
            runner.make_env()

        group.foreach_env_runner(longer)
        # Each runner kept its own config and rebuilt its envs from it.
        assert group.foreach_env_runner(
            lambda r: (r.config.env_config["corridor_length"], r.foreach_env(lambda e: e.end_pos))
        ) == [(7, []), (8, [8, 8]), (9, [9, 9])]
        assert algo.config.env_config["corridor_length"] == 5

        def one_cell(runner):
            runner.config.environment(env_config={"corridor_length": 1})
            runner.make_env()

        group.foreach_env_runner(one_cell)
        # The next iteration samples the rebuilt envs: a one-cell corridor's episode that starts
        # with a step right returns 1.0; on five cells no episode returns more than 0.96.
        result = algo.train()
        assert result["env_runners"]["episode_return_max"] == pytest.approx(1.0)
        assert result["env_runners"]["episode_len_min"] == 1

        def other_spaces(runner):
            runner.config.environment("CartPole-v1", env_config={})
            runner.make_env()

        with pytest.raises(ConfigError, match="the policy acts on"):
            group.foreach_env_runner(other_spaces)
    finally:
        algo.stop()


@pytest.mark.slow
def test_make_env_on_envpools_fused_path_says_what_to_do_instead():
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=32, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .build_algo()
    )
    try:
        (runner,) = algo.env_runner_group._runners()
        assert runner.worker_index == 0 and runner.num_envs == 2
        with pytest.raises(ConfigError, match="EnvPool's fused path builds them once"):
            runner.make_env()
        with pytest.raises(TypeError, match="not Python objects in this process"):
            runner.foreach_env(lambda e: e)
    finally:
        algo.stop()


@pytest.mark.slow
def test_make_env_rebuilds_an_envpool_runner_threads_envs():
    """A runner thread on EnvPool samples inside jit (FusedRunner); make_env() rebuilds its
    EnvPool from the runner's env_config, and the next iteration samples the new one."""
    from rljax.runners.fused import FusedRunner

    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1, num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
        .build_algo()
    )
    try:
        (runner,) = algo.env_runner_group._runners()
        assert isinstance(algo._runners.runners[0], FusedRunner)

        def short(r):
            r.config.environment(env_config={"max_episode_steps": 5})
            r.make_env()

        algo.env_runner_group.foreach_env_runner(short)
        result = algo.train()
        # Every episode of the rebuilt CartPole ends by its fifth step.
        assert result["env_runners"]["num_episodes"] >= 200 // 5 - 2
        assert result["env_runners"]["episode_len_max"] <= 5

        def gymnasium_env(r):
            r.config.environment(CartPoleEnv, env_config={})
            r.make_env()

        with pytest.raises(ConfigError, match="rebuilds EnvPool envs only"):
            algo.env_runner_group.foreach_env_runner(gymnasium_env)
    finally:
        algo.stop()


@pytest.mark.slow
def test_make_env_needs_runners_that_rest_between_iterations():
    algo = _corridor(1).env_runners(sample_async=True).build_algo()
    try:
        (runner,) = algo.env_runner_group._runners()
        with pytest.raises(ConfigError, match="never rest between iterations"):
            runner.make_env()
    finally:
        algo.stop()


@pytest.mark.slow  # integration; in the README's full run
def test_set_weights_writes_the_learner_state_and_refuses_what_does_not_fit():
    import jax

    from rljax.algorithms.dqn import DQNConfig

    with _corridor(1).build_algo() as algo:  # a runner thread acts with what is set
        weights = algo.get_weights()
        flipped = jax.tree.map(lambda x: -np.asarray(x), weights)
        algo.set_weights(flipped)
        for a, b in zip(jax.tree.leaves(algo.get_weights()), jax.tree.leaves(flipped), strict=True):
            np.testing.assert_array_equal(a, b)
        params = algo.state.params["default_policy"]
        leaf = jax.tree.leaves(params)[0]
        np.testing.assert_array_equal(leaf, jax.tree.leaves(flipped)[0])  # where it trains
        published = algo._runners.params["default_policy"]
        np.testing.assert_array_equal(jax.tree.leaves(published)[0], leaf)  # where it acts
        with pytest.raises(ValueError, match=r"have shapes \{'w': \(3,\)\}; this policy has"):
            algo.set_weights({"default_policy": {"w": np.zeros(3)}})
    dqn = (
        DQNConfig()
        .environment(SimpleCorridor, env_config={"corridor_length": 5})
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    with dqn.build_algo() as algo:
        weights = algo.get_weights()["default_policy"]
        zeroed = {
            k: (jax.tree.map(np.zeros_like, v) if k == "q" else v) for k, v in weights.items()
        }
        algo.set_weights({"default_policy": zeroed})
        assert all(
            np.all(x == 0) for x in jax.tree.leaves(algo.get_weights()["default_policy"]["q"])
        )
        # Epsilon follows its schedule: not a weight to set.
        with pytest.raises(ValueError, match=r"\['epsilon'\] is computed from DQN's training"):
            algo.set_weights({"default_policy": {**zeroed, "epsilon": np.float32(0.5)}})


def test_fused_runner_gives_its_module_and_gymnasium_copies_to_step_by_hand():
    """RLlib's custom_experiment steps ``env_runner.env.unwrapped.envs[0]`` with
    ``env_runner.module``: on the fused EnvPool path the copies are gymnasium's CartPole, and
    ``foreach_env`` still refuses (the fused envs are not Python objects)."""
    from rljax.algorithms.ppo import PPOConfig

    config = PPOConfig().environment("CartPole-v1").env_runners(num_envs_per_env_runner=2)
    # to_dict() round-trips through update_from_dict(), "algo" included, as in RLlib.
    config = PPOConfig().update_from_dict(config.to_dict())
    with pytest.raises(ConfigError, match="this dict is a 'DQN' config, not PPO"):
        PPOConfig().update_from_dict({"algo": "DQN"})
    with config.build_algo() as algo:
        runner = algo.env_runner
        env = runner.env.unwrapped.envs[0]
        obs, _ = env.reset(seed=0)
        out = runner.module.forward_inference({"obs": np.expand_dims(obs, 0)})
        assert np.asarray(out["action_dist_inputs"]).shape == (1, 2)
        assert len(runner.env.unwrapped.envs) == runner.num_envs == 2
        with pytest.raises(TypeError, match="not Python objects in this process"):
            runner.foreach_env(lambda e: e)


def test_tunes_trainable_methods_on_an_algorithm(caplog):
    algo = _corridor(0).build_algo()
    try:
        result = algo.step()  # Tune's Trainable.step: one training iteration
        assert result["training_iteration"] == 1 and algo.iteration == 1
        assert (algo.trial_id, algo.trial_name) == ("default", "default")
        assert algo.reset_config({"lr": 1.0}) is False and algo.config.lr != 1.0
        with caplog.at_level("WARNING", logger="rljax"):
            group = algo.workers  # RLlib's deprecated name of env_runner_group
        assert type(group) is type(algo.env_runner_group)
        assert group.num_remote_env_runners() == 0
    finally:
        algo.cleanup()  # Trainable.cleanup: stop()
    with pytest.raises(AlgorithmStoppedError):
        algo.train()


def test_a_subclass_s_setup_runs_once_after_the_build_as_rllibs():
    """RLlib's ``setup(config)`` hook: a subclass calls ``super().setup(config)`` (which runs
    ``on_algorithm_init``) and then builds its own parts. Was: never called, so the parts a
    subclass made there were missing when its training_step ran."""
    from rljax.algorithms.ppo import PPO

    calls: list[str] = []

    class WithSetup(PPO):
        def setup(self, config):
            super().setup(config)
            calls.append("setup")
            assert self.env_runner_group is not None and self.config is config
            self.extra_part = len(self.get_weights())

    config = _corridor(0).callbacks(
        on_algorithm_init=lambda algorithm, **kw: calls.append("on_algorithm_init")
    )
    algo = WithSetup(config)
    try:
        assert calls == ["on_algorithm_init", "setup"] and algo.extra_part == 1
        assert algo.train()["training_iteration"] == 1 and calls == ["on_algorithm_init", "setup"]
        # RLlib's names around the runners: no evaluation group lives between evaluations, and
        # a failed runner is replaced within the step, so nothing is left to restore.
        assert algo.eval_env_runner_group is None
        assert algo.restore_env_runners(algo.env_runner_group) == []
    finally:
        algo.stop()


def test_merge_algorithm_configs_as_rllibs():
    """RLlib's ``Algorithm.merge_algorithm_configs``: config2's values over a copy of config1,
    nested dicts merged key by key; an unknown top-level key is refused unless allowed."""
    from rljax.algorithms.ppo import PPO

    base = PPOConfig().to_dict()
    merged = PPO.merge_algorithm_configs(
        base, {"lr": 0.5, "env_config": {"a": 1}, "model_config": {"fcnet_hiddens": [7]}}
    )
    assert merged["lr"] == 0.5 and merged["env_config"] == {"a": 1}
    assert merged["model_config"]["fcnet_hiddens"] == [7]
    # The other model keys are kept, and config1 is not changed.
    assert merged["model_config"]["fcnet_activation"] == base["model_config"]["fcnet_activation"]
    assert base["lr"] != 0.5 and base["model_config"]["fcnet_hiddens"] != [7]
    with pytest.raises(ConfigError, match=r"unknown setting 'not_a_setting'"):
        PPO.merge_algorithm_configs(base, {"not_a_setting": 1})
    assert PPO.merge_algorithm_configs(base, {"x": 1}, _allow_unknown_configs=True)["x"] == 1
    # As RLlib's: `policies` is replaced whole, `replay_buffer_config` too when its type
    # changes (else merged), and a dict that takes no new sub-keys refuses one.
    one = {"policies": {"a": 1, "b": 2}, "replay_buffer_config": {"type": "X", "alpha": 0.5}}
    one["fixed"] = {"k": 1}
    merged = PPO.merge_algorithm_configs(
        one, {"policies": {"c": 3}, "replay_buffer_config": {"type": "Y", "capacity": 9}}
    )
    assert merged["policies"] == {"c": 3}
    assert merged["replay_buffer_config"] == {"type": "Y", "capacity": 9}
    same_type = PPO.merge_algorithm_configs(one, {"replay_buffer_config": {"capacity": 9}})
    assert same_type["replay_buffer_config"] == {"type": "X", "alpha": 0.5, "capacity": 9}
    with pytest.raises(ConfigError, match="fixed has no 'other'"):
        PPO.merge_algorithm_configs(one, {"fixed": {"other": 2}})
    with pytest.raises(ConfigError, match="config2 is a list"):
        PPO.merge_algorithm_configs(base, [1])  # type: ignore[arg-type]
