"""The one validation pass of ``AlgorithmConfig``: every setting on its own (its declared
check), then every combination, before anything is built or compiled.

``AlgorithmConfig.validate()`` and its parts call these functions; subclasses extend
``validate()`` (calling ``super().validate()`` first) and may override the parts it calls
through the config (``_check_batch_division``, ``_validate_multi_agent``).
"""

from __future__ import annotations

from typing import Any

from rljax.algorithms.config_checks import MAX_EVALUATION_EPISODES
from rljax.core.rl_module.multi_rl_module import MultiRLModuleSpec
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.utils.errors import ConfigError, closest
from rljax.utils.search_space import find_search_spaces, key_path


def check_complete_episodes(config: Any, spec: Any = None) -> None:
    """``batch_mode="complete_episodes"``: single-agent, non-recurrent PPO on one learner,
    its env stepped by runner threads (not a JAX env, which lives inside the program)."""
    if config.batch_mode != "complete_episodes":
        return
    why = None
    if config.learns_offline:
        why = f"{config.algo_name}, which learns from offline data (it samples nothing)"
    elif not config.samples_complete_episodes:
        why = f"{config.algo_name}, which samples fixed-length fragments"
    elif config.is_multi_agent:
        why = "a multi-agent config"
    elif config.model_config.use_lstm:
        why = "use_lstm=True (recurrent PPO trains on fixed-length sequences)"
    elif config.num_learner_shards > 1:
        why = f"{config.num_learner_shards} learners"
    elif config.env_to_module_connector is not None:
        # An episode's steps may span updates, each acted on under the connectors' state of
        # its time, while the update transforms every row with one state.
        why = "env_to_module_connector (an episode's steps span connector states)"
    elif spec is not None and spec.backend == "jax":
        why = f"the JAX env {spec.name!r} (its steps run inside the training program)"
    if why is not None:
        raise ConfigError(
            f"batch_mode='complete_episodes' with {why}: batches of whole episodes train "
            "single-agent PPO (no use_lstm, no env-to-module connectors) on one learner, with an "
            "EnvPool or gymnasium env; "
            "use batch_mode='truncate_episodes' (the default)"
        )


