"""User callbacks: RLlib's hooks in RLlib's order, episode data replayed exactly, custom metrics
in the result, errors naming the hook and class, and callbacks through configs and checkpoints."""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np
import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.callbacks.callbacks import DefaultCallbacks, RLlibCallback
from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole
from rljax.utils.errors import CallbackError, ConfigError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class CountEnv(gym.Env):
    """Observations count the steps (t / 10), reward = the action, episodes of 5 steps; infos
    say the step and the action, so every field of a replayed episode can be checked."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {"reset": 1}

    def step(self, action):
        self.t += 1
        obs = np.full(2, self.t / 10, np.float32)
        return obs, float(action), self.t >= 5, False, {"t": self.t, "a": int(action)}


class Recorder(RLlibCallback):
    """Records every hook call; logs episode metrics."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.ended: list = []

    def on_algorithm_init(self, *, algorithm, metrics_logger=None, **kwargs):
        self.calls.append(("on_algorithm_init",))
        metrics_logger.log_value("inits", 1, reduce="sum")

    def on_environment_created(self, *, env_runner, env, env_context, **kwargs):
        self.calls.append(("on_environment_created", env_context.worker_index))

    def on_episode_created(self, *, episode, env_index, **kwargs):
        assert not episode.is_reset  # before the reset's observation, as in RLlib
        self.calls.append(("on_episode_created", episode.id_))

    def on_episode_start(self, *, episode, env_runner, metrics_logger, env, env_index, **kwargs):
        assert len(episode) == 0 and len(episode.get_observations()) == 1
        episode.custom_data["steps_seen"] = 0
        self.calls.append(("on_episode_start", episode.id_))

    def on_episode_step(self, *, episode, **kwargs):
        episode.custom_data["steps_seen"] += 1
        self.calls.append(("on_episode_step", episode.id_, len(episode)))

    def on_episode_end(self, *, episode, metrics_logger, rl_module, **kwargs):
        assert episode.is_done and rl_module is not None
        # As RLlib's hooks: lists before to_numpy(), and the env's spaces (one-hot actions).
        assert not episode.is_numpy and isinstance(episode.get_rewards(), list)
        assert episode.get_actions(-1, one_hot_discrete=True).sum() == 1.0
        self.calls.append(("on_episode_end", episode.id_))
        self.ended.append(episode)
        metrics_logger.log_value("len_mean", len(episode), window=10_000)
        metrics_logger.log_value("episodes", 1, reduce="sum")  # this iteration's
        metrics_logger.log_value("episodes_lifetime", 1, reduce="lifetime_sum")
        metrics_logger.log_value("shortest", len(episode), reduce="min")

    def on_sample_end(self, *, samples, **kwargs):
        assert all(episode.is_numpy for episode in samples)  # RLlib's episodes_to_numpy
        self.calls.append(("on_sample_end", len(samples)))

    def on_train_result(self, *, algorithm, metrics_logger, result, **kwargs):
        self.calls.append(("on_train_result", result["training_iteration"]))
        result["callback_saw"] = result["training_iteration"]

    def on_evaluate_start(self, *, algorithm, metrics_logger, **kwargs):
        self.calls.append(("on_evaluate_start",))

    def on_evaluate_end(self, *, algorithm, evaluation_metrics, **kwargs):
        self.calls.append(("on_evaluate_end",))
        evaluation_metrics["changed"] = True

    def on_checkpoint_loaded(self, *, algorithm, **kwargs):
        self.calls.append(("on_checkpoint_loaded",))


def _recorder(algo: Algorithm) -> Recorder:
    (_, callback), *_ = algo.callbacks.entries
    return callback


