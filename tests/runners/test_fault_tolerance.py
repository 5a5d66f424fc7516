"""Fault tolerance: sub-env restarts drop the broken episode, failed or hung runners are
replaced (the transitions a failed runner's env gave are kept), and an env that fails every time
is given up on quickly."""

import time

import gymnasium as gym
import jax
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.env import MultiAgentEnv
from rljax.runners.faults import REPEATS_OF_A_BUG
from rljax.runners.host import MAX_FRESH_FAILURES, EnvBugError, EnvRunnerError


class CrashingTicks(gym.Env):
    """obs = [t / 10]; episodes last 10 steps (truncated). Every instance raises at step 5 of
    its second episode (``crash_episode``), or, with ``hang_after``, sleeps for an hour once it
    has taken that many steps in total; ``fail_always`` raises on every step (the same
    message every time, unless it is "each its own way").

    Its messages name the instance, so that the same failure of every new instance is not the
    same exception (which would be a bug in the env, raised after a few restarts:
    tests/runners/test_env_bugs.py): these tests are about restarts."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    built: dict[int, int] = {}  # instances made in this process per worker_index (SYNC envs)

    def __init__(self, config):
        worker = config.worker_index
        if config.get("only_worker") not in (None, worker):
            config = {}  # the faults are for one runner only
        self.config = config
        self.episodes = -1
        self.total = 0
        self.number = CrashingTicks.built[worker] = CrashingTicks.built.get(worker, 0) + 1

    def reset(self, *, seed=None, options=None):
        if self.number > self.config.get("hang_reset_after_instance", 1 << 30):
            time.sleep(3600)  # an env whose rebuilt instances hang in reset
        if self.episodes == -1 and self.number == self.config.get("crash_first_reset_of", -1):
            raise ValueError(f"first reset crashed on purpose (instance {self.number})")
        if self.episodes + 1 == self.config.get("crash_reset", -1):
            raise ValueError(f"reset crashed on purpose (instance {self.number})")
        self.t = 0
        self.episodes += 1
        return np.zeros(1, np.float32), {}

    def step(self, action):
        cfg = self.config
        self.total += 1
        if cfg.get("fail_always") == "each its own way":
            raise ValueError(f"this env always fails (instance {self.number})")
        if cfg.get("fail_always"):
            raise ValueError("this env always fails")
        if self.episodes == cfg.get("crash_episode", -1) and self.t == 5:
            raise ValueError(f"crashed on purpose (instance {self.number})")
        if "hang_after" in cfg and self.total > cfg["hang_after"]:
            time.sleep(3600)
        self.t += 1
        return np.array([self.t / 10], np.float32), 1.0, False, self.t >= 10, {}


def _config(env_config, **runners):
    return (
        PPOConfig()
        .environment(CrashingTicks, env_config=env_config)
        .env_runners(**runners)
        .training(minibatch_size=8, num_epochs=1, lr=1e-3)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


@pytest.mark.parametrize("mode", ["SYNC", "ASYNC"])
@pytest.mark.slow
def test_a_restarted_sub_env_drops_its_broken_episode(mode):
    algo = (
        _config(
            {"crash_episode": 1},
            num_envs_per_env_runner=2,
            rollout_fragment_length=40,
            gym_env_vectorize_mode=mode,
        )
        .fault_tolerance(restart_failed_sub_environments=True)
        .build_algo()
    )
    try:
        result = algo.train()
        # Each sub-env: episode 0 (10 steps), then episode 1 crashes at its step 5: rebuilt,
        # the new instance runs episode 0 again... Only whole 10-step episodes are reported.
        runners = result["env_runners"]
        assert runners["episode_len_min"] == runners["episode_len_max"] == 10
        assert runners["episode_return_mean"] == 10.0
        assert result["fault_tolerance"]["num_sub_env_restarts"] >= 2  # once per sub-env
        traj = algo._runners.sample().traj
        obs, valid = np.asarray(traj.obs)[..., 0], np.asarray(traj.valid)
        done = np.asarray(traj.truncated)
        for k in range(2):
            rows = np.nonzero(valid[:, k])[0]
            assert len(rows) > 0
            # Valid transitions run 0.0, 0.1, ..., 0.9 and start over after an episode end:
            # nothing of a broken episode (0.0 .. 0.4, then a fresh 0.0) is left.
            for a, b in zip(rows[:-1], rows[1:], strict=True):
                expected = 0.0 if done[a, k] else obs[a, k] + 0.1
                assert obs[b, k] == pytest.approx(expected), (k, a, b, obs[: b + 1, k])
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_sub_env_rebuilt_because_its_reset_raised_is_counted():
    algo = (
        _config({"crash_reset": 1}, num_envs_per_env_runner=2, rollout_fragment_length=40)
        .fault_tolerance(restart_failed_sub_environments=True)
        .build_algo()
    )
    try:
        result = algo.train()
        # Each sub-env's first auto-reset raises; the rebuilt env's does too, every 2 episodes.
        assert result["fault_tolerance"]["num_sub_env_restarts"] >= 2
        assert result["env_runners"]["episode_len_min"] == 10  # no episode was cut short
        assert result["env_runners"]["num_episodes"] >= 6
    finally:
        algo.stop()


def test_a_runner_whose_env_crashes_while_it_is_built_is_built_again(monkeypatch):
    """A runner resets its envs when it is built (RLlib's in its first sample): a crash there
    is a runner failure like any other, and with runner restarts the runner is built again
    (the example ``crashing_cartpole.py`` failed its build now and then: a 0.1% chance per
    reset). Without restarts the build fails with the env's error."""
    monkeypatch.setattr(CrashingTicks, "built", {})  # instance numbers from 1 in this test
    with (
        _config({"crash_first_reset_of": 1}, num_env_runners=1, num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=16)
        .fault_tolerance(restart_failed_sub_environments=False)  # the runner, not the sub-env
        .build_algo() as algo
    ):
        assert algo.train()["env_runners"]["num_env_steps_sampled"] == 16
        assert CrashingTicks.built[1] == 4  # instance 1 crashed; its runner built 2 new ones
    monkeypatch.setattr(CrashingTicks, "built", {})
    config = _config({"crash_first_reset_of": 1}, num_env_runners=1, num_envs_per_env_runner=2)
    config.fault_tolerance(restart_failed_env_runners=False, restart_failed_sub_environments=False)
    with pytest.raises(ValueError, match="first reset crashed on purpose"):
        config.build_algo()


@pytest.mark.slow
def test_a_failed_runner_is_replaced_and_training_goes_on():
    recreated, created, ended = [], [], []
    algo = (
        _config(
            {"crash_episode": 2},
            num_env_runners=2,
            num_envs_per_env_runner=2,
            rollout_fragment_length=20,
        )
        .callbacks(
            on_env_runners_recreated=lambda *, env_runner_indices, is_evaluation, **kw: (
                recreated.append((list(env_runner_indices), is_evaluation))
            ),
            on_environment_created=lambda *, env_context, **kw: created.append(
                env_context.worker_index
            ),
            on_episode_end=lambda *, episode, **kw: ended.append(len(episode)),
        )
        # Sub-env restarts off (RLlib's default; rljax's "auto" restarts the sub-env alone):
        # the runner fails. restart_failed_env_runners=True is the default, as in RLlib.
        .fault_tolerance(restart_failed_sub_environments=False)
    ).build_algo()
    try:
        for _ in range(3):
            result = algo.train()
        tolerance = result["fault_tolerance"]
        assert tolerance["num_env_runner_restarts"] >= 2  # both runners crash in iteration 2
        assert tolerance["num_healthy_env_runners"] == 2
        assert result["env_runners"]["num_env_steps_sampled"] > 0
        # The hooks saw each replacement (runner indices are 1-based, as RLlib's) and its env;
        # the crashed episodes never ended, so every episode replayed has its 10 steps.
        replaced = sorted(i for indices, _ in recreated for i in indices)
        assert len(replaced) == tolerance["num_env_runner_restarts"]
        assert set(replaced) == {1, 2} and not any(e for _, e in recreated)
        assert sorted(created) == sorted([1, 2, *replaced])
        assert ended and set(ended) == {10}
    finally:
        algo.stop()


@pytest.mark.parametrize(
    "length, iterations", [(80, 4), (26, 12), (25, 12)], ids=["mid", "cut-row-last", "last-row"]
)
@pytest.mark.slow
def test_a_runner_that_fails_after_some_steps_is_restarted_each_time_and_its_rows_kept(
    length, iterations
):
    # Every runner's sub-envs raise at step 5 of their third episode: a runner writes 25 rows (10
    # steps, 10 steps and 5 steps: it resets same-step, and its first step is taken before its
    # first row) and a cut row after them, fewer than an 80-row fragment (its replacement writes
    # the rest of the fragment) or exactly a 26-row one. With 25-row fragments the failure is on
    # the last row (no cut row: the fragment's end cuts the episode). Each failure follows env
    # steps, so none is "in a row": the runner is restarted every time, more often than
    # MAX_FRESH_FAILURES.
    algo = (
        _config({"crash_episode": 2}, num_envs_per_env_runner=2, rollout_fragment_length=length)
        .fault_tolerance(restart_failed_sub_environments=False)  # a failure fails the runner
        .build_algo()
    )
    try:
        sampled = 0
        for _ in range(iterations):
            result = algo.train()
            sampled += result["env_runners"]["num_env_steps_sampled"]
        rows = length * iterations  # of each sub-env's stream, in env-step order
        period = 25 if length == 25 else 26  # rows per runner
        # Runners fail after writing rows 24, 24 + period, ...; no row is lost to a restart.
        restarts = sum(1 for g in range(rows) if g % period == 24)
        assert restarts > MAX_FRESH_FAILURES
        assert result["fault_tolerance"]["num_env_runner_restarts"] == restarts
        assert result["fault_tolerance"]["num_healthy_env_runners"] == 1
        # The only rows that are no env step: the cut rows.
        invalid = sum(1 for g in range(rows) if g % period == 25)
        assert sampled == 2 * (rows - invalid)
        # Only whole episodes are reported; the one cut by each failure is not.
        assert result["env_runners"]["episode_len_min"] == 10
        assert result["env_runners"]["episode_return_mean"] == 10.0
        if length != 80:
            return
        # The next fragment, rows 320..399, row by row: (observation acted on, valid, truncated)
        # at each phase of a runner's 26 rows.
        phases = (
            [(i / 10, True, i == 9) for i in range(10)]  # episode 0, cut by its time limit
            + [(i / 10, True, i == 9) for i in range(10)]  # episode 1, from the reset obs 0.0
            # Episode 2: its last transition before the failure is cut as by a time limit, and
            # the cut row after it holds that transition's next observation.
            + [(i / 10, True, i == 4) for i in range(5)]
            + [(0.5, False, False)]
        )
        expected = np.array([phases[g % 26] for g in range(320, 400)])
        algo._runners.publish(algo._runner_params())
        traj = jax.device_get(algo._runners.sample().traj)
        for k in range(2):
            np.testing.assert_allclose(traj.obs[:, k, 0], expected[:, 0], atol=1e-6)
            np.testing.assert_array_equal(traj.valid[:, k], expected[:, 1].astype(bool))
            np.testing.assert_array_equal(traj.truncated[:, k], expected[:, 2].astype(bool))
    finally:
        algo.stop()


class CrashingTurns(MultiAgentEnv):
    """Players "a" and "b" alternate (only the one to move observes: obs = [move, player]);
    a game lasts 12 moves. Every instance raises on move 5 of its second game (a message of
    its own: see ``CrashingTicks``)."""

    built = 0

    def __init__(self, config=None):
        CrashingTurns.built += 1
        self.number = CrashingTurns.built
        self.possible_agents = ["a", "b"]
        self.agents = list(self.possible_agents)
        box = gym.spaces.Box(0.0, 20.0, (2,), np.float32)
        self.observation_spaces = {"a": box, "b": box}
        self.action_spaces = {"a": gym.spaces.Discrete(2), "b": gym.spaces.Discrete(2)}
        self.games = -1

    def _obs(self, agent):
        return {agent: np.array([self.t, 0.0 if agent == "a" else 1.0], np.float32)}

    def reset(self, *, seed=None, options=None):
        self.t, self.games = 0, self.games + 1
        return self._obs("a"), {}

    def step(self, action_dict):
        (mover,) = action_dict
        if self.games == 1 and self.t == 5:
            raise ValueError(f"crashed on purpose (instance {self.number})")
        self.t += 1
        over = self.t == 12
        nxt = "b" if mover == "a" else "a"
        obs = {} if over else self._obs(nxt)
        return obs, {mover: 1.0}, {"__all__": over}, {"__all__": False}, {}


@pytest.mark.slow
def test_a_multi_agent_runner_failure_cuts_each_agent_stream_where_its_agent_last_moved():
    # An agent's last move before the failure may lie a row or more back (the other player was
    # to move): that transition must end its stream's episode, or PPO would chain it to the
    # replacement's first game in the same slot.
    algo = (
        PPOConfig()
        .environment(CrashingTurns)
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=60)
        .multi_agent(policies=["a", "b"], policy_mapping_fn=lambda agent, episode, **kw: agent)
        .training(minibatch_size=16, num_epochs=1, lr=1e-3)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
        .build_algo()
    )  # default fault tolerance
    try:
        algo.train()
        algo._runners.publish(algo._runner_params())
        traj = jax.device_get(algo._runners.sample().traj)
        move = traj.obs["obs"][..., 0]
        ended = traj.terminated | traj.truncated
        for slot in range(traj.valid.shape[1]):
            rows = np.nonzero(traj.valid[:, slot])[0]
            for r, nxt in zip(rows[:-1], rows[1:], strict=True):
                if not ended[r, slot]:  # the same game goes on: this agent's next move
                    assert move[nxt, slot] == move[r, slot] + 2, (slot, r, nxt)
        # A runner lives 20 rows (the fresh row, 12 moves, the auto-reset row, 5 moves, the cut
        # row): 3 failures in each 60-row fragment, each cutting the 4 agent streams.
        assert algo._runners.num_restarts == 6
        assert (traj.truncated & traj.valid).sum() == 3 * 4
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_hung_env_is_caught_by_the_sample_timeout_and_its_runner_replaced():
    algo = _config(
        {"hang_after": 30},
        num_envs_per_env_runner=2,
        rollout_fragment_length=20,
        sample_timeout_s=1.0,
    ).build_algo()
    start = time.perf_counter()
    try:
        for _ in range(2):  # each new runner delivers one fragment, then hangs in the next
            result = algo.train()
        assert result["fault_tolerance"]["num_env_runner_restarts"] >= 1
    finally:
        algo.stop()
    assert (
        time.perf_counter() - start < 300
    )  # the hung env sleeps for an hour: it was not waited on


