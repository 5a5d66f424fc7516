"""Checkpoints of an algorithm: writing one (atomically, no pickle: ``rljax.utils.checkpoint``)
and reading one back, with everything it holds checked before anything of it is built or
changed: ``save``, ``restore``, ``from_checkpoint`` and ``for_inference`` (a policy's networks
and weights alone, ``RLModule.from_checkpoint``), on top of the checks of its metadata
(``checked_metadata``), config (``_checked_load``) and saved env-runner state
(``check_runner_state_schema``).

What these read of an algorithm is the narrow interface ``StateHooks``: the hooks a subclass
overrides for its own training state. Everything else (the config, the policy ids, the runner
group, the paths) is passed in.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import tempfile
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import jax
import numpy as np

import rljax
from rljax import distributed
from rljax.env.spaces import space_from_data, space_to_data
from rljax.env.state import EnvStateError, EnvStateMalformed
from rljax.utils import checkpoint as ckpt
from rljax.utils.errors import CheckpointError, ConfigError
from rljax.utils.ids import DEFAULT_POLICY_ID, RL_MODULE_PATH
from rljax.utils.jit import abstract_init
from rljax.utils.references import LoadPolicy

if TYPE_CHECKING:
    import gymnasium as gym

    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.runners.group import RunnerGroup

logger = logging.getLogger("rljax")

DEFAULT_POLICY = DEFAULT_POLICY_ID


class StateHooks(Protocol):
    """What checkpoints read of an algorithm: its training state's hooks, which each algorithm
    overrides for its own state (``Algorithm`` documents them)."""

    def _checkpoint_state(self, include_replay_buffer: bool | None = None) -> Any:
        """The arrays to save (with the replay buffer where ``include_replay_buffer``)."""
        ...

    def _check_loaded_state(self, state: Any, path: Any) -> None:
        """Checks a loaded state's values (numpy) before anything is restored."""
        ...

    def _restore_state(self, state: Any) -> None:
        """Puts a loaded, checked state in place."""
        ...

    def _inference_target(self, includes_replay_buffer: bool) -> Any:
        """The shapes of a checkpoint's state, for a module loaded for inference."""
        ...


def _shapes(tree: Any) -> Any:
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype), tree)


# ------------------------------------------------------------------ saving
def includes_replay_buffer(config: Any, include_replay_buffer: bool | None) -> bool:
    """Whether a save holds the replay buffer: ``include_replay_buffer``, or (None) the
    config's ``store_buffer_in_checkpoints``."""
    if include_replay_buffer is None:
        return bool(getattr(config, "store_buffer_in_checkpoints", False))
    return bool(include_replay_buffer)


def spaces_data(
    observation_space: gym.Space, action_space: gym.Space, possible_agents: list[Any] | None
) -> dict[str, Any] | None:
    """The spaces and agents as data, so that a module loads for inference without building
    the env; None for a space without a data form (the env is resolved when loading)."""
    try:
        return {
            "observation": space_to_data(observation_space),
            "action": space_to_data(action_space),
            "possible_agents": list(possible_agents) if possible_agents is not None else None,
        }
    except TypeError:
        return None


def run_metadata(
    config: AlgorithmConfig,
    spaces: tuple[gym.Space, gym.Space],
    described_spaces: dict[str, Any] | None,
    policy_ids: list[str],
    seed: int,
    counters: dict[str, Any],
) -> dict[str, Any]:
    """A checkpoint's metadata of a run: the config (as data), the spaces (repr and, where
    they have one, their data form ``described_spaces``), the policy ids, the seed and the
    counters (``_COUNTERS`` and ``time_total_s``)."""
    observation_space, action_space = spaces
    config_data = config.to_dict()
    return {
        "rljax_version": rljax.__version__,
        "algo": config.algo_name,
        "config_module": f"{type(config).__module__}:{type(config).__qualname__}",
        "config": config_data,
        "observation_space": repr(observation_space),
        "action_space": repr(action_space),
        # As data, so that a module loads for inference without building the env.
        "spaces": described_spaces,
        "policy_ids": policy_ids,
        "seed": seed,
        "counters": counters,
    }


