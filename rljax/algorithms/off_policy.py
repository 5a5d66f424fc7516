"""What DQN, SAC and TD3 share: replay settings, the replay ratio, and the algorithm that runs
the execution layer's off-policy loop (``rljax/execution/off_policy.py``) on their parts.

An iteration is a number of *cycles*. A cycle samples ``rollout_fragment_length`` env steps from
every sub-env (times RLlib's sample weight), adds them to the replay buffer, then, once
``num_steps_sampled_before_learning_starts`` env steps have been sampled, runs a number of
updates (RLlib's train weight). The weights come from ``training_intensity`` exactly as in
RLlib: the native ratio is ``train_batch_size / (fragment length x sub-envs per step)``; a higher
intensity adds updates per cycle, a lower one adds fragments per cycle. An iteration has as many
cycles as it takes to sample ``min_sample_timesteps_per_iteration`` env steps.

On EnvPool envs with one learner a whole iteration (acting, buffer inserts, updates, priority
updates, target updates) is one jitted call: a ``lax.scan`` over cycles. Otherwise each cycle is
one jitted call that adds a fragment from the runner threads (or from the jitted EnvPool rollout,
with several learners) and runs the updates, data-parallel over the learner mesh.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from rljax import distributed
from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.algorithm_config import UNSET, AlgorithmConfig
from rljax.algorithms.config_checks import MAX_ROLLOUT_FRAGMENT_LENGTH
from rljax.algorithms.rllib_surface import ReplayBufferView
from rljax.algorithms.settings import Setting
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.env.jax_env import is_jax_spec, jax_env_of
from rljax.env.spaces import is_structured, zeros_batch
from rljax.execution.loop import IterationResult
from rljax.execution.off_policy import (
    OffPolicyLoop,
    OffPolicyState,
    ReplayLearner,
    ReplaySchedule,
    make_fused_iteration,
    make_learn_cycle,
    make_update,
    packed_iteration,
)
from rljax.execution.parts import PolicyParts
from rljax.learners.devices import replicated
from rljax.learners.hyperparams import live_layout, saved_layout
from rljax.replay.episode import (
    EpisodeReplayBuffer,
    make_episode_buffer,
    make_frame_stack_episode_buffer,
)
from rljax.runners.acting import episode_arrays, make_act_step, make_fused_rollout
from rljax.runners.jax_env import start_jax_env
from rljax.utils import memory, xla_options
from rljax.utils.checks import Bool, Check, Choice, Int, Number, is_int, refuse
from rljax.utils.errors import CheckpointError, ConfigError
from rljax.utils.host_transfer import PackedOutputs
from rljax.utils.schedules import NumberOrSchedule

# Bounds of the replay ratio, so that a file cannot make an iteration effectively hang
# (training_intensity=1e300 asked DQN's defaults for ~3e298 updates per cycle, and failed inside
# MLIR at build). RLlib's tuned examples set training_intensity up to a few hundred.
MAX_TRAINING_INTENSITY = 10_000
# Updates, or sampled fragments, per cycle that training_intensity may ask for (the native ratio
# of the batch to the env steps of a fragment makes a given intensity more or fewer of them).
MAX_REPLAY_WEIGHT = 10_000
# Env steps of an iteration: rljax's defaults, as RLlib's, are 100 (SAC) and 1,000 (DQN).
MAX_TIMESTEPS_PER_ITERATION = 10_000_000

# RLlib's multi-agent names are the same buffers: rljax keeps one per policy either way.
REPLAY_TYPES = (
    "EpisodeReplayBuffer",
    "PrioritizedEpisodeReplayBuffer",
    "MultiAgentEpisodeReplayBuffer",
    "MultiAgentPrioritizedEpisodeReplayBuffer",
)
PRIORITIZED_REPLAY_TYPES = (
    "PrioritizedEpisodeReplayBuffer",
    "MultiAgentPrioritizedEpisodeReplayBuffer",
)
# replay_buffer_config's keys and what each may be (the builder's defaults fill missing ones).
REPLAY_CHECKS: dict[str, Check] = {
    "type": Choice(REPLAY_TYPES),
    "capacity": Int(1),
    "alpha": Number(0),
    "beta": Number(0),
    "eps": Number(0),
}


# RLlib's old-stack buffer types: the same proportional prioritized or uniform replay.
OLD_REPLAY_TYPES = {
    "ReplayBuffer": "EpisodeReplayBuffer",
    "MultiAgentReplayBuffer": "MultiAgentEpisodeReplayBuffer",
    "PrioritizedReplayBuffer": "PrioritizedEpisodeReplayBuffer",
    "MultiAgentPrioritizedReplayBuffer": "MultiAgentPrioritizedEpisodeReplayBuffer",
}
# Where RLlib's buffer classes live (``type`` may name one by its import path).
_BUFFER_PACKAGES = ("ray.rllib.utils.replay_buffers", "rljax.utils.replay_buffers")
# The old stack's names of the prioritized buffer's keys.
OLD_REPLAY_KEYS = {
    "prioritized_replay_alpha": "alpha",
    "prioritized_replay_beta": "beta",
    "prioritized_replay_eps": "eps",
}
# Old-stack keys that only matter for sequences (recurrent Q-networks), at their no-op values.
_SEQUENCE_KEYS = {"replay_burn_in": (0,), "replay_sequence_length": (1, None)}
_RECURRENT_ADVICE = (
    "rljax's replay buffers store time steps for feed-forward Q-networks; recurrent "
    "replay (R2D2's sequences and burn-in) is not built"
)


def old_stack_replay(name: str, value: dict[str, Any]) -> dict[str, Any]:
    """RLlib's old-stack ``replay_buffer_config`` as the episode buffers' (the same replay):
    its buffer types and key names mapped; ``storage_unit`` "timesteps" and the sequence keys
    at their no-op values taken, anything recurrent refused with why."""
    out = dict(value)
    old_type = out.get("type")
    if isinstance(old_type, str):
        # RLlib's full import path of a buffer class (a ported script's rljax.* path too).
        package, _, short = old_type.rpartition(".")
        if package.startswith(_BUFFER_PACKAGES) and short in (*REPLAY_TYPES, *OLD_REPLAY_TYPES):
            old_type = out["type"] = short
        if old_type in OLD_REPLAY_TYPES:
            out["type"] = OLD_REPLAY_TYPES[old_type]
    for old, new in OLD_REPLAY_KEYS.items():
        if old in out:
            if new in out:
                raise ConfigError(f"{name} gives {old!r} and {new!r}, its new name; give one")
            out[new] = out.pop(old)
    if "storage_unit" in out:
        unit = out.pop("storage_unit")
        unit_value = getattr(unit, "value", unit)
        if unit_value != "timesteps":
            raise ConfigError(
                f"{name}['storage_unit']={unit!r}: only 'timesteps' (StorageUnit.TIMESTEPS) is "
                f"taken: {_RECURRENT_ADVICE}"
            )
    for key, no_op in _SEQUENCE_KEYS.items():
        if key in out:
            given = out.pop(key)
            if given not in no_op:
                raise ConfigError(f"{name}[{key!r}]={given!r}: {_RECURRENT_ADVICE}")
    if "zero_init_states" in out:
        given = out.pop("zero_init_states")
        if not isinstance(given, bool):
            refuse(f"{name}['zero_init_states']", given, "a bool (it applies to sequences only)")
    return out


def check_replay_buffer_config(name: str, value: Any) -> dict[str, Any]:
    """A dict of ``REPLAY_CHECKS`` keys, each value checked; ``type`` and ``capacity`` required.
    RLlib's old-stack types and keys are taken as the same replay (``OLD_REPLAY_TYPES``,
    ``OLD_REPLAY_KEYS``, ``storage_unit="timesteps"``)."""
    if not isinstance(value, dict):
        refuse(name, value, f"a dict with keys {', '.join(REPLAY_CHECKS)}")
    value = old_stack_replay(name, value)
    unknown = [k for k in value if k not in REPLAY_CHECKS]
    if unknown:
        raise ConfigError(
            f"{name} has unknown keys {sorted(map(str, unknown))}; allowed: "
            f"{', '.join(REPLAY_CHECKS)}"
        )
    out = dict(value)
    for key in ("type", "capacity"):
        out.setdefault(key, None)  # refused below as None, naming the key
    return {k: REPLAY_CHECKS[k](f"{name}[{k!r}]", v) for k, v in out.items()}


def check_n_step(name: str, value: Any) -> int | tuple[int, int]:
    """An int >= 1, or RLlib's range ``(low, high)`` with ``1 <= low <= high``."""
    if is_int(value) and value >= 1:
        return int(value)
    if (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(is_int(x) for x in value)
        and 1 <= value[0] <= value[1]
    ):
        return (int(value[0]), int(value[1]))
    refuse(name, value, "an int >= 1 or a range (low, high) of ints, 1 <= low <= high", number=True)