@pytest.mark.slow
def test_an_env_that_always_fails_is_given_up_on_quickly():
    # The default restarts the sub-env alone; its same failure 5 times in a row is a bug.
    algo = _config({"fail_always": True}, num_envs_per_env_runner=2).build_algo()
    start = time.perf_counter()
    try:
        with pytest.raises(
            EnvBugError,
            match="(?s)^sub-env 0 of the driver's env runner .*the same ValueError: this env "
            "always fails at test_fault_tolerance.py:[0-9]+ in step after the same 0 env steps "
            f"{REPEATS_OF_A_BUG} times in a row",
        ) as raised:
            algo.train()
    finally:
        algo.stop()
    assert str(raised.value.__cause__) == "this env always fails"
    assert time.perf_counter() - start < 30


@pytest.mark.slow
def test_a_runner_whose_env_always_fails_differently_is_given_up_on_quickly():
    # Runner restarts only, and a message of each instance's own: no two failures are the same
    # exception, but no replacement delivers an env step either.
    algo = (
        _config({"fail_always": "each its own way"}, num_envs_per_env_runner=2)
        .fault_tolerance(restart_failed_sub_environments=False)
        .build_algo()
    )
    start = time.perf_counter()
    try:
        with pytest.raises(
            EnvRunnerError,
            match="(?s)after 10 restarts in a row, and none of the 10 replacements delivered a "
            "single env step.*fails every time.*10 of max_num_env_runner_restarts=1000.*"
            "this env always fails",
        ) as raised:
            algo.train()
    finally:
        algo.stop()
    assert not isinstance(raised.value, EnvBugError)
    assert time.perf_counter() - start < 30