def _check_episode_order(calls: list[tuple]) -> None:
    """Per episode: created, start, its steps 1..n in order, end after its last step (RLlib
    2.60 calls the step hook on the last step too); nothing after its end."""
    state: dict[str, int] = {}
    for call in calls:
        hook, ep = call[0], call[1] if len(call) > 1 else None
        if hook == "on_episode_created":
            assert ep not in state
            state[ep] = -1
        elif hook == "on_episode_start":
            assert state[ep] == -1
            state[ep] = 0
        elif hook == "on_episode_step":
            assert call[2] == state[ep] + 1
            state[ep] = call[2]
        elif hook == "on_episode_end":
            assert state[ep] >= 1
            state[ep] = -99


def test_hooks_in_rllibs_order_with_metrics_on_the_fused_path(tmp_path):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .evaluation(evaluation_duration=2)
        .callbacks(Recorder)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    rec = _recorder(algo)
    assert rec.calls == [("on_environment_created", 0), ("on_algorithm_init",)]
    results = [algo.train() for _ in range(2)]
    calls = rec.calls[2:]
    _check_episode_order(calls)
    ends = [i for i, c in enumerate(calls) if c[0] == "on_train_result"]
    assert [calls[i] for i in ends] == [("on_train_result", 1), ("on_train_result", 2)]
    assert calls[ends[0] - 1] == ("on_sample_end", results[0]["env_runners"]["num_episodes"])
    for r in results:
        er = r["env_runners"]
        assert er["len_mean"] == pytest.approx(er["episode_len_mean"])
        assert er["shortest"] == er["episode_len_min"]
        assert r["callback_saw"] == r["training_iteration"]
    second = results[1]["env_runners"]
    assert second["episodes"] == second["num_episodes"]  # a sum starts afresh (RLlib 2.60)
    assert second["episodes_lifetime"] == second["num_episodes_lifetime"]
    assert results[0]["inits"] == 1.0  # on_algorithm_init's algo.metrics: the next result
    # The replayed episodes are CartPole's: rewards of 1, EnvPool's infos count the steps, and
    # each step's observation follows from the one before (the pole's angle integrates its
    # angular velocity: x' = x + 0.02 * v, CartPole's tau).
    ep = rec.ended[-1]
    assert ep.is_numpy  # after on_sample_end (lists in the episode hooks, as RLlib's)
    obs = np.stack(ep.get_observations())
    assert obs.shape == (len(ep) + 1, 4)
    np.testing.assert_allclose(obs[1:, 2], obs[:-1, 2] + 0.02 * obs[:-1, 3], atol=1e-5)
    assert ep.get_return() == len(ep) == sum(ep.get_rewards())
    assert [i["elapsed_step"] for i in ep.get_infos()[1:]] == list(range(1, len(ep) + 1))
    assert ep.custom_data["steps_seen"] == len(ep)  # the last step's hook too
    assert len(ep.get_actions()) == len(ep) and set(ep.get_actions()) <= {0, 1}

    rec.calls.clear()
    evaluation = algo.evaluate()
    assert evaluation["changed"] is True
    # The evaluation episodes run the episode hooks, in RLlib's order, between the two.
    assert rec.calls[0] == ("on_evaluate_start",) and rec.calls[-1] == ("on_evaluate_end",)
    hooks = [c[0] for c in rec.calls[1:-1]]
    assert hooks.count("on_episode_created") == hooks.count("on_episode_end") == 2
    assert hooks[:2] == ["on_episode_created", "on_episode_start"]
    assert hooks[-1] == "on_episode_end"
    path = algo.save_to_path(tmp_path / "ckpt")
    algo.restore_from_path(path)
    assert rec.calls[-1] == ("on_checkpoint_loaded",)
    algo.stop()