def validate(config: Any) -> None:
    """``AlgorithmConfig.validate()``: checks every value and combination; raises
    ``ConfigError`` naming what to change.

    A config holding search spaces is refused, naming them (``search_space()``). The parts a
    subclass may change (``_check_batch_division``, ``_validate_multi_agent``) are called
    through the config's methods.
    """
    from rljax.env.jax_multi_agent import jax_multi_agent_creator
    from rljax.env.vector import envpool_config, resolve_env

    refuse_search_spaces(config)
    check_settings(config)
    if config.input_ is not None and not config.learns_offline:
        raise ConfigError(
            f"offline_data(input_={config.input_!r}): {config.algo_name} samples its env; "
            "BC, MARWIL (rljax.algorithms.marwil) and CQL (rljax.algorithms.cql) learn from offline data"
        )
    if config.offline_evaluation_interval and not config.evaluates_offline_loss:
        raise ConfigError(
            f"evaluation(offline_evaluation_interval={config.offline_evaluation_interval}): "
            f"offline evaluation (the loss on offline data) is built for BC and MARWIL, not "
            f"{config.algo_name}; leave it None"
        )
    multi_agent_jax = jax_multi_agent_creator(config.env) is not None
    if multi_agent_jax and not config.is_multi_agent:
        raise ConfigError(
            f"env {config.env!r} is a multi-agent JAX env: configure it with "
            ".multi_agent(policies=..., policy_mapping_fn=...) and PPO"
        )
    envless = check_envless_spaces(config)
    # MultiAgentPPO resolves a multi-agent JAX env itself; an env-less offline config has none.
    skip_env = config._without_env or multi_agent_jax or envless
    spec = None if skip_env else resolve_env(config.env, config.env_config)
    if spec is not None and spec.backend == "envpool":
        envpool_config(spec.name, spec.env_config)  # before anything reads the env_config
    check_complete_episodes(config, spec)
    if config.learner_class is not None:
        learner = config.learner_class
        if learner.algorithm != config.algo_name:
            raise ConfigError(
                f"learner_class={learner.__name__} trains {learner.algorithm}; "
                f"{config.algo_name} takes no learner class (learner_class=None)"
            )
        if config.is_multi_agent:
            raise ConfigError(
                f"learner_class={learner.__name__}: learner classes train single-agent PPO; "
                "multi-agent PPO takes none yet (learner_class=None)"
            )
        if config.model_config.use_lstm:
            raise ConfigError(
                f"learner_class={learner.__name__} with use_lstm=True: a learner class's loss "
                "trains non-recurrent PPO only"
            )
    if config.model_config.use_lstm and not config.has_recurrent_policies:
        raise ConfigError(
            f"model_config use_lstm=True: {config.algo_name} has no recurrent policies yet; "
            "PPO, IMPALA and APPO do"
        )
    if config.env_to_module_connector is not None and not config.takes_env_to_module_connector:
        raise ConfigError(
            f"env_to_module_connector is set, but {config.algo_name} takes no connectors yet; "
            "PPO (single- and multi-agent), IMPALA and APPO do (set env_to_module_connector=None)"
        )
    if config.async_batch_size is not None and (
        config.async_batch_size > config.num_envs_per_env_runner
    ):
        raise ConfigError(
            f"async_batch_size={config.async_batch_size} exceeds num_envs_per_env_runner="
            f"{config.num_envs_per_env_runner}"
        )
    if (
        spec is not None
        and spec.backend == "envpool"
        and config.gym_env_vectorize_mode == "ASYNC"
        and config.envs_per_step == config.total_num_envs
    ):
        raise ConfigError(
            f"EnvPool ASYNC needs a batch smaller than num_envs_per_env_runner="
            f"{config.num_envs_per_env_runner}; raise num_envs_per_env_runner to 2 or more, or set async_batch_size"
        )
    if config.evaluation_duration == "auto" and not config.evaluation_parallel_to_training:
        raise ConfigError(
            "evaluation_duration='auto' evaluates for as long as the iteration trains: it "
            "needs evaluation_parallel_to_training=True (else give a number of "
            "evaluation_duration_unit)"
        )
    if (
        config.evaluation_duration_unit == "episodes"
        and isinstance(config.evaluation_duration, int)
        and config.evaluation_duration > MAX_EVALUATION_EPISODES
    ):
        raise ConfigError(
            f"evaluation_duration={config.evaluation_duration} episodes is more than "
            f"{MAX_EVALUATION_EPISODES:,}; lower it, or evaluate for a number of env steps "
            "(evaluation_duration_unit='timesteps')"
        )
    if not config.explore:
        raise ConfigError(
            "explore=False: training always samples from the policy here (PPO's and the "
            "off-policy algorithms' exploration); for a greedy evaluation leave "
            "evaluation_config's explore False (the default)"
        )
    overrides = config.evaluation_config or {}
    if config.is_multi_agent and (
        overrides.get("explore") or "env" in overrides or "env_config" in overrides
    ):
        raise ConfigError(
            "evaluation_config: a multi-agent evaluation is greedy on the training env; "
            "explore, env and env_config overrides are for single-agent runs"
        )
    if ("env" in overrides or "env_config" in overrides) and not config._without_env:
        resolve_env(
            overrides.get("env", config.env), overrides.get("env_config", config.env_config)
        )
    if config.sample_async and config.num_env_runners == 0:
        raise ConfigError(
            "sample_async=True needs runner threads (num_env_runners >= 1); with "
            "num_env_runners=0 sampling and learning alternate in the driver"
        )
    config._check_batch_division()
    config._validate_multi_agent()


def check_envless_spaces(config: Any) -> bool:
    """Whether ``config`` learns offline with no env, from ``environment(observation_space=...,
    action_space=...)`` alone; the spaces are refused where they cannot serve (an online
    algorithm, one space of the two, a multi-agent config, an evaluation needing an env)."""
    given = [n for n in ("observation_space", "action_space") if getattr(config, n) is not None]
    if not given:
        return False
    if config.is_multi_agent:
        raise ConfigError(
            f"environment({'=..., '.join(given)}=...): a multi-agent config's spaces are each "
            "policy's (PolicySpec(observation_space=..., action_space=...))"
        )
    if config.env is not None:
        return False  # the env's spaces must match them (checked when the env is built)
    if not config.learns_offline:
        raise ConfigError(
            f"environment({'=..., '.join(given)}=...) with no env: {config.algo_name} samples "
            "its env, so give one (environment('CartPole-v1')); the spaces alone serve BC, "
            "MARWIL, CQL and IQL learning from offline data"
        )
    if len(given) < 2:
        missing = ({"observation_space", "action_space"} - set(given)).pop()
        raise ConfigError(
            f"environment({given[0]}=...) with no env: give {missing} too (no env to take it from)"
        )
    if config.evaluation_interval:
        raise ConfigError(
            f"evaluation(evaluation_interval={config.evaluation_interval}) with no env: "
            "evaluation steps an env; give one (environment(env)), or evaluate the loss on "
            "offline data (offline_evaluation_interval)"
        )
    return True