def _warn_unimportable(config_data: dict[str, Any]) -> None:
    """Says once per setting, when a checkpoint is written, that its config holds a lambda
    (or a function made inside a function) under a name no import reaches: loading the
    checkpoint then needs the object passed again (``Algorithm.from_checkpoint(path,
    policy_mapping_fn=...)``), which the load's error also says."""
    from rljax.utils import once
    from rljax.utils.references import passable_unimportable

    for field in passable_unimportable(config_data):
        if once.first_time("unimportable_in_checkpoint", field):
            logger.warning(
                "this checkpoint saves %s as %r, which no import reaches (a lambda, or a "
                "function or class made inside a function): loading it needs "
                "Algorithm.from_checkpoint(path, %s=...), or define it at a module's top level",
                field,
                config_data[field]["import"],
                field,
            )


def runner_state(runners: RunnerGroup | None, stopped: bool) -> tuple[Any, str]:
    """The env runners' state (their envs' mid-episode state where it can be saved) and,
    when the envs' state is missing, why."""
    if stopped:
        return None, "saved after stop(), which closed the env runners"
    if runners is None:
        return None, "EnvPool's fused rollout: EnvPool has no API to save its envs' state"
    try:
        return runners.get_state(), ""
    except EnvStateError as e:
        return runners.get_state(include_envs=False), str(e)


def save(
    hooks: StateHooks,
    path: str | os.PathLike | None,
    metadata: dict[str, Any],
    *,
    include_replay_buffer: bool,
    runners: RunnerGroup | None,
    stopped: bool,
    num_to_keep: int = 1,
) -> str:
    """Writes a checkpoint of ``hooks``' state with the run's ``metadata`` (``run_metadata``)
    and the env runners' state, and returns its directory.

    ``path`` None: a new temporary directory (RLlib's default); a file at ``path`` is refused
    (``CheckpointError``) before any work. ``num_to_keep`` versions saved to ``path`` stay
    (``rljax.utils.checkpoint.save_checkpoint``). The env runners' mid-episode state is saved
    where it can be (``runner_state``); otherwise the metadata's
    ``env_state_missing_because`` says why.
    """
    if path is None:  # RLlib's default: a new directory of its own
        path = tempfile.mkdtemp(prefix=f"{metadata['algo']}_checkpoint_")
    else:
        ckpt.check_save_path(path)  # a file there: refused before any work
    saved_runners, why = runner_state(runners, stopped)
    meta = {
        **metadata,
        "includes_replay_buffer": include_replay_buffer,
        "includes_env_state": saved_runners is not None and saved_runners["runners"] is not None,
        "env_state_missing_because": why,
    }
    state = distributed.host_value(hooks._checkpoint_state(include_replay_buffer))
    if distributed.is_writer():  # across processes, process 0 writes
        ckpt.save_checkpoint(path, meta, state, num_to_keep=num_to_keep, runners=saved_runners)
        write_module_paths(path, metadata["policy_ids"])
        _warn_unimportable(metadata["config"])  # once it is written
    return str(path)


MODULE_PATH_NOTE = "rljax_module.json"


def write_module_paths(path: str | os.PathLike, policy_ids: list[str]) -> None:
    """RLlib's module directories inside a checkpoint,
    ``<checkpoint>/learner_group/learner/rl_module/<policy_id>``, which scripts check exist
    before they load a policy from them (``RLModule.from_checkpoint(that path)``,
    ``RLModuleSpec(load_state_path=that path)``). The weights stay in the checkpoint's state
    file: each directory holds a small JSON note naming its policy and the checkpoint, written
    atomically once (its text never changes, so later saves to the same directory leave it);
    nothing reads it back."""
    base = Path(path).expanduser().resolve().joinpath(*RL_MODULE_PATH)
    for pid in policy_ids:
        where = base / pid
        if where.resolve().parent != base.resolve() or (where / MODULE_PATH_NOTE).exists():
            continue  # an id that is no plain directory name, or a note already written
        where.mkdir(parents=True, exist_ok=True)
        note = {"policy_id": pid, "checkpoint": "../../../..", "weights_in": ckpt.STATE_FILE}
        ckpt.write_json_atomically(where / MODULE_PATH_NOTE, note)


