import logging
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

import rljax
from rljax.algorithms.ppo import PPOConfig
from rljax.env.vector import resolve_env


class CorridorEnv(gym.Env):
    """Walk right along a corridor of ``length`` cells; reward 1 at the end (terminated).

    Episodes are cut (truncated) after ``max_steps`` steps.
    """

    def __init__(self, config=None):
        config = config or {}
        self.length = int(config.get("length", 5))
        self.max_steps = int(config.get("max_steps", 20))
        self.observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        self.t += 1
        terminated = self.pos >= self.length
        truncated = not terminated and self.t >= self.max_steps
        obs = np.array([self.pos / self.length], np.float32)
        return obs, float(terminated), terminated, truncated, {}


def _config(env, mode, **runners):
    return (
        PPOConfig()
        .environment(env, env_config={"length": 3, "max_steps": 10})
        .env_runners(
            num_envs_per_env_runner=4,
            gym_env_vectorize_mode=mode,
            rollout_fragment_length=32,
            **runners,
        )
        .training(lr=3e-3, minibatch_size=32, num_epochs=4, vf_clip_param=None, use_kl_loss=False)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )


def test_backend_choice():
    assert resolve_env("CartPole-v1").backend == "envpool"
    assert resolve_env("MountainCarContinuous-v0").backend in ("envpool", "gymnasium")
    assert resolve_env(CorridorEnv).backend == "gymnasium"
    rljax.register_env("corridor-registered", lambda cfg: CorridorEnv(cfg))
    assert resolve_env("corridor-registered").backend == "gymnasium"


def test_runs_on_envpool_decides_as_resolve_env_quietly(caplog):
    """``runs_on_envpool`` (what the CPU client's automatic sizing reads before JAX starts)
    answers what ``resolve_env`` picks, without its warning and without raising."""
    from rljax.env.resolve import runs_on_envpool
    from rljax.utils import registry

    cases = [
        ("CartPole-v1", {}),
        ("Pong-v5", {"stack_num": 2}),
        ("FrozenLake-v1", {}),
        ("FrozenLake-v1", {"size": 8}),  # EnvPool's own setting
        # Settings EnvPool's task lacks: Atari's stay (gymnasium ALE's name, translated when
        # built), as does a setting neither env takes (refused when built); gymnasium's own
        # settings of the task move it to gymnasium.
        ("Pong-v5", {"frameskip": 4}),
        ("CartPole-v1", {"no_such_setting": 1}),
        ("FrozenLake-v1", {"desc": ["SF", "HG"], "is_slippery": False}),
        ("Acrobot-v1", {}),  # registered below: the registered env, not EnvPool's
        ("gymnax:CartPole-v1", {}),
        (CorridorEnv, {}),
    ]
    rljax.register_env("Acrobot-v1", lambda cfg: CorridorEnv(cfg))
    try:
        for env, env_config in cases:
            caplog.clear()
            with caplog.at_level(logging.WARNING):
                quiet = runs_on_envpool(env, env_config)
            assert not caplog.records, (env, caplog.records)
            assert quiet == (resolve_env(env, env_config).backend == "envpool"), (env, env_config)
        assert [runs_on_envpool(e, c) for e, c in cases[:7]] == [True] * 6 + [False]
        assert not runs_on_envpool("Acrobot-v1")
    finally:
        registry._REGISTRY.pop("Acrobot-v1", None)
    assert runs_on_envpool("Acrobot-v1")  # EnvPool's again
    # What resolve_env refuses is not EnvPool's, and asking does not raise.
    assert not runs_on_envpool("NoSuchEnv-v0") and not runs_on_envpool(None)
    assert not runs_on_envpool(lambda cfg: CorridorEnv(cfg))


@pytest.mark.parametrize("mode", ["SYNC", "ASYNC"])
@pytest.mark.parametrize("how", ["class", "registered_lambda"])
@pytest.mark.slow
def test_user_env_runs_and_learns_in_both_modes(mode, how):
    if how == "class":
        env = CorridorEnv
    else:
        rljax.register_env("corridor", lambda cfg: CorridorEnv(cfg))
        env = "corridor"
    algo = _config(env, mode).build_algo()
    try:
        returns = []
        for _ in range(6):
            result = algo.train()
            returns.append(result["env_runners"]["episode_return_mean"])
        assert result["env_runners"]["num_env_steps_sampled"] <= 128
        assert result["env_runners"]["num_episodes_lifetime"] > 10
        # The greedy policy walks right: 3 steps to the goal.
        assert algo.compute_single_action(np.array([0.0], np.float32)) == 1
        assert returns[-1] > 0.9
    finally:
        algo.stop()


