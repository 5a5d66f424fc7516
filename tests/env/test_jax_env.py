"""The JAX env protocol: same-step auto-reset, time-limit truncation and resolution by name,
checked by hand on a scripted env."""

from pathlib import Path

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.env.jax_env import (
    JaxEnv,
    JaxGymEnv,
    TimeLimit,
    auto_reset_step,
    batched_reset,
    batched_step,
    jax_env_of,
    make_jax_env,
)
from rljax.env.registry import register_env
from rljax.env.vector import env_spaces, resolve_env
from rljax.utils.errors import ConfigError


class Scripted(JaxEnv):
    """State: the step count t. obs = [t + start]; reward = t after the step; terminates when t
    reaches ``end`` (default 3). A reset starts at t = 0 with obs 10 * (key's first bit) so a
    test can tell a reset from a step."""

    def __init__(self, config=None):
        config = dict(config or {})
        self.end = config.get("end", 3)
        self.observation_space = gym.spaces.Box(-1e6, 1e6, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, key):
        return jnp.zeros((), jnp.int32), jnp.full((1,), -1.0, jnp.float32)

    def step(self, state, action, key):
        t = state + 1 + action  # action 1 skips a step
        obs = t.astype(jnp.float32)[None]
        return t, obs, t.astype(jnp.float32), t >= self.end, jnp.asarray(False), {"t": t}


def test_auto_reset_resets_within_the_ending_step():
    env = Scripted()
    key = jax.random.PRNGKey(0)
    state, obs = env.reset(key)
    assert obs.tolist() == [-1.0]
    outs = []
    for _ in range(4):
        state, out = auto_reset_step(env, state, jnp.int32(0), key)
        outs.append(out)
    # Steps 1, 2: t = 1, 2; step 3 terminates: obs is the reset's (-1), final_obs the last (3).
    assert [o.obs.tolist() for o in outs] == [[1.0], [2.0], [-1.0], [1.0]]
    assert [o.final_obs.tolist() for o in outs] == [[1.0], [2.0], [3.0], [1.0]]
    assert [float(o.reward) for o in outs] == [1.0, 2.0, 3.0, 1.0]
    assert [bool(o.terminated) for o in outs] == [False, False, True, False]
    assert not any(bool(o.truncated) for o in outs)
    assert int(outs[3].info["t"]) == 1


def test_time_limit_truncates_only_where_the_episode_did_not_terminate():
    env = TimeLimit(Scripted({"end": 3}), 2)
    key = jax.random.PRNGKey(0)
    state, _ = env.reset(key)
    state, _, _, term, trunc, _ = env.step(state, jnp.int32(0), key)
    assert (bool(term), bool(trunc), int(state.t)) == (False, False, 1)
    state, obs, _, term, trunc, _ = env.step(state, jnp.int32(0), key)
    assert (bool(term), bool(trunc), obs.tolist()) == (False, True, [2.0])
    # Terminal at the limit's step: terminated, not truncated (skip to t = 3 at step 2).
    state, _ = env.reset(key)
    state, *_ = env.step(state, jnp.int32(0), key)
    state, _, _, term, trunc, _ = env.step(state, jnp.int32(1), key)
    assert (bool(term), bool(trunc)) == (True, False)
    # Auto-reset restarts the step count.
    state, _ = env.reset(key)
    for _ in range(2):
        state, out = auto_reset_step(env, state, jnp.int32(0), key)
    assert bool(out.truncated) and out.obs.tolist() == [-1.0] and int(state.t) == 0


def test_time_limit_refuses_a_bad_limit():
    with pytest.raises(ConfigError, match=r"max_episode_steps=0"):
        TimeLimit(Scripted(), 0)


def test_batched_step_resets_each_env_on_its_own():
    env = Scripted({"end": 2})
    states, obs = batched_reset(env, jax.random.PRNGKey(0), 3)
    assert obs.shape == (3, 1)
    step = jax.jit(lambda s, a, k: batched_step(env, s, a, k))
    # Env 0 acts 0 (ends at step 2), env 1 acts 1 (t = 2 at once: ends), env 2 acts 0.
    states, out = step(states, jnp.array([0, 1, 0], jnp.int32), jax.random.PRNGKey(1))
    assert out.terminated.tolist() == [False, True, False]
    assert out.obs[:, 0].tolist() == [1.0, -1.0, 1.0]
    assert out.final_obs[:, 0].tolist() == [1.0, 2.0, 1.0]
    assert states.tolist() == [1, 0, 1]