# ------------------------------------------------------------------ restoring
def non_finite_weights_loaded(state: Any, path: Any) -> int:
    """The NaN and infinite numbers in a loaded state's weights (its host arrays under a
    ``*params`` key): warns, naming the file, where there are any (such a policy acts on
    garbage, e.g. always action 0, and every update is skipped as non-finite); each result
    reports the count (``learners/__all_modules__/num_non_finite_weights_loaded``)."""
    bad, total = ckpt.count_non_finite_weights(state)
    if bad:
        logger.warning(
            "%s: %s of the %s loaded weights are NaN or infinite; the policy's actions "
            "are meaningless and updates from them are skipped as non-finite",
            path,
            f"{bad:,}",
            f"{total:,}",
        )
    return bad


def check_runner_state(
    group: RunnerGroup | None, runners: Any, path: Any
) -> tuple[str, list[Any] | None]:
    """Whether the saved env runners' state fits this run's runners ``group``: ("", the
    checked arrays) if it does, else (why not, None); then the run restores the rest and
    starts new episodes. A state that is not of the form the envs save (a corrupt or crafted
    file) raises ``CheckpointError``."""
    if runners is None or group is None:
        return "no runner state to restore", None
    try:
        return "", group.check_state(runners)
    except EnvStateMalformed as e:
        raise CheckpointError(f"{path}: {str(e)[:500]}") from None
    except EnvStateError as e:
        return str(e)[:500], None


def restore_runner_state(
    group: RunnerGroup | None,
    runners: Any,
    meta: dict[str, Any],
    fit: str,
    checked: list[Any] | None,
) -> None:
    """Puts the env runners back mid-episode, so that the run continues exactly as it would
    have; where that cannot be done, the runners go on with fresh episodes (logged)."""
    if runners is None or group is None or runners.get("runners") is None:
        why = meta.get("env_state_missing_because") or "this run's envs are EnvPool's"
        logger.info("restored run starts new episodes: %s", str(why)[:500])
    if runners is None or group is None:
        return
    if fit:
        logger.warning("restored run starts new episodes; the envs' saved state: %s", fit)
        return
    group.set_state(runners, checked)  # checked above: not again


@dataclasses.dataclass(frozen=True)
class Restored:
    """What ``restore`` put in place: the checked metadata, the loaded state (host arrays)
    and the state file it came from."""

    saved: SavedMetadata
    state: Any
    state_file: Path


def restore(
    hooks: StateHooks,
    path: str | os.PathLike,
    *,
    algo_name: str,
    policy_ids: list[str],
    runners: RunnerGroup | None,
    agent_ids: Collection[str] | None = None,
) -> Restored:
    """Loads a checkpoint of algorithm ``algo_name`` with policies ``policy_ids`` (and, for a
    multi-agent run, agents ``agent_ids``: the per-agent counters' keys) into ``hooks`` and
    the env runners ``runners``.

    Everything is read and checked first (the metadata's fields, the state's tree, shapes
    and dtypes against ``hooks._checkpoint_state``'s, the env runners' saved state), so a
    checkpoint that does not fit raises ``CheckpointError`` and leaves everything as it was;
    then the env runners' state is applied (envs that refuse it after all are reset as built,
    and the learner is left as it was), then ``hooks._restore_state``. The counters are the
    caller's to apply (``Restored.saved``).
    """
    meta, version_dir, saved, state = _load_checked(hooks, path, algo_name, policy_ids)
    if agent_ids is not None:
        try:
            checked_id_counters(saved.counters[AGENT_COUNTERS], agent_ids, "agent")
        except ValueError as e:
            raise CheckpointError(
                f"{version_dir / ckpt.META_FILE}: field 'counters.{AGENT_COUNTERS}': {e}"
            ) from None
    # Only runners that can take it read the saved runner state (EnvPool's fused path has none).
    saved_runners = ckpt.load_runners(version_dir) if runners is not None else None
    check_runner_state_schema(saved_runners, version_dir / ckpt.RUNNERS_FILE)
    runners_fit, runners_checked = check_runner_state(
        runners, saved_runners, version_dir / ckpt.RUNNERS_FILE
    )
    # Nothing has changed so far; from here on the checked checkpoint is applied, the env
    # runners first: if their envs refuse the state after all, they are reset as built and
    # the learner is left as it was.
    try:
        restore_runner_state(runners, saved_runners, meta, runners_fit, runners_checked)
    except EnvStateError as e:
        raise CheckpointError(
            f"{version_dir / ckpt.RUNNERS_FILE}: the env runners could not take the saved "
            f"state ({str(e)[:300]}); their envs were reset, nothing else changed"
        ) from None
    hooks._restore_state(state)
    return Restored(saved, state, version_dir / ckpt.STATE_FILE)