def _update_compilations(algo) -> int:
    return algo._jit_update._cache_size() + algo._postprocess_jit._cache_size()


@pytest.mark.slow
def test_ignore_env_runner_failures_drops_a_failed_runner_and_trains_on(tmp_path):
    config = _config(
        {"crash_episode": 2, "only_worker": 2},
        num_env_runners=2,
        num_envs_per_env_runner=2,
        rollout_fragment_length=20,
    ).fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=True)
    algo = config.build_algo()
    try:
        first = algo.train()  # both runners deliver (runner 2 crashes in its third episode)
        assert first["fault_tolerance"]["num_healthy_env_runners"] == 2
        # Runner 2 crashes after writing row 4 of the next fragment (its 25th row) and is
        # dropped; its 5 rows and the cut row are kept, the rest is empty, and every sub-env
        # still has one row per env step (the update reshapes the batch by sub-env).
        algo._runners.publish(algo._runner_params())
        traj = jax.device_get(algo._runners.sample().traj)
        assert list(algo._runners.dropped) == [1]
        for row in traj.env_id:
            assert sorted(row) == [0, 1, 2, 3]
        assert traj.valid[:, 2:].sum(axis=0).tolist() == [5, 5]  # episode 2's 5 steps
        assert traj.truncated[4, 2:].all() and not traj.valid[5:, 2:].any()
        algo._runners.publish(algo._runner_params())
        compiled = _update_compilations(algo)
        params = jax.tree.map(np.asarray, algo.state.params)
        for _ in range(3):
            result = algo.train()
        assert result["fault_tolerance"]["num_healthy_env_runners"] == 1
        assert result["fault_tolerance"]["num_env_runner_restarts"] == 0
        assert list(algo._runners.dropped) == [1]  # runner 2 (index 1)
        assert "crashed on purpose" in algo._runners.dropped[1]
        per_runner = result["env_runners"]["per_runner"]
        assert per_runner["2"]["num_env_steps_sampled"] == 0  # its columns are masked out
        assert per_runner["1"]["num_env_steps_sampled"] > 0
        assert (
            result["env_runners"]["num_env_steps_sampled"]
            == per_runner["1"]["num_env_steps_sampled"]
        )
        assert result["env_runners"]["episode_return_mean"] == 10.0  # whole episodes only
        # The batch kept its shape: the update and postprocessing did not recompile, and the
        # learner went on learning from the healthy runner.
        assert _update_compilations(algo) == compiled
        moved = jax.tree.map(
            lambda a, b: np.abs(a - np.asarray(b)).max(), params, algo.state.params
        )
        assert max(jax.tree.leaves(moved)) > 0
        # A checkpoint remembers the dropped runner: a restored run drops it again.
        path = algo.save_to_path(tmp_path / "ckpt")
    finally:
        algo.stop()
    restored = config.build_algo()
    try:
        restored.restore_from_path(path)
        assert list(restored._runners.dropped) == [1]
        assert restored.train()["fault_tolerance"]["num_healthy_env_runners"] == 1
    finally:
        restored.stop()


