import jax
import jax.numpy as jnp
import numpy as np

from rljax.env.vector import StepResult
from rljax.runners.acting import init_actor_state, make_act_step


def _policy(params, obs, key):
    # action = obs * 2, "value" = obs + params: easy to trace through the runner.
    return obs.astype(jnp.int32) * 2, {"vf_preds": obs + params, "action_logp": -obs}


def _result(obs, reward, term, trunc, ids):
    return StepResult(
        jnp.asarray(obs, jnp.float32),
        jnp.asarray(reward, jnp.float32),
        jnp.asarray(term),
        jnp.asarray(trunc),
        jnp.asarray(ids, jnp.int32),
    )


def test_act_step_finishes_pending_transitions_with_next_step_autoreset():
    act = jax.jit(make_act_step(_policy, ("vf_preds",)))
    state = init_actor_state(_policy, 0.0, jnp.zeros((), jnp.float32), 2)
    key = jax.random.PRNGKey(0)
    results = [
        _result([10, 50], [0, 0], [False, False], [False, False], [0, 1]),  # reset
        _result([11, 51], [1, 5], [False, True], [False, False], [0, 1]),  # env 1 terminates
        _result(
            [12, 60], [1, 0], [False, False], [True, False], [0, 1]
        ),  # env 0 truncated; env 1 auto-resets
        _result([20, 61], [0, 6], [False, False], [False, False], [0, 1]),  # env 0 auto-resets
    ]
    out = []
    for r in results:
        _, state, tr = act(0.5, key, state, r)
        out.append(jax.device_get(tr))
    valid = np.stack([t.valid for t in out])
    np.testing.assert_array_equal(
        valid, [[False, False], [True, True], [True, False], [False, True]]
    )
    # env 0: obs 10 -> 11 -> 12 (truncated: bootstrapped from the final observation 12)
    np.testing.assert_array_equal([out[1].obs[0], out[2].obs[0]], [10, 11])
    np.testing.assert_array_equal([out[1].action[0], out[2].action[0]], [20, 22])
    np.testing.assert_allclose(out[2].next_extras["vf_preds"][0], 12.5)
    assert bool(out[2].truncated[0]) and not bool(out[2].terminated[0])
    # env 1 terminates at its first step: return 5, length 1; then obs 60 starts a new episode
    assert (
        bool(out[1].episode_done[1])
        and out[1].episode_return[1] == 5
        and out[1].episode_len[1] == 1
    )
    assert (
        bool(out[2].episode_done[0])
        and out[2].episode_return[0] == 2
        and out[2].episode_len[0] == 2
    )
    assert out[3].obs[1] == 60 and out[3].reward[1] == 6 and bool(out[3].valid[1])
    np.testing.assert_allclose(out[3].extras["vf_preds"][1], 60.5)
    assert not np.any([t.episode_done for t in out][3])


def test_act_step_handles_subsets_in_any_order():
    act = jax.jit(make_act_step(_policy, ("vf_preds",)))
    state = init_actor_state(_policy, 0.0, jnp.zeros((), jnp.float32), 3)
    key = jax.random.PRNGKey(0)
    _, state, _ = act(0.0, key, state, _result([1, 2], [0, 0], [False] * 2, [False] * 2, [2, 0]))
    _, state, tr = act(0.0, key, state, _result([5, 7], [1, 1], [False] * 2, [False] * 2, [0, 2]))
    np.testing.assert_array_equal(tr.obs, [2, 1])  # each row finishes its own sub-env's transition
    np.testing.assert_array_equal(tr.valid, [True, True])
    np.testing.assert_array_equal(state.obs, [5, 0, 7])
    assert not bool(state.valid[1])


