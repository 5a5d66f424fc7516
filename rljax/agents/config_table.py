"""RLlib's old API (``ray.rllib.agents``): its dict config keys, in one table, and the
translation of an old dict config into a new config object.

Each old key maps onto one new setting (a rename, a value put inside a dict setting, or a
conversion of several keys into one, such as DQN's ``exploration_fraction`` and
``exploration_final_eps`` into an ``epsilon`` schedule). Keys that change nothing here
(``framework``, ``num_gpus`` without a GPU, ``eager_tracing``, ...) are accepted with a one-time
note. A key of the new config (``lr``, ``num_env_runners``, ...) is taken as it is, as RLlib's
``update_from_dict`` does. Every other key is refused, all of them in one error, each with the
name it most likely means.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any

from rljax.utils import once
from rljax.utils.checks import is_real
from rljax.utils.errors import ConfigError, best_match

logger = logging.getLogger("rljax")

# RLlib 1.x's DQN decayed epsilon over exploration_fraction of these many env steps.
DEFAULT_SCHEDULE_MAX_TIMESTEPS = 100_000
# RLlib 1.x's EpsilonGreedy defaults (exploration_config).
DEFAULT_INITIAL_EPSILON = 1.0
DEFAULT_FINAL_EPSILON = 0.05
DEFAULT_EPSILON_TIMESTEPS = 100_000


@dataclasses.dataclass
class Translation:
    """What an old dict config becomes: new settings by name, and the dict settings built
    from several old keys (merged over the config's own)."""

    algo: str
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    model: dict[str, Any] = dataclasses.field(default_factory=dict)
    replay: dict[str, Any] = dataclasses.field(default_factory=dict)
    multi_agent: dict[str, Any] = dataclasses.field(default_factory=dict)
    # DQN's epsilon parts (exploration_fraction, exploration_final_eps, ...), joined at the end.
    epsilon: dict[str, Any] = dataclasses.field(default_factory=dict)
    # RLlib 1.x's lr_schedule / entropy_coeff_schedule: a schedule that is set wins over the
    # plain value (lr, entropy_coeff), whatever order the dict gives them in.
    schedules: dict[str, Any] = dataclasses.field(default_factory=dict)
    errors: list[str] = dataclasses.field(default_factory=list)


Apply = Callable[[str, Any, Translation], None]


@dataclasses.dataclass(frozen=True)
class OldKey:
    """One old key: what it maps to (``new``, shown in notes and errors), how (``apply``; None:
    the value goes to the setting ``new`` as it is), and the algorithms that have it (None:
    every one). ``note``: the key changes nothing here (accepted with this one-time note)."""

    new: str
    apply: Apply | None = None
    algos: tuple[str, ...] | None = None
    note: str | None = None


def _to(setting: str) -> Apply:
    def apply(key: str, value: Any, t: Translation) -> None:
        t.settings[setting] = value

    return apply


def _schedule(setting: str) -> Apply:
    def apply(key: str, value: Any, t: Translation) -> None:
        t.schedules[setting] = value

    return apply


def _model_key(field: str) -> Apply:
    def apply(key: str, value: Any, t: Translation) -> None:
        t.model[field] = value

    return apply


def _replay_key(field: str) -> Apply:
    def apply(key: str, value: Any, t: Translation) -> None:
        t.replay[field] = value

    return apply


def _epsilon_part(part: str) -> Apply:
    def apply(key: str, value: Any, t: Translation) -> None:
        t.epsilon[part] = value

    return apply


def _gpus(setting: str) -> Apply:
    """``num_gpus`` / ``num_gpus_per_worker``: the GPU setting where JAX sees a GPU; on a host
    without one, a one-time note and the CPU."""

    def apply(key: str, value: Any, t: Translation) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            # Checked as on a host with GPUs, so one script is refused the same everywhere.
            t.errors.append(f"{key}={value!r}: expected a number of GPUs >= 0")
            return
        if value and not gpu_visible():
            note(key, f"{key}={value!r}: JAX sees no GPU on this host; training runs on the CPU")
            return
        t.settings[setting] = value

    return apply


def gpu_visible() -> bool:
    """Whether JAX has a GPU device."""
    from rljax.learners.devices import _platform_devices

    return bool(_platform_devices("gpu"))


def _model(key: str, value: Any, t: Translation) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        t.errors.append(f"{key}={value!r}: expected a dict of model settings")
        return
    from rljax.models.catalog import custom_model_spec

    model = dict(value)
    custom = model.pop("custom_model", None)
    custom_config = model.pop("custom_model_config", None)
    if custom is not None:
        t.settings["rl_module_spec"] = custom_model_spec(custom, custom_config)
    elif custom_config:
        t.errors.append(f"{key}['custom_model_config'] is set without {key}['custom_model']")
    for old in ("custom_options", "custom_preprocessor", "custom_action_dist"):
        if model.pop(old, None) is not None:
            t.errors.append(
                f"{key}[{old!r}]: RLlib's old model hook has no counterpart; a Flax module "
                "registered with ModelCatalog.register_custom_model takes its settings as "
                "custom_model_config"
            )
    t.model.update(model)


def _api_stack(key: str, value: Any, t: Translation) -> None:
    # RLlib 2.x's API-stack switches: an old-API trainer serves the old stack's config either
    # way (RLlib's scripts set them to False to ask for it).
    if not isinstance(value, bool):
        t.errors.append(f"{key}={value!r}: a bool (RLlib's API-stack switch)")
        return
    note(
        "api_stack",
        f"{key}={value!r}: RLlib 1.x's trainer takes the old API stack's config and trains it "
        "on rljax's JAX learner and env runners",
    )


def _sac_model(which: str) -> Apply:
    """SAC's ``q_model_config`` / ``policy_model_config``: the one ``model_config`` both of SAC's
    networks read (they must agree)."""

    def apply(key: str, value: Any, t: Translation) -> None:
        if not isinstance(value, Mapping):
            t.errors.append(f"{key}={value!r}: expected a dict of model settings")
            return
        for field, v in value.items():
            field = "fcnet_hiddens" if field == "hidden_layer_sizes" else field
            field = "fcnet_activation" if field == "hidden_activation" else field
            seen = t.model.get(field)
            if field in t.model and _as_list(seen) != _as_list(v):
                t.errors.append(
                    f"{key}[{field!r}]={v!r} differs from the other network's {seen!r}: SAC's "
                    "Q and policy networks share one model_config here; give both the same"
                )
                continue
            t.model[field] = v

    return apply


def _as_list(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


_OPTIMIZATION = {
    "actor_learning_rate": "actor_lr",
    "critic_learning_rate": "critic_lr",
    "entropy_learning_rate": "alpha_lr",
}


def _optimization(key: str, value: Any, t: Translation) -> None:
    if not isinstance(value, Mapping):
        t.errors.append(f"{key}={value!r}: expected a dict of {', '.join(_OPTIMIZATION)}")
        return
    for sub, v in value.items():
        new = _OPTIMIZATION.get(sub)
        if new is None:
            t.errors.append(
                f"{key}[{sub!r}] is not one of {', '.join(_OPTIMIZATION)}"
                + _hint(str(sub), list(_OPTIMIZATION))
            )
            continue
        if new == "alpha_lr" and t.algo != "SAC":
            t.errors.append(f"{key}[{sub!r}]: {t.algo} has no entropy coefficient to learn")
            continue
        t.settings[new] = v


# RLlib 1.x's exploration classes and the keys each takes here.
_EPSILON_KEYS = (
    "type",
    "initial_epsilon",
    "final_epsilon",
    "epsilon_timesteps",
    "warmup_timesteps",
)
_GAUSSIAN_KEYS = ("type", "stddev", "initial_scale", "final_scale", "scale_timesteps")


def _exploration_config(key: str, value: Any, t: Translation) -> None:
    if not isinstance(value, Mapping):
        t.errors.append(f"{key}={value!r}: expected a dict such as RLlib's {{'type': ...}}")
        return
    default = {"DQN": "EpsilonGreedy", "TD3": "GaussianNoise"}.get(t.algo, "StochasticSampling")
    kind = value.get("type", default)
    if isinstance(kind, str):  # "ray.rllib.utils.exploration.epsilon_greedy.EpsilonGreedy"
        kind = kind.rsplit(".", 1)[-1]
    allowed = {
        ("DQN", "EpsilonGreedy"): _EPSILON_KEYS,
        ("TD3", "GaussianNoise"): _GAUSSIAN_KEYS,
    }.get((t.algo, kind), ("type", "random_timesteps") if kind == "StochasticSampling" else None)
    if allowed is None or (kind == "StochasticSampling" and t.algo in ("DQN", "TD3")):
        t.errors.append(
            f"{key}['type']={kind!r}: {t.algo} here explores with "
            + (
                "EpsilonGreedy (set epsilon)"
                if t.algo == "DQN"
                else "GaussianNoise (set exploration_noise)"
                if t.algo == "TD3"
                else "its policy's own sampling (StochasticSampling; remove exploration_config)"
            )
        )
        return
    unknown = sorted(map(str, set(value) - set(allowed)))
    if "random_timesteps" in unknown and t.algo == "TD3":
        unknown.remove("random_timesteps")
        t.errors.append(
            f"{key}['random_timesteps']: rljax's TD3 acts uniformly at random until "
            "learning_starts (num_steps_sampled_before_learning_starts); set that instead"
        )
    if unknown:
        t.errors.append(
            f"{key} ({kind}) got unknown keys {unknown}; it takes {list(allowed)}"
            + _hint(unknown[0], list(allowed))
        )
        return
    if kind == "EpsilonGreedy":
        for name, part in (
            ("initial_epsilon", "initial"),
            ("final_epsilon", "final"),
            ("epsilon_timesteps", "timesteps"),
            ("warmup_timesteps", "warmup"),
        ):
            if name in value:
                t.epsilon[part] = value[name]
        t.epsilon.setdefault("initial", DEFAULT_INITIAL_EPSILON)
        t.epsilon.setdefault("final", DEFAULT_FINAL_EPSILON)
        t.epsilon.setdefault("timesteps", DEFAULT_EPSILON_TIMESTEPS)
    elif kind == "GaussianNoise":
        scales = (value.get("initial_scale", 1.0), value.get("final_scale", 1.0))
        if any(isinstance(x, bool) or x != 1.0 for x in scales):
            t.errors.append(
                f"{key}: initial_scale={scales[0]!r}, final_scale={scales[1]!r}: rljax's TD3 "
                "noise has a constant scale; scale stddev instead and leave both at 1.0"
            )
        if "stddev" in value:
            t.settings["exploration_noise"] = value["stddev"]
    else:
        if value.get("random_timesteps", 0):
            t.errors.append(
                f"{key}['random_timesteps']={value['random_timesteps']!r}: {t.algo} samples "
                "from its policy from the first step; remove it or set 0"
            )
        note(key, f"{key}={{'type': 'StochasticSampling'}}: {t.algo} samples from its policy")


def _multiagent(key: str, value: Any, t: Translation) -> None:
    if not isinstance(value, Mapping):
        t.errors.append(f"{key}={value!r}: expected a dict with policies, policy_mapping_fn, ...")
        return
    allowed = ("policies", "policy_mapping_fn", "policies_to_train", "count_steps_by")
    for sub, v in value.items():
        if sub not in allowed:
            t.errors.append(f"{key}[{sub!r}] is not one of {', '.join(allowed)}")
        elif sub == "count_steps_by":
            if v != "env_steps":
                t.errors.append(
                    f"{key}['count_steps_by']={v!r}: batches count env steps here ('env_steps')"
                )
        elif sub == "policies_to_train" and callable(v):
            t.errors.append(
                f"{key}['policies_to_train'] is a function; give the list of policy ids that learn"
            )
        else:
            t.multi_agent[sub] = v


def _evaluation_num_episodes(key: str, value: Any, t: Translation) -> None:
    t.settings["evaluation_duration"] = value
    t.settings["evaluation_duration_unit"] = "episodes"


def _prioritized(key: str, value: Any, t: Translation) -> None:
    t.replay["type"] = "PrioritizedEpisodeReplayBuffer" if value else "EpisodeReplayBuffer"


_TIME_LIMIT_ADVICE = (
    "cut episodes with the env's own time limit instead: gymnasium.wrappers.TimeLimit(env, "
    "max_episode_steps=N) in the env creator (a cut episode is truncated, not terminated)"
)


def _horizon(key: str, value: Any, t: Translation) -> None:
    """RLlib 1.x's sampler-side episode cut: None changes nothing; a number is refused."""
    if value is not None:
        t.errors.append(
            f"{key}={value!r}: rljax's runners do not cut episodes; {_TIME_LIMIT_ADVICE}"
        )


def _off_only(name: str) -> Apply:
    """An old horizon option: False changes nothing here; True is refused."""

    def apply(key: str, value: Any, t: Translation) -> None:
        if value:
            t.errors.append(
                f"{key}={value!r}: rljax has no sampler-side horizon; {_TIME_LIMIT_ADVICE}"
            )

    return apply


def _no_replay(key: str, value: Any, t: Translation) -> None:
    """IMPALA's replay of old batches: off (0) changes nothing; anything else is refused."""
    if value:
        t.errors.append(
            f"{key}={value!r}: rljax's IMPALA and APPO learn from fresh batches only (no "
            "replay of old ones); remove it or set 0"
        )
    else:
        note(key, f"{key}={value!r} {_NO_EFFECT}: no batches are replayed")


def _use_critic(key: str, value: Any, t: Translation) -> None:
    """APPO's critic: always used here (its GAE / V-trace need it)."""
    if value is not True:
        t.errors.append(f"{key}={value!r}: rljax's APPO always learns its critic (use_critic=True)")


def _vf_share_layers(key: str, value: Any, t: Translation) -> None:
    t.model["vf_share_layers"] = value


_NO_EFFECT = "has no effect in rljax"
_OFF_POLICY = ("DQN", "SAC", "TD3")
_PG = ("PPO", "IMPALA", "APPO")

# The table: every old key, what it becomes, and where it applies.
OLD_KEYS: dict[str, OldKey] = {
    # ---------------------------------------------------------------- resources and runners
    "num_workers": OldKey("num_env_runners", _to("num_env_runners")),
    "num_rollout_workers": OldKey("num_env_runners", _to("num_env_runners")),
    "num_envs_per_worker": OldKey("num_envs_per_env_runner", _to("num_envs_per_env_runner")),
    "num_cpus_per_worker": OldKey("num_cpus_per_env_runner", _to("num_cpus_per_env_runner")),
    "num_gpus": OldKey(
        "num_gpus_per_learner (a note and the CPU where JAX sees no GPU)",
        _gpus("num_gpus_per_learner"),
    ),
    "num_gpus_per_worker": OldKey(
        "num_gpus_per_env_runner (a note and the CPU where JAX sees no GPU)",
        _gpus("num_gpus_per_env_runner"),
    ),
    "framework": OldKey("(none)", note="rljax is JAX: the framework is always 'jax'"),
    "eager_tracing": OldKey("(none)", note="every update is one jitted JAX program"),
    "tf_session_args": OldKey("(none)", note="rljax runs no TensorFlow"),
    "local_tf_session_args": OldKey("(none)", note="rljax runs no TensorFlow"),
    "num_cpus_for_driver": OldKey("(none)", note="runner threads and the learner share the host"),
    "simple_optimizer": OldKey("(none)", note="the learner is one jitted update"),
    "_fake_gpus": OldKey("(none)", note="rljax uses the devices JAX sees"),
    "monitor": OldKey("(none)", note="record videos with algo.evaluate(record_video=dir)"),
    "log_level": OldKey("log_level", _to("log_level")),
    "enable_rl_module_and_learner": OldKey("(none)", _api_stack),
    "enable_env_runner_and_connector_v2": OldKey("(none)", _api_stack),
    # ---------------------------------------------------------------- training
    "lambda": OldKey("lambda_", _to("lambda_"), algos=_PG),
    "sgd_minibatch_size": OldKey("minibatch_size", _to("minibatch_size"), algos=("PPO",)),
    "num_sgd_iter": OldKey("num_epochs", _to("num_epochs"), algos=_PG),
    "shuffle_sequences": OldKey(
        "shuffle_batch_per_epoch", _to("shuffle_batch_per_epoch"), algos=("PPO",)
    ),
    "horizon": OldKey("(none)", _horizon),
    "soft_horizon": OldKey("(none)", _off_only("soft_horizon")),
    "no_done_at_end": OldKey("(none)", _off_only("no_done_at_end")),
    # IMPALA / APPO
    "replay_proportion": OldKey("(none)", _no_replay, algos=("IMPALA", "APPO")),
    "replay_buffer_num_slots": OldKey("(none)", _no_replay, algos=("IMPALA", "APPO")),
    "use_critic": OldKey("(none)", _use_critic, algos=("APPO",)),
    "lr_schedule": OldKey("lr (a schedule [[timestep, lr], ...])", _schedule("lr")),
    "entropy_coeff_schedule": OldKey(
        "entropy_coeff (a schedule [[timestep, coeff], ...])",
        _schedule("entropy_coeff"),
        algos=_PG,
    ),
    "vf_share_layers": OldKey(
        "model_config={'vf_share_layers': ...}", _vf_share_layers, algos=("PPO",)
    ),
    "model": OldKey("model_config (custom_model: rl_module_spec)", _model),
    "callbacks": OldKey("callbacks_class", _to("callbacks_class")),
    "custom_eval_function": OldKey("custom_evaluation_function", _to("custom_evaluation_function")),
    "metrics_smoothing_episodes": OldKey(
        "metrics_num_episodes_for_smoothing", _to("metrics_num_episodes_for_smoothing")
    ),
    "evaluation_num_workers": OldKey(
        "evaluation_num_env_runners", _to("evaluation_num_env_runners")
    ),
    "evaluation_num_episodes": OldKey(
        "evaluation_duration (evaluation_duration_unit='episodes')", _evaluation_num_episodes
    ),
    "ignore_worker_failures": OldKey(
        "ignore_env_runner_failures", _to("ignore_env_runner_failures")
    ),
    "recreate_failed_workers": OldKey(
        "restart_failed_env_runners", _to("restart_failed_env_runners")
    ),
    "multiagent": OldKey("multi_agent(policies=..., policy_mapping_fn=...)", _multiagent),
    # ---------------------------------------------------------------- off-policy
    "buffer_size": OldKey(
        "replay_buffer_config={'capacity': ...}", _replay_key("capacity"), algos=_OFF_POLICY
    ),
    "prioritized_replay": OldKey(
        "replay_buffer_config={'type': 'PrioritizedEpisodeReplayBuffer' or 'EpisodeReplayBuffer'}",
        _prioritized,
        algos=_OFF_POLICY,
    ),
    "prioritized_replay_alpha": OldKey(
        "replay_buffer_config={'alpha': ...}", _replay_key("alpha"), algos=_OFF_POLICY
    ),
    "prioritized_replay_beta": OldKey(
        "replay_buffer_config={'beta': ...}", _replay_key("beta"), algos=_OFF_POLICY
    ),
    "prioritized_replay_eps": OldKey(
        "(none)", algos=_OFF_POLICY, note="priorities are |TD error| plus a fixed epsilon"
    ),
    "learning_starts": OldKey(
        "num_steps_sampled_before_learning_starts",
        _to("num_steps_sampled_before_learning_starts"),
        algos=_OFF_POLICY,
    ),
    "timesteps_per_iteration": OldKey(
        "min_sample_timesteps_per_iteration",
        _to("min_sample_timesteps_per_iteration"),
        algos=_OFF_POLICY,
    ),
    "worker_side_prioritization": OldKey(
        "(none)", algos=_OFF_POLICY, note="priorities are computed by the learner"
    ),
    # DQN
    "exploration_fraction": OldKey(
        "epsilon=[(0, initial), (fraction * schedule_max_timesteps, final)]",
        _epsilon_part("fraction"),
        algos=("DQN",),
    ),
    "exploration_final_eps": OldKey(
        "epsilon (the schedule's last value)", _epsilon_part("final"), algos=("DQN",)
    ),
    "exploration_initial_eps": OldKey(
        "epsilon (the schedule's first value)", _epsilon_part("initial"), algos=("DQN",)
    ),
    "schedule_max_timesteps": OldKey(
        "epsilon (the env steps exploration_fraction is a fraction of)",
        _epsilon_part("max_timesteps"),
        algos=("DQN",),
    ),
    "exploration_config": OldKey(
        "epsilon (DQN: EpsilonGreedy as a schedule), exploration_noise (TD3: GaussianNoise) "
        "or the policy's sampling (StochasticSampling)",
        _exploration_config,
    ),
    "hiddens": OldKey(
        "model_config={'head_fcnet_hiddens': ...}",
        _model_key("head_fcnet_hiddens"),
        algos=("DQN",),
    ),
    # SAC
    "q_model_config": OldKey(
        "model_config (shared by SAC's networks)", _sac_model("q"), algos=("SAC",)
    ),
    "policy_model_config": OldKey(
        "model_config (shared by SAC's networks)", _sac_model("policy"), algos=("SAC",)
    ),
    "optimization": OldKey(
        "actor_lr, critic_lr, alpha_lr (SAC; TD3: actor_lr, critic_lr)",
        _optimization,
        algos=("SAC", "TD3"),
    ),
    # TD3
    "actor_hiddens": OldKey(
        "model_config={'fcnet_hiddens': ...}", _model_key("fcnet_hiddens"), algos=("TD3",)
    ),
    "critic_hiddens": OldKey(
        "model_config={'fusionnet_hiddens': ...}", _model_key("fusionnet_hiddens"), algos=("TD3",)
    ),
}


def note(key: str, text: str) -> None:
    """Logs ``text`` about ``key`` once per process."""
    if once.first_time("old_api", key):
        logger.warning("RLlib's old API: %s", text)


def _hint(name: str, candidates: list[str]) -> str:
    match = best_match(name, candidates)
    return f" (did you mean {match!r}?)" if match else ""


def _unknown_hint(name: str, candidates: list[str]) -> str:
    """The name an unknown key most likely means: RLlib's own renames first
    (``learning_rate`` -> ``lr``), else the closest key."""
    from rljax.algorithms.config_names import RENAMED

    target = RENAMED.get(name)
    if target is not None and target in candidates:
        return f" (did you mean {target!r}?)"
    return _hint(name, candidates)


def translate(algo: str, config: Mapping[str, Any], settings: list[str]) -> Translation:
    """The old dict ``config`` of algorithm ``algo`` as new settings.

    ``settings``: the new config's setting names (taken as they are).

    Raises:
      ConfigError: every unknown or misused key, in one error, each with the name it most
        likely means.
    """
    if not isinstance(config, Mapping):
        raise ConfigError(
            f"{algo}Trainer(config=...) takes a dict of RLlib's config keys; got a "
            f"{type(config).__name__}"
        )
    from rljax.algorithms.rllib_only import check_rllib_only

    if config.get("algo") == algo:  # a config's to_dict() names its algorithm
        config = {k: v for k, v in config.items() if k != "algo"}
    t = Translation(algo)
    known = [k for k, e in OLD_KEYS.items() if e.algos is None or algo in e.algos]
    for key, value in config.items():
        if not isinstance(key, str):
            t.errors.append(f"{key!r}: config keys are strings")
            continue
        entry = OLD_KEYS.get(key)
        if entry is not None and entry.algos is not None and algo not in entry.algos:
            if key in settings:  # another algorithm's old key, this one's own setting
                t.settings[key] = value
                continue
            t.errors.append(
                f"{key!r} is a setting of {'/'.join(entry.algos)}, not {algo}"
                + _hint(key, [*settings, *known])
            )
        elif entry is not None:
            if entry.note is not None:
                note(key, f"{key}={value!r} {_NO_EFFECT}: {entry.note}")
            elif entry.apply is None:
                t.settings[entry.new] = value
            else:
                entry.apply(key, value, t)
        elif key in settings:
            t.settings[key] = value
        else:
            try:
                taken = check_rllib_only(f"{algo}Trainer(config=...)", key, value)
            except ConfigError as e:
                t.errors.append(str(e))
                continue
            if not taken:
                t.errors.append(f"{key!r} is unknown" + _unknown_hint(key, [*settings, *known]))
    if t.epsilon:
        _join_epsilon(t)
    t.settings.update({k: v for k, v in t.schedules.items() if v is not None})
    if t.errors:
        shown = "\n  ".join(t.errors)
        raise ConfigError(
            f"{algo}Trainer(config=...): {len(t.errors)} key(s) not accepted:\n  {shown}\n"
            f"Accepted: {algo}'s settings ({algo}Config) and RLlib's old names in "
            "rljax.agents.config_table.OLD_KEYS"
        )
    return t


def _join_epsilon(t: Translation) -> None:
    """DQN's epsilon schedule from its old parts: linear from the initial value to the final
    one over ``exploration_fraction * schedule_max_timesteps`` env steps (or
    ``exploration_config``'s ``epsilon_timesteps``), constant afterwards."""
    e = t.epsilon
    initial = e.get("initial", DEFAULT_INITIAL_EPSILON)
    final = e.get("final", 0.02)  # RLlib 1.x DQN's exploration_final_eps
    if "timesteps" in e:
        steps = e["timesteps"]
    else:
        fraction = e.get("fraction", 0.1)
        total = e.get("max_timesteps", DEFAULT_SCHEDULE_MAX_TIMESTEPS)
        if not all(is_real(x) for x in (fraction, total)):
            t.errors.append(
                f"exploration_fraction={fraction!r} / schedule_max_timesteps={total!r}: "
                "expected numbers"
            )
            return
        steps = int(float(fraction) * float(total))
    warmup = e.get("warmup", 0)
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        t.errors.append(f"epsilon's decay over {steps!r} env steps: expected an int >= 1")
        return
    if not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 0:
        t.errors.append(f"warmup_timesteps={warmup!r}: expected an int >= 0")
        return
    held = [(warmup, initial)] if warmup else []  # epsilon stays initial over the warm-up
    t.settings["epsilon"] = [(0, initial), *held, (warmup + steps, final)]


def apply_translation(config: Any, t: Translation) -> Any:
    """Sets a translation's settings on the new ``config`` (through its setters' checks); the
    dict settings (model, replay buffer) merged over the config's own."""
    if t.model:
        from rljax.core.rl_module.default_model_config import DefaultModelConfig

        current = config.model_config
        base = current.to_dict() if isinstance(current, DefaultModelConfig) else dict(current)
        model = t.settings.pop("model_config", None) or {}
        if isinstance(model, DefaultModelConfig):
            model = model.to_dict()
        t.settings["model_config"] = {**base, **model, **t.model}
    if t.replay:
        given = t.settings.pop("replay_buffer_config", None) or {}
        if isinstance(given, dict):  # RLlib's old-stack names first (the defaults use new ones)
            from rljax.algorithms.off_policy import old_stack_replay

            given = old_stack_replay("replay_buffer_config", given)
        t.settings["replay_buffer_config"] = {**config.replay_buffer_config, **given, **t.replay}
    config.update_from_dict(t.settings)
    if t.multi_agent:
        config.multi_agent(**t.multi_agent)
    return config


__all__ = ["OLD_KEYS", "OldKey", "Translation", "apply_translation", "note", "translate"]