def _load_checked(
    hooks: StateHooks, path: str | os.PathLike, algo_name: str, policy_ids: list[str]
) -> tuple[dict[str, Any], Path, SavedMetadata, Any]:
    """A checkpoint's metadata (raw, its version directory, checked) and training state, read
    and checked against ``hooks``' own state (tree, shapes, dtypes, values); nothing applied."""
    meta, version_dir = ckpt.load_metadata(path)
    saved = checked_metadata(meta, version_dir / ckpt.META_FILE)
    if saved.algo != algo_name:
        raise CheckpointError(f"{str(path)!r} holds a {saved.algo} checkpoint; this is {algo_name}")
    if saved.policy_ids != policy_ids:
        raise CheckpointError(
            f"{str(path)!r} holds policies {saved.policy_ids[:20]}; this algorithm has {policy_ids}"
        )
    live = hooks._checkpoint_state(saved.includes_replay_buffer)
    state = ckpt.load_state(version_dir, _shapes(live))
    hooks._check_loaded_state(state, version_dir / ckpt.STATE_FILE)
    return meta, version_dir, saved, state


def load_training_state(
    hooks: StateHooks, path: str | os.PathLike, *, algo_name: str, policy_ids: list[str]
) -> Any:
    """The training state of the checkpoint at ``path`` (the learner's part: no env runners,
    no counters, no replay buffer), read and checked as ``restore`` checks it; the caller
    applies it (``restore_from_path(..., component="learner_group")``)."""
    state = _load_checked(hooks, path, algo_name, policy_ids)[3]
    if isinstance(state, dict) and isinstance(state.get("state"), dict):
        state = {**state, "state": {k: v for k, v in state["state"].items() if k != "buffer"}}
    if isinstance(state, dict) and isinstance(state.get("policies"), list):  # multi-agent
        state = {
            **state,
            "policies": [
                {k: v for k, v in p.items() if k != "buffer"} if isinstance(p, dict) else p
                for p in state["policies"]
            ],
        }
    return state


# ------------------------------------------------------------------ loading
def for_inference(
    path: str | os.PathLike,
    *,
    loader: type | None = None,
    allow_imports: Iterable[str] | None = None,
    env: Any = None,
    module_class: Any = None,
) -> Any:
    """The algorithm of a checkpoint with its networks and weights, for inference only: no
    env, runner, replay buffer or training program is built (``RLModule.from_checkpoint``).

    Code the checkpoint names loads only as for ``from_checkpoint``; the env and the mapping
    function are not needed when the checkpoint describes its spaces (rljax writes that
    description), so they are not loaded then. A user Flax module must be trusted
    (``module_class=``, registered, or ``allow_imports``): it is the network. The config is
    checked as ``from_checkpoint`` checks it (``_checked_load``), and the state file's tree
    against the shapes the networks would have, before anything is compiled. ``loader``: the
    class asked to load (None: any algorithm). Of the counters, the module built gets its
    ``iteration`` and ``_non_finite_weights_loaded`` (what a loaded module reports).
    """
    loaded = _checked_load(
        loader,
        path,
        inference=True,
        allow_imports=allow_imports,
        env=env,
        module_class=module_class,
    )
    meta_file = loaded.version_dir / ckpt.META_FILE
    try:
        # The learner state's shapes, traced (jax.eval_shape): nothing compiles or runs
        # before the state file is checked against them.
        with abstract_init():
            algo = loaded.algo_class(
                loaded.config, inference_only=True, saved_spaces=loaded.saved_spaces
            )
    except ConfigError as e:
        raise CheckpointError(f"{meta_file}: config: {e}") from None
    target = algo._inference_target(loaded.saved.includes_replay_buffer)
    state = ckpt.load_state(loaded.version_dir, _shapes(target))
    state_file = loaded.version_dir / ckpt.STATE_FILE
    algo._check_loaded_state(state, state_file)
    algo._restore_state(state)
    algo._non_finite_weights_loaded = non_finite_weights_loaded(state, state_file)
    algo.iteration = loaded.saved.counters["training_iteration"]
    return algo


