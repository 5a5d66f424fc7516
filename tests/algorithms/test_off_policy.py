"""DQN and SAC: configs (RLlib's names), replay ratio, schedules, both execution paths, checkpoints."""

import pathlib

import flax.serialization
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rljax
from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.dqn.dqn import epsilon_at, epsilon_greedy
from rljax.algorithms.sac import SACConfig
from rljax.networks.q_models import NoisyDense
from rljax.utils.errors import ConfigError


def _small_dqn(env="CartPole-v1", **training):
    kw = dict(
        num_steps_sampled_before_learning_starts=64,
        replay_buffer_config={"capacity": 2048},
        n_step=3,
    )
    kw.update(training)
    return (
        DQNConfig()
        .environment(env)
        # One env step per cycle (the "auto" fragment would be n_step's 3): the counts below.
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=1)
        .training(**kw)
        .rl_module(model_config={"fcnet_hiddens": [32]})
        .reporting(min_sample_timesteps_per_iteration=200)
        .debugging(seed=0)
    )


def _small_sac(env="Pendulum-v1", **training):
    kw = dict(
        num_steps_sampled_before_learning_starts=64,
        replay_buffer_config={"capacity": 2048},
        train_batch_size_per_learner=32,
    )
    kw.update(training)
    return (
        SACConfig()
        .environment(env)
        .training(**kw)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=0)
    )


def test_rllib_defaults():
    dqn = DQNConfig()
    assert (dqn.lr, dqn.grad_clip, dqn.train_batch_size_per_learner) == (5e-4, 40.0, 32)
    assert dqn.double_q and dqn.dueling and dqn.n_step == 1
    assert dqn.target_network_update_freq == 500 and dqn.tau == 1.0
    assert dqn.epsilon == [(0, 1.0), (10000, 0.05)]
    assert dqn.replay_buffer_config["type"] == "PrioritizedEpisodeReplayBuffer"
    sac = SACConfig()
    assert sac.twin_q and sac.tau == 5e-3 and sac.target_entropy == "auto"
    assert (sac.actor_lr, sac.critic_lr, sac.alpha_lr) == (3e-5, 3e-4, 3e-4)
    assert sac.train_batch_size_per_learner == 256
    assert sac.num_steps_sampled_before_learning_starts == 1500


@pytest.mark.parametrize(
    "training, fragment",
    [
        ({"n_step": (4, 2)}, "n_step=(4, 2)"),
        ({"n_step": 0}, "n_step=0"),
        # RLlib's old-stack ReplayBuffer is taken as EpisodeReplayBuffer (the same replay);
        # a type with no counterpart is refused, naming the types.
        ({"replay_buffer_config": {"type": "ReservoirReplayBuffer"}}, "EpisodeReplayBuffer"),
        ({"replay_buffer_config": {"capcity": 10}}, "unknown keys ['capcity']"),
        ({"num_atoms": 51, "v_min": 10.0, "v_max": 10.0}, "v_min=10.0 must be below v_max"),
        ({"noisy": True, "sigma0": -1.0}, "sigma0=-1.0"),
        ({"epsilon": [(100, 1.0), (0, 0.1)]}, "increase"),
        ({"epsilon": [(0, 1.5)]}, "[0, 1]"),
        ({"td_error_loss_fn": "l1"}, "'huber' or 'mse'"),
        ({"tau": 0.0}, "tau=0.0"),
        ({"training_intensity": -1}, "training_intensity=-1"),
        ({"replay_buffer_config": {"capacity": 4}, "n_step": 3}, "more than n_step + 1"),
    ],
)
def test_bad_dqn_settings_fail_in_validate(training, fragment):
    config = _small_dqn(**training)
    with pytest.raises(ConfigError) as e:
        config.validate()
    assert fragment in str(e.value)


def test_old_stack_names_point_to_the_new_ones():
    with pytest.raises(ConfigError, match="num_steps_sampled_before_learning_starts"):
        DQNConfig().training(learning_starts=1000)
    with pytest.raises(ConfigError, match="capacity"):
        DQNConfig().training(buffer_size=1000)
    with pytest.raises(ConfigError, match="actor_lr"):
        SACConfig().training(optimization={})


