"""Multi-agent PPO on multi-agent JAX envs: the slot layout and auto-reset by hand, the fused
iteration (one program, per-policy batches as the host path gathers them, episode accounting by
hand), refusals, and learning."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.learner import make_ppo_postprocess
from rljax.env.jax_multi_agent import AgentSlots, JaxMultiAgentEnv, JaxMultiAgentGymEnv
from rljax.utils.errors import ConfigError


class Scripted(JaxMultiAgentEnv):
    """Two agents; state t. Agent k observes [t, k] and is rewarded action + k + 1; every
    episode is truncated after 3 steps."""

    def __init__(self, config=None):
        self.agents = ["a", "b"]
        self.observation_spaces = {
            a: gym.spaces.Box(-10, 10, (2,), np.float32) for a in self.agents
        }
        self.action_spaces = {a: gym.spaces.Discrete(3) for a in self.agents}

    def _obs(self, t):
        return {a: jnp.array([t, k], jnp.float32) for k, a in enumerate(self.agents)}

    def reset(self, key):
        t = jnp.zeros((), jnp.int32)
        return t, self._obs(t)

    def step(self, state, actions, key):
        t = state + 1
        rewards = {a: (actions[a] + k + 1).astype(jnp.float32) for k, a in enumerate(self.agents)}
        end = t >= 3
        never = jnp.zeros((), bool)
        return (
            t,
            self._obs(t),
            rewards,
            {a: never for a in self.agents},
            {a: end for a in self.agents},
            {},
        )


class Turns(JaxMultiAgentEnv):
    """Two agents taking turns ("a" on even steps), one action each; the mover is rewarded 1,
    and the fourth step ends the game with -5 more for "a"."""

    def __init__(self, config=None):
        self.agents = ["a", "b"]
        self.observation_spaces = {
            a: gym.spaces.Box(-10, 10, (2,), np.float32) for a in self.agents
        }
        self.action_spaces = {a: gym.spaces.Discrete(1) for a in self.agents}

    def _obs(self, t):
        return {k: jnp.array([t, i], jnp.float32) for i, k in enumerate(self.agents)}

    def reset(self, key):
        t = jnp.zeros((), jnp.int32)
        return t, self._obs(t)

    def acting(self, t):
        return jnp.array([t % 2 == 0, t % 2 == 1])

    def step(self, t, actions, key):
        mover = self.acting(t).astype(jnp.float32)
        t = t + 1
        end = t >= 4
        rewards = {"a": mover[0] - 5.0 * end, "b": mover[1]}
        never = jnp.zeros((), bool)
        return t, self._obs(t), rewards, {"a": end, "b": end}, {"a": never, "b": never}, {}


class FirstMoveEnds(Turns):
    """Turns in which "a"'s first move ends the game: "a" gets 1, "b" (who never moves) -2."""

    def step(self, t, actions, key):
        t = t + 1
        end = jnp.ones((), bool)
        never = jnp.zeros((), bool)
        rewards = {"a": jnp.float32(1), "b": jnp.float32(-2)}
        return t, self._obs(t), rewards, {"a": end, "b": end}, {"a": never, "b": never}, {}


class WeakScoreTurns(Turns):
    """Turns whose state keeps a score that reset starts from a Python number (a weak-typed
    leaf, which the steps make strong)."""

    def reset(self, key):
        t, obs = super().reset(key)
        return (t, jnp.asarray(0.0)), obs

    def acting(self, state):  # (Turns.step calls it with the step count alone)
        return super().acting(state[0] if isinstance(state, tuple) else state)

    def step(self, state, actions, key):
        t, score = state
        t, obs, rewards, terminated, truncated, info = super().step(t, actions, key)
        return (t, score + rewards["a"]), obs, rewards, terminated, truncated, info


class EarlyEnd(Scripted):
    """Scripted, but agent "a" reports its own end after the first step."""

    def step(self, state, actions, key):
        t, obs, rewards, term, trunc, info = super().step(state, actions, key)
        return t, obs, rewards, {"a": t >= 1, "b": term["b"]}, trunc, info


