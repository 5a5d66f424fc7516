"""``RLJAX_COMPILATION_CACHE``: compiled programs go to disk and a second process loads them."""

import os
import subprocess
import sys

import pytest

# A multi-agent env: stepped from Python, so every program is cacheable. (EnvPool's fused rollout
# names its EnvPool instance inside the program, so that one program compiles in each process.)
SCRIPT = """
from rljax.algorithms.ppo import PPOConfig
from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole
from rljax.examples.policy_mapping import policy_per_agent
algo = (
    PPOConfig()
    .environment(MultiAgentCartPole, env_config={"num_agents": 2})
    .multi_agent(policies=["p0", "p1"], policy_mapping_fn=policy_per_agent)
    .env_runners(num_envs_per_env_runner=2)
    .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
    .rl_module(model_config={"fcnet_hiddens": [16]})
    .debugging(seed=0)
    .build_algo()
)
algo.train()
algo.stop()
"""


@pytest.mark.slow
def test_second_process_loads_every_program_from_the_cache(tmp_path):
    cache = tmp_path / "xla"
    env = {**os.environ, "RLJAX_COMPILATION_CACHE": str(cache), "JAX_PLATFORMS": "cpu"}

    def run():
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return sorted(p.name for p in cache.iterdir())

    first = run()
    assert len(first) >= 3  # init, acting/rollout, update: each a cached program
    assert run() == first  # nothing new compiled: every program came from the cache