def test_lost_lives_do_not_end_the_metric_episode():
    # Atari with episodic life: a lost life terminates the learning episode, but the metrics follow
    # the whole game, with unclipped rewards.
    act = jax.jit(make_act_step(_policy, ("vf_preds",)))
    state = init_actor_state(_policy, 0.0, jnp.zeros((), jnp.float32), 1)
    key = jax.random.PRNGKey(0)

    def res(obs, clipped, raw, term, game_over):
        r = _result([obs], [clipped], [term], [False], [0])
        return r._replace(
            raw_reward=jnp.asarray([raw], jnp.float32), game_over=jnp.asarray([game_over])
        )

    steps = [
        res(0, 0, 0, False, False),  # reset
        res(1, 1, 7, True, False),  # life lost: learning episode ends, game goes on
        res(2, 0, 0, False, False),  # auto-reset step (no transition)
        res(3, 1, 3, True, True),  # game over
    ]
    outs = []
    for r in steps:
        _, state, tr = act(0.0, key, state, r)
        outs.append(tr)
    assert bool(outs[1].terminated[0]) and not bool(outs[1].episode_done[0])
    assert bool(outs[3].episode_done[0])
    assert float(outs[3].episode_return[0]) == 10.0 and int(outs[3].episode_len[0]) == 2
    assert float(outs[1].reward[0]) == 1.0  # learning still sees the clipped reward


def test_act_step_with_same_step_autoreset():
    """Same-step results: the row that ends an episode is followed by a real one, and a
    truncated row bootstraps from ``final_obs``, not from the next episode's first obs."""
    act = jax.jit(make_act_step(_policy, ("vf_preds",)))
    state = init_actor_state(_policy, 0.0, jnp.zeros((), jnp.float32), 2)
    key = jax.random.PRNGKey(0)

    def result(obs, final, reward, term, trunc):
        return _result(obs, reward, term, trunc, [0, 1])._replace(
            final_obs=jnp.asarray(final, jnp.float32)
        )

    results = [
        result([10, 50], [10, 50], [0, 0], [False, False], [False, False]),  # reset
        # env 1 terminates at 51 and starts again at 90, in the same step
        result([11, 90], [11, 51], [1, 5], [False, True], [False, False]),
        # env 0 is truncated at 12 and starts again at 70
        result([70, 91], [12, 91], [1, 6], [False, False], [True, False]),
        result([71, 92], [71, 92], [2, 7], [False, False], [False, False]),
    ]
    out = []
    for r in results:
        _, state, tr = act(0.5, key, state, r)
        out.append(jax.device_get(tr))
    valid = np.stack([t.valid for t in out])
    # Only the reset's row is no transition: every later row is an env step.
    np.testing.assert_array_equal(valid, [[False, False], [True, True], [True, True], [True, True]])
    np.testing.assert_array_equal(
        np.stack([t.obs for t in out[1:]]), [[10, 50], [11, 90], [70, 91]]
    )
    np.testing.assert_array_equal(out[3].action, [140, 182])  # acted on the new episodes' obs
    # The truncated row bootstraps from its final observation 12 (12 + 0.5), not from 70.
    np.testing.assert_allclose(out[2].next_extras["vf_preds"], [12.5, 91.5])
    np.testing.assert_allclose(out[1].next_extras["vf_preds"][0], 11.5)
    # Episodes: env 1's first ends at row 1 (return 5, length 1), its second runs on;
    # env 0's first ends at row 2 (return 2, length 2).
    assert bool(out[1].episode_done[1]) and out[1].episode_return[1] == 5
    assert out[1].episode_len[1] == 1
    assert bool(out[2].episode_done[0]) and out[2].episode_return[0] == 2
    assert out[2].episode_len[0] == 2
    assert out[3].episode_return[1] == 6 + 7 and out[3].episode_len[1] == 2
    assert out[3].episode_return[0] == 2 and out[3].episode_len[0] == 1


def test_clip_rewards_clips_what_training_reads_and_not_the_returns():
    key = jax.random.PRNGKey(0)
    for clip, expected in [(True, [1.0, -1.0]), (2.5, [2.5, -2.5]), (None, [4.0, -3.0])]:
        act = jax.jit(make_act_step(_policy, ("vf_preds",), clip_rewards=clip))
        state = init_actor_state(_policy, 0.0, jnp.zeros((), jnp.float32), 2)
        _, state, _ = act(
            0.0, key, state, _result([1, 1], [0, 0], [False] * 2, [False] * 2, [0, 1])
        )
        _, state, tr = act(
            0.0, key, state, _result([2, 2], [4, -3], [True] * 2, [False] * 2, [0, 1])
        )
        np.testing.assert_allclose(tr.reward, expected)
        np.testing.assert_allclose(tr.episode_return, [4.0, -3.0])  # the env's own rewards
