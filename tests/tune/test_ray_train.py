"""Learners across the processes of Ray Train's ``JaxTrainer`` (``rljax.tune.ray_train``, the Ray
route of docs/beyond-one-machine.md's "Learners across processes"): 2 workers x 1 CPU device
train PPO to the parameters of 1 process x 2 devices, with the same env-step counts; a process
group whose CPU collectives are not gloo's is refused by name.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from rljax import distributed
from rljax.algorithms.ppo import PPOConfig
from rljax.utils.errors import ConfigError
from rljax.utils.xla_options import with_host_devices

ROOT = Path(__file__).resolve().parents[2]
HAS_RAY = importlib.util.find_spec("ray") is not None
ITERS, BATCH = 2, 32
TIMEOUT_S = 240


def _config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=16)
        .training(train_batch_size=BATCH, minibatch_size=16, num_epochs=1, lr=1e-3)
        .learners(num_learners=2, same_actions_as_one_process=True, process_timeout_s=30)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3)
    )


# The reference: one process with 2 CPU devices, built from the same dict as the Ray workers.
_REFERENCE = """
import json, sys
from rljax.algorithms.ppo import PPOConfig
algo = PPOConfig.from_dict(json.loads(sys.argv[1])).build_algo()
for _ in range({iters}):
    result = algo.train()
algo.save_to_path(sys.argv[2])
print("STEPS", result["num_env_steps_sampled_lifetime"], result["env_runners"]["num_env_steps_sampled"])
algo.stop()
"""


def _params(ckpt: Path) -> dict[str, np.ndarray]:
    import flax.serialization

    data = (ckpt / "v-000001" / "state.msgpack").read_bytes()
    params = flax.serialization.msgpack_restore(data)["params"]
    return {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree.leaves_with_path(params)}


def test_a_group_without_gloo_collectives_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # As a process of 2 that a launcher initialized with other CPU collectives.
    monkeypatch.setattr(jax.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    before = jax.config.jax_cpu_collectives_implementation
    jax.config.update("jax_cpu_collectives_implementation", "mpi")
    try:
        with pytest.raises(ConfigError) as e:
            distributed.initialize(PPOConfig())
    finally:
        jax.config.update("jax_cpu_collectives_implementation", before)
    message = str(e.value)
    assert "jax_cpu_collectives_implementation='mpi'" in message
    assert "JAX_CPU_COLLECTIVES_IMPLEMENTATION=gloo" in message
    # With gloo the launcher's group is used as it is: JAX's process count, no second initialize.
    monkeypatch.setattr(jax.distributed, "initialize", lambda *a, **k: pytest.fail("initialized"))
    assert distributed.initialize(PPOConfig().learners(num_processes=4, process_id=3)) is True


def test_bad_counts_are_refused_before_ray_is_imported() -> None:
    from rljax.tune.ray_train import train_with_jax_trainer

    with pytest.raises(ConfigError, match="num_workers=0: allowed is an integer >= 1"):
        train_with_jax_trainer(_config(), num_workers=0, stop_iters=1)
    with pytest.raises(ConfigError, match="devices_per_worker=2.5"):
        train_with_jax_trainer(_config(), num_workers=2, stop_iters=1, devices_per_worker=2.5)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.skipif(not HAS_RAY, reason='Ray is not installed (pip install "rljax[ray]")')
def test_two_ray_train_workers_match_one_process(tmp_path: Path) -> None:
    import ray

    from rljax.tune.ray_train import train_with_jax_trainer

    config = _config()
    env = dict(os.environ)
    env["XLA_FLAGS"] = with_host_devices(2)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for var in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"):
        env.pop(var, None)
    one = tmp_path / "one"
    t0 = time.monotonic()
    # The one-process reference runs alongside the Ray run.
    ref = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _REFERENCE.format(iters=ITERS),
            json.dumps(config.to_dict()),
            str(one),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # address="local": a Ray instance of this test's own. Without it, ray.init() joins the
    # newest cluster this machine knows (/tmp/ray/ray_current_cluster), such as another
    # test's, and then refuses num_cpus.
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=80 << 20,
        runtime_env={"env_vars": {"PYTHONPATH": env["PYTHONPATH"]}},
    )
    try:
        result = train_with_jax_trainer(
            config, num_workers=2, stop_iters=ITERS, storage_path=tmp_path / "ray", name="ppo"
        )
        out, err = ref.communicate(timeout=TIMEOUT_S)
    finally:
        ray.shutdown()
        ref.kill()
    print(f"ray train run and reference: {time.monotonic() - t0:.1f}s")
    assert ref.returncode == 0, err[-3000:]
    # Env steps over both workers: the one-process run's (2 iterations x 32).
    assert out.split("STEPS")[1].split() == [str(ITERS * BATCH), str(BATCH)]
    assert result["num_env_steps_sampled_lifetime"] == ITERS * BATCH
    assert result["env_runners"]["num_env_steps_sampled"] == BATCH
    assert result["training_iteration"] == ITERS
    ckpt = Path(result["checkpoint_path"])
    assert (ckpt / "LATEST").exists()
    a, b = _params(one), _params(ckpt)
    assert len(a) == 6 and a.keys() == b.keys(), sorted(a)
    print("max |param difference|:", max(float(np.max(np.abs(b[k] - a[k]))) for k in a))
    for k in a:
        np.testing.assert_allclose(b[k], a[k], atol=1e-5, rtol=0, err_msg=k)