@pytest.mark.parametrize(
    "runners, mode",
    [(0, "SYNC"), (1, "SYNC"), pytest.param(0, "ASYNC", marks=pytest.mark.slow)],
    ids=["driver", "thread", "async"],
)
def test_episodes_replay_exactly_on_gymnasium_envs(runners, mode):
    ended = []

    def on_episode_end(*, episode, env_index, metrics_logger, **kwargs):
        ended.append((env_index, episode))
        metrics_logger.log_value("ret", episode.get_return(), reduce="max")

    config = (
        PPOConfig()
        .environment(CountEnv)
        .env_runners(
            num_env_runners=runners,
            num_envs_per_env_runner=2,
            rollout_fragment_length=12,
            gym_env_vectorize_mode=mode,
        )
        .training(train_batch_size_per_learner=24, minibatch_size=12, num_epochs=1)
        .callbacks(on_episode_end=on_episode_end)
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        result = algo.train()
    # 12 vector steps of 2 sub-envs: 2 episodes of 5 steps each (the sixth step resets).
    assert result["env_runners"]["num_episodes"] == len(ended) == 4
    assert sorted(i for i, _ in ended) == [0, 0, 1, 1]
    for _, ep in ended:
        assert len(ep) == 5 and ep.is_terminated and not ep.is_truncated
        obs = np.stack(ep.get_observations())
        np.testing.assert_allclose(obs[:, 0], np.arange(6) / 10, atol=1e-6)
        infos = ep.get_infos()
        assert infos[0] == {"reset": 1}
        assert [i["t"] for i in infos[1:]] == [1, 2, 3, 4, 5]
        assert [i["a"] for i in infos[1:]] == ep.get_actions()
        assert ep.get_rewards() == ep.get_actions()
    assert result["env_runners"]["ret"] == max(ep.get_return() for _, ep in ended)


@pytest.mark.parametrize("runners", [0, 2], ids=["driver", "threads"])
def test_per_step_hooks_run_live_with_the_env_at_that_step(runners):
    """With on_episode_step defined, host runners call the hooks as they step: the sub-env the
    hook reads is at the step the episode has reached (a replay after sampling would find it
    fragments later), RLlib's ``env.unwrapped.envs[i]`` reaches it, and the episodes are the
    replay's (same lengths, observations and infos)."""
    seen, ended = [], []

    def on_episode_step(*, episode, env, env_index, **kwargs):
        sub_env = env.unwrapped.envs[env_index].unwrapped
        seen.append((sub_env.t, len(episode), float(episode.get_observations(-1)[0])))

    def on_episode_end(*, episode, **kwargs):
        ended.append(episode)

    config = (
        PPOConfig()
        .environment(CountEnv)
        .env_runners(num_env_runners=runners, num_envs_per_env_runner=2, rollout_fragment_length=12)
        .training(
            train_batch_size_per_learner=24 * max(runners, 1), minibatch_size=12, num_epochs=1
        )
        .callbacks(on_episode_step=on_episode_step, on_episode_end=on_episode_end)
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        assert algo._live_episodes()
        result = algo.train()
    assert result["env_runners"]["num_episodes"] == len(ended) == 4 * max(runners, 1)
    # Every step hook of an episode's steps, its last too (then the end hook, as RLlib's).
    assert len(seen) >= 5 * len(ended)
    for env_t, length, obs in seen:
        # The last step's hook finds the sub-env reset already (a same-step reset).
        assert env_t == (0 if length == 5 else length) and obs == pytest.approx(length / 10)
    for ep in ended:
        assert len(ep) == 5 and [i["t"] for i in ep.get_infos()[1:]] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("runners", [0, 2], ids=["driver", "threads"])
def test_a_live_hook_that_raises_stops_train_at_once_without_restarts(runners, caplog):
    def on_episode_step(*, episode, **kwargs):
        raise ValueError("boom")

    config = (
        PPOConfig()
        .environment(CountEnv)
        .env_runners(num_env_runners=runners, num_envs_per_env_runner=2, rollout_fragment_length=12)
        .training(train_batch_size_per_learner=24, minibatch_size=12, num_epochs=1)
        .callbacks(on_episode_step=on_episode_step)
    )
    with config.build_algo() as algo:
        with pytest.raises(CallbackError, match="on_episode_step raised ValueError: boom"):
            algo.train()
        assert not algo._runners.replaced  # the env was not blamed
    assert "restarting" not in caplog.text


@pytest.mark.parametrize("live", [False, True], ids=["replayed", "live"])
def test_hooks_see_the_envs_rewards_when_training_clips_them(live):
    """clip_rewards=0.5 clips what training reads; episodes in hooks keep the env's rewards
    (CountEnv pays the action, 0 or 1) and the reported returns are the env's too."""
    ended = []
    hooks = {"on_episode_end": lambda *, episode, **kw: ended.append(episode)}
    if live:
        hooks["on_episode_step"] = lambda **kw: None
    config = (
        PPOConfig()
        .environment(CountEnv, clip_rewards=0.5)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=12)
        .training(train_batch_size_per_learner=24, minibatch_size=12, num_epochs=1)
        .callbacks(**hooks)
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        assert algo._live_episodes() is live
        result = algo.train()
    assert ended
    for ep in ended:
        assert ep.get_rewards() == ep.get_actions()
    assert result["env_runners"]["episode_return_mean"] == pytest.approx(
        np.mean([ep.get_return() for ep in ended])
    )


def test_fused_path_replays_and_says_so_when_a_hook_reads_the_env():
    def on_episode_step(*, env, **kwargs):
        env.render()

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=16)
        .training(train_batch_size_per_learner=32, minibatch_size=16, num_epochs=1)
        .callbacks(on_episode_step=on_episode_step)
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        assert not algo._live_episodes()
        with pytest.raises(CallbackError, match="replayed after sampling"):
            algo.train()


@pytest.mark.slow
def test_episode_steps_on_the_fused_replay_loop():
    lengths = []
    steps = []
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2)
        .training(num_steps_sampled_before_learning_starts=64)
        .callbacks(
            on_episode_step=lambda *, episode, **kw: steps.append(len(episode)),
            on_episode_end=lambda *, episode, **kw: lengths.append(len(episode)),
        )
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        result = algo.train()
    assert len(lengths) == result["env_runners"]["num_episodes"] > 0
    assert np.mean(lengths) == pytest.approx(result["env_runners"]["episode_len_mean"])
    assert len(steps) >= sum(lengths)  # plus the open episodes' steps so far