@pytest.mark.slow
def test_envpool_async_on_the_fused_path_and_in_runner_threads():
    for runners in (0, 2):
        algo = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(
                num_env_runners=runners,
                num_envs_per_env_runner=8,
                gym_env_vectorize_mode="ASYNC",
                async_batch_size=4,
                rollout_fragment_length=50,
            )
            .training(minibatch_size=64, num_epochs=1)
            .debugging(seed=1)
            .build_algo()
        )
        try:
            r = algo.train()
            per_iter = 50 * 4 * max(1, runners)
            assert per_iter * 0.9 < r["env_runners"]["num_env_steps_sampled"] <= per_iter
            assert r["env_runners"]["num_episodes"] > 0
        finally:
            algo.stop()


SCRIPT = """
import gymnasium as gym
import numpy as np
import rljax
from rljax.algorithms.ppo import PPOConfig

print("SCRIPT-BODY-RUN")  # printed once: spawned workers must not re-run this script


class Blink(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.ones(2, np.float32) * 0.5, float(action), False, self.t >= 5, {}


rljax.register_env("blink", lambda cfg: Blink())
algo = (
    PPOConfig().environment("blink")
    .env_runners(num_envs_per_env_runner=2, gym_env_vectorize_mode="ASYNC", rollout_fragment_length=10)
    .training(minibatch_size=10, num_epochs=1).debugging(seed=0).build_algo()
)
r = algo.train()
algo.stop()
print("EPISODES", r["env_runners"]["num_episodes"])
"""


@pytest.mark.slow
def test_async_env_defined_in_an_unguarded_main_script(tmp_path):
    path = tmp_path / "user_script.py"
    path.write_text(textwrap.dedent(SCRIPT))
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("SCRIPT-BODY-RUN") == 1
    # 2 sub-envs x 10 env steps, episodes of 5 steps, reset in the step that ends them.
    assert "EPISODES 4" in proc.stdout


def test_envpool_env_config_is_checked_against_the_task_spec():
    import envpool

    from rljax.env.vector import envpool_config, envpool_kwargs
    from rljax.utils.errors import ConfigError

    # Numbers and booleans of the task's own settings pass, in their normal form: an int for a
    # float setting becomes a float, numpy scalars become Python ones.
    checked = envpool_config(
        "Pong-v5",
        {"img_height": np.int64(96), "repeat_action_probability": 0, "episodic_life": False},
    )
    assert checked == {"img_height": 96, "repeat_action_probability": 0.0, "episodic_life": False}
    assert (
        type(checked["img_height"]) is int and type(checked["repeat_action_probability"]) is float
    )
    # Atari's DQN preprocessing stays on unless env_config says otherwise.
    spec = resolve_env("Pong-v5", {"reward_clip": False})
    assert envpool_kwargs(spec) == {"episodic_life": True, "reward_clip": False}
    refused = [
        ("Pong-v5", {"base_path": "/"}, "env_config['base_path'] is a text setting"),
        ("Ant-v4", {"xml_file": "../../x.xml"}, "env_config['xml_file'] is a text setting"),
        ("Pong-v5", {"seed": 3}, "env_config['seed'] is set by rljax"),
        ("Pong-v5", {"batch_size": 1}, "env_config['batch_size'] is set by rljax"),
        ("Pong-v5", {"max_num_players": 4}, "env_config['max_num_players'] is set by rljax"),
        ("Pong-v5", {"stack_num": 0}, "env_config['stack_num']=0 (int); use an int in [1, 64]"),
        ("Pong-v5", {"frame_skip": 101}, "env_config['frame_skip']=101 (int); use an int in"),
        ("Pong-v5", {"noop_max": 4.0}, "env_config['noop_max']=4.0 (float)"),
        ("Pong-v5", {"gray_scale": "no"}, "env_config['gray_scale']='no' (str); use True or False"),
        ("Pong-v5", {"repeat_action_probability": 1.5}, "use a number in [0, 1]"),
        ("Ant-v4", {"ctrl_cost_weight": float("inf")}, "use a finite number"),
        ("Ant-v4", {"healthy_reward": True}, "env_config['healthy_reward']=True (bool)"),
        ("Ant-v4", {"reset_noise_scale": [0.1]}, "env_config['reset_noise_scale']=[0.1] (list)"),
        ("CartPole-v1", {"max_episode_steps": 2**31}, "use an int in [0, 2147483647]"),
        ("CartPole-v1", {"render_mode": "human"}, "'render_mode' is not a setting of EnvPool's"),
        ("Pong-v5", {"img_heigth": 96}, "did you mean 'img_height'?"),
    ]
    for task, env_config, words in refused:
        with pytest.raises(ConfigError) as info:
            envpool_config(task, env_config)
        assert words in str(info.value), (task, env_config, str(info.value))
    # Atari's text settings, the ones refused besides rljax's own, are the ROM's directory and
    # name.
    pong = envpool.make_spec("Pong-v5")
    text = {k for k, v in zip(pong._config_keys, pong.config, strict=True) if isinstance(v, str)}
    assert text == {"base_path", "task"}