def take_algorithm_keys(config: Any, model_config: dict[str, Any]) -> dict[str, Any]:
    """``model_config`` less the keys that are the algorithm's settings
    (``MODEL_CONFIG_SETTINGS``, RLlib's auto-included keys), which set those settings (checked
    as the settings are)."""
    own = config.MODEL_CONFIG_SETTINGS
    for key in [k for k in model_config if k in own]:
        setting = own[key]
        setattr(
            config, setting, config._CHECKS[setting](f"model_config[{key!r}]", model_config[key])
        )
    return {k: v for k, v in model_config.items() if k not in own}


def check_settings(config: Any) -> None:
    """Checks each setting on its own against its ``_CHECKS`` entry and stores it in its
    normal form (numpy scalars as Python ones, a model dict as ``DefaultModelConfig``)."""
    if isinstance(config.model_config, dict):
        config.model_config = take_algorithm_keys(config, config.model_config)
    for key in config._all_keys():
        setattr(config, key, config._CHECKS[key](key, getattr(config, key)))
    spec = config.rl_module_spec
    if isinstance(spec, RLModuleSpec) and spec.module_class is None and spec.model_config:
        # The default networks with a spec's model_config: its settings win over the config's
        # own model_config (RLlib's get_rl_module_spec merges them so).
        # The spec keeps its own (a later .rl_module(model_config=...) and the next build
        # merge them again, as RLlib's builds do).
        own = take_algorithm_keys(config, spec.model_config)
        merged = {**config.model_config.to_dict(), **own}
        config.model_config = config._CHECKS["model_config"]("rl_module_spec.model_config", merged)


def refuse_search_spaces(config: Any) -> None:
    """Raises ``ConfigError`` when a setting is, or holds, a search space: such a config
    stands for several trials, and only one of them can be validated or built."""
    searched = config.search_space()
    if searched:
        shown = ", ".join(f"{k}={v!r}" for k, v in searched.items())
        raise ConfigError(
            f"{type(config).__name__} searches {', '.join(searched)} ({shown}): a config with "
            "search spaces stands for several trials, not one run; run it through "
            "tune.Tuner(config, tune_config=..., run_config=tune.RunConfig(stop=...)).fit(), "
            "or resolve each trial's config: for variant in "
            "tune.generate_variants(config.search_space(), num_samples, seed): "
            "config.copy().update_from_dict(variant)"
        )
    for key in config._all_keys():
        inner = find_search_spaces(getattr(config, key))
        if inner:
            path, domain = inner[0]
            raise ConfigError(
                f"{key_path(path, key)}={domain!r}: a search space inside a setting's value "
                f"is not resolved; search the whole setting instead ({key}="
                "tune.grid_search([value1, value2]))"
            )