class Broken(DefaultCallbacks):
    def on_episode_end(self, *, episode, **kwargs):
        raise KeyError("missing")


def test_a_raising_callback_names_the_hook_and_class():
    config = (
        PPOConfig()
        .environment(CountEnv)
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=12)
        .training(train_batch_size_per_learner=24, minibatch_size=12, num_epochs=1)
        .callbacks(Broken)
    )
    with (
        config.build_algo() as algo,
        pytest.raises(CallbackError, match=r"Broken\.on_episode_end raised KeyError") as e,
    ):
        algo.train()
    assert isinstance(e.value.__cause__, KeyError)


def test_callback_settings_are_checked_and_loaded_only_when_trusted(caplog):
    with pytest.raises(ConfigError, match="did you mean 'on_episode_end'"):
        PPOConfig().callbacks(on_episode_ended=print)
    with pytest.raises(ConfigError, match="expected a callback class"):
        PPOConfig().environment("CartPole-v1").callbacks(Recorder()).validate()
    with pytest.raises(ConfigError, match="expected a function"):
        PPOConfig().environment("CartPole-v1").callbacks(on_train_result=3).validate()
    config = PPOConfig().environment("CartPole-v1").callbacks([Recorder, Broken])
    d = config.to_dict()
    assert d["callbacks_class"] == [
        {"import": f"{__name__}:Recorder"},
        {"import": f"{__name__}:Broken"},
    ]
    with caplog.at_level(logging.WARNING, logger="rljax"):
        loaded = PPOConfig.from_dict(d)
    assert loaded.callbacks_class is None
    assert "callbacks_class is not loaded" in caplog.text and "allow_imports" in caplog.text
    module = __name__.rpartition(".")[0] or __name__
    trusted = PPOConfig.from_dict(d, allow_imports=[module])
    assert trusted.callbacks_class == [Recorder, Broken]
    assert PPOConfig.from_dict(d, callbacks=Recorder).callbacks_class is Recorder


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (9 s alone)
def test_multi_agent_episodes_replay_each_agents_steps():
    calls = []

    class MultiRecorder(RLlibCallback):
        def on_episode_start(self, *, episode, env_index, **kwargs):
            calls.append(("start", episode.id_, len(episode)))

        def on_episode_step(self, *, episode, **kwargs):
            calls.append(("step", episode.id_, len(episode)))

        def on_episode_end(self, *, episode, metrics_logger, rl_module, **kwargs):
            calls.append(("end", episode.id_, len(episode)))
            assert set(rl_module) == {"p0", "p1"}
            returns = episode.get_agent_returns()
            assert episode.get_return() == pytest.approx(sum(returns.values()))
            for agent, agent_episode in episode.agent_episodes.items():
                # CartPole pays 1 per step: each agent's return is its episode's length.
                assert agent_episode.get_return() == len(agent_episode) == returns[agent]
                assert agent_episode.module_id == episode.module_for(agent) == f"p{agent}"
                assert agent_episode.observation_space.shape == (4,)  # its policy's spaces
                assert len(agent_episode.get_observations()) == len(agent_episode) + 1
                # RLlib's getters: by agent, here every agent acting in every env step.
                assert episode.get_rewards()[agent] == agent_episode.get_rewards()
            assert len(episode) == max(len(e) for e in episode.agent_episodes.values())
            metrics_logger.log_value("ma_return", episode.get_return(), window=1000)
            metrics_logger.log_value("ma_episodes", 1, reduce="sum")

    config = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, *a, **k: f"p{agent_id}"
        )
        .callbacks(MultiRecorder)
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        result = algo.train()
    runners = result["env_runners"]
    assert runners["ma_episodes"] == runners["num_episodes"] > 0
    assert runners["ma_return"] == pytest.approx(runners["episode_return_mean"])
    by_episode: dict[str, list] = {}
    for hook, ep, n in calls:
        by_episode.setdefault(ep, []).append((hook, n))
    for events in by_episode.values():
        n = events[-1][1]
        assert events == [("start", 0), *[("step", t) for t in range(1, n + 1)], ("end", n)]