@pytest.mark.slow
def test_when_every_runner_has_failed_ignoring_failures_stops_with_the_error():
    algo = (
        _config({"crash_episode": 1}, num_env_runners=2, num_envs_per_env_runner=2)
        .fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=True)
        .build_algo()
    )
    try:
        with pytest.raises(
            EnvRunnerError, match="(?s)every env runner has failed.*crashed on purpose"
        ):
            for _ in range(5):
                algo.train()
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_replacement_that_hangs_in_reset_fails_its_health_probe_and_is_dropped():
    CrashingTicks.built.clear()
    # Runner 2 builds two sub-envs at the start; its replacements' (instances 3, 4, ...) hang
    # in reset. Each attempt is abandoned after the probe timeout; after MAX_FRESH_FAILURES in
    # a row the runner is dropped and runner 1 trains on.
    algo = (
        _config(
            {"crash_episode": 1, "only_worker": 2, "hang_reset_after_instance": 2},
            num_env_runners=2,
            num_envs_per_env_runner=2,
            rollout_fragment_length=20,
        )
        .fault_tolerance(
            # The crash fails the runner (no sub-env restarts), whose replacements hang.
            restart_failed_sub_environments=False,
            ignore_env_runner_failures=True,
            env_runner_health_probe_timeout_s=0.5,
        )
        .build_algo()
    )
    start = time.perf_counter()
    try:
        for _ in range(3):
            result = algo.train()
        tolerance = result["fault_tolerance"]
        assert tolerance["num_healthy_env_runners"] == 1
        assert tolerance["num_env_runner_restarts"] == MAX_FRESH_FAILURES
        why = algo._runners.dropped[1]
        assert "env_runner_health_probe_timeout_s" in why and "0.5 s" in why
    finally:
        algo.stop()
    assert time.perf_counter() - start < 30


