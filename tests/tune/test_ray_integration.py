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
