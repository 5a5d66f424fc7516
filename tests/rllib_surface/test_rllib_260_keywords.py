"""Every keyword of RLlib 2.60's config setters is taken, or refused with a reason, never
"unknown": a setting a ported script passes is one rljax knows, even where it changes nothing
here (a warning says so) or is refused (saying what to do instead). The only keywords rljax
does not know are those RLlib 2.60 refuses too (its deprecated names, which raise there)."""

from __future__ import annotations

import inspect
import logging
import warnings

import pytest

from rljax.algorithms.appo import APPOConfig
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.impala import IMPALAConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.sac import SACConfig
from rljax.utils.errors import ConfigError

SETTERS = (
    "api_stack",
    "callbacks",
    "checkpointing",
    "debugging",
    "env_runners",
    "environment",
    "evaluation",
    "experimental",
    "fault_tolerance",
    "framework",
    "learners",
    "multi_agent",
    "offline_data",
    "reporting",
    "resources",
    "rl_module",
    "training",
)


def _rllib_default(config, name):
    """RLlib's default for ``name`` (its deprecated names raise on access: None then)."""
    try:
        return getattr(config, name, None)
    except Exception:
        return None


def _rllib_refuses(cls, setter, name):
    """Whether RLlib 2.60's setter raises for ``name`` with a value other than its default."""
    for value in (1, True, "x"):
        try:
            getattr(cls(), setter)(**{name: value})
            return False
        except Exception as e:  # its deprecated names raise ValueError saying so
            if "deprecated" not in str(e):
                continue
            return True
    return False


@pytest.mark.slow  # imports RLlib itself (about 6 s)
def test_every_rllib_260_setter_keyword_is_known():
    rllib = pytest.importorskip("ray.rllib.algorithms")
    from ray.rllib.algorithms.appo import APPOConfig as RAPPO
    from ray.rllib.algorithms.bc import BCConfig as RBC
    from ray.rllib.algorithms.cql import CQLConfig as RCQL
    from ray.rllib.algorithms.dqn import DQNConfig as RDQN
    from ray.rllib.algorithms.impala import IMPALAConfig as RIMPALA
    from ray.rllib.algorithms.iql import IQLConfig as RIQL
    from ray.rllib.algorithms.marwil import MARWILConfig as RMARWIL
    from ray.rllib.algorithms.ppo import PPOConfig as RPPO
    from ray.rllib.algorithms.sac import SACConfig as RSAC
    from ray.rllib.algorithms.tqc import TQCConfig as RTQC

    from rljax.algorithms.bc import BCConfig
    from rljax.algorithms.cql import CQLConfig
    from rljax.algorithms.iql import IQLConfig
    from rljax.algorithms.marwil import MARWILConfig
    from rljax.algorithms.tqc import TQCConfig

    assert rllib is not None
    pairs = [(RPPO, PPOConfig), (RDQN, DQNConfig), (RSAC, SACConfig)]
    pairs += [(RIMPALA, IMPALAConfig), (RAPPO, APPOConfig), (RBC, BCConfig)]
    pairs += [(RMARWIL, MARWILConfig), (RCQL, CQLConfig), (RIQL, IQLConfig), (RTQC, TQCConfig)]
    unknown, checked = [], 0
    logging.disable(logging.WARNING)  # the one-time warnings of settings with no effect
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for rllib_cls, ours in pairs:
                defaults = rllib_cls()
                for setter in SETTERS:
                    params = inspect.signature(getattr(rllib_cls, setter)).parameters
                    for name in params:
                        if name in ("self", "kwargs", "args"):
                            continue
                        checked += 1
                        value = _rllib_default(defaults, name)
                        try:
                            getattr(ours(), setter)(**{name: value})
                        except ConfigError as e:
                            known_here = "unknown keyword" not in str(e)
                            if not known_here and not _rllib_refuses(rllib_cls, setter, name):
                                unknown.append(f"{rllib_cls.__name__}.{setter}({name})")
    finally:
        logging.disable(logging.NOTSET)
    assert checked > 1200  # every setter's keywords of ten algorithms
    assert unknown == []


def test_settings_rllib_260_moved_out_of_resources_are_set_where_they_went(caplog):
    # local_gpu_idx is .learners()'s own setting in RLlib's dicts: no "deprecated" warning.
    with caplog.at_level("WARNING", logger="rljax"):
        PPOConfig().update_from_dict({"local_gpu_idx": 0})
    assert not [r for r in caplog.records if "deprecated" in r.getMessage()]
    config = PPOConfig().resources(
        num_cpus_per_worker=2, num_learner_workers=0, num_gpus_per_learner_worker=0, num_gpus=0
    )
    assert config.num_cpus_per_env_runner == 2 and config.num_learners == 0
    with pytest.raises(ConfigError, match=r"unknown keyword 'num_cpus'.*num_cpus_per_worker"):
        PPOConfig().resources(num_cpus=1)
    with pytest.raises(ConfigError, match="xla_force_host_platform_device_count"):
        PPOConfig().resources(_fake_gpus=True)


