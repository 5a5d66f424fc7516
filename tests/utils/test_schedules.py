"""RLlib's piecewise-linear schedules: hand values, checks, and PPO following one in its update
(one compiled program; RLlib's result keys)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.utils.checks import Number
from rljax.utils.errors import ConfigError
from rljax.utils.schedules import NumberOrSchedule, schedule_start, schedule_value

CHECK = NumberOrSchedule(Number(0, low_open=True))


def test_values_by_hand_jitted_and_not():
    schedule = CHECK("lr", [[0, 1e-3], [1000, 5e-4], [3000, 1e-4]])
    assert schedule == ((0, 1e-3), (1000, 5e-4), (3000, 1e-4))
    assert schedule_start(schedule) == 1e-3 and schedule_start(0.5) == 0.5
    expected = {0: 1e-3, 500: 7.5e-4, 1000: 5e-4, 2000: 3e-4, 3000: 1e-4, 10**6: 1e-4}
    jitted = jax.jit(lambda t: schedule_value(schedule, t))
    for t, value in expected.items():
        assert float(schedule_value(schedule, t)) == pytest.approx(value, rel=1e-6)
        assert float(jitted(t)) == pytest.approx(value, rel=1e-6)
    assert float(schedule_value(0.25, 123)) == 0.25
    assert CHECK("lr", 3e-4) == 3e-4


@pytest.mark.parametrize(
    "value, message",
    [
        ([[10, 1e-3]], "starts at env step 10; it must start at 0"),
        ([[0, 1e-3], [100, 1e-4], [50, 1e-5]], "env steps 100 then 50"),
        ([[0, 1e-3], [0, 1e-4]], "env steps 0 then 0"),
        ([[0, 1e-3, 5]], "point 0 is"),
        ([[0.5, 1e-3]], "not a whole number"),
        ([[0, -1.0]], r"lr\[0\]\[1\]=-1.0"),
        ([], "at least one"),
        ("fast", "or a schedule"),
    ],
)
def test_bad_schedules_are_refused_naming_the_problem(value, message):
    with pytest.raises(ConfigError, match=message):
        CHECK("lr", value)


def test_a_learning_rate_may_anneal_to_zero_and_start_there():
    # RLlib's schedules take a rate of 0 anywhere (linear annealing to 0, as PureJaxRL's PPO
    # does), and RLlib takes a constant rate of 0 (was: refused); a negative rate is not.
    assert PPOConfig().training(lr=[[0, 2.5e-4], [500_000, 0.0]]).lr == (
        (0, 2.5e-4),
        (500_000, 0.0),
    )
    assert PPOConfig().training(lr=[[0, 0.0], [1000, 1e-4]]).lr == ((0, 0.0), (1000, 1e-4))
    assert PPOConfig().training(lr=0.0).lr == 0.0
    with pytest.raises(ConfigError, match=r"lr\[1\]\[1\]=-1e-05"):
        PPOConfig().training(lr=[[0, 1e-3], [1000, -1e-5]])


def test_ppo_follows_its_schedules_in_one_program():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=64)
        .training(
            train_batch_size_per_learner=256,
            minibatch_size=128,
            num_epochs=1,
            lr=[[0, 1e-3], [1000, 1e-4]],
            entropy_coeff=[[0, 0.01], [500, 0.0]],
        )
        .debugging(seed=0)
    )
    assert config.lr == ((0, 1e-3), (1000, 1e-4))  # checked and stored as set
    trained_on = 0
    with config.build_algo() as algo:
        for _ in range(6):
            result = algo.train()
            learner = result["learners"]["default_policy"]
            # The value at the env steps trained on before this update (RLlib's keys).
            lr = np.interp(trained_on, [0, 1000], [1e-3, 1e-4])
            entropy = np.interp(trained_on, [0, 500], [0.01, 0.0])
            assert learner["default_optimizer_learning_rate"] == pytest.approx(lr, rel=1e-5)
            assert learner["curr_entropy_coeff"] == pytest.approx(entropy, rel=1e-5, abs=1e-8)
            trained_on = result["num_env_steps_sampled_lifetime"]
        assert trained_on > 1000  # the last update started past the last point: its value holds
        assert learner["default_optimizer_learning_rate"] == pytest.approx(1e-4, rel=1e-5)
        assert algo._train_step._cache_size() == 1  # the changing value recompiles nothing


@pytest.mark.parametrize("algo", ["IMPALA", "APPO"])
def test_impala_and_appo_follow_their_schedules(algo):
    """Counted once per train batch, also with APPO's circular buffer (two updates each)."""
    from rljax.algorithms.appo import APPOConfig
    from rljax.algorithms.impala import IMPALAConfig

    config = (
        (IMPALAConfig if algo == "IMPALA" else APPOConfig)()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=32)
        .training(
            train_batch_size_per_learner=128,
            lr=[[0, 1e-3], [400, 1e-4]],
            entropy_coeff=[[0, 0.02], [300, 0.0]],
        )
        .debugging(seed=0)
    )
    trained_on = 0
    with config.build_algo() as a:
        for _ in range(4):
            result = a.train()
            learner = result["learners"]["default_policy"]
            lr = np.interp(trained_on, [0, 400], [1e-3, 1e-4])
            entropy = np.interp(trained_on, [0, 300], [0.02, 0.0])
            assert learner["default_optimizer_learning_rate"] == pytest.approx(lr, rel=1e-5)
            assert learner["curr_entropy_coeff"] == pytest.approx(entropy, rel=1e-5, abs=1e-8)
            trained_on = result["num_env_steps_sampled_lifetime"]
        assert int(a.state.env_steps) == trained_on > 400


