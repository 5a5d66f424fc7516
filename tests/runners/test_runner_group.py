import time

import gymnasium as gym
import numpy as np
import pytest

import rljax
from rljax.algorithms.ppo import PPOConfig
from rljax.runners.host import EnvRunnerError


class TickEnv(gym.Env):
    """Observation = steps taken in this episode / 10; episodes last 10 steps (truncated).

    ``env_config``: ``delay`` (seconds per step), ``crash_worker`` / ``crash_after`` (raise on that
    runner's sub-env 0 after that many steps), ``slow_vector_indices`` (sub-envs 10x slower).
    """

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config):
        self.delay = float(config.get("delay", 0.0))
        if getattr(config, "vector_index", 0) in config.get("slow_vector_indices", ()):
            self.delay *= 10
        self.crash = (
            getattr(config, "worker_index", 0) == config.get("crash_worker", -1)
            and getattr(config, "vector_index", 0) == 0
        )
        self.crash_after = int(config.get("crash_after", 5))
        self.total = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        if self.delay:
            time.sleep(self.delay)
        self.t += 1
        self.total += 1
        if self.crash and self.total > self.crash_after:
            raise ValueError("TickEnv exploded on purpose")
        return np.array([self.t / 10], np.float32), float(action), False, self.t >= 10, {}


def _config(**runners):
    env_config = runners.pop("env_config", {})
    return (
        PPOConfig()
        .environment(TickEnv, env_config=env_config)
        .env_runners(**runners)
        .training(minibatch_size=8, num_epochs=1, lr=1e-3)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


@pytest.mark.parametrize(
    "mode, batch",
    [("SYNC", None), ("ASYNC", None), ("ASYNC", 2)],
    ids=["sync", "async", "first-ready"],
)
@pytest.mark.slow
def test_n_runners_deliver_exactly_the_configured_batch(mode, batch):
    # Two runners of three sub-envs (ASYNC: six sub-env processes, each a fresh interpreter).
    cfg = _config(
        num_env_runners=2,
        num_envs_per_env_runner=3,
        rollout_fragment_length=10,
        gym_env_vectorize_mode=mode,
        async_batch_size=batch,
    )
    algo = cfg.build_algo()
    try:
        k = 3 if batch is None else batch
        assert algo.batch_size == 10 * k * 2
        group = algo._runners.sample()
        assert group.traj.reward.shape == (10, 2 * k)
        env_ids = np.asarray(group.traj.env_id)
        if batch is None:  # lock-step: every sub-env of every runner exactly once per step
            for row in env_ids:
                assert sorted(row) == list(range(6))
        else:  # first-ready: ids stay inside each runner's own range
            for r in range(2):
                assert set(env_ids[:, r * k : (r + 1) * k].reshape(-1)) <= set(
                    range(3 * r, 3 * r + 3)
                )
        algo._runners.publish(algo._runner_params())
        result = algo.train()
        assert set(result["env_runners"]["per_runner"]) == {"1", "2"}
        assert 0 < result["env_runners"]["num_env_steps_sampled"] <= 10 * k * 2
    finally:
        algo.stop()


@pytest.mark.slow
def test_sync_sampling_is_on_policy_and_async_lag_never_exceeds_one():
    lags = {}
    for sample_async in (False, True):
        cfg = _config(
            num_env_runners=2,
            num_envs_per_env_runner=2,
            rollout_fragment_length=20,
            sample_async=sample_async,
            env_config={"delay": 0.001},
        )
        algo = cfg.build_algo()
        try:
            lags[sample_async] = [algo.train()["env_runners"]["policy_lag_max"] for _ in range(8)]
        finally:
            algo.stop()
    assert lags[False] == [0] * 8
    assert max(lags[True]) == 1  # runners really sampled while the learner updated
    assert min(lags[True]) >= 0


@pytest.mark.slow
def test_a_failing_runner_surfaces_its_id_and_traceback_quickly():
    cfg = _config(
        num_env_runners=2,
        num_envs_per_env_runner=2,
        rollout_fragment_length=20,
        env_config={"crash_worker": 2, "crash_after": 25},
    ).fault_tolerance(restart_failed_env_runners=False)
    algo = cfg.build_algo()
    start = time.perf_counter()
    try:
        with pytest.raises(EnvRunnerError) as info:
            for _ in range(10):
                algo.train()
    finally:
        algo.stop()
    assert time.perf_counter() - start < 30
    message = str(info.value)
    assert "env runner 2" in message and "TickEnv exploded on purpose" in message
    assert "Traceback" in message


@pytest.mark.slow
def test_a_failing_sub_env_process_is_reported():
    rljax.register_env("tick", lambda cfg: TickEnv(cfg))
    cfg = _config(
        num_env_runners=1,
        num_envs_per_env_runner=2,
        rollout_fragment_length=20,
        gym_env_vectorize_mode="ASYNC",
        async_batch_size=1,
        env_config={"crash_worker": 1, "crash_after": 3},
    ).environment("tick", env_config={"crash_worker": 1, "crash_after": 3})
    algo = cfg.fault_tolerance(restart_failed_env_runners=False).build_algo()
    try:
        with pytest.raises(
            EnvRunnerError, match="(?s)env runner 1.*sub-env 0.*exploded on purpose"
        ):
            algo.train()
    finally:
        algo.stop()


@pytest.mark.slow
def test_first_ready_batches_do_not_wait_for_a_slow_sub_env():
    # Sub-env 0 takes 10x longer. Lock-step batches wait for it at every step; first-ready
    # batches of 3 keep the other sub-envs busy, so they run many more steps in the same time.
    counts = {}
    for name, batch in (("lock-step", None), ("first-ready", 3)):
        cfg = _config(
            num_env_runners=1,
            num_envs_per_env_runner=4,
            rollout_fragment_length=15,
            gym_env_vectorize_mode="ASYNC",
            async_batch_size=batch,
            env_config={"delay": 0.004, "slow_vector_indices": [0]},
        )
        algo = cfg.build_algo()
        try:
            # Warm up (sub-env processes started, the rollout compiled) without a learner update.
            algo._runners.sample()
            algo._runners.publish(algo._runner_params())
            start = time.perf_counter()
            group = algo._runners.sample()
            elapsed = time.perf_counter() - start
            counts[name] = group.traj.reward.size / elapsed
        finally:
            algo.stop()
    assert counts["first-ready"] > 1.5 * counts["lock-step"], counts


def test_sampling_twice_without_new_weights_is_refused_at_once():
    algo = _config(num_envs_per_env_runner=2, rollout_fragment_length=10).build_algo()
    try:
        algo._runners.sample()
        start = time.perf_counter()
        with pytest.raises(RuntimeError, match="publish.. new weights before the next sample"):
            algo._runners.sample()  # it would wait for weights that never come
        assert time.perf_counter() - start < 1
        algo._runners.publish(algo._runner_params())
        assert algo._runners.sample().traj.reward.shape == (10, 2)
    finally:
        algo.stop()
