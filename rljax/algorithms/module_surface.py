"""RLlib's ``Algorithm.add_module`` / ``remove_module``: a multi-agent algorithm's set of
modules changed while it trains, as league self-play does (a frozen copy of ``main`` added
whenever it beats its opponents).

rljax's multi-agent update is one compiled program over every module (stacked per group of
equal settings), so a changed module set is a rebuilt algorithm: the config gets the module
(its spec, its overrides, the new mapping and trained modules), is validated before anything
changes, and the algorithm sets itself up again in place, compiling its programs anew. What
carries over: every kept module's weights, the counters (iterations, env steps, agent steps,
episodes), the callbacks (the same objects, their state included), the metrics logger and the
episode statistics, and each kept module's training state (its optimizer's moments and step
count, PPO's KL coefficient, APPO's target network, its random key: ``_carry_module_states``).
What starts afresh, unlike RLlib's: the env runners' episodes in progress (the envs are
rebuilt; their steps so far are not trained on). If the new setup fails, the old modules are set up again
with their whole training state and the error is raised (if that fails too, the algorithm
stops). Built for multi-agent PPO, IMPALA and APPO; multi-agent DQN, SAC and TD3 refuse (their
policies' critics, target networks and replay buffers would not carry over).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from typing import Any

import jax

from rljax.core.rl_module.inference import Inference
from rljax.core.rl_module.multi_rl_module import MultiRLModuleSpec
from rljax.core.rl_module.rl_module import pretrained_weights
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.policy.policy import PolicySpec
from rljax.utils.errors import ConfigError

# RLlib's rule for module ids: names a file system takes.
_BAD_ID_CHARS = set('<>:"/\\|?*')


def _check_module_id(module_id: Any) -> str:
    if (
        not isinstance(module_id, str)
        or not module_id
        or _BAD_ID_CHARS & set(module_id)
        or module_id[-1] in ". "
    ):
        raise ValueError(
            f'module_id={module_id!r}: a non-empty string without any of <>:"/\\|?* and not '
            "ending in a dot or a space (RLlib's rule: module ids name directories)"
        )
    return module_id


def _to_train(
    new_should_module_be_updated: Any, policies: Collection[str], current: Any
) -> list[str] | None:
    """``policies_to_train`` from RLlib's ``new_should_module_be_updated``: a collection of
    module ids, or a function ``(module_id, batch) -> bool`` (asked once per module, with no
    batch); None keeps ``current``."""
    if new_should_module_be_updated is None:
        return None if current is None else [p for p in current if p in policies]
    if callable(new_should_module_be_updated):
        return [p for p in policies if bool(new_should_module_be_updated(p, None))]
    if isinstance(new_should_module_be_updated, str) or not isinstance(
        new_should_module_be_updated, Collection
    ):
        raise ConfigError(
            f"new_should_module_be_updated={new_should_module_be_updated!r}: a list of module "
            "ids or a function (module_id, batch) -> bool"
        )
    unknown = [p for p in new_should_module_be_updated if p not in policies]
    if unknown:
        raise ConfigError(
            f"new_should_module_be_updated names {unknown}, which are not modules of this "
            f"algorithm ({sorted(policies)})"
        )
    return list(new_should_module_be_updated)


class ModuleSurface:
    """``add_module`` / ``remove_module`` of ``Algorithm`` (multi-agent PPO, IMPALA and APPO
    configs)."""

    def add_module(
        self,
        module_id: str,
        module_spec: RLModuleSpec | None = None,
        *,
        config_overrides: dict[str, Any] | None = None,
        new_agent_to_module_mapping_fn: Callable[..., str] | None = None,
        new_should_module_be_updated: Any = None,
        add_to_learners: bool = True,
        add_to_env_runners: bool = True,
        add_to_eval_env_runners: bool = True,
    ) -> MultiRLModuleSpec:
        """Adds the module ``module_id`` (RLlib's ``Algorithm.add_module``) and rebuilds the
        algorithm with it (see the module docstring for what carries over).

        Args:
          module_id: The new module's id (a policy id).
          module_spec: Its ``RLModuleSpec`` (None: the config's default networks), e.g.
            ``RLModuleSpec.from_module(algo.get_module("main"))`` for a copy of ``main``'s
            architecture; its weights start fresh (or from its ``load_state_path``): set them
            with ``set_state`` / ``set_weights`` afterwards.
          config_overrides: Its settings (``algorithm_config_overrides_per_module``).
          new_agent_to_module_mapping_fn: The mapping from here on (None: the current one).
          new_should_module_be_updated: The modules that train from here on: ids, or a
            function ``(module_id, batch) -> bool``; None keeps the current list (and so the
            new module trains only where no list was set).
          add_to_learners, add_to_env_runners, add_to_eval_env_runners: RLlib's; each must be
            True (rljax's runners and learner share one module set).

        Returns:
          The new ``MultiRLModuleSpec`` (every module's spec).

        Raises:
          ValueError: a bad or existing ``module_id``.
          ConfigError: a single-agent config, a part left out, or a config the new module makes
            invalid (nothing has changed then).
        """
        module_id = _check_module_id(module_id)
        config = self._module_change_config(
            "add_module", add_to_learners, add_to_env_runners, add_to_eval_env_runners
        )
        if module_id in config.policies:
            raise ValueError(f"add_module({module_id!r}): the algorithm has that module already")
        if module_spec is not None and not isinstance(module_spec, RLModuleSpec):
            raise ConfigError(
                f"add_module(module_spec={module_spec!r}): an RLModuleSpec (or None: the "
                "default networks)"
            )
        specs = self._current_specs(list(config.policies))
        if module_spec is not None:
            specs[module_id] = module_spec
        overrides = dict(config.algorithm_config_overrides_per_module)
        if config_overrides:
            overrides[module_id] = dict(config_overrides)
        policies = {**config.policies, module_id: PolicySpec()}
        return self._change_modules(
            config,
            policies,
            specs,
            overrides,
            new_agent_to_module_mapping_fn,
            new_should_module_be_updated,
            "add_module()",
            new_module=module_id,
        )

    def remove_module(
        self,
        module_id: str,
        *,
        new_agent_to_module_mapping_fn: Callable[..., str] | None = None,
        new_should_module_be_updated: Any = None,
        remove_from_learners: bool = True,
        remove_from_env_runners: bool = True,
        remove_from_eval_env_runners: bool = True,
    ) -> MultiRLModuleSpec:
        """Removes the module ``module_id`` (RLlib's ``Algorithm.remove_module``) and rebuilds
        the algorithm without it; ``new_agent_to_module_mapping_fn`` must then map no agent
        to it. Arguments and errors as ``add_module``'s."""
        config = self._module_change_config(
            "remove_module",
            remove_from_learners,
            remove_from_env_runners,
            remove_from_eval_env_runners,
        )
        if module_id not in config.policies:
            raise ValueError(
                f"remove_module({module_id!r}): no such module; the modules are "
                f"{sorted(config.policies)}"
            )
        ids = [p for p in config.policies if p != module_id]
        if not ids:
            raise ConfigError(f"remove_module({module_id!r}): it is the algorithm's only module")
        overrides = {
            p: o for p, o in config.algorithm_config_overrides_per_module.items() if p != module_id
        }
        policies = {p: s for p, s in config.policies.items() if p != module_id}
        return self._change_modules(
            config,
            policies,
            self._current_specs(ids),
            overrides,
            new_agent_to_module_mapping_fn,
            new_should_module_be_updated,
            "remove_module()",
        )

    # ------------------------------------------------------------------ the rebuild
    def _change_modules(
        self,
        config: Any,
        policies: dict[str, Any],
        specs: dict[str, RLModuleSpec],
        overrides: dict[str, Any],
        mapping_fn: Callable[..., str] | None,
        should_update: Any,
        what: str,
        new_module: str | None = None,
    ) -> MultiRLModuleSpec:
        """``config`` (a copy) with the module set ``policies`` (their own ``specs`` and
        ``overrides``; the mapping and trained modules as ``add_module``'s arguments say), the
        algorithm rebuilt with it, and every module's spec returned."""
        algo: Any = self
        ids = list(policies)
        config.multi_agent(
            policies=policies,
            policy_mapping_fn=mapping_fn or config.policy_mapping_fn,
            policies_to_train=_to_train(should_update, ids, algo.config.policies_to_train),
            algorithm_config_overrides_per_module=overrides,
        )
        config.rl_module_spec = MultiRLModuleSpec(rl_module_specs=specs) if specs else None
        self._rebuild_with(config, what, new_module=new_module)
        # A removed module's count goes with it (RLlib's learner drops its stats): a module
        # added later under the same id starts from 0, and checkpoints hold only kept modules'.
        algo._module_steps_trained = {
            p: n for p, n in algo._module_steps_trained.items() if p in policies
        }
        return MultiRLModuleSpec(rl_module_specs=self._current_specs(ids, defaults=True))

    def _module_change_config(self, what: str, *everywhere: bool) -> Any:
        algo: Any = self
        if not algo.config.is_multi_agent:
            raise ConfigError(
                f"{what}() changes a multi-agent algorithm's modules; this one is single-agent "
                "(configure .multi_agent(policies=..., policy_mapping_fn=...))"
            )
        if getattr(algo, "_population_member", False):
            raise ConfigError(f"{what}(): a population's trial keeps its modules")
        if not getattr(algo, "rebuilds_with_new_modules", True):
            raise ConfigError(
                f"{what}() is built for multi-agent PPO, IMPALA and APPO; multi-agent "
                f"{algo.config.algo_name}'s policies keep critics, target networks and replay "
                "buffers that a rebuild would not carry over yet: name the league's policies in "
                "the config from the start"
            )
        if not all(everywhere):
            raise ConfigError(
                f"{what}(): rljax's learner and env runners share one set of modules; the "
                "learners, env runners and evaluation env runners all take the change (leave "
                "the add_to_* / remove_from_* arguments True)"
            )
        return algo.config.copy(copy_frozen=False)

    def _current_specs(self, ids: list[str], defaults: bool = False) -> dict[str, RLModuleSpec]:
        """The modules' own specs (``defaults``: an ``RLModuleSpec()`` for those with none)."""
        algo: Any = self
        spec = algo.config.rl_module_spec
        own = spec.specs(ids) if isinstance(spec, MultiRLModuleSpec) else {}
        if defaults:
            return {p: own.get(p, RLModuleSpec()) for p in ids}
        return own

    def _rebuild_with(self, config: Any, what: str, new_module: str | None = None) -> None:
        """Sets the algorithm up again with ``config`` (validated first), keeping the modules'
        weights; if the new setup fails, the old one is built again and the error raised."""
        algo: Any = self
        config.validate()  # nothing has changed if the new module set is invalid
        # The learned modules' weights (one acting by its own forward pass has none).
        weights = algo.get_weights([p for p in algo._policy_ids() if p not in algo.forward_only])
        old, old_state = algo.config, algo.state
        old_rows = _module_rows(algo)
        step_counter = algo._agent_steps  # the lifetime agent steps carry on
        with algo._exclusive(what, reentrant=True), algo._learner_paused():
            try:
                self._setup_again(config, weights)
                algo.state = _carry_module_states(
                    algo.state, _module_rows(algo), old_state, old_rows
                )
            except BaseException:
                try:  # the old modules again, with their whole training state
                    self._setup_again(old, weights)
                    algo.state = old_state
                except BaseException:
                    algo.stop()
                    raise
                raise
            finally:
                step_counter.keep_modules(algo._policy_ids())
                algo._agent_steps = step_counter
        if new_module is not None:
            loaded = pretrained_weights(config)  # the new module's load_state_path, if any
            if new_module in loaded:
                algo.set_weights({new_module: loaded[new_module]})

    def _setup_again(self, config: Any, weights: dict[str, Any]) -> None:
        algo: Any = self
        algo._close_runners()
        algo.config = config
        algo._inference = Inference(algo)  # its compiled functions were the old modules'
        algo._runner_configs.clear()
        algo._runner_env_specs.clear()
        algo._setup()
        config.freeze()
        algo.set_weights({p: w for p, w in weights.items() if p in config.policies})
        algo._start_runner_callbacks(False)


def _module_rows(algo: Any) -> dict[str, tuple[int, int, int]]:
    """Where each learned module's training state is: ``{module_id: (group, row, group
    size)}`` in the multi-agent train state (a list of group states, each stacked over the
    group's modules)."""
    return {
        algo.policy_ids[m]: (g, row, len(group.members))
        for g, group in enumerate(algo.groups)
        for row, m in enumerate(group.members)
    }


def _take_row(
    path: Any,
    leaf: Any,
    *,
    old_leaves: dict[Any, Any],
    rows: tuple[int, int],
    sizes: tuple[int, int],
) -> Any:
    """``leaf`` (new) with row ``rows[0]`` set from the old leaf at ``path``, row ``rows[1]``,
    where both are stacked over their groups' modules (``sizes``) alike; else ``leaf``."""
    old = old_leaves.get(path)
    if (
        old is None
        or getattr(leaf, "ndim", 0) < 1
        or (leaf.shape[0], old.shape[0]) != sizes
        or leaf.shape[1:] != old.shape[1:]
        or leaf.dtype != old.dtype
    ):
        return leaf
    return leaf.at[rows[0]].set(old[rows[1]])


def _carry_module_states(
    new_state: list[Any],
    new_rows: dict[str, tuple[int, int, int]],
    old_state: list[Any],
    old_rows: dict[str, tuple[int, int, int]],
) -> list[Any]:
    """``new_state`` with each module kept from ``old_state`` given its old rows: every leaf of
    its group state that is stacked over the group's modules (a leading axis of the group's
    size, the same shape behind it and dtype in both, the same place in the tree) takes the
    module's old row. A leaf that differs (another optimizer for the module) stays fresh."""
    out = list(new_state)
    for module_id, (g, row, size) in new_rows.items():
        if module_id in old_rows:
            og, orow, osize = old_rows[module_id]
            take = functools.partial(
                _take_row,
                old_leaves=dict(jax.tree_util.tree_flatten_with_path(old_state[og])[0]),
                rows=(row, orow),
                sizes=(size, osize),
            )
            out[g] = jax.tree_util.tree_map_with_path(take, out[g])
    return out


__all__ = ["ModuleSurface"]