def test_make_jax_env_applies_env_config_time_limit():
    env = make_jax_env(Scripted, {"end": 100, "max_episode_steps": 5})
    assert isinstance(env, TimeLimit) and env.max_episode_steps == 5 and env.env.end == 100
    assert not isinstance(make_jax_env(Scripted, {}), TimeLimit)


def test_a_registered_jax_env_class_resolves_to_the_jax_backend():
    register_env("scripted-jax-env", Scripted)
    spec = resolve_env("scripted-jax-env", {"end": 4})
    assert spec.backend == "jax"
    obs_space, act_space = env_spaces(spec)
    assert obs_space == Scripted().observation_space and act_space == gym.spaces.Discrete(2)
    assert jax_env_of(spec).end == 4
    # The class itself too.
    assert resolve_env(Scripted).backend == "jax"


def test_the_host_wrapper_steps_the_jax_env_as_a_gymnasium_env():
    env = JaxGymEnv(make_jax_env(Scripted, {"max_episode_steps": 2, "end": 10}))
    obs, _ = env.reset(seed=0)
    assert obs.tolist() == [-1.0]
    assert env.step(0)[1:4] == (1.0, False, False)
    obs, reward, term, trunc, _ = env.step(0)
    assert (obs.tolist(), reward, term, trunc) == ([2.0], 2.0, False, True)


def test_the_host_wrapper_takes_a_reset_that_writes_python_numbers():
    """gymnax's reset writes ``time=0``: the host wrapper (evaluation of a JAX env, as DQN's)
    makes such leaves strong arrays, so its step compiles once."""

    class PythonNumbers(Scripted):
        def reset(self, key):
            return (0, 0.5), jnp.full((1,), -1.0, jnp.float32)

        def step(self, state, action, key):
            t, x = state
            t2, obs, reward, term, trunc, info = super().step(t, action, key)
            return (t2, x * 2), obs, reward, term, trunc, info

    env = JaxGymEnv(PythonNumbers())
    env.reset(seed=0)
    t, x = env._state
    assert (t.dtype, x.dtype) == (jnp.int32, jnp.float32)
    assert not (t.weak_type or x.weak_type)
    for _ in range(3):
        env.step(0)
    assert env._step._cache_size() == 1 and int(env._state[0]) == 3


def test_the_host_wrapper_keeps_a_dict_observation_a_dict_of_arrays():
    """Jumanji's and the action-masking envs' observations are Dicts: on the host (evaluation)
    they stay dicts of arrays, which gymnasium's vector env stacks per key."""

    class DictObs(Scripted):
        def __init__(self, config=None):
            super().__init__(config)
            self.observation_space = gym.spaces.Dict(
                {
                    "t": gym.spaces.Box(-1e6, 1e6, (1,), np.float32),
                    "mask": gym.spaces.MultiBinary(2),
                }
            )

        def reset(self, key):
            state, obs = super().reset(key)
            return state, {"t": obs, "mask": jnp.ones(2, jnp.int8)}

        def step(self, state, action, key):
            state, obs, reward, term, trunc, info = super().step(state, action, key)
            return state, {"t": obs, "mask": jnp.ones(2, jnp.int8)}, reward, term, trunc, info

    vector = gym.vector.SyncVectorEnv([lambda: JaxGymEnv(DictObs()) for _ in range(2)])
    obs, _ = vector.reset(seed=0)
    assert obs["t"].tolist() == [[-1.0], [-1.0]] and obs["mask"].shape == (2, 2)
    obs, reward, *_ = vector.step(np.array([0, 1]))
    assert obs["t"].tolist() == [[1.0], [2.0]] and reward.tolist() == [1.0, 2.0]
    single = JaxGymEnv(DictObs())
    assert single.observation_space.contains(single.reset(seed=0)[0])


def test_the_host_wrapper_compiles_its_step_once_whatever_integer_type_an_action_is():
    env = JaxGymEnv(make_jax_env(Scripted, {"end": 100}))
    env.reset(seed=0)
    for action in (1, np.int64(1), np.ones((), np.int32), jnp.int32(1), True):
        env.step(action)
    assert env._step._cache_size() == 1


class NotAnEnv:
    def __init__(self, config=None):
        pass


class Broken(JaxEnv):
    def __init__(self):  # takes no config
        pass


def test_bad_jax_envs_are_refused_naming_what_is_wrong():
    with pytest.raises(ConfigError, match=r"does not follow rljax's JaxEnv protocol"):
        make_jax_env(NotAnEnv, {}, "not-an-env")
    with pytest.raises(ConfigError, match=r"define __init__\(self, config=None\)"):
        make_jax_env(Broken, {})