def _config(env=Scripted, envs=2, fragment=6, policies=("pa", "pb"), **training):
    return (
        PPOConfig()
        .environment(env)
        .env_runners(
            num_env_runners=0, num_envs_per_env_runner=envs, rollout_fragment_length=fragment
        )
        .training(
            train_batch_size=envs * fragment,
            minibatch_size=envs * fragment,
            num_epochs=1,
            **training,
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .multi_agent(
            policies=set(policies),
            policy_mapping_fn=lambda aid, ep, **kw: "p" + aid if len(policies) > 1 else "p",
        )
        .debugging(seed=0)
    )


def test_agent_slots_lay_out_agents_env_major_and_reset_when_all_are_done():
    slots = AgentSlots(Scripted(), np.array([1, 0]))
    states, obs = slots.batched_reset(jax.random.PRNGKey(0), 4)  # 2 envs x 2 agents
    np.testing.assert_array_equal(obs["obs"], [[0, 0], [0, 1], [0, 0], [0, 1]])
    np.testing.assert_array_equal(obs["policy"], [1, 0, 1, 0])
    actions = jnp.array([0, 1, 2, 0])  # env 0: a=0, b=1; env 1: a=2, b=0
    for t in (1, 2):
        states, out = slots.batched_step(states, actions, jax.random.PRNGKey(t))
        np.testing.assert_array_equal(out.reward, [1, 3, 3, 2])  # action + agent index + 1
        np.testing.assert_array_equal(out.obs["obs"][:, 0], [t] * 4)
        assert not out.truncated.any() and not out.terminated.any()
    states, out = slots.batched_step(states, actions, jax.random.PRNGKey(3))
    assert out.truncated.all() and not out.terminated.any()
    np.testing.assert_array_equal(out.final_obs["obs"][:, 0], [3] * 4)  # the ended episode's
    np.testing.assert_array_equal(out.obs["obs"], [[0, 0], [0, 1], [0, 0], [0, 1]])  # reset
    np.testing.assert_array_equal(states, [0, 0])


def test_agents_with_different_spaces_are_refused_by_name():
    env = Scripted()
    env.observation_spaces["b"] = gym.spaces.Box(-10, 10, (3,), np.float32)
    with pytest.raises(ConfigError, match="different observation_spaces"):
        AgentSlots(env, np.array([0, 0]))


def test_the_gym_wrapper_steps_the_jax_env_with_all_agents():
    env = JaxMultiAgentGymEnv(Scripted())
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs["b"], [0, 1])
    with pytest.raises(ValueError, match=r"no action for \['b'\]"):
        env.step({"a": 0})
    for _ in range(2):
        _, rewards, term, trunc, _ = env.step({"a": 2, "b": 0})
        assert rewards == {"a": 3.0, "b": 2.0} and not trunc["__all__"]
    _, _, term, trunc, _ = env.step({"a": 2, "b": 0})
    assert trunc == {"a": True, "b": True, "__all__": True} and not term["__all__"]


def test_fused_iteration_counts_episodes_by_hand_in_one_program():
    algo = _config().build_algo()
    try:
        assert algo._fused_env is not None and algo._runners is None
        first = algo.train()  # compiles the iteration's program
        second = algo.train()
        assert algo._loop.train_step._cache_size() == 1
        for result in (first, second):
            runners = result["env_runners"]
            # 2 envs x 6 steps: every 3 steps each env ends an episode.
            assert runners["num_env_steps_sampled"] == 12
            assert runners["num_agent_steps_sampled"] == {"a": 12, "b": 12}
            assert runners["num_module_steps_sampled"] == {"pa": 12, "pb": 12}
            assert runners["num_episodes"] == 4
            agent_returns = runners["agent_episode_returns_mean"]
            module_returns = runners["module_episode_returns_mean"]
            # Each of an agent's 3 steps is rewarded action + index + 1, the action in [0, 2].
            assert 3 <= agent_returns["a"] <= 9 and 6 <= agent_returns["b"] <= 12
            assert module_returns["pa"] == pytest.approx(agent_returns["a"])
            assert runners["episode_return_mean"] == pytest.approx(
                agent_returns["a"] + agent_returns["b"]
            )
            assert runners["episode_len_mean"] == 3
            learners = result["learners"]
            assert learners["pa"]["num_module_steps_trained"] == 12
            assert learners["pb"]["num_module_steps_trained"] == 12
    finally:
        algo.stop()


@pytest.mark.slow  # several seconds of compiling: in the full run, not the fast tier
def test_fused_per_policy_batches_equal_the_host_paths():
    from rljax.algorithms.ppo import multi_agent_fused

    algo = _config(envs=3, fragment=5).build_algo()
    try:
        _, traj = jax.jit(_rollout(algo))(algo._runner_params(), algo.runner_state)
        batch = make_ppo_postprocess(algo.hp, algo.num_slots, num_policies=2)(traj)
        flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), batch)
        policy = np.asarray(flat.obs["policy"])
        valid = np.asarray(flat.mask) > 0
        counts = multi_agent_fused.policy_row_counts(algo._agent_policy, 2, 15)
        for g, group in enumerate(algo.groups):
            host, size, host_counts = algo._per_policy_batches(flat, policy, valid, g)
            np.testing.assert_array_equal(host_counts, counts[group.members])
            index, real, traced_counts = multi_agent_fused.traced_policy_rows(
                jnp.asarray(policy), jnp.asarray(valid), group.members, size
            )
            np.testing.assert_array_equal(traced_counts, counts[group.members])
            traced = algo._gathered(flat, index, real, g)
            jax.tree.map(np.testing.assert_array_equal, host, traced)
    finally:
        algo.stop()


