"""Env state as plain data: exact round trips, user-defined state, and clear refusals."""

import collections
import json

import gymnasium as gym
import numpy as np
import pytest

from rljax.env.state import EnvStateError, decode, encode, get_env_state, set_env_state


def test_encoding_round_trips_exactly_through_json():
    gen = np.random.default_rng(7)
    gen.random(3)
    value = {
        "a": np.array([[1.5, -0.0], [np.nan, 1e-300]]),
        "b": (1, 2.5, None, "s", True),
        "c": [np.float32(0.1), np.int64(-3)],
        "g": gen,
    }
    back = decode(json.loads(json.dumps(encode(value, "value"))))
    assert back["a"].dtype == np.float64 and back["a"].flags.writeable
    np.testing.assert_array_equal(back["a"], value["a"])
    assert np.signbit(back["a"][0, 1])  # -0.0 kept bit for bit
    assert back["b"] == (1, 2.5, None, "s", True)
    assert type(back["c"][0]) is np.float32 and back["c"][0] == np.float32(0.1)
    assert type(back["c"][1]) is np.int64
    assert back["g"].random() == gen.random()  # the generator continues where it was


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "MountainCar-v0", "Acrobot-v1"])
def test_classic_control_envs_continue_exactly_after_a_restore(env_id):
    a = gym.make(env_id)
    a.reset(seed=3)
    a.action_space.seed(0)
    for _ in range(7):
        a.step(a.action_space.sample())
    state = json.loads(json.dumps(get_env_state(a)))
    b = gym.make(env_id)
    b.reset(seed=99)  # somewhere else entirely
    set_env_state(b, state)
    actions = [a.action_space.sample() for _ in range(300)]
    for action in actions:  # through episode ends and resets, whose starts come from the RNG
        x, y = a.step(action), b.step(action)
        np.testing.assert_array_equal(x[0], y[0])
        assert x[1:4] == y[1:4]
        if x[2] or x[3]:
            np.testing.assert_array_equal(a.reset()[0], b.reset()[0])


def test_the_env_inside_the_sub_env_restarter_is_saved_too():
    from rljax.env.fault_tolerance import RestartingEnv

    a = RestartingEnv(lambda: gym.make("CartPole-v1"))
    a.reset(seed=1)
    a.step(0)
    state = get_env_state(a)
    assert [s["class"] for s in state][-1] == "CartPoleEnv"
    b = RestartingEnv(lambda: gym.make("CartPole-v1"))
    b.reset(seed=2)
    set_env_state(b, json.loads(json.dumps(state)))
    for action in (1, 1, 0, 1):
        np.testing.assert_array_equal(a.step(action)[0], b.step(action)[0])


class Counter(gym.Env):
    observation_space = gym.spaces.Box(0.0, 100.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.n = 0
        self.sim = object()  # not plain data, but get_state says what the state is

    def get_state(self):
        return {"n": self.n}

    def set_state(self, state):
        self.n = state["n"]

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.n += 1
        return np.array([self.n], np.float32), 0.0, False, False, {}


def test_an_env_with_get_state_is_saved_through_it():
    a = Counter()
    for _ in range(4):
        a.step(0)
    b = Counter()
    set_env_state(b, json.loads(json.dumps(get_env_state(a))))
    assert b.n == 4 and b.step(0)[0][0] == 5.0


def test_state_that_is_not_plain_data_is_refused_by_name():
    env = gym.make("CartPole-v1")
    env.unwrapped.engine = object()
    with pytest.raises(
        EnvStateError, match=r"CartPoleEnv\.engine holds a builtins\.object.*get_state"
    ):
        get_env_state(env)
    with pytest.raises(EnvStateError, match="layers are"):
        set_env_state(gym.make("CartPole-v1"), get_env_state(gym.make("CartPole-v1").unwrapped))


def test_types_are_kept_exactly_or_refused():
    import enum

    back = decode(json.loads(json.dumps(encode({"x": np.float64(0.1)}, "v"))))
    assert type(back["x"]) is np.float64  # not a (weak) Python float: numpy 2 promotes those
    Point = collections.namedtuple("Point", "x y")

    class Colour(enum.IntEnum):
        RED = 1

    for value in (Point(1, 2), collections.OrderedDict(a=1), Colour.RED, np.zeros(2, "i4,f4")):
        with pytest.raises(EnvStateError, match="^v "):
            encode(value, "v")
    with pytest.raises(EnvStateError, match="bit generator 'seed'"):
        decode({"__generator__": {"bit_generator": "seed"}})


class Holder(gym.Env):
    observation_space = gym.spaces.Box(-5.0, 5.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, attr, value):
        setattr(self, attr, value)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


@pytest.mark.parametrize(
    "attr, value, match",
    [
        ("inner", gym.make("CartPole-v1"), r"Holder\.inner holds another env"),
        ("sim", collections.Counter(), r"Holder\.sim holds a collections\.Counter"),
        ("policy", np.vectorize(abs), r"Holder\.policy holds a callable vectorize object"),
    ],
)
def test_state_that_would_be_skipped_silently_is_refused(attr, value, match):
    with pytest.raises(EnvStateError, match=match):
        get_env_state(Holder(attr, value))


def test_spaces_sampling_generators_are_saved():
    a, b = Holder("x", 0), Holder("x", 0)
    a.observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)  # per instance
    b.observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    a.reset(seed=1)
    a.observation_space.seed(4)
    a.step(0)
    b.observation_space.seed(9)
    set_env_state(b, json.loads(json.dumps(get_env_state(a))))
    for _ in range(3):
        np.testing.assert_array_equal(a.step(0)[0], b.step(0)[0])


