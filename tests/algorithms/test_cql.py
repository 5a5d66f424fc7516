"""CQL (rljax.algorithms.cql): the conservative term by hand, the settings it refuses, and the
term's effect: critics trained with it on a scripted Pendulum controller's recorded episodes
value the recorded actions above random ones, and without it they do not."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("pyarrow")

from rljax.algorithms.cql import CQLConfig  # noqa: E402
from rljax.algorithms.cql.losses import cql_penalty  # noqa: E402
from rljax.offline import OfflineWriter  # noqa: E402
from rljax.utils.errors import ConfigError  # noqa: E402


def _logsumexp(x):
    return float(np.log(np.sum(np.exp(np.asarray(x)))))


@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_the_conservative_term_by_hand(temperature):
    # Critics that ignore the action (so the random draw drops out): the first sums the
    # observation, the second doubles that; the policy's samples have log-probability -1.
    def q_fn(obs, action):
        total = jnp.sum(obs, -1) + 0.0 * action[:, 0]
        return jnp.stack([total, 2.0 * total])

    def sample_fn(obs, key):
        return jnp.full((obs.shape[0], 1), 0.5), jnp.full((obs.shape[0],), -1.0)

    batch = {
        "obs": jnp.array([[1.0], [2.0]]),
        "next_obs": jnp.array([[0.0], [1.0]]),
        "action": jnp.array([[0.1], [0.2]]),
    }
    q_taken = q_fn(batch["obs"], batch["action"])
    term, metrics = cql_penalty(
        q_fn,
        sample_fn,
        batch,
        q_taken,
        jax.random.PRNGKey(0),
        num_actions=3,
        temperature=temperature,
        min_q_weight=2.0,
    )
    log_density = np.log(0.5)  # uniform on [-1, 1]
    expected = []
    for scale in (1.0, 2.0):  # each critic
        rows = []
        for s, s_next in ((1.0, 0.0), (2.0, 1.0)):
            values = [scale * s - log_density] * 3  # random actions at s
            values += [scale * s_next + 1.0] * 3  # the policy's at s'
            values += [scale * s + 1.0] * 3  # the policy's at s
            rows.append(temperature * _logsumexp(np.array(values) / temperature))
        expected.append(2.0 * (np.mean(rows) - scale * 1.5))  # minus the data's mean Q
    assert float(term) == pytest.approx(np.mean(expected), rel=1e-5)


def test_the_term_trains_the_critics_only_and_draws_random_actions_in_the_squashed_range():
    # A critic whose value is a weight times the action, and a policy with a parameter: the
    # term's gradient reaches the weight, not the policy's parameter; the random actions (the
    # only ones below -0.9 here) stay within (-1, 1).
    seen = []

    def term_of(weight, shift):
        def q_fn(obs, action):
            seen.append(action)
            return (weight * action[:, 0] + 0.0 * obs[:, 0])[None]

        def sample_fn(obs, key):
            return jnp.full((obs.shape[0], 1), 0.5) + shift, jnp.zeros((obs.shape[0],)) + shift

        batch = {"obs": jnp.ones((4, 1)), "next_obs": jnp.ones((4, 1)), "action": jnp.zeros((4, 1))}
        term, _ = cql_penalty(
            q_fn,
            sample_fn,
            batch,
            jnp.zeros((1, 4)),
            jax.random.PRNGKey(1),
            num_actions=64,
            temperature=1.0,
            min_q_weight=1.0,
        )
        return term

    d_weight, d_shift = jax.grad(term_of, argnums=(0, 1))(1.0, 0.0)
    assert float(d_weight) != 0.0 and float(d_shift) == 0.0
    random = np.asarray(jax.device_get(seen[0]))  # the first scored: the random draw
    assert random.min() >= -1.0 and random.max() <= 1.0 and random.min() < -0.9


def test_the_squashed_gaussian_s_log_prob_of_its_own_samples():
    from rljax.networks.distributions import SquashedDiagGaussian

    dist = SquashedDiagGaussian(2)
    inputs = jnp.array([[0.3, -0.2, -0.5, 0.1], [1.0, 0.4, -1.0, -2.0]])
    actions, logp = dist.sample_and_log_prob(jax.random.PRNGKey(0), inputs)
    np.testing.assert_allclose(dist.log_prob(inputs, actions), logp, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_the_first_bc_iters_steps_train_the_actor_on_the_data_s_actions(tmp_path):
    # One gradient step with and without the BC phase from the same start: the critics take
    # the same step (the actor's loss does not reach them), the actor another.
    _record_controller(tmp_path, episodes=1, noise=0.1)
    learners = {}
    for bc_iters in (0, 10):
        algo = (
            CQLConfig()
            .environment("Pendulum-v1")
            .offline_data(input_=str(tmp_path), dataset_num_iters_per_learner=1)
            .training(bc_iters=bc_iters, train_batch_size_per_learner=32, num_actions=2)
            .rl_module(model_config={"fcnet_hiddens": [16]})
            .debugging(seed=0)
            .build_algo()
        )
        try:
            algo.train()
            learners[bc_iters] = jax.device_get(algo.state.learner)
        finally:
            algo.stop()

    def largest_difference(a, b):  # two programs: the same numbers up to rounding
        return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b, strict=True))

    critics = [jax.tree.leaves(learners[k].critic) for k in (0, 10)]
    actors = [jax.tree.leaves(learners[k].actor) for k in (0, 10)]
    assert largest_difference(*critics) < 1e-6 < 1e-4 < largest_difference(*actors)


def test_settings_cql_refuses_naming_them(tmp_path):
    with pytest.raises(ConfigError, match=r"set \.offline_data\(input_=PATH\)"):
        CQLConfig().environment("Pendulum-v1").validate()
    with pytest.raises(ConfigError, match="lagrangian=True: .* not built"):
        CQLConfig().training(lagrangian=True).validate()
    with pytest.raises(ConfigError, match="n_step=3: the offline rows are one-step"):
        CQLConfig().environment("Pendulum-v1").offline_data(input_=str(tmp_path)).training(
            n_step=3
        ).validate()
    with pytest.raises(ConfigError, match="CQL needs a 1-D Box action space"):
        CQLConfig().environment("CartPole-v1").offline_data(input_=str(tmp_path)).build_algo()


def _controller(o: np.ndarray) -> np.ndarray:
    """Pendulum: pump energy (full torque along the swing) until near the top, then a PD
    controller holds it upright."""
    cos, sin, speed = o
    if cos > 0.85:
        torque = -(12.0 * np.arctan2(sin, cos) + 2.5 * speed)
    else:
        torque = 2.0 * np.sign(speed) if 0.5 * speed**2 + 10.0 * (cos - 1.0) < 0 else 0.0
    return np.clip(np.array([torque], np.float32), -2.0, 2.0)


def _rows(path, algo) -> tuple[jax.Array, jax.Array]:
    """The recorded observations and their actions in SAC's squashed range (Pendulum's
    torque bound is 2)."""
    from rljax.offline import read_offline_data

    data = read_offline_data(str(path), algo.observation_space, algo.action_space)
    return jnp.asarray(data.obs), jnp.asarray(np.clip(data.actions / 2.0, -1.0, 1.0))


def _record_controller(path, episodes: int, noise: float, seed: int = 0) -> float:
    env = gym.make("Pendulum-v1")
    writer = OfflineWriter(path, env.observation_space, env.action_space)
    rng = np.random.default_rng(seed)

    def noisy(o):
        return np.clip(_controller(o) + rng.normal(0.0, noise, 1), -2.0, 2.0).astype(np.float32)

    returns = writer.record_episodes(env, noisy, episodes, seed)  # Pendulum: 200 steps each
    writer.flush()
    return float(np.mean(returns))


@pytest.mark.xla_optimized
@pytest.mark.slow
def test_the_term_makes_the_critics_value_the_data_s_actions_over_others(tmp_path):
    # The same data and updates with and without the term (min_q_weight 0: offline SAC with
    # deterministic backups): CQL's critics value the recorded actions about 3 above random
    # ones; SAC's value both alike.
    _record_controller(tmp_path, episodes=4, noise=0.1)
    gaps = {}
    for weight in (5.0, 0.0):
        algo = (
            CQLConfig()
            .environment("Pendulum-v1")
            .offline_data(input_=str(tmp_path), dataset_num_iters_per_learner=300)
            .training(
                bc_iters=0, train_batch_size_per_learner=128, num_actions=4, min_q_weight=weight
            )
            .rl_module(model_config={"fcnet_hiddens": [64, 64]})
            .debugging(seed=0)
            .build_algo()
        )
        try:
            result = algo.train()
            obs, actions = _rows(tmp_path, algo)
            random = jax.random.uniform(jax.random.PRNGKey(3), actions.shape, minval=-1, maxval=1)
            critic = algo.state.learner.critic
            q_data = algo.critic.apply(critic, obs, actions).min(0)
            q_random = algo.critic.apply(critic, obs, random).min(0)
            gaps[weight] = float((q_data - q_random).mean())
            if weight:  # a checkpoint trains on as the algorithm does
                algo.save_to_path(tmp_path / "ckpt")
                restored = type(algo).from_checkpoint(tmp_path / "ckpt")
                algo.train(), restored.train()
                equal = jax.tree.map(
                    np.array_equal,
                    jax.device_get(algo.state._replace(buffer=None)),
                    jax.device_get(restored.state._replace(buffer=None)),
                )
                restored.stop()
                assert all(jax.tree.leaves(equal))
        finally:
            algo.stop()
        assert result["num_env_steps_trained_lifetime"] == 300 * 128
    assert gaps[5.0] > 1.0 and abs(gaps[0.0]) < 0.5, gaps