def from_checkpoint(
    path: str | os.PathLike,
    *,
    loader: type | None = None,
    allow_imports: Iterable[str] | None = None,
    env: Any = None,
    policy_mapping_fn: Any = None,
    module_class: Any = None,
    callbacks: Any = None,
    learner_class: Any = None,
) -> Any:
    """Builds the algorithm a checkpoint was written by (its config checked by
    ``_checked_load`` first) and restores its state (``restore_from_path``); ``loader``: the
    class asked to load (None: any algorithm). A build that fails to restore is stopped."""
    loaded = _checked_load(
        loader,
        path,
        inference=False,
        allow_imports=allow_imports,
        env=env,
        policy_mapping_fn=policy_mapping_fn,
        module_class=module_class,
        callbacks=callbacks,
        learner_class=learner_class,
    )
    config = loaded.config
    if (
        loader is not None
        and config.algo_class is not None
        and loader is not config.algo_class
        and issubclass(loader, config.algo_class)
    ):
        # A subclass asked to load its base's checkpoint (an old API trainer, a user's
        # PPO with its own training_step): the build is of that class, as RLlib's.
        config.algo_class = loader
    try:
        algo = config.build_algo()
    except ConfigError as e:
        raise CheckpointError(f"{loaded.version_dir / ckpt.META_FILE}: config: {e}") from None
    try:
        algo.restore_from_path(loaded.version_dir)
    except BaseException:
        algo.stop()
        raise
    return algo


@dataclasses.dataclass(frozen=True)
class _LoadedCheckpoint:
    """A checkpoint's checked metadata and config, ready to build (``_checked_load``)."""

    config: AlgorithmConfig
    saved: SavedMetadata
    version_dir: Path
    saved_spaces: dict[str, Any] | None
    algo_class: type  # an Algorithm subclass


_MAX_AGENTS = 10_000


def _saved_spaces(meta: dict[str, Any], meta_file: Path) -> dict[str, Any] | None:
    """The spaces and agents a checkpoint describes (bounded: ``space_from_data``), or None
    when it describes none."""
    spaces = meta.get("spaces")
    if spaces is None:
        return None
    where = f"{meta_file}: spaces"
    if not isinstance(spaces, dict):
        raise CheckpointError(f"{where}: expected an object; got a {type(spaces).__name__}")
    agents = spaces.get("possible_agents")
    if agents is not None and not (
        isinstance(agents, list)
        and 0 < len(agents) <= _MAX_AGENTS
        and all(isinstance(a, (str, int)) and not isinstance(a, bool) for a in agents)
        and len(set(agents)) == len(agents)
    ):
        raise CheckpointError(
            f"{where}: possible_agents must be null or a list of at most {_MAX_AGENTS:,} "
            "distinct agent ids (strings or ints)"
        )
    return {
        "spaces": (
            space_from_data(spaces.get("observation"), f"{where}.observation"),
            space_from_data(spaces.get("action"), f"{where}.action"),
        ),
        "possible_agents": agents,
    }


def _check_policy_mapping(config: AlgorithmConfig, agents: list[Any], meta_file: Path) -> None:
    """Each agent's policy under the config's mapping function, before anything is built: a
    policy id that is not one of the config's is a ``CheckpointError`` listing both. A mapping
    function that needs an episode to decide (it raises on ``episode=None``) is left to the
    env runners, which check each agent as it appears."""
    from rljax.env.multi_agent_vector import mapping_caller

    if config.policy_mapping_fn is None or config.policies is None:
        return
    fn = mapping_caller(config.policy_mapping_fn)
    mapped = {}
    for agent in agents:
        try:
            mapped[agent] = fn(agent, None, worker_index=0)
        except Exception:
            return
    policies = list(config.policies)
    unknown = {a: p for a, p in mapped.items() if not isinstance(p, str) or p not in policies}
    if unknown:
        returned = sorted({repr(p)[:60] for p in mapped.values()})
        raise CheckpointError(
            f"{meta_file}: the policy mapping function maps the agents {agents[:20]} to "
            f"{', '.join(returned[:20])}, but the checkpoint's policies are {policies[:20]} "
            f"(agent {next(iter(unknown))!r} gets {next(iter(unknown.values()))!r}); pass the "
            "run's own policy_mapping_fn"
        )