class _OnlyGet(gym.Env):
    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def get_state(self):
        return {}


def test_get_state_without_set_state_is_refused_at_save():
    with pytest.raises(EnvStateError, match=r"defines get_state\(\) but not set_state"):
        get_env_state(_OnlyGet())


def _cartpole(config):
    return gym.make("CartPole-v1")


# ASYNC's worker processes take 9 s: in the slow tier.
@pytest.mark.parametrize("mode", ["SYNC", pytest.param("ASYNC", marks=pytest.mark.slow)])
def test_a_vector_env_saved_just_after_an_episode_end_continues_exactly(mode):
    # The saved moment has a sub-env whose episode has just ended: its next step must be the
    # auto-reset (inside an ASYNC worker that flag is a local variable the restore must redo).
    from rljax.env.vector import GymVectorHostEnv, resolve_env

    spec = resolve_env(_cartpole)
    a = GymVectorHostEnv(spec, 3, mode, seed=1)
    b = GymVectorHostEnv(spec, 3, mode, seed=2)
    try:
        a.reset()
        b.reset()
        ids = np.arange(3)
        for t in range(500):
            result = a.step(np.full(3, t % 2), ids)
            if result.terminated.any() or result.truncated.any():
                break
        ended = result.terminated | result.truncated
        state = json.loads(json.dumps(a.get_state()))
        b.set_state(state)
        for t in range(60):
            action = np.array([t % 3 == 0, 1, t % 2], int)
            x, y = a.step(action, ids), b.step(action, ids)
            np.testing.assert_array_equal(x.obs, y.obs)
            np.testing.assert_array_equal(x.reward, y.reward)
            np.testing.assert_array_equal(x.terminated | x.truncated, y.terminated | y.truncated)
            if t == 0:  # the sub-env that had ended was reset, with reward 0
                assert (y.reward[ended] == 0).all()
    finally:
        a.close()
        b.close()


class _BrokenGetState(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        pass

    def get_state(self):
        raise ValueError("no state today")

    def set_state(self, state):
        pass

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, False, False, {}


@pytest.mark.parametrize("mode", ["SYNC", "ASYNC"])
def test_an_env_failing_to_give_its_state_leaves_the_vector_env_working(mode):
    # In a worker, an exception would close its pipe: the failure must come back as an error
    # in the learner, and the sub-envs must go on stepping.
    from rljax.env.vector import GymVectorHostEnv, resolve_env

    env = GymVectorHostEnv(resolve_env(_BrokenGetState), 2, mode, seed=0)
    try:
        env.reset()
        with pytest.raises(EnvStateError, match="no state today"):
            env.get_state()
        assert env.step(np.zeros(2, int), np.arange(2)).reward.tolist() == [1.0, 1.0]
    finally:
        env.close()
