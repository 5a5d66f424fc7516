"""rljax trials on a real two-node Ray cluster on this machine (``ray.cluster_utils.Cluster``):
placement from the trial's knobs, a node killed mid-run, and PBT exploiting rljax checkpoints.

One cluster (two nodes of 2 logical CPUs) serves every test of the module; the configs are tiny
(PPO on CartPole, fcnet [8], 64 steps an iteration), so the time is Ray's and JAX's start-up.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None,
        reason='Ray is not installed (pip install "rljax[ray]")',
    ),
]

BATCH = 64
# Each trial asks for 2 CPUs, its process's and its env runner's: one trial fills one node. (One
# env runner thread, not the fused rollout, so that later trials load the compiled programs
# from the compilation cache instead of compiling them again.)
TINY: dict[str, Any] = {
    "env": "CartPole-v1",
    "num_env_runners": 1,
    "num_cpus_per_env_runner": 1,
    "num_envs_per_env_runner": 2,
    "train_batch_size_per_learner": BATCH,
    "minibatch_size": 32,
    "num_epochs": 1,
    "model_config": {"fcnet_hiddens": [8]},
    "lr": 1e-3,
}
NODE_CPUS = 2
# The folder the trials' ray_node_gate callback reads (set by the cluster fixture).
_GATE: dict[str, Path] = {}
OBJECT_STORE = 80 << 20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head node and one worker node, each with 2 CPUs; the driver connected to it."""
    import ray
    from ray.cluster_utils import Cluster

    cache = tmp_path_factory.mktemp("xla_cache")
    gate = tmp_path_factory.mktemp("gate")
    # Ray's workers import the test's callback (ray_node_gate) from this folder.
    here = str(Path(__file__).parent)
    pythonpath = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    c = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": NODE_CPUS,
            "object_store_memory": OBJECT_STORE,
            "include_dashboard": False,
            # A stopped raylet is declared dead within ~2 s (the default takes ~15 s).
            "_system_config": {
                "health_check_initial_delay_ms": 0,
                "health_check_period_ms": 500,
                "health_check_failure_threshold": 3,
            },
        },
    )
    c.add_node(num_cpus=NODE_CPUS, object_store_memory=OBJECT_STORE)
    ray.init(
        address=c.address,
        log_to_driver=False,
        runtime_env={
            "env_vars": {
                "RLJAX_COMPILATION_CACHE": str(cache),
                "RLJAX_TEST_GATE_DIR": str(gate),
                "PYTHONPATH": pythonpath,
            }
        },
    )
    _GATE["dir"] = gate
    c.wait_for_nodes()
    try:
        yield c
    finally:
        ray.shutdown()
        c.shutdown()


# What KillTheNode acts on (Tune pickles its callbacks: they hold no cluster themselves).
_KILL: dict[str, Any] = {}


def _kill_the_node_on_the_first_checkpoint() -> None:
    from ray.util.placement_group import remove_placement_group

    if not _KILL["killed"]:  # free the other nodes, then stop the trial's node's raylet
        remove_placement_group(_KILL["blocker"])
        _KILL["cluster"].remove_node(_KILL["node"], allow_graceful=False)
        _KILL["killed"] = True


def _alive_node_ids() -> set[str]:
    import ray

    return {n["NodeID"] for n in ray.nodes() if n["Alive"]}


def test_two_trials_spread_over_both_nodes_from_the_cli(cluster, tmp_path, capsys):
    import yaml
    from ray import tune as ray_tune

    from rljax import cli
    from rljax.tune import ray_trainable

    # The knobs, as a placement group: the trial's process and its env runner, 1 CPU each.
    request = ray_trainable("PPO").default_resource_request(TINY)
    assert request.bundles == [{"CPU": 1.0}, {"CPU": 1.0}] and request.strategy == "STRICT_PACK"
    experiment = {
        "algo": "PPO",
        "param_space": {**TINY, "seed": {"grid_search": [0, 1]}},
        "tune_config": {"metric": "env_runners/episode_return_mean", "mode": "max"},
        "run_config": {
            "name": "spread",
            "storage_path": str(tmp_path),
            "stop": {"training_iteration": 1},
            "verbose": 0,
        },
    }
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(experiment))
    capsys.readouterr()
    code = cli.main(["tune", "--config", str(path), "--ray-address", cluster.address])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0, summary
    assert summary["num_trials"] == 2 and summary["num_errors"] == 0
    assert summary["ray_address"] == cluster.address
    assert summary["best_trial"]["training_iteration"] == 1
    # Tune's own record of the trials: each one's last result.
    results = ray_tune.ExperimentAnalysis(summary["experiment_path"]).results
    assert len(results) == 2
    nodes = [r["node_id"] for r in results.values()]
    # 2 CPUs a trial, 2 a node: the two trials run at once, one on each node (trials of 1 CPU
    # could share the head node).
    assert set(nodes) == _alive_node_ids() and len(set(nodes)) == 2
    assert sorted(r["config"]["seed"] for r in results.values()) == [0, 1]
    for r in results.values():
        assert r["training_iteration"] == 1
        assert r["num_env_steps_sampled_lifetime"] == BATCH