def _checked_load(
    loader: type | None,
    path: str | os.PathLike,
    *,
    inference: bool,
    allow_imports: Iterable[str] | None,
    env: Any = None,
    policy_mapping_fn: Any = None,
    module_class: Any = None,
    callbacks: Any = None,
    learner_class: Any = None,
) -> _LoadedCheckpoint:
    """The one check of a checkpoint before anything of it is built, for every loader
    (``Algorithm.from_checkpoint``, ``RLModule.from_checkpoint``, ``rljax export``): the
    metadata's fields, the described spaces (bounded), the config from its data (code only
    by the caller's opt-in), every setting validated, the policies against the mapping
    function. The memory estimate follows in ``Algorithm.__init__``, for every build.

    ``inference``: for a policy loaded for inference, where callbacks are left out and, when
    the checkpoint describes its spaces, the env and the mapping function too (never built:
    the settings are validated without the env). ``loader``: the algorithm class asked to
    load, whose config class must be the checkpoint's; None: any algorithm.
    """
    # Here, not at the top: importing rljax.algorithms runs its package's __init__, which
    # imports Algorithm, which imports this module.
    from rljax.algorithms import registry as algorithm_registry

    LoadPolicy.make(allow_imports)  # a bad prefix is the caller's error: ConfigError, first
    meta, version_dir = ckpt.load_metadata(path)
    meta_file = version_dir / ckpt.META_FILE
    saved = checked_metadata(meta, meta_file)
    config_cls = algorithm_registry.config_class(saved.algo)
    if loader is not None and getattr(loader, "config_class", None) not in (None, config_cls):
        raise CheckpointError(
            f"{str(path)!r} holds a {saved.algo} checkpoint; {loader.__name__} cannot load it "
            "(Algorithm.from_checkpoint loads any)"
        )
    spaces = _saved_spaces(meta, meta_file)
    data = dict(saved.config)
    without_env = inference and spaces is not None and env is None
    if inference:
        # Callbacks and a learner class only train: not loaded for inference.
        data = {
            k: v
            for k, v in data.items()
            if not (k in ("callbacks_class", "learner_class") or k.startswith("callbacks_on_"))
        }
    if without_env:
        # Code that only builds envs or maps agents is not needed, so it is not loaded.
        if isinstance(data.get("env"), dict):
            data["env"] = None
        if data.get("policy_mapping_fn") is not None:
            data["policy_mapping_fn"] = None
    try:
        if inference:
            config = config_cls.from_dict(
                data, allow_imports=allow_imports, env=env, module_class=module_class
            )
        else:
            config = config_cls.from_dict(
                data,
                allow_imports=allow_imports,
                env=env,
                policy_mapping_fn=policy_mapping_fn,
                module_class=module_class,
                callbacks=callbacks,
                learner_class=learner_class,
            )
        _in_saved_policy_order(config, saved, meta_file)
        distributed.launch_settings_cleared(config)  # the loading launch's processes decide
        if without_env:
            config.validate_without_env()
        else:
            config.validate()
    except ConfigError as e:
        raise CheckpointError(f"{meta_file}: config: {e}") from None
    agents = spaces["possible_agents"] if spaces is not None else None
    if agents:
        _check_policy_mapping(config, agents, meta_file)
    algo_class = config.algo_class
    if config.is_multi_agent and algo_class is not None:
        algo_class = algo_class.multi_agent_class()
    if algo_class is None:
        raise CheckpointError(
            f"{meta_file}: config: {saved.algo} does not train multi-agent envs "
            "(.multi_agent(...) configs are PPO's, IMPALA's, APPO's, DQN's, SAC's and TD3's), but "
            "the config names policies"
        )
    return _LoadedCheckpoint(
        config, saved, version_dir, spaces if without_env else None, algo_class
    )


def _in_saved_policy_order(config: AlgorithmConfig, saved: Any, meta_file: Any) -> None:
    """Puts a loaded multi-agent config's policies in the order the run had: the state
    stacks policies in that order, and the metadata's JSON sorts the config's keys."""
    policies = config.policies
    if policies is None:
        return
    if set(policies) != set(saved.policy_ids):
        raise CheckpointError(
            f"{meta_file}: the config's policies {sorted(policies)[:20]} are not the "
            f"checkpoint's {saved.policy_ids[:20]}"
        )
    config.policies = {pid: policies[pid] for pid in saved.policy_ids}