_O = TypeVar("_O", bound="OffPolicyConfig")


def rate_setting(default: float, whose: str) -> Setting[Any]:
    """A learning-rate setting of ``whose`` Adam (SAC's and TD3's): a number or RLlib's
    schedule of the env steps sampled."""
    return Setting(
        default,
        NumberOrSchedule(Number(0, low_open=True)),
        f"{whose} Adam learning rate, or RLlib's schedule [[0, lr0], [env_step, lr1], ...] "
        "(env steps sampled).",
        checked_on_set=True,
    )


class OffPolicyConfig(AlgorithmConfig):
    """Replay and replay-ratio settings shared by DQN and SAC (RLlib's names)."""

    # Whether the algorithm builds a Flax module of the user's
    # (``RLModuleSpec(module_class=...)``) as its network; the others refuse one.
    takes_module_class: ClassVar[bool] = False

    replay_buffer_config = Setting[dict[str, Any]](
        {
            "type": "PrioritizedEpisodeReplayBuffer",
            "capacity": 50000,
            "alpha": 0.6,
            "beta": 0.4,
        },
        check_replay_buffer_config,
        f"The replay buffer: a dict with keys {', '.join(REPLAY_CHECKS)} (type one of "
        f"{', '.join(REPLAY_TYPES)}); the keys not given keep their values.",
    )
    n_step = Setting[int | tuple[int, int]](
        1,
        check_n_step,
        "Steps of the returns the targets bootstrap after, or a range (low, high): one n drawn "
        "per sampled batch, as RLlib does.",
    )
    num_steps_sampled_before_learning_starts = Setting(
        1000, Int(0), "Env steps sampled before the first update."
    )
    training_intensity = Setting[float | None](
        None,
        Number(0, MAX_TRAINING_INTENSITY, low_open=True, optional=True),
        "Env steps trained per env step sampled (RLlib's replay ratio); None: one update per "
        "fragment.",
    )
    target_network_update_freq = Setting(
        500, Int(0), "Env steps between target network updates (0: after every update)."
    )
    tau = Setting(
        1.0,
        Number(0, 1, low_open=True),
        "The target update's step: target = tau * online + (1 - tau) * target.",
    )
    store_buffer_in_checkpoints = Setting(
        False, Bool(), "Save the replay buffer (and the learner's keys) in checkpoints."
    )
    rollout_fragment_length = AlgorithmConfig.rollout_fragment_length.replace(
        doc='Env steps per sub-env per cycle (at most 1,000,000), or "auto": the largest '
        "n_step, as RLlib's DQN and SAC (1 at the default n_step=1)."
    )
    min_sample_timesteps_per_iteration = Setting(
        1000,
        Int(1, MAX_TIMESTEPS_PER_ITERATION),
        "Env steps sampled per iteration (an iteration runs cycles until it has them).",
        section="reporting",
    )

    def _coerce(self, key: str, value: Any) -> Any:
        if key == "replay_buffer_config":
            if not isinstance(value, dict):
                refuse(key, value, f"a dict with keys {', '.join(REPLAY_CHECKS)}")
            # The keys not given keep their values (RLlib's old-stack names mapped first).
            return {**self.replay_buffer_config, **old_stack_replay(key, value)}
        if key == "n_step" and isinstance(value, list):
            return tuple(value)
        return super()._coerce(key, value)

    def reporting(
        self: _O,
        *,
        metrics_num_episodes_for_smoothing: int = UNSET,
        min_sample_timesteps_per_iteration: int = UNSET,
        **kwargs: Any,
    ) -> _O:
        """Reporting settings; ``min_sample_timesteps_per_iteration`` sizes an iteration."""
        return self._set("reporting", locals())

    @property
    def n_step_range(self) -> tuple[int, int]:
        n = self.n_step
        return (n, n) if isinstance(n, int) else (int(n[0]), int(n[1]))

    def get_rollout_fragment_length(self) -> int:
        """The fragment's env steps per sub-env: ``"auto"`` is the largest ``n_step`` (RLlib's
        DQN and SAC: a fragment holds one whole n-step window)."""
        if self.rollout_fragment_length == "auto":
            return min(self.n_step_range[1], MAX_ROLLOUT_FRAGMENT_LENGTH)
        return int(self.rollout_fragment_length)

    def _native_ratio(self) -> float:
        """Env steps trained per env step sampled with one update per fragment."""
        return self.total_train_batch_size / (
            self.get_rollout_fragment_length() * self.envs_per_step
        )

    def replay_ratio_weights(self) -> tuple[int, int]:
        """RLlib's (sample, train) weights: fragments sampled and updates run per cycle."""
        native = self._native_ratio()
        if self.training_intensity is None:
            return 1, 1
        if self.training_intensity > native:
            return 1, math.ceil(self.training_intensity / native)
        return math.ceil(native / self.training_intensity), 1

    def memory_terms(self, observation_space: Any, action_space: Any) -> list[tuple[str, int]]:
        """Adds the replay buffer and the train batches to the sampling terms."""
        terms = super().memory_terms(observation_space, action_space)
        obs = memory.space_bytes(observation_space)
        shape = tuple(getattr(observation_space, "shape", None) or ())
        if len(shape) == 3 and obs == memory.flat_size(observation_space) and self._uses_envpool():
            # Stacked uint8 frames are stored once each; the stack is the short axis ([H, W, S]
            # as rljax's Atari envs give them, [S, H, W] as EnvPool does).
            obs //= max(1, min(int(shape[0]), int(shape[-1])))
        row = obs + memory.space_bytes(action_space) + 16
        capacity = self.replay_buffer_config.get("capacity", 0)
        capacity = capacity if isinstance(capacity, int) and not isinstance(capacity, bool) else 0
        # Multi-agent: a buffer of that capacity per policy.
        buffers = len(self.policies) if self.is_multi_agent and self.policies else 1
        name = f"replay_buffer_config capacity={capacity:,}"
        if buffers > 1:
            name += f" (a buffer per policy: {buffers})"
        terms.append((name, buffers * capacity * row))
        batch = self.total_train_batch_size
        terms.append(
            (
                f"train_batch_size_per_learner={self.train_batch_size_per_learner}",
                batch * (2 * obs + 64) * 4,
            )
        )
        n = self.n_step_range[1] if isinstance(self.n_step, (int, tuple)) else 1
        if n > 1:
            # Sampling gathers an n-step window per row ([batch, n]); adding a step checks the
            # window of each env's row n steps back ([envs per step, n]).
            terms.append(
                (
                    f"n_step={self.n_step} (windows of [batch, {n:,}])",
                    (batch + self.envs_per_step) * n * memory.N_STEP_WINDOW_BYTES,
                )
            )
        return terms

    def _update_rows(self) -> int:
        """The train batch passes the network three times: its observations and next
        observations through the online network, the next observations through the target."""
        return 3 * self.total_train_batch_size

    def _conv_encoders(self) -> int:
        """DQN's Q-network has one conv stack (SAC's networks take vectors only: 0 there)."""
        return 1

    def _check_batch_division(self) -> None:
        """Nothing to check: each learner gets its own train batch from the replay buffer."""

    def validate(self) -> None:
        super().validate()
        spec = self.rl_module_spec
        if (
            isinstance(spec, RLModuleSpec)
            and spec.module_class is not None
            and (spec.is_forward_only or not self.takes_module_class or self.is_multi_agent)
        ):
            takes = (
                "a Flax module (single-agent DQN)"
                if self.takes_module_class and not self.is_multi_agent
                else "none"
            )
            raise ConfigError(
                f"RLModuleSpec(module_class={spec.module_class.__name__}): "
                f"{'multi-agent ' if self.is_multi_agent else ''}{self.algo_name} builds its "
                f"networks from model_config and takes {takes} here; PPO, APPO, IMPALA, "
                "MARWIL and BC build a Flax module of yours as the policy, single-agent DQN as "
                "its Q-network. Drop the module_class and set .rl_module(model_config={...})"
            )
        if self.training_intensity is not None:
            native = self._native_ratio()
            # The weight replay_ratio_weights() rounds up, compared as a float first (1e-320
            # over the native ratio is 0.0: an infinite number of fragments).
            ratio = self.training_intensity / native
            weight = ratio if ratio >= 1 else (1 / ratio if ratio > 0 else math.inf)
            if weight > MAX_REPLAY_WEIGHT:
                what = "updates" if ratio > 1 else "sampled fragments"
                raise ConfigError(
                    f"training_intensity={self.training_intensity} against the native ratio "
                    f"{native:g} (train batch {self.total_train_batch_size} / "
                    f"{self.get_rollout_fragment_length() * self.envs_per_step} env step(s) per "
                    f"fragment) asks for {weight:,.0f} {what} per cycle, more than "
                    f"{MAX_REPLAY_WEIGHT:,}; set training_intensity nearer {native:g}"
                )
        rb = self.replay_buffer_config
        num_envs = self.total_num_envs
        rows = rb["capacity"] // num_envs
        if rows < self.n_step_range[1] + 2:
            raise ConfigError(
                f"replay_buffer_config['capacity']={rb['capacity']} gives each of the {num_envs} "
                f"sub-envs {rows} steps; it needs more than n_step + 1 = {self.n_step_range[1] + 1}"
            )