class Misfit(Scripted):
    """Scripted with one protocol mistake, chosen by ``config["mistake"]``."""

    def reset(self, key):
        state, obs = super().reset(key)
        return (state, jnp.zeros(3)) if self.mistake == "obs" else (state, obs)

    def step(self, state, action, key):
        out = super().step(state, action, key)
        if self.mistake == "reward":
            return (*out[:2], out[2][None], *out[3:])
        return out[:5] if self.mistake == "count" else out

    def __init__(self, config=None):
        super().__init__(config)
        self.mistake = (config or {}).get("mistake")


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        ("obs", r"reset\(\) returned an observation of shape \(3,\); its observation_space"),
        ("reward", r"step\(\)'s reward has shape \(1,\); it must be a scalar"),
        ("count", r"step\(\) returned 5 values; the protocol's is \(state, obs, reward"),
    ],
)
def test_a_user_env_that_breaks_the_protocol_is_named_when_built(mistake, message):
    """Was: a ScopeParamShapeError from Flax, a broadcast error or an unpacking error from
    inside the compiled rollout, naming neither the env nor the space."""
    with pytest.raises(ConfigError, match=r"the JAX env 'Misfit': " + message):
        make_jax_env(Misfit, {"mistake": mistake})
    make_jax_env(Misfit, {})  # the same class without the mistake builds


class Composite(Scripted):
    """Scripted with a Dict or Tuple action space, whose step reads the action's parts."""

    def __init__(self, config=None):
        super().__init__(config)
        discrete, box = gym.spaces.Discrete(2), gym.spaces.Box(-1, 1, (2,), np.float32)
        if (config or {}).get("tuple"):
            self.action_space = gym.spaces.Tuple((discrete, box))
        else:
            self.action_space = gym.spaces.Dict({"a": discrete, "b": box})

    def step(self, state, action, key):
        a, b = (action[0], action[1]) if isinstance(action, tuple) else (action["a"], action["b"])
        return super().step(state, a, key)[:2] + (b.sum(), state >= 3, jnp.asarray(False), {})


@pytest.mark.parametrize("tuple_space", [False, True])
def test_the_protocol_check_traces_composite_action_spaces(tuple_space):
    """A Dict or Tuple action space is traced as its parts (a float scalar action made such
    envs fail the check, which they passed before it)."""
    env = make_jax_env(Composite, {"tuple": tuple_space})
    assert isinstance(env.action_space, (gym.spaces.Dict, gym.spaces.Tuple))


def test_a_creator_function_of_a_jax_env_says_to_register_the_class():
    from rljax.algorithms.ppo import PPOConfig

    register_env("scripted-by-lambda", lambda config: Scripted(config))
    config = PPOConfig().environment("scripted-by-lambda")
    with pytest.raises(ConfigError, match=r"Scripted, not a gymnasium.Env but a JAX env: register"):
        config.build_algo()


def test_rljax_cartpole_steps_as_gymnasiums_cartpole():
    import gymnasium

    from rljax.env.jax_env import TimeLimit, make_jax_env

    env = make_jax_env("rljax:CartPole-v1", {})
    assert isinstance(env, TimeLimit) and env.max_episode_steps == 500
    assert env.observation_space.shape == (4,) and env.action_space == gym.spaces.Discrete(2)
    reference = gymnasium.make("CartPole-v1").unwrapped
    reference.reset(seed=0)
    rng = np.random.default_rng(0)
    terminated_seen = 0
    for _ in range(100):
        state = rng.uniform(-0.25, 0.25, 4).astype(np.float32)
        state[2] = rng.uniform(-0.22, 0.22)  # near the 12-degree limit: some steps end
        action = int(rng.integers(2))
        reference.state = state.astype(np.float64)
        reference.steps_beyond_terminated = None  # each step is from a fresh state
        obs, reward, terminated, _, _ = reference.step(action)
        _, got, got_reward, got_terminated, got_truncated, _ = env.env.step(
            jnp.asarray(state), action, jax.random.PRNGKey(0)
        )
        np.testing.assert_allclose(np.asarray(got), obs, atol=1e-6)
        assert float(got_reward) == reward and bool(got_terminated) == terminated
        assert not bool(got_truncated)
        terminated_seen += terminated
    assert 0 < terminated_seen < 100
    _, first = env.env.reset(jax.random.PRNGKey(3))
    assert np.all(np.abs(np.asarray(first)) <= 0.05)
    assert make_jax_env("rljax:CartPole-v1", {"max_episode_steps": 20}).max_episode_steps == 20
    with pytest.raises(ConfigError, match="takes no env_config but max_episode_steps"):
        make_jax_env("rljax:CartPole-v1", {"gravity": 1.0})
    with pytest.raises(ConfigError, match=r"rljax:Pong is not one of rljax's JAX envs"):
        make_jax_env("rljax:Pong", {})