def _rollout(algo):
    from rljax.env.jax_multi_agent import AgentSlots
    from rljax.runners.jax_env import make_jax_env_rollout

    slots = AgentSlots(algo._fused_env, algo._agent_policy)
    return make_jax_env_rollout(
        slots, algo._act_step, algo.fragment_length, algo.parts.to_env_action
    )


def test_episode_dependent_mapping_is_refused_naming_the_agent():
    config = _config().multi_agent(
        policies={"pa", "pb"}, policy_mapping_fn=lambda aid, episode, **kw: episode.id_
    )
    with pytest.raises(ConfigError, match=r"policy_mapping_fn\('a', None\) raised"):
        config.build_algo()


def test_a_multi_agent_config_of_a_single_agent_jax_env_is_refused():
    config = PPOConfig().environment("rljax:CartPole-v1")
    config = config.multi_agent(policies={"p"}, policy_mapping_fn=lambda a, e, **k: "p")
    with pytest.raises(ConfigError, match="single-agent JAX env; .multi_agent"):
        config.build_algo()


def test_a_single_agent_config_of_a_multi_agent_jax_env_is_refused():
    with pytest.raises(ConfigError, match="multi-agent JAX env"):
        PPOConfig().environment(Scripted).build_algo()


@pytest.mark.slow  # runner threads and evaluation (7 s)
def test_runner_threads_and_evaluation_step_the_jax_env_from_the_host():
    config = _config().env_runners(num_env_runners=1).evaluation(evaluation_duration=2)
    algo = config.build_algo()
    try:
        assert algo._fused_env is None and algo._runners is not None
        result = algo.train()
        assert result["env_runners"]["num_episodes"] >= 2
        evaluation = algo.evaluate()["env_runners"]
        assert 9 <= evaluation["episode_return_mean"] <= 21  # two agents' 3 steps each
    finally:
        algo.stop()


def test_checkpoint_restores_the_fused_envs_mid_episode(tmp_path):
    config = _config(envs=2, fragment=4)
    algo = config.build_algo()
    try:
        algo.train()  # 4 steps: each env 1 step into its second episode
        algo.save_to_path(tmp_path / "ckpt")
        expected = algo.train()["env_runners"]["agent_episode_returns_mean"]
    finally:
        algo.stop()
    restored = config.build_algo()
    try:
        restored.restore_from_path(tmp_path / "ckpt")
        got = restored.train()["env_runners"]["agent_episode_returns_mean"]
        assert got == expected
    finally:
        restored.stop()


@pytest.mark.slow
def test_two_policies_learn_two_cartpoles_on_the_fused_path(load_benchmark):
    config = (
        _config(
            env=load_benchmark("multi_agent_jax_env").TwoPoles,
            envs=8,
            fragment=128,
            lr=1e-3,
            vf_clip_param=None,
        )
        .training(minibatch_size=256, num_epochs=4)
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False})
    )
    algo = config.build_algo()
    try:
        returns = [algo.train()["env_runners"]["episode_return_mean"] for _ in range(25)]
        # Random play keeps both poles up ~11 steps together (a return of ~22, both agents).
        assert returns[0] < 60 and max(returns[-5:]) > 150, returns
    finally:
        algo.stop()


def test_turn_based_rows_credit_rewards_to_each_agents_last_move_by_hand():
    slots = AgentSlots(Turns(), np.array([0, 1]))
    assert slots.turn_based
    turn, result = slots.turn_reset(jax.random.PRNGKey(0), 2)
    np.testing.assert_array_equal(result.present, [True, False])  # "a" moves first
    rows = []
    for t in range(5):
        turn, result = slots.turn_step(turn, jnp.zeros(2, jnp.int32), jax.random.PRNGKey(t))
        rows.append(jax.device_get(result))
    # present, then the rewards owed to each agent since its own last move.
    np.testing.assert_array_equal([r.present for r in rows[:3]], [[0, 1], [1, 0], [0, 1]])
    np.testing.assert_array_equal([r.reward for r in rows[:3]], [[0, 0], [1, 0], [0, 1]])
    last = rows[3]  # the fourth step ends the game: both agents' final results
    np.testing.assert_array_equal(last.present, [True, True])
    np.testing.assert_array_equal(last.reward, [1 - 5, 1])
    np.testing.assert_array_equal(last.terminated, [True, True])
    reset = rows[4]  # the next step resets (its actions ignored); "a" moves first again
    np.testing.assert_array_equal(reset.present, [True, False])
    np.testing.assert_array_equal(reset.reward, [0, 0])
    np.testing.assert_array_equal(reset.obs["obs"][:, 0], [0, 0])


