"""Free-running runner groups (IMPALA/APPO): runners never wait for weights, the learner takes
the first fragments ready from any runner, and the learner thread's hand-over to the driver."""

import time

import jax.numpy as jnp
import numpy as np
import pytest

from rljax.execution.on_policy import LearnerThread, SampleRecord, runner_group_metrics
from rljax.runners.acting import Transition
from rljax.runners.group import RunnerGroup
from rljax.runners.versions import VersionedQueues


class PacedRunner:
    """A runner without env whose fragments take ``step_s`` each; ``env_id`` gives its streams
    0..streams-1 (the group adds the runner offset in real runners: here the index)."""

    def __init__(self, index: int, step_s: float, streams: int = 2):
        self.index = index
        self.step_s = step_s
        self.streams = streams
        self.versions: list[int] = []
        self.busy = False
        self.error = None
        self.last_stats = None
        self.last_num_steps = 1
        self.last_num_rows = 2
        self.num_sub_env_restarts = 0

    def sample(self, params, length):
        self.versions.append(params)
        time.sleep(self.step_s)
        z = jnp.zeros((length, self.streams))
        ids = jnp.broadcast_to(jnp.arange(self.streams) + self.index * self.streams, z.shape)
        valid = jnp.ones(z.shape, bool)
        return Transition(
            obs=z,
            action=z,
            reward=z,
            terminated=z,
            truncated=z,
            valid=valid,
            env_id=ids.astype(jnp.int32),
            extras={},
            next_extras={},
            episode_return=z,
            episode_len=z,
            episode_done=z,
        )

    def close(self, force=False):
        pass


def test_free_running_runners_never_wait_for_weights_and_version_by_updates():
    q = VersionedQueues(1, max_policy_lag=None, max_queued_fragments=2, poll_s=0.01)
    assert q.free_running and q.max_queued_fragments == 2
    assert q.publish("w0") == 0
    # Fragment 50 may start with version 0: nothing but a full queue holds a runner back.
    assert q.wait_for_weights(0, 50, lambda: True) == ("w0", 0)
    assert q.publish("w1", steps=3) == 3  # a broadcast every 3 updates counts 3 versions
    assert q.publish("w2", advance=False) == 3
    lagged = VersionedQueues(1, max_policy_lag=2)
    with pytest.raises(ValueError, match="steps=2"):
        lagged.publish("w", steps=2)


def test_sample_any_keeps_taking_from_the_fast_runners_while_a_straggler_lags():
    # Three runners at 5 ms a fragment, one at 50 ms (10x slower): 24 fragments come mostly
    # from the fast three, and each batch's streams stay distinct.
    runners = [PacedRunner(i, 0.05 if i == 3 else 0.005) for i in range(4)]
    group = RunnerGroup(
        runners, 2, max_policy_lag=None, max_queued_fragments=1, poll_s=0.01, streams_per_runner=2
    )
    try:
        group.publish(0)
        taken = {i: 0 for i in range(4)}
        for update in range(8):
            sample = group.sample_any(3)
            assert len(sample.slots) == 3 and sample.traj.reward.shape == (2, 6)
            ids = np.asarray(sample.traj.env_id)
            # Renumbered per place in the batch: 3 fragments x 2 streams, all distinct, even
            # when one runner gave two of them.
            assert len(set(ids[0].tolist())) == 6
            for s in sample.slots:
                taken[s] += 1
            group.publish(update + 1)
        assert sum(taken.values()) == 24
        fast = min(taken[i] for i in range(3))
        assert taken[3] < fast, taken  # the straggler gave fewer than any fast runner
        assert taken[3] <= 4, taken  # about 24 * (1/10) / (3 + 1/10) ~ 1, allowing for timing
    finally:
        group.close()


def test_sample_any_needs_a_free_running_group():
    group = RunnerGroup([PacedRunner(0, 0.0)], 2, max_policy_lag=1, poll_s=0.01)
    try:
        group.publish(0)
        with pytest.raises(RuntimeError, match="free-running"):
            group.sample_any(1)
    finally:
        group.close()


