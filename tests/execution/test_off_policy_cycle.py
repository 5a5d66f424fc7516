"""The off-policy cycle (``rljax.execution.off_policy``): when learning starts, and which env
steps count."""

import jax.numpy as jnp
import numpy as np

from rljax.execution.off_policy import (
    OffPolicyState,
    ReplayLearner,
    ReplaySchedule,
    make_learn_cycle,
    make_update,
)
from rljax.replay.episode import make_episode_buffer
from rljax.types import Transition

ITEM = {
    "obs": np.zeros((1,), np.float32),
    "action": np.zeros((), np.int32),
    "reward": np.zeros((), np.float32),
    "terminated": np.zeros((), bool),
    "truncated": np.zeros((), bool),
}


def _counting_learner() -> ReplayLearner:
    """A learner whose state counts its updates and sums the rewards it was given."""

    def learn(learner, batch, weights, key, timestep):
        new = {
            "updates": learner["updates"] + 1,
            "rewards": learner["rewards"] + batch["reward"].sum(),
        }
        return new, jnp.zeros_like(weights), {"loss": jnp.ones(())}

    return ReplayLearner(
        init={"updates": jnp.zeros((), jnp.int32), "rewards": jnp.zeros((), jnp.float32)},
        learn=learn,
        update_target=lambda x: x,
        metric_names=("loss",),
    )


def _fragment(step: int, present=None) -> Transition:
    """One env step of one sub-env: observation ``step``, reward 1."""
    one = lambda x: jnp.asarray([[x]])  # noqa: E731  [T=1, K=1]
    return Transition(
        obs=jnp.full((1, 1, 1), float(step)),
        action=one(0),
        reward=one(1.0),
        terminated=one(False),
        truncated=one(False),
        valid=one(True),
        env_id=one(0),
        extras={},
        next_extras={},
        episode_return=one(0.0),
        episode_len=one(0),
        episode_done=one(False),
        present=None if present is None else one(present),
    )


def _cycle(env_steps=None):
    buffer = make_episode_buffer(ITEM, num_envs=1, capacity=8, max_n_step=1)
    learner = _counting_learner()
    schedule = ReplaySchedule(
        train_weight=1,
        batch_size=4,
        n_step=(1, 1),
        gamma=0.9,
        target_update_freq=0,
        learning_starts=0,
    )
    update = make_update(learner, buffer, schedule)
    cycle = make_learn_cycle(update, buffer, schedule, learner.metric_names, env_steps=env_steps)
    state = OffPolicyState(
        learner=learner.init,
        buffer=buffer.init(),
        key=jnp.zeros((2,), jnp.uint32),
        timestep=jnp.zeros((), jnp.int32),
        last_target_update=jnp.zeros((), jnp.int32),
        num_updates=jnp.zeros((), jnp.int32),
    )
    return cycle, state


def test_learning_waits_for_a_row_to_sample_even_when_it_may_start():
    # learning_starts=0, but after the first step no row has its next observation yet: an
    # update then would train on a batch of zeros. It starts with the second step.
    cycle, state = _cycle()
    state, _, started = cycle(state, _fragment(0))
    assert not bool(started) and int(state.learner["updates"]) == 0
    state, _, started = cycle(state, _fragment(1))
    assert bool(started) and int(state.learner["updates"]) == 1
    # Its batch is real rows: 4 samples of reward 1 (a batch of zeros would sum to 0).
    assert float(state.learner["rewards"]) == 4.0


def test_env_steps_count_the_fragment_not_its_rows():
    # Agent slots: a cycle counts the sub-envs' env steps it was given, whatever the rows; an
    # absent row adds nothing to the buffer.
    cycle, state = _cycle(env_steps=lambda traj: jnp.asarray(3))
    state, _, _ = cycle(state, _fragment(0, present=False))
    assert int(state.timestep) == 3
    assert int(state.buffer.size[0]) == 0
    state, _, _ = cycle(state, _fragment(1, present=True))
    assert int(state.timestep) == 6 and int(state.buffer.size[0]) == 1