def test_a_killed_node_s_trial_resumes_from_its_checkpoint_on_another_node(cluster, tmp_path):
    import ray
    from ray import tune as ray_tune
    from ray.util.placement_group import placement_group
    from ray_node_gate import HoldOnTheDoomedNode

    from rljax.algorithms.algorithm import Algorithm
    from rljax.tune import ray_trainable
    from rljax.tune.ray_integration import CHECKPOINT_SUBDIR

    # Fill the two nodes, then add a third: the trial can only start there.
    blocker = placement_group([{"CPU": NODE_CPUS}] * 2, strategy="STRICT_SPREAD")
    ray.get(blocker.ready(), timeout=60)
    doomed = cluster.add_node(num_cpus=NODE_CPUS, object_store_memory=OBJECT_STORE)
    cluster.wait_for_nodes()
    doomed_id = doomed.node_id
    # The trial holds its second iteration while on the doomed node: the kill is always mid-run.
    (_GATE["dir"] / "hold_node").write_text(doomed_id)
    _KILL.update(cluster=cluster, node=doomed, blocker=blocker, killed=False)
    grid = ray_tune.Tuner(
        ray_trainable("PPO"),
        param_space={**TINY, "seed": 0, "callbacks_class": HoldOnTheDoomedNode},
        run_config=ray_tune.RunConfig(
            storage_path=str(tmp_path),
            stop={"training_iteration": 3},
            checkpoint_config=ray_tune.CheckpointConfig(checkpoint_frequency=1, num_to_keep=1),
            failure_config=ray_tune.FailureConfig(max_failures=1),
            callbacks=[_kill_callback()],
            verbose=0,
        ),
    ).fit()
    assert _KILL["killed"] and not grid.errors
    (result,) = grid
    rows = result.metrics_dataframe
    assert rows["node_id"].iloc[0] == doomed_id
    assert result.metrics["node_id"] != doomed_id
    assert result.metrics["node_id"] in _alive_node_ids()
    assert result.metrics["training_iteration"] == 3
    # Resumed from the rljax checkpoint of iteration 1 (from scratch it would count 2 x 64).
    assert result.metrics["num_env_steps_sampled_lifetime"] == 3 * BATCH
    assert result.metrics["iterations_since_restore"] < 3
    assert len(_alive_node_ids()) == 2
    # Ray's checkpoint directory holds an rljax checkpoint, which rljax loads as its own.
    algo = Algorithm.from_checkpoint(f"{result.checkpoint.path}/{CHECKPOINT_SUBDIR}")
    try:
        assert algo.iteration == 3 and algo.config.lr == TINY["lr"]
    finally:
        algo.stop()


def _kill_callback() -> Any:
    from ray import tune as ray_tune

    class KillTheNode(ray_tune.Callback):
        def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
            _kill_the_node_on_the_first_checkpoint()

    return KillTheNode()


def test_pbt_exploits_an_rljax_checkpoint(cluster, tmp_path):
    from ray import tune as ray_tune
    from ray.tune.schedulers import PopulationBasedTraining

    from rljax.tune import ray_trainable

    metric = "learners/default_policy/vf_loss"
    experiment_dirs: set[str] = set()

    class WhereTuneLogs(ray_tune.Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            experiment_dirs.add(trial.local_experiment_path)

    pbt = PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=1,
        hyperparam_mutations={"lr": [1e-3, 1e-4]},
        quantile_fraction=0.5,
        synch=True,
    )
    grid = ray_tune.Tuner(
        ray_trainable("PPO"),
        param_space={**TINY, "lr": ray_tune.grid_search([1e-3, 1e-4]), "seed": 0},
        tune_config=ray_tune.TuneConfig(
            metric=metric, mode="min", scheduler=pbt, reuse_actors=True
        ),
        run_config=ray_tune.RunConfig(
            storage_path=str(tmp_path),
            stop={"training_iteration": 2},
            callbacks=[WhereTuneLogs()],
            verbose=0,
        ),
    ).fit()
    assert len(grid) == 2 and not grid.errors
    # PBT's log: each exploit names the trial that cloned another's checkpoint.
    (experiment_dir,) = experiment_dirs
    log = (Path(experiment_dir) / "pbt_global.txt").read_text()
    exploits = [line for line in log.splitlines() if line.strip()]
    assert len(exploits) >= 1
    for r in grid:
        assert r.metrics["training_iteration"] == 2
        # Every trial, the exploiting one included, continued a run that counted 64 steps an
        # iteration from the start: its clone restored the donor's rljax state.
        rows = r.metrics_dataframe
        assert list(rows["num_env_steps_sampled_lifetime"]) == [
            BATCH * i for i in rows["training_iteration"]
        ]