def check_loaded_buffer(buffer: Any, path: Any) -> None:
    """A saved replay buffer's counters and priorities must be ones the buffer can have: a
    crafted file could otherwise make sampling read outside the rings or divide by zero.
    ``buffer``: the loaded buffer state, or None (none saved)."""
    if buffer is None:
        return
    storage = getattr(buffer, "storage", None) or {}
    rows = next(iter(jax.tree.leaves(storage)), None)
    capacity = int(np.shape(rows)[1]) if rows is not None and np.ndim(rows) >= 2 else None
    for name in ("insert_pos", "size"):
        values = np.asarray(getattr(buffer, name, 0))
        if capacity is not None and (values.min() < 0 or values.max() > capacity):
            raise CheckpointError(f"{path}: the replay buffer's {name} must lie in [0, {capacity}]")
    for name in ("sum_tree", "min_tree"):
        tree = getattr(buffer, name, None)
        for level in jax.tree.leaves(tree):
            level = np.asarray(level)
            if level.dtype.kind == "f" and (np.isnan(level).any() or (level < 0).any()):
                raise CheckpointError(
                    f"{path}: the replay buffer's {name} holds NaN or negative priorities"
                )
    top = np.asarray(getattr(buffer, "max_priority", 1.0))
    if not (np.isfinite(top).all() and (top > 0).all()):
        raise CheckpointError(f"{path}: the replay buffer's max_priority must be finite > 0")


