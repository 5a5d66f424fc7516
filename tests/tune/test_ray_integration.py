"""An rljax algorithm as a trainable of Ray Tune itself: its resource request (checked with or
without Ray) and its errors. Trials on a real Ray cluster: tests/tune/test_ray_cluster.py."""

from __future__ import annotations

import importlib.util

import pytest

from rljax.tune.ray_integration import ray_trainable, trial_bundles
from rljax.utils.errors import ConfigError

HAVE_RAY = importlib.util.find_spec("ray") is not None


@pytest.mark.skipif(HAVE_RAY, reason="checks the message shown without Ray")
def test_without_ray_the_error_says_how_to_install_it():
    with pytest.raises(ImportError, match=r'pip install "ray\[tune\]"'):
        ray_trainable("PPO")


def test_a_trial_asks_for_what_its_knobs_name():
    # The trial's process (1 CPU), then one bundle per env runner.
    assert trial_bundles("PPO", {"num_env_runners": 2, "num_cpus_per_env_runner": 2}) == [
        {"CPU": 1.0},
        {"CPU": 2.0},
        {"CPU": 2.0},
    ]
    # num_learners=0: the learner runs in the trial's process, with its GPU and CPUs.
    assert trial_bundles("PPO", {"num_gpus_per_learner": 1, "num_cpus_per_learner": 3}) == [
        {"CPU": 3.0, "GPU": 1.0}
    ]
    # Learners' GPUs move into the first bundle (the process JAX runs them in), their CPUs stay.
    bundles = trial_bundles(
        "PPO", {"num_learners": 2, "num_gpus_per_learner": 0.5, "num_cpus_per_learner": 1}
    )
    assert bundles == [{"CPU": 1.0, "GPU": 1.0}, {"CPU": 1.0}, {"CPU": 1.0}]
    # A 0-CPU env runner asks for nothing: no empty bundle (Ray refuses them).
    assert trial_bundles("DQN", {"num_env_runners": 3, "num_cpus_per_env_runner": 0}) == [
        {"CPU": 1.0}
    ]


def test_bad_algorithm_names_and_settings_are_refused():
    with pytest.raises(ConfigError, match="not an rljax algorithm"):
        trial_bundles("NoSuchAlgo", {})
    with pytest.raises(ConfigError, match="num_env_runners"):
        trial_bundles("PPO", {"num_env_runners": -1})


@pytest.mark.skipif(not HAVE_RAY, reason='Ray Tune is not installed (pip install "rljax[ray]")')
def test_bad_algorithm_names_are_refused():
    with pytest.raises(ConfigError, match="not an rljax algorithm"):
        ray_trainable("NoSuchAlgo")
    with pytest.raises(ConfigError, match="an rljax algorithm class"):
        ray_trainable(dict)


@pytest.mark.skipif(not HAVE_RAY, reason='Ray Tune is not installed (pip install "rljax[ray]")')
def test_the_request_is_a_strict_pack_placement_group():
    from ray.tune import PlacementGroupFactory

    request = ray_trainable("PPO").default_resource_request(
        {"env": "CartPole-v1", "num_env_runners": 1, "__trial_info__": None}
    )
    assert isinstance(request, PlacementGroupFactory)
    assert request.bundles == [{"CPU": 1.0}, {"CPU": 1.0}]
    assert request.strategy == "STRICT_PACK"
    assert request.required_resources == {"CPU": 2.0}


@pytest.mark.skipif(not HAVE_RAY, reason="needs Ray")
def test_a_save_never_lands_in_a_checkpoint_folder_that_exists(tmp_path):
    # Ray persists a save into checkpoint_<index + 1>; after a paused trial resumes, its index
    # can be behind folders it wrote before (one PBT handed to another trial to clone).
    from ray.train._internal.storage import StorageContext

    from rljax.tune.ray_integration import _skip_taken_checkpoint_folders

    storage = StorageContext(
        storage_path=str(tmp_path), experiment_dir_name="exp", trial_dir_name="trial"
    )
    storage.current_checkpoint_index = 0
    for index in (1, 2, 4):
        (tmp_path / "exp" / "trial" / f"checkpoint_{index:06d}").mkdir(parents=True)
    _skip_taken_checkpoint_folders(storage)
    assert storage.current_checkpoint_index == 2  # the save goes to checkpoint_000003
    storage.current_checkpoint_index = 5
    _skip_taken_checkpoint_folders(storage)
    assert storage.current_checkpoint_index == 5  # checkpoint_000006 is free: unchanged
    _skip_taken_checkpoint_folders(None)  # a trainable outside Tune has no storage


def _experiment_file(tmp_path, param_space):
    import yaml

    path = tmp_path / "experiment.yaml"
    experiment = {"algo": "PPO", "param_space": param_space, "run_config": {"stop": {"a": 1}}}
    path.write_text(yaml.safe_dump(experiment))
    return str(path)


@pytest.mark.skipif(HAVE_RAY, reason="checks the message shown without Ray")
def test_without_ray_rljax_tune_ray_address_says_how_to_install_it(tmp_path, capsys):
    from rljax import cli

    path = _experiment_file(tmp_path, {"env": "CartPole-v1"})
    assert cli.main(["tune", "--config", path, "--ray-address", "auto"]) == 2
    assert 'pip install "ray[tune]"' in capsys.readouterr().err


@pytest.mark.skipif(not HAVE_RAY, reason='Ray Tune is not installed (pip install "rljax[ray]")')
def test_a_bad_file_fails_before_ray_is_contacted(tmp_path, capsys):
    import ray

    from rljax import cli

    path = _experiment_file(tmp_path, {"env": "CartPole-v1", "lr": {"unifrom": [0, 1]}})
    # No cluster listens at this address: the file's check comes first.
    code = cli.main(["tune", "--config", path, "--ray-address", "127.0.0.1:1"])
    assert code == 2
    assert "'unifrom' is not a search-space kind" in capsys.readouterr().err
    assert not ray.is_initialized()


@pytest.mark.skipif(not HAVE_RAY, reason='Ray Tune is not installed (pip install "rljax[ray]")')
def test_a_file_s_search_spaces_become_ray_tune_s():
    from ray import tune as ray_tune
    from ray.tune.search.sample import Categorical, Float, Integer

    from rljax.tune.ray_experiment import ray_search_spaces

    space = ray_search_spaces(
        {
            "lr": {"loguniform": [1e-4, 1e-2]},
            "model_config": {"fcnet_hiddens": {"choice": [[8], [16, 16]]}},
            "num_epochs": {"qrandint": {"lower": 1, "upper": 9, "q": 2}},
            "seed": {"grid_search": [0, 1]},
            "env": "CartPole-v1",
        },
        ray_tune,
    )
    assert isinstance(space["lr"], Float) and (space["lr"].lower, space["lr"].upper) == (
        1e-4,
        1e-2,
    )
    assert isinstance(space["model_config"]["fcnet_hiddens"], Categorical)
    assert space["model_config"]["fcnet_hiddens"].categories == [[8], [16, 16]]
    assert isinstance(space["num_epochs"], Integer) and space["num_epochs"].upper == 9
    assert space["seed"] == {"grid_search": [0, 1]} and space["env"] == "CartPole-v1"