def test_runner_group_metrics_over_updates_per_runner_and_lag():
    # Update at version 4 took fragments (slot, version) (0, 4), (0, 3); update at 5 took (1, 2).
    records = [
        SampleRecord([0, 0], [4, 3], [10, 10], [0.5, 0.5], [0.1, 0.3], 4, 0.2),
        SampleRecord([1], [2], [10], [2.0], [0.0], 5, 0.4),
    ]
    m = runner_group_metrics(records, num_runners=3)
    assert m["policy_lag_mean"] == pytest.approx((0 + 1 + 3) / 3)
    assert m["policy_lag_max"] == 3
    assert m["learner_wait_s"] == pytest.approx(0.6)
    assert m["runner_wait_for_learner_s"] == pytest.approx(0.4 / 3)
    r1, r2, r3 = (m["per_runner"][k] for k in ("1", "2", "3"))
    assert (r1["num_fragments"], r1["num_env_steps_sampled"], r1["policy_lag"]) == (2, 20, 0.5)
    assert r1["env_steps_per_s"] == pytest.approx(20.0)
    assert (r2["num_fragments"], r2["policy_lag"], r2["env_steps_per_s"]) == (1, 3.0, 5.0)
    assert r3["num_fragments"] == 0 and np.isnan(r3["policy_lag"])  # gave nothing: no lag


def _counting_thread(max_pending: int, fail_at: int | None = None):
    learned = []

    def sample():
        time.sleep(0.001)
        return len(learned)

    def learn(state, sampled):
        if fail_at is not None and len(learned) == fail_at:
            raise ValueError("the update failed")
        learned.append(sampled)
        return state + 1, {"n": state + 1}

    return LearnerThread(sample, learn, max_pending, poll_s=0.01), learned


def _wait(predicate, what: str) -> None:
    deadline = time.monotonic() + 30
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.002)


def test_learner_thread_hands_over_every_update_and_stops_when_left_alone():
    thread, learned = _counting_thread(max_pending=3)
    try:
        state, records = thread.collect(0)
        assert records and state == len(records) == records[-1]["n"]
        # Left alone, it finishes the 3 updates the queue holds, plus the one it then holds
        # while it waits to hand it over, and goes no further.
        _wait(lambda: len(learned) == state + 4, "the learner did not go on")
        time.sleep(0.1)
        assert len(learned) == state + 4
        state2, records2 = thread.collect(None)
        assert [r["n"] for r in records2][:3] == [state + 1, state + 2, state + 3]
        assert state2 == records2[-1]["n"] >= state + 3
        # A state set from outside (a restore): what was pending is dropped, it goes on from it.
        thread.set_state(100)
        state3, records3 = thread.collect(None)
        assert all(r["n"] > 100 for r in records3) and state3 == records3[-1]["n"]
    finally:
        thread.close()
    assert not thread.running


def test_learner_thread_raises_the_update_error_in_the_driver():
    thread, _ = _counting_thread(max_pending=1, fail_at=2)
    try:
        with pytest.raises(ValueError, match="the update failed"):
            for _ in range(10):
                thread.collect(0)
    finally:
        thread.close()
    assert not thread.running


def test_wait_for_any_counts_only_the_slots_still_taken_from():
    # A fragment left in a dropped slot's queue must not wake the learner: it would spin.
    q = VersionedQueues(2, max_policy_lag=None, poll_s=0.01)
    assert q.put(1, "stale", lambda: True)
    t0 = time.perf_counter()
    assert not q.wait_for_any(0.2, slots=[0])
    assert time.perf_counter() - t0 >= 0.15  # it waited instead of returning at once
    assert q.wait_for_any(0.2)  # all slots: slot 1's fragment counts


def test_a_paused_learner_thread_learns_nothing_until_resumed():
    thread, learned = _counting_thread(max_pending=2)
    try:
        thread.collect(0)
        with thread.paused():
            held = len(learned)
            time.sleep(0.1)
            assert len(learned) == held  # held between updates
            thread.set_state(1000)  # what a restore does meanwhile
        state, records = thread.collect(None)
        assert records and all(r["n"] > 1000 for r in records) and state == records[-1]["n"]
    finally:
        thread.close()
    assert not thread.running
