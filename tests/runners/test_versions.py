import time

import jax.numpy as jnp
import pytest

from rljax.runners.acting import Transition
from rljax.runners.group import RunnerGroup
from rljax.runners.versions import VersionedQueues


class CountingRunner:
    """A runner without env: each fragment records the weights (the version number) it got."""

    def __init__(self):
        self.versions: list[int] = []  # fragment k was sampled with weights of versions[k]
        self.busy = False
        self.error = None
        self.last_stats = None
        self.last_num_steps = 1
        self.last_num_rows = 1
        self.num_sub_env_restarts = 0

    def sample(self, params, length):
        self.versions.append(params)
        z = jnp.zeros((length, 1))
        return Transition(z, z, z, z, z, z, z, {}, {}, z, z, z)

    def close(self, force=False):
        pass


def _until_stalled(group: RunnerGroup) -> None:
    # Waits for a state, not for a time: the runner has run as far ahead as the bounds allow.
    deadline = time.monotonic() + 60
    while not group.stalled(0):
        assert time.monotonic() < deadline, "the runner never stalled"
        time.sleep(0.001)


@pytest.mark.parametrize(
    "lag, queued, reach",
    [(0, None, 0), (1, None, 1), (2, None, 2), (3, None, 3), (3, 1, 2)],
    ids=["sync", "lag1", "lag2", "lag3", "lag3-queue1"],
)
def test_runners_run_exactly_as_far_ahead_as_the_lag_bound_allows(lag, queued, reach):
    # The learner publishes version u after update u and waits, before each step, until the
    # runner can go no further: the runner is always as far ahead as allowed, and every version
    # below is then fixed, whatever the threads' timing. ``reach``: the lag the bounds allow
    # (the queue of finished fragments caps it at max_queued_fragments + 1).
    runner = CountingRunner()
    group = RunnerGroup([runner], 2, max_policy_lag=lag, max_queued_fragments=queued, poll_s=0.01)
    try:
        group.publish(0)
        lags = []
        for update in range(8):
            if update or lag:  # with lag 0 the runner starts at the first sample()
                _until_stalled(group)
            sample = group.sample()
            lags.append(group.version - sample.versions[0])
            _until_stalled(group)
            group.publish(update + 1)
        # Each update's fragment is as old as the bound allows, once the runner got ahead.
        assert lags == [min(u, reach) for u in range(8)]
        # Fragment k started with weights of version >= k - lag, and the runner used all of it.
        ahead = [k - v for k, v in enumerate(runner.versions)]
        assert max(ahead) == reach <= lag
    finally:
        group.close()


def test_sync_sampling_waits_for_new_weights_and_refuses_a_second_take():
    exchange: VersionedQueues[int] = VersionedQueues(1, max_policy_lag=0)
    assert exchange.publish("w0") == 0 and exchange.version == -1  # delivered at the take
    exchange.deliver()
    assert exchange.wait_for_weights(0, 0, lambda: True) == ("w0", 0)
    exchange.taken()
    with pytest.raises(RuntimeError, match="publish.. new weights"):
        exchange.check_can_take()
    # advance=False swaps weights without a new version; the next advancing publish counts one.
    assert exchange.publish("w0b", advance=False) == 0
    assert exchange.publish("w1") == 1 and exchange.params == "w1"
    exchange.deliver()
    exchange.check_can_take()
    assert exchange.wait_for_weights(0, 1, lambda: True) == ("w1", 1)


def test_queue_bounds():
    assert VersionedQueues(1, 0).max_queued_fragments == 1
    assert VersionedQueues(1, 1).max_queued_fragments == 1
    assert VersionedQueues(1, 4).max_queued_fragments == 3
    with pytest.raises(ValueError, match="max_policy_lag"):
        VersionedQueues(1, -1)
    with pytest.raises(ValueError, match="max_queued_fragments"):
        VersionedQueues(1, 2, max_queued_fragments=0)
