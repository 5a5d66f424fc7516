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


@pytest.mark.parametrize("mode", ["SYNC", "ASYNC"])
@pytest.mark.parametrize("how", ["class", "registered_lambda"])
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


def test_async_env_defined_in_an_unguarded_main_script(tmp_path):
    path = tmp_path / "user_script.py"
    path.write_text(textwrap.dedent(SCRIPT))
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("SCRIPT-BODY-RUN") == 1
    assert (
        "EPISODES 2" in proc.stdout
    )  # 2 sub-envs x 10 steps with 5-step episodes, one reset step each