class FlakyCartPole(gym.Env):
    """gymnasium's CartPole-v1 whose ``step`` raises on 1% of calls (at random). Each instance
    draws its own failures: a rebuilt env does not fail again after the same number of steps."""

    built: dict[tuple[int, int], int] = {}  # instances made per (worker, sub-env) in this process

    def __init__(self, config):
        self.env = gym.make("CartPole-v1")
        self.observation_space, self.action_space = (
            self.env.observation_space,
            self.env.action_space,
        )
        slot = (config.worker_index, config.vector_index)
        number = FlakyCartPole.built[slot] = FlakyCartPole.built.get(slot, 0) + 1
        self.rng = np.random.default_rng([*slot, number])

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        if self.rng.random() < 0.01:
            raise ConnectionError("the simulator dropped the connection")
        return self.env.step(action)


def _flaky_cartpole_ppo(num_envs_per_env_runner: int) -> PPOConfig:
    FlakyCartPole.built.clear()  # the same failures whatever ran before
    return (
        PPOConfig()
        .environment(FlakyCartPole)
        .env_runners(num_envs_per_env_runner=num_envs_per_env_runner)
        .training(
            train_batch_size_per_learner=4000,
            minibatch_size=128,
            num_epochs=6,
            lr=3e-4,
            lambda_=0.95,
            vf_loss_coeff=0.5,
            vf_clip_param=None,
            use_kl_loss=False,
            kl_coeff=0.0,
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False})
        .debugging(seed=0)
    )