def test_settings_rljax_does_not_read_warn_and_the_others_say_what_instead():
    # Nothing in rljax reads these: accepted, whatever the value (a warning says so).
    IMPALAConfig().training(learner_queue_timeout=10, timeout_s_sampler_manager=1.0)
    PPOConfig().training(vf_share_layers=False).reporting(keep_per_episode_custom_metrics=True)
    PPOConfig().reporting(log_gradients=True)  # the global norm is reported anyway
    # RLlib's CQL default (100): an iteration trains at least one batch here anyway.
    PPOConfig().reporting(min_train_timesteps_per_iteration=100)
    # At RLlib's defaults the others are accepted; other values say what rljax does instead.
    PPOConfig().env_runners(episode_lookback_horizon=1, merge_env_runner_states="training_only")
    # RLlib's SAC takes clip_actions in .training() as well: the environment's setting.
    assert SACConfig().training(clip_actions=False).clip_actions is False
    refused = [
        (lambda: PPOConfig().env_runners(episode_lookback_horizon=5), "stacked frames"),
        (lambda: PPOConfig().env_runners(broadcast_env_runner_states=False), "share"),
        (lambda: PPOConfig().training(lr_schedule=[[0, 1e-3]]), r"lr=\[\[timestep, value\]"),
        (lambda: IMPALAConfig().training(replay_proportion=0.5), "no batches are replayed"),
        (lambda: APPOConfig().training(minibatch_buffer_size=4), "num_epochs and minibatch"),
        (lambda: PPOConfig().environment(render_env=True), "record_video"),
        (lambda: DQNConfig().training(burn_in_len=4), "R2D2"),
        (lambda: APPOConfig().training(use_gae=False), "V-trace"),
    ]
    for make, match in refused:
        with pytest.raises(ConfigError, match=match):
            make()


def test_rllibs_dict_keys_of_resources_and_buffer_import_paths():
    """RLlib's ``update_from_dict`` takes ``.resources()`` keywords (``num_gpus``, and the names
    RLlib moved, with a warning), and ``replay_buffer_config``'s ``type`` may name a buffer by
    RLlib's import path (or the path a port writes). Was: unknown key / unsupported type."""
    config = PPOConfig().update_from_dict({"num_gpus": 0, "num_cpus_per_worker": 2, "lr": 1e-3})
    assert config.num_gpus_per_learner == 0 and config.num_cpus_per_env_runner == 2
    # A refusal leaves the config as it was, as the other setters do (was: the moved names and
    # SAC's forwarded clip_actions were set before the unknown key raised).
    before = PPOConfig().to_dict()
    for bad in (
        lambda c: c.resources(num_cpus_per_worker=3, bogus=1),
        lambda c: c.update_from_dict({"num_cpus_per_worker": 3, "bogus": 1}),
    ):
        config = PPOConfig()
        with pytest.raises(ConfigError, match="bogus"):
            bad(config)
        assert config.to_dict() == before
    sac = SACConfig()
    with pytest.raises(ConfigError, match="bogus"):
        sac.training(clip_actions=not sac.clip_actions, bogus=1)
    assert sac.clip_actions == SACConfig().clip_actions
    for given, kept in (
        ("ray.rllib.utils.replay_buffers.EpisodeReplayBuffer", "EpisodeReplayBuffer"),
        (
            "rljax.utils.replay_buffers.prioritized_episode_buffer.PrioritizedEpisodeReplayBuffer",
            "PrioritizedEpisodeReplayBuffer",
        ),
        (
            "ray.rllib.utils.replay_buffers.PrioritizedReplayBuffer",
            "PrioritizedEpisodeReplayBuffer",
        ),
    ):
        buffer = DQNConfig().training(replay_buffer_config={"type": given, "capacity": 100})
        assert buffer.replay_buffer_config["type"] == kept
    with pytest.raises(ConfigError, match="'os.path.EpisodeReplayBuffer'.*is not supported"):
        DQNConfig().environment("CartPole-v1").training(
            replay_buffer_config={"type": "os.path.EpisodeReplayBuffer", "capacity": 100}
        ).validate()