def test_wrong_action_spaces_are_refused_at_build():
    with pytest.raises(ConfigError, match="Discrete action space"):
        _small_dqn(env="Pendulum-v1").build_algo()

    class TwoDials(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        action_space = gym.spaces.MultiDiscrete([3, 3])

        def __init__(self, config=None):
            pass

        def reset(self, *, seed=None, options=None):
            return np.zeros(2, np.float32), {}

        def step(self, action):
            return np.zeros(2, np.float32), 0.0, True, False, {}

    with pytest.raises(ConfigError, match=r"1-D Box or a Discrete action space; .*MultiDiscrete"):
        _small_sac(env=TwoDials).build_algo()


@pytest.mark.parametrize(
    "intensity, weights",
    # native ratio = 32 / (1 x 4 sub-envs) = 8
    [(None, (1, 1)), (8, (1, 1)), (32, (1, 4)), (20, (1, 3)), (2, (4, 1)), (3, (3, 1))],
)
def test_replay_ratio_weights_follow_rllib(intensity, weights):
    config = DQNConfig().environment("CartPole-v1").env_runners(num_envs_per_env_runner=4)
    config.training(training_intensity=intensity)
    assert config.replay_ratio_weights() == weights


def test_epsilon_schedule_and_greedy_actions():
    schedule = [(0, 1.0), (100, 0.1), (200, 0.0)]
    values = [float(epsilon_at(schedule, jnp.asarray(t))) for t in (0, 50, 100, 150, 200, 10**6)]
    np.testing.assert_allclose(values, [1.0, 0.55, 0.1, 0.05, 0.0, 0.0], atol=1e-6)
    q = jnp.tile(jnp.array([[0.0, 3.0, 1.0]]), (4000, 1))
    greedy = epsilon_greedy(jax.random.PRNGKey(0), q, jnp.asarray(0.0))
    assert np.all(np.asarray(greedy) == 1)
    mixed = np.asarray(epsilon_greedy(jax.random.PRNGKey(1), q, jnp.asarray(0.3)))
    # P(action 1) = 0.7 + 0.3 / 3 = 0.8; the others 0.1 each.
    np.testing.assert_allclose(np.bincount(mixed, minlength=3) / 4000, [0.1, 0.8, 0.1], atol=0.03)


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (9 s alone)
def test_dqn_fused_iteration_counts_and_metrics():
    algo = _small_dqn(training_intensity=64).build_algo()  # native 16: 4 updates per cycle
    try:
        assert algo.fused and algo.train_weight == 4 and algo.cycles_per_iteration == 100
        r1 = algo.train()
        r2 = algo.train()
        # 100 cycles x 2 sub-envs; the auto-reset step after each episode is not a transition.
        episodes = r1["env_runners"]["num_episodes"]
        assert 200 - episodes - 2 <= r1["num_env_steps_sampled_lifetime"] <= 200 - episodes
        learner = r2["learners"]["default_policy"]
        assert learner["num_updates"] == 400  # every cycle of iteration 2 learns
        updates_1 = r1["learners"]["default_policy"]["num_updates"]
        # Learning starts at env step 64, after at least 32 of the 100 cycles.
        assert 0 < updates_1 <= 4 * (100 - 32 + 1) and updates_1 % 4 == 0
        assert r2["num_env_steps_trained_lifetime"] == (updates_1 + 400) * 32
        assert int(algo.state.num_updates) == updates_1 + 400
        for key in ("qf_loss", "qf_mean", "td_error_mean"):
            assert np.isfinite(learner[key]), key
        assert algo._iteration._cache_size() == 1
    finally:
        algo.stop()


class _Chain(gym.Env):
    """A 6-state chain written in a script: moving right reaches the goal (reward 1)."""

    observation_space = gym.spaces.Box(0.0, 1.0, (6,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.pos = 0

    def _obs(self):
        return np.eye(6, dtype=np.float32)[self.pos]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = 0
        return self._obs(), {}

    def step(self, action):
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        done = self.pos == 5
        return self._obs(), float(done), done, False, {}


@pytest.mark.slow
def test_dqn_on_a_gymnasium_env_through_runners():
    rljax.register_env("rljax-test-chain", lambda cfg: _Chain(cfg))
    config = (
        _small_dqn(env="rljax-test-chain", epsilon=[(0, 1.0), (1500, 0.0)], n_step=(1, 3))
        .env_runners(num_env_runners=1, num_envs_per_env_runner=2)
        .training(target_network_update_freq=100, gamma=0.9, lr=3e-3)
    )
    algo = config.build_algo()
    try:
        assert not algo.fused
        for _ in range(12):
            result = algo.train()
        assert 0.5 * 12 * 200 < result["num_env_steps_sampled_lifetime"] <= 12 * 200
        # The greedy policy walks straight to the goal: 5 steps.
        assert algo.compute_single_action(np.eye(6, dtype=np.float32)[0]) == 1
        assert algo.evaluate()["env_runners"]["episode_len_mean"] == 5
    finally:
        algo.stop()


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (12 s alone)
def test_sac_actions_respect_the_bounds_and_explore_and_checkpoints_store_its_buffer(tmp_path):
    # One SAC build for both checks: its actions, then store_buffer_in_checkpoints.
    algo = _small_sac(store_buffer_in_checkpoints=True).build_algo()
    try:
        algo.train()
        obs = np.zeros((256, 3), np.float32)
        greedy = algo.compute_actions(obs)
        sampled = algo.compute_actions(obs, explore=True)
        assert greedy.shape == (256, 1) and np.all(np.abs(sampled) <= 2.0)
        assert np.ptp(greedy) == 0 and np.std(sampled) > 0.1
        out = algo.get_module().forward_inference({"obs": obs[:4]})
        assert out["action_dist_inputs"].shape == (4, 2)
        algo.save_to_path(tmp_path / "sac")
        restored = Algorithm.from_checkpoint(tmp_path / "sac")
        try:
            size = np.asarray(restored.state.buffer.size)
            assert int(size.sum()) == 100  # 100 env steps per iteration, auto-resets included
            assert restored.config.store_buffer_in_checkpoints is True
        finally:
            restored.stop()
    finally:
        algo.stop()


@pytest.mark.slow
def test_checkpoint_with_and_without_the_replay_buffer(tmp_path):
    # One trained algorithm saved both ways; each checkpoint restored on its own.
    algo = _small_dqn().build_algo()
    try:
        for _ in range(2):
            algo.train()
        for include in (True, False):
            path = tmp_path / f"dqn-{include}"
            algo.save_to_path(path, include_replay_buffer=include)
            restored = Algorithm.from_checkpoint(path)
            try:
                s, r = jax.device_get(algo.state), jax.device_get(restored.state)
                same = jax.tree.map(np.array_equal, s.learner, r.learner)
                assert all(jax.tree.leaves(same))
                assert int(r.timestep) == int(s.timestep) == algo.num_env_steps_sampled_lifetime
                assert int(r.num_updates) == int(s.num_updates)
                np.testing.assert_array_equal(r.key, s.key)
                if include:
                    buffers = jax.tree.map(np.array_equal, s.buffer, r.buffer)
                    assert all(jax.tree.leaves(buffers))
                else:
                    assert int(np.sum(r.buffer.size)) == 0
                assert restored.train()["training_iteration"] == 3
            finally:
                restored.stop()
    finally:
        algo.stop()


def _state_paths(tree) -> list[str]:
    flat = jax.tree_util.tree_flatten_with_path(flax.serialization.to_state_dict(tree))[0]
    return ["/".join(str(k.key) for k in path) for path, _ in flat]


def _collapse(paths: list[str], networks: dict[str, list[str]]) -> set[str]:
    """Each path that ends in a network's parameter path, with that end written <name>."""
    out = set()
    for path in paths:
        for name, net_paths in networks.items():
            end = next((p for p in net_paths if path.endswith("/" + p)), None)
            if end is not None:
                path = path[: -len(end)] + f"<{name}>"
                break
        out.add(path)
    return out


GUARD_PATHS = ("last_finite", "notfinite_count", "total_notfinite")


def test_learner_states_keep_the_checkpoint_trees_of_their_dicts():
    """The checkpoint's learner trees are those the dicts with these keys wrote, optimizer
    states included: checkpoints saved before the learner states were typed still load. The
    live optimizer states hold their injected rates besides (``optax.inject_hyperparams``);
    the checkpoint's trees leave them out."""
    dqn = _small_dqn().build_algo()  # grad_clip 40: Adam chained behind the clip
    sac = _small_sac().build_algo()  # no grad_clip: Adam alone in its chain
    try:
        assert set(dqn.state.learner.opt_state.hyperparams) == {"learning_rate", "max_norm"}
        for part in ("actor_opt", "critic_opt", "alpha_opt"):
            assert set(getattr(sac.state.learner, part).hyperparams) == {"learning_rate"}
        learner = dqn._checkpoint_state(False)["state"]["learner"]
        paths = _state_paths(learner)
        net = _state_paths(learner.params)
        adam = "opt_state/inner_state/1/0"
        assert _collapse(paths, {"q": net}) == {
            "params/<q>",
            "target_params/<q>",
            f"{adam}/count",
            f"{adam}/mu/<q>",
            f"{adam}/nu/<q>",
            *(f"opt_state/{g}" for g in GUARD_PATHS),
        }
        assert len(paths) == 4 * len(net) + 4

        learner = sac._checkpoint_state(False)["state"]["learner"]
        paths = _state_paths(learner)
        nets = {"actor": _state_paths(learner.actor), "critic": _state_paths(learner.critic)}
        expected = {"actor/<actor>", "critic/<critic>", "target_critic/<critic>", "log_alpha"}
        for part in ("actor", "critic"):
            adam = f"{part}_opt/inner_state/0/0"
            expected |= {f"{adam}/count", f"{adam}/mu/<{part}>", f"{adam}/nu/<{part}>"}
            expected |= {f"{part}_opt/{g}" for g in GUARD_PATHS}
        expected |= {f"alpha_opt/inner_state/0/{k}" for k in ("count", "mu", "nu")}
        expected |= {f"alpha_opt/{g}" for g in GUARD_PATHS}
        assert _collapse(paths, nets) == expected
        # log_alpha; count and the guard's 3 for each network's Adam; the temperature's 6.
        assert len(paths) == 3 * len(nets["actor"]) + 4 * len(nets["critic"]) + 1 + 2 * 4 + 6
    finally:
        dqn.stop()
        sac.stop()


@pytest.mark.slow
def test_seed_tutorial_breakout_port_runs_on_deduplicated_frames():
    config = DQNConfig.from_yaml(
        pathlib.Path(rljax.__file__).parent / "tuned_examples" / "dqn_breakout.yaml"
    )
    assert config.model_config.conv_filters[0] == (32, (8, 8), 4)
    config.training(
        num_steps_sampled_before_learning_starts=32, replay_buffer_config={"capacity": 512}
    ).reporting(min_sample_timesteps_per_iteration=64)
    algo = config.build_algo()
    try:
        assert algo.fused and algo.frame_stacked
        assert algo.observation_space.shape == (84, 84, 4)  # RLlib's layout
        for _ in range(2):
            result = algo.train()
        learner = result["learners"]["default_policy"]
        assert learner["num_updates"] == 16 and np.isfinite(learner["qf_loss"])
        # Frames are stored once per env step: [4 sub-envs, 128 rows, 84, 84] uint8.
        assert algo.state.buffer.frames.shape == (4, 128, 84, 84)
        assert algo.state.buffer.frames.dtype == np.uint8
        action = algo.compute_single_action(np.zeros((84, 84, 4), np.uint8))
        assert 0 <= action < algo.action_space.n
    finally:
        algo.stop()


@pytest.mark.slow
def test_envpool_async_batches_fill_each_sub_envs_ring_in_order():
    # ASYNC: each env step returns whichever 2 of the 4 sub-envs finished first.
    algo = (
        _small_dqn()
        .env_runners(num_envs_per_env_runner=4, gym_env_vectorize_mode="ASYNC")
        .build_algo()
    )
    try:
        assert algo.fused and algo.envs_per_step == 2
        algo.train()
        buf = jax.device_get(algo.state.buffer)
        assert int(buf.size.sum()) == 200  # 100 env steps x 2 results, auto-resets included
        obs = buf.storage["obs"]
        for k in range(4):
            n = int(buf.size[k])
            valid = buf.storage["valid"][k, : n - 1]
            done = buf.storage["terminated"][k, : n - 1] | buf.storage["truncated"][k, : n - 1]
            # CartPole's Euler step: x' = x + 0.02 * x_dot. It holds between consecutive rows of
            # a ring inside an episode only if they are consecutive steps of one sub-env.
            predicted = obs[k, : n - 1, 0] + 0.02 * obs[k, : n - 1, 1]
            error = np.abs(obs[k, 1:n, 0] - predicted)[valid & ~done]
            assert error.size > 10 and np.all(error < 1e-5), (k, error.max())
    finally:
        algo.stop()


def test_noisy_dense_matches_its_formula_and_switches_off():
    layer = NoisyDense(3, sigma0=0.5)
    x_rand = jnp.array([[0.3, -0.2, 0.5, 0.1]])
    # One call, one noise draw for the whole batch: a zero row, the unit rows, and a random row.
    x = jnp.concatenate([jnp.zeros((1, 4)), jnp.eye(4), x_rand])
    params = layer.init(jax.random.PRNGKey(0), x, False)["params"]
    np.testing.assert_allclose(params["sigma_bias"], 0.25)  # sigma0 / sqrt(fan_in)
    mean = layer.apply({"params": params}, x, False)
    np.testing.assert_allclose(mean, x @ params["mu_kernel"] + params["mu_bias"], rtol=1e-6)
    key = jax.random.PRNGKey(7)
    noisy = layer.apply({"params": params}, x, True, rngs={"noise": key})
    np.testing.assert_array_equal(
        noisy, layer.apply({"params": params}, x, True, rngs={"noise": key})
    )
    diff = np.asarray(noisy - mean)
    f_out = diff[0] / 0.25  # the zero row sees only the bias noise sigma_b * f(e_out)
    sigma_w = np.asarray(params["sigma_kernel"])
    # Unit row i sees (f(e_in)_i sigma_w[i] + sigma_b) * f(e_out): the same f(e_in)_i in every
    # output column if the noise is factorised (rank one).
    f_in = (diff[1:5] - diff[0]) / (sigma_w * f_out)
    np.testing.assert_allclose(f_in, f_in[:, :1] * np.ones((1, 3)), rtol=1e-4)
    f_in = f_in[:, 0]
    expected = ((np.asarray(x_rand) * f_in) @ sigma_w) * f_out + 0.25 * f_out
    np.testing.assert_allclose(diff[5], expected[0], rtol=1e-4, atol=1e-6)
    other = layer.apply({"params": params}, x, True, rngs={"noise": jax.random.PRNGKey(8)})
    assert not np.allclose(other, noisy)


@pytest.mark.slow
def test_distributional_q_network_outputs_and_q_values():
    algo = _small_dqn(num_atoms=11, v_min=-5.0, v_max=5.0, dueling=True).build_algo()
    try:
        obs = jnp.zeros((3, 4))
        out = algo._net(algo.state.learner.params, obs, None)
        assert out.shape == (3, 2, 11)
        probs = jax.nn.softmax(out, -1)
        np.testing.assert_allclose(
            algo._q_values(out), jnp.sum(probs * jnp.linspace(-5, 5, 11), -1), rtol=1e-6
        )
        result = algo.train()
        assert np.isfinite(result["learners"]["default_policy"]["qf_loss"])
    finally:
        algo.stop()


def test_auto_fragment_is_the_largest_n_step_as_rllibs():
    # RLlib's DQN and SAC sample n_step[1] env steps per sub-env when the fragment is "auto",
    # so one update per fragment trains once per whole n-step window, not once per env step.
    from rljax.algorithms.dqn import DQNConfig
    from rljax.algorithms.sac import SACConfig

    assert DQNConfig().rollout_fragment_length == "auto"
    assert DQNConfig().get_rollout_fragment_length() == 1  # the default n_step=1
    assert DQNConfig().training(n_step=3).get_rollout_fragment_length() == 3
    assert SACConfig().training(n_step=(2, 5)).get_rollout_fragment_length() == 5
    config = SACConfig().training(n_step=(2, 5)).env_runners(rollout_fragment_length=2)
    assert config.get_rollout_fragment_length() == 2