def _train_until_greedy_return(algo, target: float, max_env_steps: int, every: int):
    """Trains until the greedy return on a CartPole that never crashes reaches ``target``
    (checked every ``every`` iterations): a crash every 100 steps on average rarely lets an
    episode of the flaky env itself last that long. Returns the score and the last result."""
    clean = gym.make("CartPole-v1")

    def greedy_return(episodes=3):
        total = 0.0
        for e in range(episodes):
            obs, _ = clean.reset(seed=100 + e)
            done = False
            while not done:
                obs, r, term, trunc, _ = clean.step(algo.compute_single_action(obs))
                total += float(r)
                done = term or trunc
        return total / episodes

    score = 0.0
    while algo.num_env_steps_sampled_lifetime < max_env_steps:
        result = algo.train()
        if result["training_iteration"] % every == 0 and (score := greedy_return()) >= target:
            break
    return score, result


@pytest.mark.slow
def test_ppo_learns_cartpole_to_450_although_1_percent_of_steps_crash():
    algo = (
        _flaky_cartpole_ppo(num_envs_per_env_runner=16)
        .fault_tolerance(restart_failed_sub_environments=True)
        .build_algo()
    )
    try:
        score, result = _train_until_greedy_return(algo, 450, 250_000, every=5)
        assert score >= 450, score
        tolerance = result["fault_tolerance"]
        # About one rebuild per 100 env steps (more per step trained on: the rows of broken
        # episodes are dropped), and no runner ever failed.
        assert tolerance["num_sub_env_restarts"] > 0.005 * algo.num_env_steps_sampled_lifetime
        assert tolerance["num_env_runner_restarts"] == 0
    finally:
        algo.stop()


@pytest.mark.slow
def test_ppo_learns_cartpole_to_300_with_runner_restarts_although_1_percent_crash():
    # Without sub-env restarts (RLlib's default), a crash fails the whole runner, which is
    # replaced. The rows its env gave before the crash are trained on and the replacement writes
    # the rest of the same fragment, so the batch stays nearly full. With 4 sub-envs a runner
    # lives about 25 env steps; 60k steps cost about 600 of the 1000 restarts allowed.
    algo = (
        _flaky_cartpole_ppo(num_envs_per_env_runner=4)
        .fault_tolerance(restart_failed_sub_environments=False)
        .build_algo()
    )
    try:
        score, result = _train_until_greedy_return(algo, 300, 60_000, every=2)
        assert score >= 300, score
        tolerance = result["fault_tolerance"]
        assert tolerance["num_env_runner_restarts"] > 0.005 * algo.num_env_steps_sampled_lifetime
        assert tolerance["num_sub_env_restarts"] == 0
        assert tolerance["num_healthy_env_runners"] == 1
    finally:
        algo.stop()