def test_next_step_reset_resets_on_the_step_after_the_end():
    """Off-policy algorithms' auto-reset: the ending step returns the last observation and its
    flags; the next step resets (reward 0, not done, the action ignored), then steps resume."""
    from rljax.env.jax_env import next_step_reset_step

    env = Scripted()
    key = jax.random.PRNGKey(0)
    state, _ = env.reset(key)
    outs, ended = [], jnp.asarray(False)
    for _ in range(5):
        state, out = next_step_reset_step(env, state, jnp.int32(0), key, ended)
        ended = out.terminated | out.truncated
        outs.append(out)
    assert [o.obs.tolist() for o in outs] == [[1.0], [2.0], [3.0], [-1.0], [1.0]]
    assert [float(o.reward) for o in outs] == [1.0, 2.0, 3.0, 0.0, 1.0]
    assert [bool(o.terminated) for o in outs] == [False, False, True, False, False]
    assert int(outs[3].info["t"]) == 0  # the reset's row: zeroed info


def test_rljax_pendulum_steps_as_gymnasiums_pendulum():
    import gymnasium

    env = make_jax_env("rljax:Pendulum-v1", {})
    assert isinstance(env, TimeLimit) and env.max_episode_steps == 200
    assert env.action_space == gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    reference = gymnasium.make("Pendulum-v1").unwrapped
    reference.reset(seed=0)
    state = jnp.asarray(reference.state, jnp.float32)
    rng = np.random.default_rng(0)
    for _ in range(50):
        action = rng.uniform(-3, 3, (1,)).astype(np.float32)  # clipped to [-2, 2] by both
        obs, reward, *_ = reference.step(action)
        state, got, got_reward, term, trunc, _ = env.env.step(state, jnp.asarray(action), None)
        np.testing.assert_allclose(np.asarray(got), obs, atol=1e-4)
        assert float(got_reward) == pytest.approx(reward, abs=1e-4)
        assert not bool(term) and not bool(trunc)
    _, first = env.env.reset(jax.random.PRNGKey(3))
    assert first.shape == (3,) and abs(float(first[0]) ** 2 + float(first[1]) ** 2 - 1) < 1e-5