def test_envpool_spaces_come_from_the_spec_without_building_an_env(monkeypatch):
    import envpool

    from rljax.env.vector import env_spaces, make_envpool
    from rljax.utils.errors import ConfigError

    def no_env(*args, **kwargs):
        raise AssertionError("an EnvPool env was built")

    monkeypatch.setattr(envpool, "make", no_env)
    obs, act = env_spaces(resolve_env("Pong-v5", {"img_height": 96, "stack_num": 2}))
    assert (obs.shape, obs.dtype, act.n) == ((96, 84, 2), np.uint8, 6)  # RLlib's [H, W, S]
    obs, act = env_spaces(resolve_env("Pendulum-v1"))
    assert (obs.shape, obs.dtype, act.shape) == ((3,), np.float32, (1,))
    monkeypatch.undo()
    # The spec's spaces are the env's; EnvPool's own refusals become ConfigErrors naming both.
    spec = resolve_env("Pong-v5", {"img_height": 96, "stack_num": 2})
    env = make_envpool(spec, 1, 1, 0)
    try:
        assert env.observation_space == env_spaces(spec)[0]
    finally:
        env.close()
    with pytest.raises(ConfigError, match=r"EnvPool could not describe 'Pong-v5' with env_config="):
        env_spaces(resolve_env("Pong-v5", {"mode": 99}))


@pytest.mark.parametrize("env_id", ["Ant-v2", "GymV26Environment-v0"])
def test_a_gymnasium_env_that_cannot_be_built_is_a_config_error(env_id):
    from rljax.env.vector import env_spaces
    from rljax.utils.errors import ConfigError

    with pytest.raises(ConfigError, match=f"building the env '{env_id}' failed: ImportError"):
        env_spaces(resolve_env(env_id))
    # A class without a config argument keeps its own advice.
    with pytest.raises(ConfigError, match=r"define __init__\(self, config=None\)"):
        env_spaces(resolve_env(type("NoConfig", (CorridorEnv,), {"__init__": lambda self: None})))


def test_envpool_atari_observations_are_stacked_last_on_every_path():
    """RLlib's Atari layout, [H, W, S], from EnvPool's [S, H, W] frames: the same pixels on the
    Python path, the XLA path and in the spaces."""
    import envpool
    import jax

    from rljax.env.vector import env_spaces, make_envpool

    spec = resolve_env("Pong-v5", {"stack_num": 2, "noop_max": 1})
    kwargs = {"episodic_life": True, "reward_clip": True, "stack_num": 2, "noop_max": 1}
    raw = envpool.make("Pong-v5", env_type="gymnasium", num_envs=2, seed=3, **kwargs)
    env = make_envpool(spec, 2, 2, 3)
    try:
        assert env_spaces(spec)[0].shape == env.observation_space.shape == (84, 84, 2)
        (obs, _), (ref, _) = env.reset(), raw.reset()
        np.testing.assert_array_equal(obs, np.moveaxis(ref, 1, -1))
        ids = np.arange(2, dtype=np.int32)
        obs, *_ = env.step(np.array([2, 3]), ids)
        ref, *_ = raw.step(np.array([2, 3]), ids)
        np.testing.assert_array_equal(obs, np.moveaxis(ref, 1, -1))
        handle, _, _, step = env.xla()
        raw_handle, _, _, raw_step = raw.xla()
        _, (obs, *_) = jax.jit(step)(handle, np.array([1, 1]), ids)
        _, (ref, *_) = jax.jit(raw_step)(raw_handle, np.array([1, 1]), ids)
        assert obs.shape == (2, 84, 84, 2)
        np.testing.assert_array_equal(obs, np.moveaxis(np.asarray(ref), 1, -1))
    finally:
        env.close()
        raw.close()
