"""RLlib's evaluation options: custom evaluation functions on evaluation runners, the
runners' metrics merged as RLlib merges them, "auto" durations, time limits and smoothing."""

from __future__ import annotations

import logging
import math
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

from rljax.algorithms.algorithm_config import AlgorithmConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.env.multi_agent_vector import FinishedEpisode
from rljax.examples.envs.classes.simple_corridor import SimpleCorridor
from rljax.execution.evaluation import auto_min_steps, evaluate_policy
from rljax.utils.errors import ConfigError
from rljax.utils.metrics import ENV_RUNNER_RESULTS, EVALUATION_RESULTS
from rljax.utils.metrics.metrics_logger import MetricsLogger


def test_aggregate_merges_runner_metrics_by_hand():
    logger = MetricsLogger()
    runner_1 = {
        "episode_return_mean": 1.0,
        "episode_return_max": 1.0,
        "episode_len_mean": 10.0,
        "num_episodes": 1,
        "num_env_steps_sampled": 10,
    }
    runner_2 = {
        "episode_return_mean": 4.0,
        "episode_return_max": 6.0,
        "episode_len_mean": 20.0,
        "num_episodes": 3,
        "num_env_steps_sampled": 60,
    }
    idle = {
        "episode_return_mean": math.nan,
        "episode_return_max": math.nan,
        "episode_len_mean": math.nan,
        "num_episodes": 0,
        "num_env_steps_sampled": 7,
    }
    logger.aggregate([runner_1, runner_2, idle], key=("evaluation", "env_runners"))
    merged = logger.peek(("evaluation", "env_runners"))
    # Means weighted by each runner's episodes: (1*1 + 4*3) / 4 and (10*1 + 20*3) / 4.
    assert merged == {
        "episode_return_mean": 3.25,
        "episode_return_max": 6.0,
        "episode_len_mean": 17.5,
        "num_episodes": 4.0,
        "num_env_steps_sampled": 77.0,
    }
    assert logger.pop_reduced("evaluation") == {"env_runners": merged}
    assert len(logger) == 0


def test_aggregate_merges_other_loggers_by_each_keys_reduction():
    """RLlib's docs merge parallel loggers' ``reduce()`` dicts so. Was: by name only, so a
    "sum" of 1 and 2 averaged to 1.5 and a "max" of 1 and 5 to 3."""
    root, a, b = MetricsLogger(), MetricsLogger(), MetricsLogger()
    a.log_value("n", 1, reduce="sum")
    b.log_value("n", 2, reduce="sum")
    a.log_value("m", 1.0, reduce="max")
    b.log_value("m", 5.0, reduce="max")
    a.log_value(("x", "low"), 4.0, reduce="min")
    b.log_value(("x", "low"), -2.0, reduce="min")
    a.log_value("loss", 1.0, reduce="mean")
    b.log_value("loss", 2.0, reduce="mean")
    root.aggregate([a.reduce(), b.reduce()])
    assert root.peek("n") == 3.0 and root.peek("m") == 5.0 and root.peek(("x", "low")) == -2.0
    assert root.peek("loss") == 1.5
    # Merged loggers merge again by the same reductions (review finding: a merged sum became
    # a mean, so 1 + 2 and 3 + 4 gave 5, not 10).
    other = MetricsLogger()
    c, d = MetricsLogger(), MetricsLogger()
    c.log_value("n", 3, reduce="sum")
    d.log_value("n", 4, reduce="sum")
    other.aggregate([c.reduce(), d.reduce()])
    top = MetricsLogger()
    top.aggregate([root.reduce(), other.reduce()])
    assert top.peek("n") == 10.0 and top.peek("m") == 5.0


class _ScriptedEpisodes:
    """An EvaluationEnv whose k-th step finishes one episode of return k and length k."""

    def __init__(self):
        self.k = 0

    def reset(self):
        return SimpleNamespace(obs=np.zeros((1, 1)))

    def step(self, actions):
        self.k += 1
        return SimpleNamespace(obs=np.zeros((1, 1)))

    def drain_stats(self):
        return [FinishedEpisode(0, self.k, float(self.k), {}, {})], self.k

    def close(self):
        pass


def test_evaluation_smoothing_window_and_auto_duration():
    act = lambda obs: np.zeros(1, np.int64)  # noqa: E731
    out = evaluate_policy(_ScriptedEpisodes(), act, 4, True, window=2)["env_runners"]
    # Returns 1, 2, 3, 4: the figures are those of the last two, the count is all four.
    assert out["episode_return_mean"] == 3.5 and out["episode_return_min"] == 3.0
    assert out["num_episodes"] == 4 and out["num_env_steps_sampled"] == 1 + 2 + 3 + 4
    # "auto": until the training step ends (here at the third check): two steps were taken.
    calls = iter([False, False, True])
    out = evaluate_policy(_ScriptedEpisodes(), act, None, True, until=lambda: next(calls))
    assert out["env_runners"]["num_episodes"] == 2
    # At least 6 env steps (steps 1 + 2 + 3) though the training step ended at once (was: 1
    # step, where RLlib samples at least 100 per evaluation runner).
    out = evaluate_policy(
        _ScriptedEpisodes(), act, None, True, until=lambda: True, auto_min_steps=5
    )
    assert out["env_runners"]["num_env_steps_sampled"] == 6