_COUNTERS = (
    "training_iteration",
    "num_env_steps_sampled_lifetime",
    "num_env_steps_trained_lifetime",
    "num_episodes_lifetime",
    "num_evaluations",
    "num_offline_evaluations",
)
_MAX_COUNTER = 2**62
# Per module id, the rows each module has trained on so far (RLlib's per-module
# ``num_module_steps_trained_lifetime``): a JSON object, absent in older checkpoints.
MODULE_COUNTERS = "num_module_steps_trained_lifetime"
# A multi-agent run's agent steps sampled so far, per agent id and per module id (RLlib's
# ``num_agent_steps_sampled_lifetime`` / ``num_module_steps_sampled_lifetime`` dicts): JSON
# objects, absent in older checkpoints and in single-agent runs'.
AGENT_COUNTERS = "num_agent_steps_sampled_lifetime"
SAMPLED_MODULE_COUNTERS = "num_module_steps_sampled_lifetime"
_MAX_IDS = 10_000


def checked_id_counters(
    value: Any, ids: Collection[str] | None, kind: str = "module"
) -> dict[str, int]:
    """``value`` as per-id counters: an object mapping some of ``ids`` (the run's module or
    agent ids; ``None``: any id string of 1-200 characters, at most 10,000 of them) to ints in
    [0, 2**62]. ``kind`` ("module", "agent") names the ids in errors. Raises ``ValueError``
    saying what is wrong (a bad id by its first 40 characters, a bad count by its type or
    value; never the whole object)."""
    if not isinstance(value, dict):
        raise ValueError(f"expected an object of {kind} ids to counts; got {type(value).__name__}")
    if ids is None and len(value) > _MAX_IDS:
        raise ValueError(f"expected at most {_MAX_IDS} {kind} ids; got {len(value)}")
    for key, count in value.items():
        if ids is None:
            known = isinstance(key, str) and 0 < len(key) <= 200
        else:
            known = isinstance(key, str) and key in ids
        if not known:
            shown = repr(key[:40]) if isinstance(key, str) else type(key).__name__
            if ids is None:
                raise ValueError(f"{kind} id {shown} is not a string of 1-200 characters")
            raise ValueError(
                f"{shown} is not one of the {kind}s {sorted(ids)[:20]}"
                + (" (and more)" if len(ids) > 20 else "")
            )
        ok = isinstance(count, int | np.integer) and not isinstance(count, bool)
        if not ok or not 0 <= int(count) <= _MAX_COUNTER:
            if not ok:
                got = type(count).__name__
            elif abs(int(count)) < 10**20:
                got = str(int(count))
            else:  # never the whole number: it may have thousands of digits
                got = f"{'-' if count < 0 else ''}an int of {int(count).bit_length()} bits"
            raise ValueError(f"{kind} {key[:40]!r}'s count must be an int in [0, 2**62]; got {got}")
    return {key: int(count) for key, count in value.items()}


