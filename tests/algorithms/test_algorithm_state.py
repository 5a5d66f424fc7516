"""RLlib's in-memory state API: ``Algorithm.get_state()`` / ``set_state()``."""

import jax
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.utils.errors import CheckpointError

MODULES = "learner_group/learner/rl_module"


def _ppo(seed):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=32)
        .training(minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=seed)
    )


def _same(a, b):
    a, b = jax.device_get(a), jax.device_get(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    return all(
        np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


@pytest.fixture(scope="module")
def pair():
    trained, fresh = _ppo(0).build_algo(), _ppo(7).build_algo()
    trained.train()
    trained.train()
    yield trained, fresh
    trained.stop()
    fresh.stop()


def test_get_state_holds_rllibs_layout_and_selects_components(pair):
    trained, _ = pair
    state = trained.get_state()
    assert sorted(state) == ["counters", "learner_group", "training_iteration"]
    assert state["training_iteration"] == 2
    assert state["counters"]["num_env_steps_sampled_lifetime"] == 2 * 128
    learner = state["learner_group"]["learner"]
    assert sorted(learner) == ["rl_module", "rljax_state"]
    assert _same(learner["rl_module"], trained.get_weights())
    # The training state as plain nested dicts of numpy arrays (Adam's moments included).
    leaves = jax.tree.leaves(learner["rljax_state"])
    assert leaves and all(isinstance(x, np.ndarray) for x in leaves)
    n_params = sum(x.size for x in jax.tree.leaves(learner["rl_module"]))
    assert sum(x.size for x in leaves) > 2 * n_params  # parameters and two moments at least

    only = trained.get_state(components=MODULES)
    assert sorted(only["learner_group"]["learner"]) == ["rl_module"]
    one = trained.get_state(components=f"{MODULES}/default_policy")
    assert sorted(one["learner_group"]["learner"]["rl_module"]) == ["default_policy"]
    assert trained.get_state(components=f"{MODULES}/other").keys() == {
        "training_iteration",
        "counters",
    }
    none = trained.get_state(not_components="learner_group")
    assert sorted(none) == ["counters", "training_iteration"]
    without = trained.get_state(not_components=f"{MODULES}")
    assert sorted(without["learner_group"]["learner"]) == ["rljax_state"]
    with pytest.raises(TypeError, match=r"components=3 \(int\); use a path str"):
        trained.get_state(components=3)


def test_set_state_copies_the_whole_training_state_and_training_goes_on(pair):
    trained, fresh = pair
    obs = np.random.default_rng(0).uniform(-0.5, 0.5, (16, 4)).astype(np.float32)
    assert not _same(fresh.get_weights(), trained.get_weights())  # seeds 0 and 7
    fresh.set_state(trained.get_state())
    assert _same(fresh.state, trained.state)  # parameters, optimizer state, connectors, ...
    assert fresh.iteration == 2
    assert fresh.num_env_steps_sampled_lifetime == trained.num_env_steps_sampled_lifetime
    np.testing.assert_array_equal(
        fresh.compute_actions(obs, explore=False), trained.compute_actions(obs, explore=False)
    )
    result = fresh.train()
    assert result["training_iteration"] == 3
    assert result["num_env_steps_sampled_lifetime"] == 3 * 128
    # The weights part alone: the policy changes, the optimizer state does not.
    before = jax.device_get(fresh.state)
    flipped = jax.tree.map(lambda x: -x, trained.get_weights())
    fresh.set_state({"learner_group": {"learner": {"rl_module": flipped}}})
    assert _same(fresh.get_weights(), flipped)
    assert _same(fresh.state.opt_state, before.opt_state)


@pytest.mark.parametrize(
    "edit, error, match",
    [
        (lambda s: s.update(env_runner={}), ValueError, r"unknown parts \['env_runner'\]"),
        (
            lambda s: s["learner_group"]["learner"]["rl_module"].update(p9={}),
            ValueError,
            r"unknown policy 'p9' in rl_module; this algorithm has \['default_policy'\]",
        ),
        (
            lambda s: s["learner_group"]["learner"]["rl_module"].update(default_policy={"w": 1}),
            ValueError,
            r"set_weights: the parameters given for 'default_policy' have shapes \{'w': \(\)\}",
        ),
        (
            lambda s: s["learner_group"]["learner"]["rljax_state"].update(params={}),
            CheckpointError,
            r"does not match this algorithm at /params: expected keys \['default_policy'\]",
        ),
        (
            lambda s: s["counters"].update(num_episodes_lifetime=-1),
            ValueError,
            r"counters\['num_episodes_lifetime'\]=-1 \(int\); use a number of at least 0",
        ),
        (
            lambda s: s.update(training_iteration=5),
            ValueError,
            r"training_iteration=5 but counters say 2",
        ),
        (
            lambda s: s["learner_group"].update(learner="x"),
            ValueError,
            r"learner_group must be \{'learner': \{...\}\}",
        ),
    ],
)
def test_a_state_that_does_not_fit_is_refused_and_changes_nothing(pair, edit, error, match):
    trained, fresh = pair
    state = trained.get_state()
    edit(state)
    before = jax.device_get(fresh.state)
    counters = fresh.get_state(not_components="learner_group")
    with pytest.raises(error, match=match):
        fresh.set_state(state)
    assert _same(fresh.state, before)
    assert fresh.get_state(not_components="learner_group") == counters


def test_an_off_policy_state_keeps_the_live_replay_buffer():
    from rljax.algorithms.dqn import DQNConfig

    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .training(num_steps_sampled_before_learning_starts=64, train_batch_size=16)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .reporting(min_sample_timesteps_per_iteration=64)
    )
    with config.build_algo() as algo:
        algo.train()
        rows = int(np.sum(jax.device_get(algo.state.buffer.size)))
        assert rows > 0
        state = algo.get_state()
        flat = jax.tree_util.tree_flatten_with_path(state["learner_group"]["learner"])[0]
        assert not any("buffer" in jax.tree_util.keystr(p) for p, _ in flat)  # no rows saved
        algo.set_state(state)
        assert int(np.sum(jax.device_get(algo.state.buffer.size))) == rows
        # RLlib's algo.local_replay_buffer: its contents as host arrays, and back.
        buffer = algo.local_replay_buffer
        saved = buffer.get_state()
        assert len(buffer) == buffer.get_num_timesteps() == rows
        leaves = jax.tree.leaves(saved)
        assert leaves and all(isinstance(x, np.ndarray) for x in leaves)
        assert algo.train()["training_iteration"] == 2
        assert len(buffer) > rows
        buffer.set_state(saved)  # back to the rows of the first iteration
        assert len(buffer) == rows
        assert all(jax.tree.leaves(jax.tree.map(np.array_equal, buffer.get_state(), saved)))
        bad = jax.tree.map(lambda x: x, saved)
        bad["size"] = np.full_like(saved["size"], 10**9)  # past the capacity
        with pytest.raises(CheckpointError, match="size must lie in"):
            buffer.set_state(bad)
        assert len(buffer) == rows  # unchanged


def test_restore_from_path_loads_one_component_as_rllibs_scripts_do(pair, tmp_path):
    trained, fresh = pair
    saved = jax.device_get(trained.state)
    root = tmp_path / "ckpt"
    trained.save_to_path(root)
    module_dir = root / "learner_group" / "learner" / "rl_module" / "default_policy"
    counters = fresh.get_state(not_components="learner_group")
    fresh.set_weights(jax.tree.map(lambda x: x + 1.0, trained.get_weights()))
    before = jax.device_get(fresh.state)

    # One policy's weights, from RLlib's module directory: the optimizer state stays.
    fresh.restore_from_path(module_dir, component=f"{MODULES}/default_policy")
    assert _same(fresh.get_weights(), trained.get_weights())
    assert _same(fresh.state.opt_state, before.opt_state)
    # Every policy's, from the checkpoint itself.
    fresh.set_weights(jax.tree.map(lambda x: x + 1.0, trained.get_weights()))
    fresh.restore_from_path(root, component=MODULES)
    assert _same(fresh.get_weights(), trained.get_weights())
    # The training state (optimizer included); the counters are left as they were.
    fresh.restore_from_path(root / "learner_group", component="learner_group")
    assert _same(fresh.state, saved)
    assert fresh.get_state(not_components="learner_group") == counters

    with pytest.raises(ValueError, match=r"component='env_runner'; rljax restores"):
        fresh.restore_from_path(root, component="env_runner")
    with pytest.raises(
        ValueError, match=r"has no policy 'p9'; its policies are \['default_policy'\]"
    ):
        fresh.restore_from_path(root, component=f"{MODULES}/p9")
    assert _same(fresh.state, saved)


def test_a_modules_state_moves_as_rllibs_self_play_callback_moves_it(pair):
    trained, fresh = pair
    state = trained.get_module().get_state()
    assert _same(state, trained.get_weights()["default_policy"])
    # RLlib's self-play callback: set_state with one module's get_state().
    fresh.set_state({"learner_group": {"learner": {"rl_module": {"default_policy": state}}}})
    assert _same(fresh.get_weights(), trained.get_weights())
    flipped = jax.tree.map(lambda x: -x, state)
    fresh.get_module().set_state(flipped)
    assert _same(fresh.get_module().get_state(), flipped)
    assert _same(fresh.get_weights()["default_policy"], flipped)
    with pytest.raises(ValueError, match=r"set_weights: the parameters given for 'default_policy'"):
        fresh.get_module().set_state({"w": np.zeros(2)})


def test_a_state_from_before_the_offline_evaluation_counter_still_sets(pair):
    trained, fresh = pair
    state = trained.get_state(not_components="learner_group")
    del state["counters"]["num_offline_evaluations"]  # get_state() of an earlier version
    fresh.set_state(state)
    assert fresh.get_state(not_components="learner_group")["counters"] == {
        **state["counters"],
        "num_offline_evaluations": 0,
    }