def test_auto_duration_takes_rllibs_least_steps_per_evaluation_runner():
    config = PPOConfig().evaluation(
        evaluation_auto_duration_min_env_steps_per_sample=50, evaluation_num_env_runners=2
    )
    assert auto_min_steps(config) == 100
    assert auto_min_steps(PPOConfig()) == 100  # RLlib's default, one runner


def test_auto_duration_needs_parallel_evaluation():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .evaluation(evaluation_interval=1, evaluation_duration="auto")
    )
    with pytest.raises(ConfigError, match="needs evaluation_parallel_to_training=True"):
        config.validate()
    config.evaluation(evaluation_parallel_to_training=True).validate()


class _Endless(gym.Env):
    """An env whose episodes never end."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        super().__init__()

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


@pytest.mark.slow
def test_evaluation_stops_when_no_episode_ends_within_its_sample_timeout(caplog):
    algo = (
        PPOConfig()
        .environment(_Endless)
        .training(train_batch_size_per_learner=64, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .evaluation(evaluation_duration=3, evaluation_sample_timeout_s=0.3)
        .build_algo()
    )
    try:
        with caplog.at_level(logging.WARNING, logger="rljax"):
            out = algo.evaluate()["env_runners"]
    finally:
        algo.stop()
    assert out["num_episodes"] == 0 and out["num_env_steps_sampled"] > 0
    assert any(
        "no episode finished within evaluation_sample_timeout_s=0.3" in r.getMessage()
        for r in caplog.records
    )


@pytest.mark.slow
def test_custom_evaluation_function_on_evaluation_runners():
    seen = {}

    def custom(algorithm, eval_workers):
        # RLlib's custom evaluation functions start by syncing: the runners already act with
        # the learner's weights of this evaluation, so nothing changes.
        eval_workers.sync_weights(from_worker_or_learner_group=algorithm.learner_group)

        def lengths(runner):
            for env in runner.env.unwrapped.envs:
                env.unwrapped.set_corridor_length(2 + runner.worker_index)

        eval_workers.foreach_env_runner(lengths)
        # One vector step (2 env steps) per call: unfinished chunks, continued by cut().
        seen["chunks"] = [
            eval_workers.foreach_env_runner(
                lambda r: r.sample(num_timesteps=2), local_env_runner=False
            )
            for _ in range(2)
        ]
        out = eval_workers.foreach_env_runner(
            lambda r: (r.sample(num_episodes=3), r.get_metrics()), local_env_runner=False
        )
        seen["steps"] = [m["num_env_steps_sampled"] for _, m in out]
        seen["episodes"] = [
            (r.worker_index, eps) for r, (eps, _) in zip(eval_workers._runners(), out, strict=True)
        ]
        algorithm.metrics.aggregate(
            [m for _, m in out], key=(EVALUATION_RESULTS, ENV_RUNNER_RESULTS)
        )
        results = algorithm.metrics.peek((EVALUATION_RESULTS, ENV_RUNNER_RESULTS))
        episodes = [e for _, eps in seen["episodes"] for e in eps]
        return results, sum(e.env_steps() for e in episodes), sum(e.agent_steps() for e in episodes)

    algo = (
        PPOConfig()
        .environment(SimpleCorridor, env_config={"corridor_length": 2})
        .env_runners(num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=64, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .evaluation(
            evaluation_interval=1,
            evaluation_num_env_runners=2,
            custom_evaluation_function=custom,
            evaluation_config=AlgorithmConfig.overrides(explore=True),  # a random walk ends
        )
        .debugging(seed=3)
        .build_algo()
    )
    try:
        result = algo.train()
    finally:
        algo.stop()
    first, second = seen["chunks"]
    for before, after in zip(first, second, strict=True):  # per runner: its 2 sub-envs
        assert [c.id_ for c in after] == [c.id_ for c in before] and len(after) == 2
        for a, b in zip(before, after, strict=True):
            assert (len(a), a.t_started, len(b), b.t_started) == (1, 0, 1, 1)
            assert not b.is_done and b.is_numpy
            np.testing.assert_array_equal(b.get_observations(0), a.get_observations(-1))
    episodes = [(w, e) for w, eps in seen["episodes"] for e in eps]
    assert [w for w, _ in episodes].count(1) >= 3 and [w for w, _ in episodes].count(2) >= 3
    for worker, episode in episodes:  # runner 1 walks 3 cells, runner 2 four
        assert episode.is_terminated and episode.get_observations(-1)[0] == 2 + worker
        assert episode.is_numpy and episode.get_rewards().shape == (len(episode),)
        assert len(episode) >= 2 + worker
        assert math.isclose(episode.get_return(), 1.0 - 0.01 * (len(episode) - 1), rel_tol=1e-6)
    out = result["evaluation"]["env_runners"]
    returns = [e.get_return() for _, e in episodes]
    assert out["num_episodes"] == len(episodes)
    assert math.isclose(out["episode_return_mean"], float(np.mean(returns)), rel_tol=1e-6)
    # Steps sampled: each runner's (the finished episodes' and those still running), added up.
    assert out["num_env_steps_sampled"] == sum(seen["steps"])
    assert all(n >= 3 * 3 for n in seen["steps"])  # three episodes of at least 3 and 4 steps
    assert "evaluation" not in algo.metrics.reduce()  # reported once, in this result
