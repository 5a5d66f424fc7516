"""A script that trains and ends without ``algo.stop()`` (as many of RLlib's do) exits with code
0: the algorithms still live at interpreter exit are stopped then, before JAX's backends and the
runner and learner threads are torn down.

Each case is one script in a subprocess: build a tiny algorithm, train one iteration, return.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CONFIGS = {
    "PPO": (
        "from rljax.algorithms.ppo import PPOConfig as Config",
        '.environment("CartPole-v1")'
        ".training(train_batch_size_per_learner=32, minibatch_size=32, num_epochs=1)",
    ),
    "APPO": (
        "from rljax.algorithms.appo import APPOConfig as Config",
        '.environment("CartPole-v1").training(train_batch_size_per_learner=32)',
    ),
    "IMPALA": (
        "from rljax.algorithms.impala import IMPALAConfig as Config",
        '.environment("CartPole-v1").training(train_batch_size_per_learner=32)',
    ),
    "DQN": (
        "from rljax.algorithms.dqn import DQNConfig as Config",
        '.environment("CartPole-v1")'
        ".training(train_batch_size=32, num_steps_sampled_before_learning_starts=32)",
    ),
    "SAC": (
        "from rljax.algorithms.sac import SACConfig as Config",
        '.environment("Pendulum-v1")'
        ".training(train_batch_size=32, num_steps_sampled_before_learning_starts=32)",
    ),
    "TD3": (
        "from rljax.algorithms.td3 import TD3Config as Config",
        '.environment("Pendulum-v1")'
        ".training(train_batch_size=32, num_steps_sampled_before_learning_starts=32)",
    ),
    "multi-agent PPO": (
        "from rljax.algorithms.ppo import PPOConfig as Config\n"
        "from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole\n"
        "from rljax.examples.policy_mapping import policy_per_agent",
        '.environment(MultiAgentCartPole, env_config={"num_agents": 2})'
        '.multi_agent(policies=["p0", "p1"], policy_mapping_fn=policy_per_agent)'
        ".training(train_batch_size_per_learner=32, minibatch_size=32, num_epochs=1)",
    ),
}

SCRIPT = """
{imports}
algo = (
    Config(){config}
    .env_runners(num_env_runners={runners}, num_envs_per_env_runner=2, rollout_fragment_length=16)
    .learners(num_learners={learners})
    .rl_module(model_config={{"fcnet_hiddens": [8]}})
    .debugging(seed=0)
    .build_algo()
)
print("trained", algo.train()["training_iteration"], flush=True)
# Returns without algo.stop().
"""


def _run(algo: str, runners: int, learners: int) -> subprocess.CompletedProcess[str]:
    imports, config = CONFIGS[algo]
    script = SCRIPT.format(imports=imports, config=config, runners=runners, learners=learners)
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    return subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )


def _check(algo: str, runners: int, learners: int) -> None:
    proc = _run(algo, runners, learners)
    assert "trained 1" in proc.stdout, proc.stderr[-3000:]
    assert "terminate called" not in proc.stderr, proc.stderr[-3000:]
    assert "FATAL" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])


# APPO with a runner thread and a learner thread: the case that aborted (exit 134).
def test_appo_with_runner_and_learner_threads_exits_cleanly_without_stop():
    _check("APPO", 1, 1)


@pytest.mark.slow
@pytest.mark.parametrize(
    "algo, runners, learners",
    [
        (algo, runners, learners)
        for algo in CONFIGS
        for runners in (0, 1)
        for learners in (0, 1)
        if (algo, runners, learners) != ("APPO", 1, 1)
    ],
)
def test_every_algorithm_and_runner_mode_exits_cleanly_without_stop(algo, runners, learners):
    _check(algo, runners, learners)