@dataclasses.dataclass(frozen=True)
class SavedMetadata:
    """A checkpoint's metadata, every field checked (``checked_metadata``)."""

    algo: str
    config: dict[str, Any]
    policy_ids: list[str]
    counters: dict[str, Any]
    includes_replay_buffer: bool


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def checked_metadata(meta: dict[str, Any], path: Any) -> SavedMetadata:
    """Checks every field of a checkpoint's metadata; raises ``CheckpointError`` naming the
    file, the field and what was expected. Nothing of the file is trusted before this."""

    def bad(field: str, expected: str, value: Any) -> CheckpointError:
        got = type(value).__name__ if not _is_int(value) else f"{value}"
        return CheckpointError(f"{path}: field {field!r}: expected {expected}; got {got[:40]}")

    from rljax.algorithms import registry as algorithm_registry  # as in _checked_load

    algo = meta.get("algo")
    names = algorithm_registry.algorithm_names()
    if algo not in names:
        shown = repr(algo[:40]) if isinstance(algo, str) else type(algo).__name__
        raise CheckpointError(f"{path}: field 'algo' is {shown}; expected one of {names}")
    config = meta.get("config")
    if not isinstance(config, dict):
        raise bad("config", "a JSON object of settings", config)
    policy_ids = meta.get("policy_ids", [DEFAULT_POLICY])
    if (
        not isinstance(policy_ids, list)
        or not policy_ids
        or len(policy_ids) > 10_000
        or not all(isinstance(p, str) and 0 < len(p) <= 200 for p in policy_ids)
    ):
        raise bad("policy_ids", "a non-empty list of policy id strings", policy_ids)
    raw = meta.get("counters", {})
    if not isinstance(raw, dict):
        raise bad("counters", "a JSON object of counters", raw)
    counters: dict[str, Any] = {}
    for name in _COUNTERS:
        value = raw.get(name, 0)
        if not _is_int(value) or not 0 <= value <= _MAX_COUNTER:
            raise bad(f"counters.{name}", "an int in [0, 2**62]", value)
        counters[name] = value
    t = raw.get("time_total_s", 0.0)
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not (math.isfinite(t) and t >= 0):
        raise bad("counters.time_total_s", "a finite number >= 0", t)
    counters["time_total_s"] = float(t)
    # Per-id counters: module ids must be the checkpoint's; agent ids are checked against
    # the run's agents when they are restored (``AgentStepCounter.restore``).
    per_id = (
        (MODULE_COUNTERS, set(policy_ids), "module"),
        (SAMPLED_MODULE_COUNTERS, set(policy_ids), "module"),
        (AGENT_COUNTERS, None, "agent"),
    )
    for name, ids, kind in per_id:
        try:
            counters[name] = checked_id_counters(raw.get(name, {}), ids, kind)
        except ValueError as e:
            raise CheckpointError(f"{path}: field 'counters.{name}': {e}") from None
    include = meta.get("includes_replay_buffer", False)
    if not isinstance(include, bool):
        raise bad("includes_replay_buffer", "true or false", include)
    for field in ("rljax_version", "env_state_missing_because", "config_module"):
        if field in meta and not isinstance(meta[field], str):
            raise bad(field, "a string", meta[field])
    if "seed" in meta and not (_is_int(meta["seed"]) and meta["seed"] >= 0):
        raise bad("seed", "an int >= 0", meta["seed"])
    return SavedMetadata(algo, config, list(policy_ids), counters, include)


def check_runner_state_schema(runners: Any, path: Any) -> None:
    """Checks the form of a checkpoint's saved env-runner state (``runners.json``); raises
    ``CheckpointError`` naming the file and the field. Whether it fits this run's runners is
    checked separately (a state that does not fit only means fresh episodes)."""
    if runners is None:
        return

    def bad(field: str, expected: str) -> CheckpointError:
        return CheckpointError(f"{path}: field {field!r}: expected {expected}")

    if not isinstance(runners, dict):
        raise bad("/", "a JSON object with runners, dropped and num_restarts")
    unknown = set(runners) - {"runners", "dropped", "num_restarts"}
    if unknown:
        raise bad("/", f"only runners, dropped and num_restarts (found {sorted(unknown)[:5]})")
    dropped = runners.get("dropped", {})
    if not isinstance(dropped, dict) or not all(
        k.isdigit() and len(k) < 7 and isinstance(v, str) for k, v in dropped.items()
    ):
        raise bad("dropped", "an object runner index -> reason string")
    restarts = runners.get("num_restarts", 0)
    if not _is_int(restarts) or not 0 <= restarts <= _MAX_COUNTER:
        raise bad("num_restarts", "an int in [0, 2**62]")
    states = runners.get("runners")
    if states is None:
        return
    if not isinstance(states, list) or len(states) > 100_000:
        raise bad("runners", "null or a list of runner states")
    for i, state in enumerate(states):
        if state is None:
            continue
        if not isinstance(state, dict) or set(state) != {"env", "arrays", "num_sub_env_restarts"}:
            raise bad(f"runners[{i}]", "null or an object with env, arrays, num_sub_env_restarts")
        if not isinstance(state["arrays"], list) or not all(
            isinstance(a, dict) and "__ndarray__" in a for a in state["arrays"]
        ):
            raise bad(f"runners[{i}].arrays", "a list of saved arrays")
        n = state["num_sub_env_restarts"]
        if not _is_int(n) or not 0 <= n <= _MAX_COUNTER:
            raise bad(f"runners[{i}].num_sub_env_restarts", "an int in [0, 2**62]")
