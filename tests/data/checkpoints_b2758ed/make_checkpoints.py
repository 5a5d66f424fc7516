"""Writes the checkpoints of this folder: ``python make_checkpoints.py OUT_DIR`` (run at commit b2758ed)."""

import json
import sys
from pathlib import Path

import numpy as np

from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.sac import SACConfig

out = Path(sys.argv[1])
cfgs = {
    "ppo": PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_envs_per_env_runner=2)
    .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
    .rl_module(model_config={"fcnet_hiddens": [8, 8]})
    .debugging(seed=1),
    "dqn": DQNConfig()
    .environment("CartPole-v1")
    .env_runners(num_envs_per_env_runner=2)
    .training(train_batch_size=16, num_steps_sampled_before_learning_starts=32)
    .rl_module(model_config={"fcnet_hiddens": [8]})
    .debugging(seed=1),
    "sac": SACConfig()
    .environment("Pendulum-v1")
    .env_runners(num_envs_per_env_runner=2)
    .training(train_batch_size=16, num_steps_sampled_before_learning_starts=32)
    .rl_module(model_config={"fcnet_hiddens": [8]})
    .debugging(seed=1),
}
expect = {}
rng = np.random.default_rng(0)
for name, cfg in cfgs.items():
    algo = cfg.build_algo()
    algo.train()
    algo.save_to_path(out / name)
    obs = rng.uniform(-0.5, 0.5, size=(5, 3 if name == "sac" else 4)).astype(np.float32)
    acts = algo.compute_actions(obs, explore=False)
    expect[name] = {"obs": obs.tolist(), "actions": np.asarray(acts).tolist()}
    algo.stop()
(out / "expected_actions.json").write_text(json.dumps(expect, indent=1))