@pytest.mark.parametrize("algo", ["DQN", "SAC", "TD3"])
def test_off_policy_rates_follow_their_schedules(algo):
    """Rates follow the env steps sampled when each update ran (RLlib's names: DQN's
    default_optimizer, SAC's qf / policy / alpha optimizers, TD3's qf / policy)."""
    from rljax.algorithms.dqn import DQNConfig
    from rljax.algorithms.sac import SACConfig
    from rljax.algorithms.td3 import TD3Config

    sched = [[0, 1e-3], [400, 1e-4]]
    if algo == "DQN":
        config = DQNConfig().environment("CartPole-v1").training(lr=sched)
        keys = ["default_optimizer_learning_rate"]
    elif algo == "SAC":
        config = (
            SACConfig()
            .environment("Pendulum-v1")
            .training(actor_lr=sched, critic_lr=sched, alpha_lr=sched)
        )
        keys = ["qf_learning_rate", "policy_learning_rate", "alpha_learning_rate"]
    else:
        config = TD3Config().environment("Pendulum-v1").training(actor_lr=sched, critic_lr=sched)
        keys = ["qf_learning_rate", "policy_learning_rate"]
    config = (
        config.env_runners(num_envs_per_env_runner=1)
        .training(
            train_batch_size_per_learner=16,
            num_steps_sampled_before_learning_starts=0,
            replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": 1000},
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=0)
    )
    with config.build_algo() as a:
        seen = []
        for _ in range(6):
            result = a.train()
            seen.append(result["learners"]["default_policy"][keys[0]])
            for k in keys[1:]:
                # The same schedule at the same step, computed in two places of the program:
                # XLA may round them apart by one float32 ulp (it does with
                # --xla_cpu_use_fusion_emitters=false).
                assert result["learners"]["default_policy"][k] == pytest.approx(seen[-1], rel=1e-6)
        steps = result["num_env_steps_sampled_lifetime"]
    assert steps > 400
    # The mean over an iteration's updates: falling from 1e-3, then 1e-4 once past step 400.
    assert seen[0] < 1e-3 and all(a > b for a, b in zip(seen[:4], seen[1:4], strict=False))
    assert seen[-1] == pytest.approx(1e-4, rel=1e-5)


def test_schedules_are_refused_where_they_cannot_run_and_populations_take_them():
    from rljax.algorithms.dqn import DQNConfig
    from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole
    from rljax.execution.population import population_refusal

    with pytest.raises(ConfigError, match="env steps 5 then 5; a schedule's env steps must"):
        DQNConfig().training(lr=[[0, 1e-3], [5, 1e-4], [5, 1e-5]]).validate()
    multi = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .training(lr=[[0, 1e-3], [100, 1e-4]])
        .multi_agent(policies=["p0", "p1"], policy_mapping_fn=lambda a, *x, **k: f"p{a}")
    )
    with pytest.raises(ConfigError, match="lr of policy 'p0' is a schedule"):
        multi.validate()
    # Populations take schedules (values of their one program: tests/tune/test_population.py).
    scheduled = PPOConfig().environment("CartPole-v1").training(entropy_coeff=[[0, 0.01]])
    assert population_refusal([scheduled, scheduled.copy().training(entropy_coeff=0.0)]) is None