class OffPolicyAlgorithm(Algorithm):
    """Replay-based training: the execution layer's off-policy loop around an algorithm's parts.

    A subclass implements one hook, ``_build_parts(key) -> (PolicyParts, ReplayLearner)``: its
    policy (acting with ``acting_params(state)`` of the loop's ``OffPolicyState``), and its
    learner (initial state, ``learn``, ``update_target``, metric names), pure functions built
    once. The loop (``rljax.execution.off_policy``) is built from them, the replay buffer and the
    schedule read from the config here, once.
    """

    config: OffPolicyConfig
    parts: PolicyParts[OffPolicyState]
    state: OffPolicyState

    # ------------------------------------------------------------------ hooks
    def _build_parts(
        self, key: jax.Array
    ) -> tuple[PolicyParts[OffPolicyState], ReplayLearner[Any]]:
        raise NotImplementedError

    # ------------------------------------------------------------------ setup
    def _setup(self) -> None:
        cfg = self.config
        key = jax.random.PRNGKey(self.seed)
        key, init_key, self._action_key = jax.random.split(key, 3)
        self.parts, self.replay_learner = self._build_parts(init_key)
        learner = self.replay_learner.init
        self.fragment_length = cfg.get_rollout_fragment_length()
        self.sample_weight, self.train_weight = cfg.replay_ratio_weights()
        self.envs_per_step = cfg.envs_per_step
        steps_per_cycle = self.sample_weight * self.fragment_length * self.envs_per_step
        self.cycles_per_iteration = max(
            1, math.ceil(cfg.min_sample_timesteps_per_iteration / steps_per_cycle)
        )
        self.num_envs = cfg.total_num_envs
        self.total_batch = cfg.total_train_batch_size
        self.schedule = ReplaySchedule(
            train_weight=self.train_weight,
            batch_size=self.total_batch,
            n_step=cfg.n_step_range,
            gamma=float(cfg.gamma),
            target_update_freq=int(cfg.target_network_update_freq),
            learning_starts=int(cfg.num_steps_sampled_before_learning_starts),
        )
        act = self.parts.act
        if cfg.same_actions_as_one_process:
            act = distributed.same_actions_as_one_process(act)
        self._act_step = make_act_step(
            act,
            self.parts.bootstrap_keys,
            record_steps=self._record_episodes,
            clip_rewards=cfg.clip_rewards,
        )
        state = OffPolicyState(
            learner=learner,
            buffer=None,
            key=key,
            # Three arrays, not one: the jitted loop donates each of them.
            timestep=jnp.zeros((), jnp.int32),
            last_target_update=jnp.zeros((), jnp.int32),
            num_updates=jnp.zeros((), jnp.int32),
        )
        self.buffer = self._make_buffer(state)
        self._loop: OffPolicyLoop | None = None
        # The compiler options of the loop's programs, picked by the policy network's size.
        self._xla_options = xla_options.resolve(
            cfg.xla_cpu_options, self.parts.acting_params(state)
        )
        if self._inference_only:  # a module loaded for inference: no buffer, env or runner
            self.fused = False
            self.state = self._place_learner_state(state)
            self._jit_acting_params = jax.jit(self.parts.acting_params)
            return
        self.state = self._place_learner_state(state._replace(buffer=self.buffer.init()))
        self._jit_episodes = jax.jit(episode_arrays)
        self._jit_acting_params = jax.jit(self.parts.acting_params)
        batch_sharding = self._batch_sharding if self.mesh is not None else None
        update = make_update(self.replay_learner, self.buffer, self.schedule, batch_sharding)
        cycle = make_learn_cycle(
            update, self.buffer, self.schedule, self.replay_learner.metric_names
        )
        self.fused = self._fused_envpool()
        with xla_options.applied(self._xla_options):
            if self.fused:
                self._setup_fused(cycle)
            else:
                self._setup_host_runners(cycle)

    def _make_buffer(self, state: OffPolicyState) -> EpisodeReplayBuffer:
        """The replay buffer, its rows shaped as ``state``'s policy acts."""
        cfg = self.config
        rb = cfg.replay_buffer_config
        obs_space = self.observation_space
        params = self.parts.acting_params(state)
        obs_example = zeros_batch(obs_space, 1)  # a Dict space's: a dict of arrays
        obs_shape = () if is_structured(obs_space) else self._observation_shape()
        action = jax.eval_shape(self.parts.act, params, obs_example, jax.random.PRNGKey(0))[0]
        item = {
            "obs": jax.tree.map(lambda o: jax.ShapeDtypeStruct(o.shape[1:], o.dtype), obs_example),
            "action": jax.ShapeDtypeStruct(action.shape[1:], action.dtype),
            "reward": jax.ShapeDtypeStruct((), jnp.float32),
            "terminated": jax.ShapeDtypeStruct((), jnp.bool_),
            "truncated": jax.ShapeDtypeStruct((), jnp.bool_),
        }
        # Capacity in env steps, rounded up to a whole number of rows per sub-env.
        capacity = math.ceil(int(rb["capacity"]) / self.num_envs) * self.num_envs
        prioritized = rb["type"] in PRIORITIZED_REPLAY_TYPES
        kw: dict[str, Any] = {
            "prioritized": prioritized,
            "alpha": float(rb.get("alpha", 0.6)),
            "beta": float(rb.get("beta", 0.4)),
            "eps": float(rb.get("eps", 1e-6)),
        }
        n_high = self.schedule.n_step[1]
        self.frame_stacked = (
            self.env_spec is not None
            and self.env_spec.backend == "envpool"
            and obs_space.dtype == np.uint8
            and len(obs_shape) == 3
        )
        if self.frame_stacked:
            if n_high > 1:
                raise ConfigError(
                    f"n_step={cfg.n_step!r}: the frame-deduplicating buffer for EnvPool's stacked "
                    "Atari frames samples 1-step transitions; use n_step=1"
                )
            channels_last = obs_shape[-1] < obs_shape[0]  # [H, W, S], as rljax's Atari envs
            return make_frame_stack_episode_buffer(
                item, self.num_envs, capacity, channels_last=channels_last, **kw
            )
        return make_episode_buffer(item, self.num_envs, capacity, max_n_step=n_high, **kw)

    def _setup_fused(self, cycle: Any) -> None:
        params = self.parts.acting_params(self.state)
        length = self.fragment_length * self.sample_weight
        if is_jax_spec(self.env_spec):  # a JAX env, stepped in the program (next-step resets)
            rollout, self.runner_state = start_jax_env(
                jax_env_of(self.env_spec),
                self.parts.act,
                self._act_step,
                params,
                self.config.num_envs_per_env_runner,
                self.seed,
                length,
                self.parts.to_env_action,
                keep_info=self._record_episodes,
                next_step=True,
            )
        else:
            xla_step, self.runner_state, _ = self._make_fused_runner(params)
            rollout = make_fused_rollout(self._act_step, xla_step, length, self.parts.to_env_action)
        if self.mesh is None:
            iteration = make_fused_iteration(
                rollout, self.parts.acting_params, cycle, self.cycles_per_iteration
            )
            outputs = PackedOutputs()  # the iteration's outputs in one transfer per dtype
            self._iteration = jax.jit(
                packed_iteration(iteration, outputs),
                donate_argnums=(0, 1),
                compiler_options=xla_options.current("train_step"),
            )
            self._loop = self._make_loop(iteration=self._iteration, outputs=outputs)
        else:
            # EnvPool's custom call must run once, on one device: the rollout stays off the mesh.
            self._sample = jax.jit(
                rollout, donate_argnums=(1,), compiler_options=xla_options.current("rollout")
            )
            self._jit_cycle = self._make_jit_cycle(cycle)
            self._loop = self._make_loop(
                cycle=self._jit_cycle, sample=self._sample, traj_sharding=replicated(self.mesh)
            )

    def _make_jit_cycle(self, cycle: Any) -> Any:
        options = xla_options.current("update")
        if self.mesh is None:
            return jax.jit(cycle, donate_argnums=(0,), compiler_options=options)
        return jax.jit(
            cycle,
            in_shardings=(self._state_sharding, replicated(self.mesh)),
            out_shardings=(self._state_sharding, replicated(self.mesh), replicated(self.mesh)),
            donate_argnums=(0,),
            compiler_options=options,
        )

    def _setup_host_runners(self, cycle: Any) -> None:
        self._runners = self._make_runner_group(
            self._runner_params(), self._act_step, self.fragment_length * self.sample_weight
        )
        self._jit_cycle = self._make_jit_cycle(cycle)
        self._loop = self._make_loop(cycle=self._jit_cycle, runners=self._runners)

    def _make_loop(self, **sampling: Any) -> OffPolicyLoop:
        """The loop over this algorithm's cycles, sampling as ``sampling`` says (the jitted
        fused iteration, the jitted rollout and cycle, or runner threads and the cycle)."""
        return OffPolicyLoop(
            cycles=self.cycles_per_iteration,
            train_weight=self.train_weight,
            batch_size=self.total_batch,
            runner_params=self._runner_params,
            episodes=self._jit_episodes,
            sample_timeout_s=self.config.sample_timeout_s,
            **sampling,
        )

    def _runner_params(self, state: OffPolicyState | None = None) -> Any:
        return self._on_runner_device(
            self._jit_acting_params(self.state if state is None else state)
        )

    # ------------------------------------------------------------------ training
    def _training_step(self) -> IterationResult:
        assert self._loop is not None, "a module loaded for inference does not train"
        self.state, self.runner_state, result = self._loop.step(self.state, self.runner_state)
        return result

    @property
    def local_replay_buffer(self) -> ReplayBufferView:
        """The replay buffer as RLlib's ``algo.local_replay_buffer``: ``get_state()`` (its
        arrays on the host), ``set_state(...)``, ``get_num_timesteps()``."""
        return ReplayBufferView(self)

    # ------------------------------------------------------------------ checkpoint hooks
    def _checkpoint_state(self, include_replay_buffer: bool | None = None) -> Any:
        include = self._includes_replay_buffer(include_replay_buffer)
        state = self.state._asdict()
        # The stored layout: the optimizer states without their injected rates
        # (rljax.learners.hyperparams), as checkpoints have always held them.
        state["learner"] = saved_layout(state["learner"])
        if not include:
            del state["buffer"]
        # The fused rollout's acting key continues too (EnvPool's env state cannot be saved).
        runner_key = self.runner_state.key if self.fused else jnp.zeros((2,), jnp.uint32)
        return {"state": state, "runner_key": runner_key}

    def _check_loaded_state(self, loaded: Any, path: Any) -> None:
        check_loaded_buffer(loaded["state"].get("buffer"), path)

    def _inference_target(self, includes_replay_buffer: bool) -> Any:
        target = self._checkpoint_state(False)
        if includes_replay_buffer:  # its shapes only: nothing is allocated for the buffer
            target["state"]["buffer"] = jax.eval_shape(self.buffer.init)
        return target

    def _restore_state(self, loaded: Any) -> None:
        fields = dict(loaded["state"])
        # The injected rates back around the stored optimizer states (the next update writes
        # the rates of its env steps there).
        fields["learner"] = live_layout(fields["learner"], self.state.learner)
        if self._inference_only:  # no replay buffer: inference reads the networks only
            fields["buffer"] = None
            self.state = jax.device_put(
                jax.tree.map(jnp.asarray, OffPolicyState(**fields)), self.learner_devices[0]
            )
            return
        fields.setdefault("buffer", jax.device_get(self.buffer.init()))
        if self.mesh is not None:
            self.state = distributed.global_array(OffPolicyState(**fields), self._state_sharding)
        else:
            self.state = jax.device_put(
                jax.tree.map(jnp.asarray, OffPolicyState(**fields)), self.learner_devices[0]
            )
        if self.fused:
            self.runner_state = self.runner_state._replace(
                key=jax.device_put(jnp.asarray(loaded["runner_key"]), self.runner_device)
            )
        elif self._runners is not None:
            self._runners.publish(self._runner_params(), advance=False)