def validate_multi_agent(config: Any) -> None:
    """The multi-agent settings, alone and together: policies, their mapping, the policies
    that train, each policy's overrides (its config validated on its own) and the settings
    multi-agent envs do not take."""
    if config.policies is None:
        if config.policies_to_train is not None or config.policy_mapping_fn is not None:
            raise ConfigError(
                "policy_mapping_fn / policies_to_train are set but policies is not; pass "
                ".multi_agent(policies=[...], policy_mapping_fn=...)"
            )
        if isinstance(config.rl_module_spec, MultiRLModuleSpec):
            named = config.rl_module_spec.rl_module_specs
            raise ConfigError(
                "rl_module_spec is a MultiRLModuleSpec (policies "
                f"{list(named) if isinstance(named, dict) else 'all'}) but the config is "
                "single-agent; add .multi_agent(policies=[...], policy_mapping_fn=...) or "
                "pass an RLModuleSpec"
            )
        return
    if isinstance(config.rl_module_spec, MultiRLModuleSpec):
        named = config.rl_module_spec.rl_module_specs
        unknown = [p for p in named if p not in config.policies] if isinstance(named, dict) else []
        specs = config.rl_module_spec.specs(list(config.policies))
        if unknown:
            raise ConfigError(
                f"MultiRLModuleSpec.rl_module_specs names {unknown}, which are not in "
                f"policies {list(config.policies)}"
            )
        forward_only = [p for p, spec in specs.items() if spec.is_forward_only]
        trained = set(config.policies_to_train or ())
        if trained & set(forward_only):
            raise ConfigError(
                f"policies_to_train={config.policies_to_train} names "
                f"{sorted(trained & set(forward_only))}, whose modules only act (an "
                "RLModule with a forward pass, no parameters); leave them out of "
                "policies_to_train"
            )
        if forward_only and len(forward_only) == len(config.policies):
            raise ConfigError(
                f"every policy ({forward_only}) has a module that only acts; at least one "
                "policy must learn"
            )
    if config.restart_failed_sub_environments is True:
        raise ConfigError(
            "restart_failed_sub_environments=True is not built for multi-agent envs; "
            "restart_failed_env_runners=True (the default) replaces a failed runner whole"
        )
    if config.async_batch_size is not None:
        raise ConfigError(
            f"async_batch_size={config.async_batch_size} does not apply to multi-agent envs: "
            "with gym_env_vectorize_mode='ASYNC' every copy runs in its own process and all "
            "copies step together; leave async_batch_size unset"
        )
    if config.policy_mapping_fn is None:
        # Without the env no agent is mapped (a policy loaded for inference).
        if len(config.policies) > 1 and not config._without_env:
            raise ConfigError(
                f"{len(config.policies)} policies need a policy_mapping_fn(agent_id, episode, "
                "**kwargs) -> policy id"
            )
    elif not callable(config.policy_mapping_fn):
        raise ConfigError(f"policy_mapping_fn={config.policy_mapping_fn!r} is not callable")
    else:
        from rljax.env.multi_agent_vector import mapping_caller

        mapping_caller(config.policy_mapping_fn)  # a signature it cannot be called with fails here
    if config.policies_to_train is not None:
        unknown = [p for p in config.policies_to_train if p not in config.policies]
        if unknown:
            raise ConfigError(
                f"policies_to_train names {unknown}, which are not in policies "
                f"{list(config.policies)}"
            )
    unknown = [p for p in config.algorithm_config_overrides_per_module if p not in config.policies]
    if unknown:
        raise ConfigError(
            f"algorithm_config_overrides_per_module names {unknown}, which are not in "
            f"policies {list(config.policies)}"
        )
    all_keys = set(config._all_keys())
    for pid in config.policies:
        overrides = config.module_overrides(pid)
        for key in overrides:
            if key not in all_keys:
                raise ConfigError(
                    f"policy {pid!r} overrides unknown setting {key!r}{closest(key, all_keys)}"
                )
            if key not in config._PER_MODULE_KEYS:
                raise ConfigError(
                    f"policy {pid!r} overrides {key!r}, which every policy of a run shares; "
                    f"a policy may override: {', '.join(config._PER_MODULE_KEYS) or 'nothing'}"
                )
        if overrides:
            try:
                config.module_config(pid).validate()
            except ConfigError as e:
                raise ConfigError(f"policy {pid!r}'s overrides: {e}") from None


def check_batch_division(config: Any) -> None:
    """The sampled batch is split across learners (on-policy); off-policy configs override
    ``_check_batch_division``, which calls this."""
    n_shards = config.num_learner_shards
    if config.sampled_batch_size % n_shards:
        raise ConfigError(
            f"the sampled batch of {config.sampled_batch_size} env steps "
            f"({config.get_rollout_fragment_length()} steps per sub-env (rollout_fragment_length="
            f"{config.rollout_fragment_length!r}) x {config.envs_per_step} sub-envs per step) does not "
            f"divide across num_learners={config.num_learners}; pick train_batch_size_per_learner, "
            "num_envs_per_env_runner or rollout_fragment_length so that it does"
        )


__all__ = [
    "check_batch_division",
    "check_settings",
    "refuse_search_spaces",
    "take_algorithm_keys",
    "validate",
    "validate_multi_agent",
]
