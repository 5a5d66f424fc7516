"""Run with 2 host devices (``test_split_devices.py``): PPO on EnvPool's CartPole with the
learner on cpu:1 and acting on cpu:0, as the one-GPU setting puts them on a GPU and the CPU.
Prints JSON: whether the run fused, the devices of the state and of a batch, the env steps."""

import json

import jax

from rljax.algorithms.ppo import PPOConfig
from rljax.execution import build

cpu0, cpu1 = jax.devices("cpu")[:2]
real = build.devices


def split(config):
    real(config)  # its checks still run
    return build.Devices(learner_devices=[cpu1], mesh=None, runner_device=cpu0)


build.devices = split
config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=0, num_envs_per_env_runner=4, rollout_fragment_length=8)
    .training(train_batch_size_per_learner=32, minibatch_size=16, num_epochs=1)
    .rl_module(model_config={"fcnet_hiddens": [8]})
    .debugging(seed=0)
)
with config.build_algo() as algo:
    results = [algo.train() for _ in range(2)]
    leaf = jax.tree.leaves(algo.state)[0]
    print(
        json.dumps(
            {
                "fused": bool(algo.fused),
                "state_devices": sorted(str(d) for d in leaf.devices()),
                "batch_devices": sorted(str(d) for d in algo._batch_sharding.device_set),
                "env_steps": [r["env_runners"]["num_env_steps_sampled"] for r in results],
            }
        )
    )