def test_rljax_breakout_minatar_by_hand():
    from rljax.env.jax_adapters.minatar import BreakoutState

    env = make_jax_env("rljax:Breakout-MinAtar", {})
    assert isinstance(env, TimeLimit) and env.max_episode_steps == 1000
    assert env.observation_space.shape == (10, 10, 4) and env.action_space.n == 3
    inner = env.env
    state, obs = inner.reset(jax.random.PRNGKey(0))
    obs = np.asarray(obs)
    assert obs[9, 4, 0] == 1 and obs[..., 0].sum() == 1  # the paddle, bottom row, column 4
    assert obs[..., 3].sum() == 30 and obs[1:4, :, 3].all()  # rows 1-3 of bricks
    key = jax.random.PRNGKey(0)

    full = jnp.zeros((10, 10), bool).at[1:4, :].set(True)
    empty = jnp.zeros((10, 10), bool)

    def at(y, x, d, pos, strike=False, bricks=full):
        i = jnp.int32
        return BreakoutState(i(y), i(x), i(d), i(pos), bricks, jnp.asarray(strike), i(y), i(x))

    def ball(s):
        return int(s.ball_y), int(s.ball_x), int(s.ball_dir)

    # Up-left against the left wall: held in column 0 and turned up-right, it enters the brick
    # at (3, 0), which breaks (reward 1); the ball turns down-right and stays on row 4.
    s, obs, r, term, _, _ = inner.step(at(4, 0, 0, 4), jnp.int32(0), key)
    assert (int(s.ball_y), int(s.ball_x), int(s.ball_dir)) == (4, 0, 2)
    assert float(r) == 1.0 and bool(s.strike) and not bool(s.bricks[3, 0])
    assert int(np.asarray(obs)[..., 3].sum()) == 29 and not bool(term)
    # Down-right onto the bottom row, the paddle moved right (action 2) under the ball's new
    # cell: it goes back up-left and stays on row 8; under the ball's old cell (column 5) it
    # turns up-right; with the paddle elsewhere the episode ends.
    s, _, r, term, _, _ = inner.step(at(8, 5, 2, 5), jnp.int32(2), key)
    assert (int(s.ball_y), int(s.ball_x), int(s.ball_dir), int(s.pos)) == (8, 6, 0, 6)
    assert float(r) == 0.0 and not bool(term)
    s, _, r, term, _, _ = inner.step(at(8, 5, 2, 5), jnp.int32(0), key)
    assert (int(s.ball_y), int(s.ball_x), int(s.ball_dir), int(s.pos)) == (8, 6, 1, 5)
    assert float(r) == 0.0 and not bool(term)
    s, _, _, term, _, _ = inner.step(at(8, 5, 2, 0), jnp.int32(1), key)
    assert bool(term) and int(s.pos) == 0
    # Off the top (up-right turns down-right); into the top-right corner, both turns at once.
    s, *_ = inner.step(at(0, 5, 1, 4, bricks=empty), jnp.int32(0), key)
    assert ball(s) == (0, 6, 2)
    s, *_ = inner.step(at(0, 9, 1, 4, bricks=empty), jnp.int32(0), key)
    assert ball(s) == (0, 9, 3)
    # Still inside the brick it struck (strike): the ball enters the next one without breaking it.
    s, _, r, *_ = inner.step(at(4, 5, 0, 4, strike=True), jnp.int32(0), key)
    assert ball(s) == (3, 4, 0) and float(r) == 0.0 and bool(s.bricks[3, 4]) and bool(s.strike)
    # On the bottom row with every brick gone: rows 1-3 are filled again as the paddle returns it.
    s, _, _, term, _, _ = inner.step(at(8, 5, 2, 6, bricks=empty), jnp.int32(0), key)
    assert ball(s) == (8, 6, 0) and int(s.bricks.sum()) == 30 and bool(s.bricks[1:4].all())
    assert not bool(term)


def test_a_jax_env_that_draws_itself_renders_rgb_array_frames():
    from rljax.env.jax_env import JaxGymEnv

    env = JaxGymEnv(make_jax_env("rljax:Breakout-MinAtar", {}))
    assert env.render_mode == "rgb_array" and env.render() is None  # before reset: nothing
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (160, 160, 3) and frame.dtype == np.uint8
    # 16 pixels a cell: the paddle (row 9, column 4) white, the bricks (rows 1-3, where the
    # ball starts on row 3) red.
    assert (frame[144:160, 64:80] == (230, 230, 230)).all()
    assert (frame[16:48, :, 0] == 200).all() and (frame[:16, :, 0] == 0).all()
    env.step(0)
    assert not np.array_equal(env.render(), frame)  # the ball moved
    # An env without render(state) has no render mode: recording refuses it by name.
    assert JaxGymEnv(Scripted()).render_mode is None
    from rljax.execution.video import rendering_env

    register_env("scripted-no-render", Scripted)
    with pytest.raises(ConfigError, match=r"JAX env 'scripted-no-render' does not draw itself"):
        rendering_env(resolve_env("scripted-no-render"))


@pytest.mark.slow
def test_evaluation_records_videos_of_a_jax_env(tmp_path):
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    from rljax.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("rljax:Breakout-MinAtar")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .evaluation(evaluation_duration=1)
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        result = algo.evaluate(record_video=tmp_path)
    (path,) = result["videos"]
    reader = imageio_ffmpeg.read_frames(path)
    meta = next(reader)
    frames = list(reader)
    assert meta["size"] == (160, 160)
    assert len(frames) == result["env_runners"]["episode_lens"][0] + 1


def test_rljax_breakout_minatar_starts_at_either_wall():
    from rljax.env.jax_adapters.minatar import BreakoutMinAtar

    env = BreakoutMinAtar()
    starts = {
        (int(s.ball_x), int(s.ball_dir))
        for s, _ in (env.reset(jax.random.PRNGKey(i)) for i in range(20))
    }
    assert starts == {(0, 2), (9, 3)}


def test_the_test_extra_installs_each_jax_env_library_as_its_extra_pins_it():
    # The suite runs the adapters' tests only where the libraries are installed: the test
    # extra must bring each of them, at the pins its own extra gives users.
    tomllib = pytest.importorskip("tomllib")
    pyproject = Path(__file__).parents[2] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    for name in ("gymnax", "jumanji", "brax", "jaxmarl", "pgx"):
        assert extras[name] and set(extras[name]) <= set(extras["test"]), name