@pytest.mark.slow  # builds and trains 3 iterations
def test_a_weak_typed_reset_state_compiles_the_turn_based_iteration_once():
    algo = _config(env=WeakScoreTurns, envs=2, fragment=10).build_algo()
    try:
        for _ in range(3):
            algo.train()
        assert algo._loop.train_step._cache_size() == 1  # the first state's types are the loop's
    finally:
        algo.stop()


def test_the_host_step_compiles_once_for_a_weak_typed_reset_and_any_action_type():
    # SMAX's reset writes Python numbers and policies hand Python or NumPy integers: the
    # jitted step used to compile again for each new mix (29 times in 3 iterations of 4 SMAX
    # copies, running out of memory with 16).
    env = JaxMultiAgentGymEnv(WeakScoreTurns())
    obs, _ = env.reset(seed=0)
    games = 0
    for action in (0, np.int64(0), np.zeros((), np.int32), jnp.int32(0)):
        for _ in range(2):
            obs, _, term, _, _ = env.step({a: action for a in obs})  # the agents to move
            if term["__all__"]:
                obs, _ = env.reset()
                games += 1
    assert games == 2  # 8 moves, 4 a game
    assert env._step._cache_size() == 1 and env._reset._cache_size() == 1


@pytest.mark.parametrize("runners", [0, 1], ids=["fused", "host"])
def test_turn_based_episodes_count_each_agents_moves_on_both_paths(runners):
    config = _config(env=Turns, envs=2, fragment=10).env_runners(num_env_runners=runners)
    algo = config.build_algo()
    try:
        assert (algo._fused_env is not None) == (runners == 0)
        results = [algo.train()["env_runners"] for _ in range(3)]
        if runners == 0:  # one program, compiled once (its first runner state is committed)
            assert algo._loop.train_step._cache_size() == 1
    finally:
        algo.stop()
    for runners_result in results[1:]:
        # "a": 1 + (1 - 5), "b": 1 + 1; four moves a game.
        assert runners_result["agent_episode_returns_mean"] == {"a": -3.0, "b": 2.0}
        assert runners_result["module_episode_returns_mean"] == {"pa": -3.0, "pb": 2.0}
        assert runners_result["episode_return_mean"] == -1.0
        assert runners_result["episode_len_mean"] == 4


@pytest.mark.parametrize("runners", [0, 1], ids=["fused", "host"])
def test_a_game_ended_before_an_agent_moved_is_counted_with_its_rewards(runners):
    config = _config(env=FirstMoveEnds, envs=2, fragment=6).env_runners(num_env_runners=runners)
    algo = config.build_algo()
    try:
        results = [algo.train()["env_runners"] for _ in range(2)]
    finally:
        algo.stop()
    for result in results[1:]:
        assert result["num_episodes"] >= 4  # a game every two rows per env (with the reset)
        assert result["agent_episode_returns_mean"] == {"a": 1.0, "b": -2.0}
        assert result["episode_return_mean"] == -1.0


def test_an_agents_own_end_before_the_episodes_is_ignored_on_both_paths():
    slots = AgentSlots(EarlyEnd(), np.array([0, 0]))
    states, _ = slots.batched_reset(jax.random.PRNGKey(0), 2)
    states, out = slots.batched_step(states, jnp.zeros(2, jnp.int32), jax.random.PRNGKey(1))
    assert not out.terminated.any() and not out.truncated.any()  # "a" acts on
    env = JaxMultiAgentGymEnv(EarlyEnd())
    env.reset(seed=0)
    _, _, term, trunc, _ = env.step({"a": 0, "b": 0})
    assert not any(term.values()) and not any(trunc.values())
    env.step({"a": 0, "b": 0})
    _, _, term, trunc, _ = env.step({"a": 0, "b": 0})  # the third step ends the episode
    assert term == {"a": True, "b": False, "__all__": False} and trunc["__all__"]


@pytest.mark.slow  # builds and trains (9 s)
def test_agents_with_different_spaces_are_stepped_from_the_host():
    class Mixed(Scripted):
        def __init__(self, config=None):
            super().__init__(config)
            self.action_spaces["b"] = gym.spaces.Discrete(2)

    algo = _config(env=Mixed).build_algo()
    try:
        assert algo._fused_env is None and algo._runners is not None
        assert algo.train()["env_runners"]["num_episodes"] >= 2
    finally:
        algo.stop()


def test_a_registered_creator_of_a_jax_env_runs_fused():
    from rljax.env.registry import register_env

    register_env("scripted_jax_multi_agent", lambda cfg: Scripted(cfg))
    config = _config().environment("scripted_jax_multi_agent")
    algo = config.build_algo()
    try:
        assert algo._fused_env is not None
        assert algo.train()["env_runners"]["num_episodes"] == 4
    finally:
        algo.stop()