def test_a_hook_takes_a_list_of_functions_called_in_order():
    from rljax.callbacks.dispatch import Callbacks

    calls = []
    first = lambda **kw: calls.append(("first", kw["result"]))  # noqa: E731
    second = lambda **kw: calls.append(("second", kw["result"]))  # noqa: E731
    config = PPOConfig().environment("CartPole-v1").callbacks(on_train_result=[first, second])
    config.validate()
    assert config.callbacks_on_train_result == [first, second]
    callbacks = Callbacks(None, {"on_train_result": config.callbacks_on_train_result})
    assert callbacks.defines("on_train_result") and not callbacks.defines("on_episode_end")
    callbacks("on_train_result", result=7)
    assert calls == [("first", 7), ("second", 7)]
    for bad in ([], [first, 3]):
        with pytest.raises(ConfigError, match="a non-empty list of functions"):
            PPOConfig().callbacks(on_train_result=bad).validate()


@pytest.mark.slow  # a crash's test (5 s): replayed episodes of a Dict observation space
def test_episode_hooks_replay_dict_observations():
    from rljax.examples.envs.classes.cartpole_with_dict_observation_space import (
        CartPoleWithDictObservationSpace,
    )

    ended = []
    config = (
        PPOConfig()
        .environment(CartPoleWithDictObservationSpace)
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .callbacks(on_episode_end=lambda *, episode, **kw: ended.append(episode))
    )
    with config.build_algo() as algo:
        algo.train()
    assert ended
    first = ended[0].get_observations(0)
    space = CartPoleWithDictObservationSpace().observation_space
    assert isinstance(first, dict) and space.contains(first)