def test_a_sub_env_that_fails_every_step_is_given_up_on_not_rebuilt_for_ever():
    from rljax.env.fault_tolerance import RESTARTED, RestartingEnv

    class Flaky(gym.Env):
        observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        action_space = gym.spaces.Discrete(2)
        fail = True

        def reset(self, *, seed=None, options=None):
            return np.zeros(1, np.float32), {}

        def step(self, action):
            if Flaky.fail:
                raise ValueError("broken for good")
            return np.zeros(1, np.float32), 0.0, False, False, {}

    env = RestartingEnv(Flaky, max_in_a_row=3)
    env.reset()
    for _ in range(3):  # each failure rebuilds and reports a restart
        assert env.step(0)[4][RESTARTED] is True
    with pytest.raises(RuntimeError, match="(?s)failed 3 times in a row.*broken for good"):
        env.step(0)
    # Failures with good steps between them never add up.
    Flaky.fail = False
    env = RestartingEnv(Flaky, max_in_a_row=2)
    env.reset()
    for i in range(10):
        Flaky.fail = i % 2 == 0
        env.step(0)
    assert env.num_restarts == 5


@pytest.mark.slow
def test_closing_a_hung_async_runner_with_force_kills_its_processes_at_once():
    import threading

    from rljax.env.vector import resolve_env
    from rljax.runners.host import HostRunner, RunnerSpec

    algo = _config({"hang_after": 3}, num_envs_per_env_runner=2).build_algo()
    try:
        spec = RunnerSpec(
            resolve_env(CrashingTicks, {"hang_after": 3}),
            2,
            "ASYNC",
            0,
            None,
            algo.parts.act,
            algo._act_step,
            algo.parts.to_env_action_host,
            algo.runner_device,
        )
        runner = HostRunner(spec, algo._runner_params())
        stepping = threading.Thread(target=runner.sample, args=(algo._runner_params(), 10))
        stepping.daemon = True
        stepping.start()
        time.sleep(2.0)  # the sub-envs now sleep inside step
        procs = list(runner.env.env.processes)
        start = time.perf_counter()
        runner.close(force=True)
        assert time.perf_counter() - start < 10
        assert not any(p.is_alive() for p in procs)
    finally:
        algo.stop()


@pytest.mark.slow
@pytest.mark.parametrize(
    "faults", [{"crash_episode": 2}, {"hang_after": 30}], ids=["crash", "hang"]
)
def test_free_running_appo_replaces_a_failed_runner_while_the_other_keeps_sampling(faults):
    # Runner 1 crashes at step 5 of its second episode, or hangs after 30 steps (caught by
    # sample_timeout_s); runner 2 is healthy. The learner takes whatever fragments are ready,
    # so training goes on with runner 2's while runner 1 is replaced.
    from rljax.algorithms.appo import APPOConfig

    algo = (
        APPOConfig()
        .environment(CrashingTicks, env_config={**faults, "only_worker": 1})
        .env_runners(
            num_env_runners=2,
            num_envs_per_env_runner=2,
            rollout_fragment_length=20,
            sample_timeout_s=1.0,
        )
        .training(train_batch_size_per_learner=80)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .fault_tolerance(restart_failed_sub_environments=False)  # a crash fails the runner
        .debugging(seed=0)
        .build_algo()
    )
    start = time.perf_counter()
    try:
        # Train until runner 1 has failed and been replaced, however fast the machine: on a fast
        # one runner 2 alone supplies many updates before sample_timeout_s catches the hang (six
        # fixed iterations once ended inside that second, with no restart yet).
        fragments = {"1": 0, "2": 0}
        iterations = 0
        tolerance = {"num_env_runner_restarts": 0, "num_healthy_env_runners": 0}
        while iterations < 6 or not (
            tolerance["num_env_runner_restarts"] >= 1 and tolerance["num_healthy_env_runners"] == 2
        ):
            assert iterations < 5000, f"no restart after {iterations} updates: {tolerance}"
            result = algo.train()
            iterations += 1
            for k, r in result["env_runners"]["per_runner"].items():
                fragments[k] += r["num_fragments"]
            tolerance = result["fault_tolerance"]
        assert tolerance["num_env_runner_restarts"] >= 1
        assert fragments["2"] >= 3 and sum(fragments.values()) == 2 * iterations  # 2 an update
        assert np.isfinite(result["learners"]["default_policy"]["total_loss"])
    finally:
        algo.stop()
    assert (
        time.perf_counter() - start < 300
    )  # the hung env sleeps for an hour: it was not waited on
