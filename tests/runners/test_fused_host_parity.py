"""The fused EnvPool rollout and the Python-stepped runner share one acting step: same data."""

import jax
import numpy as np

from rljax.algorithms.ppo import PPOConfig
from rljax.runners.acting import make_fused_rollout


def _build(num_env_runners):
    return (
        PPOConfig()
        # Episodes cut at 15 steps: the fragment has truncations to bootstrap.
        .environment("CartPole-v1", env_config={"max_episode_steps": 15})
        .env_runners(
            num_env_runners=num_env_runners, num_envs_per_env_runner=4, rollout_fragment_length=40
        )
        .training(minibatch_size=32, num_epochs=1)
        .debugging(seed=7)
        .build_algo()
    )


def _by_env(traj):
    """[T, K] rows put in sub-env order at every step (EnvPool may return them in any order)."""
    order = np.argsort(np.asarray(traj.env_id), axis=1)
    return jax.tree.map(
        lambda x: np.take_along_axis(
            np.asarray(x), order.reshape(order.shape + (1,) * (np.ndim(x) - 2)), axis=1
        ),
        traj,
    )


def test_fused_and_host_paths_produce_identical_transitions():
    fused, host = _build(0), _build(1)
    try:
        rollout = jax.jit(
            make_fused_rollout(
                fused._act_step,
                fused._env.xla()[3],
                40,
                fused.parts.to_env_action,
                reset_ended=fused._reset_ended,
            )
        )
        _, fused_traj = rollout(fused.state.params, fused.runner_state)
        host_traj = host._runners.sample().traj
        a, b = _by_env(fused_traj), _by_env(host_traj)
        for name in ("obs", "action", "reward", "terminated", "truncated", "valid", "episode_done"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        np.testing.assert_allclose(a.extras["vf_preds"], b.extras["vf_preds"], rtol=1e-5, atol=1e-6)
        for name in ("obs", "vf_preds"):  # the next observation's, reset same-step
            x, y = (t.next_obs if name == "obs" else t.next_extras[name] for t in (a, b))
            if x is not None:
                np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6, err_msg=name)
        assert np.asarray(a.terminated).any() and np.asarray(a.truncated).any()
        # Same-step resets: every row is an env step, the first fragment's first row too.
        assert np.asarray(a.valid).all() and np.asarray(b.valid).all()
    finally:
        fused.stop()
        host.stop()
