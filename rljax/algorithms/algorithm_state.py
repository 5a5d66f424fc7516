"""RLlib's in-memory state API (``Checkpointable.get_state`` / ``set_state``) on an algorithm.

``algo.get_state()`` returns a nested dict of numpy arrays and plain numbers, RLlib's layout
where rljax has the part:

- ``"learner_group"`` → ``"learner"`` → ``"rl_module"`` → ``{policy_id: weights}``: each
  policy's inference weights, as ``get_weights()`` gives them;
- ``"learner_group"`` → ``"learner"`` → ``"rljax_state"``: the whole training state a
  checkpoint holds (parameters, optimizer state, connector statistics, target networks, the
  fused path's acting key; never a replay buffer), as flax's state dict: nested dicts of arrays;
- ``"training_iteration"`` and ``"counters"`` (the lifetime counters a checkpoint keeps).

``components`` / ``not_components`` select parts by path as in RLlib
(``"learner_group/learner/rl_module"``, ``"learner_group/learner/rl_module/p0"``); the
counters always come along. ``algo.set_state(state)`` takes such a dict, or any part of it:
everything is checked first (the tree, each array's shape and dtype, the policy ids, the
counters), so a state that does not fit raises and leaves the algorithm as it was. Then the
training state, the weights and the counters are applied; runners act with the new weights
from their next sample, a learner thread trains on from them, a replay buffer keeps its rows.

``algo.restore_from_path(path, component=...)`` loads one part of a checkpoint, as RLlib's
scripts do to start from a trained policy: ``path`` is the part's directory inside the checkpoint
(``<checkpoint>/learner_group/learner/rl_module/<policy_id>``) or the checkpoint itself, and
``component`` one of ``"learner_group"`` / ``"learner_group/learner"`` (the training state:
parameters, optimizer state, connector statistics; not the counters, the env runners or a
replay buffer), ``"learner_group/learner/rl_module"`` (the weights of every policy both have)
or ``"learner_group/learner/rl_module/<policy_id>"`` (that policy's weights, into the policy of
this algorithm with that id; a single-agent algorithm takes any one policy).

What rljax leaves out of RLlib's dict: ``"env_runner"`` (a runner's mid-episode env state is
saved by checkpoints, where it can be: ``save_to_path``) and ``"metrics_logger"`` (rljax's
results are computed per iteration; the counters above are what carries over).
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

import flax.serialization
import jax
import numpy as np

from rljax import distributed
from rljax.execution import checkpoints
from rljax.execution import iteration as iteration_book
from rljax.execution.weights import check_weights_fit
from rljax.utils.checkpoint import _check_tree
from rljax.utils.checks import describe
from rljax.utils.errors import CheckpointError

LEARNER_GROUP = "learner_group"
LEARNER = "learner"
RL_MODULE = "rl_module"
RLJAX_STATE = "rljax_state"
TRAINING_ITERATION = "training_iteration"
COUNTERS = "counters"
# Where set_state's checks name the state (it comes from no file).
_WHERE = "set_state()"


def _paths(components: str | Collection[str] | None, name: str) -> list[str] | None:
    if components is None:
        return None
    if isinstance(components, str):
        return [components]
    if not isinstance(components, Collection) or not all(isinstance(c, str) for c in components):
        raise TypeError(f"{name}={describe(components)}; use a path str or a list of them")
    return list(components)


def _wanted(path: str, components: list[str] | None, not_components: list[str] | None) -> bool:
    """Whether the part at ``path`` goes in: asked for (itself, a part above it or one inside
    it; everything when ``components`` is None) and not excluded (itself or a part above)."""
    if not_components and any(path == c or path.startswith(c + "/") for c in not_components):
        return False
    if components is None:
        return True
    return any(
        path == c or path.startswith(c + "/") or c.startswith(path + "/") for c in components
    )


def _checkpoint_root(path: str | os.PathLike, component: str) -> Path:
    """The checkpoint ``path`` is inside: ``path`` less the ``component`` directories it ends
    with (RLlib's form), or ``path`` itself."""
    parts = Path(os.fspath(path)).parts
    tail = tuple(component.split("/"))
    if len(parts) > len(tail) and parts[-len(tail) :] == tail:
        return Path(*parts[: -len(tail)])
    return Path(os.fspath(path))


# Counters added after the first version: a state without one has it at 0 (the per-module
# counters at {}).
_LATER_COUNTERS = ("num_offline_evaluations",)


def _checked_counters(
    counters: Any,
    expected: Mapping[str, Any],
    module_ids: Collection[str],
    agent_ids: Collection[str] | None = None,
) -> dict[str, Any]:
    """``counters`` checked against the live ones (``expected``: the same keys), the
    algorithm's ``module_ids`` (the per-module counters' keys) and, for a multi-agent one,
    its ``agent_ids`` (the per-agent counters')."""
    per_id = {
        checkpoints.MODULE_COUNTERS: ("module", module_ids),
        checkpoints.SAMPLED_MODULE_COUNTERS: ("module", module_ids),
        checkpoints.AGENT_COUNTERS: ("agent", agent_ids or ()),
    }
    if isinstance(counters, Mapping):
        later: dict[str, Any] = {k: 0 for k in _LATER_COUNTERS if k in expected}
        later.update({k: {} for k in per_id if k in expected})
        counters = {**later, **counters}
    if not isinstance(counters, Mapping) or set(counters) != set(expected):
        found = (
            sorted(map(str, counters))[:20] if isinstance(counters, Mapping) else describe(counters)
        )
        raise ValueError(f"set_state: counters must have the keys {sorted(expected)}; got {found}")
    out: dict[str, Any] = {}
    for k, v in counters.items():
        if k in per_id:
            kind, ids = per_id[k]
            try:
                out[k] = checkpoints.checked_id_counters(v, set(ids), kind)
            except ValueError as e:
                raise ValueError(f"set_state: counters[{k!r}]: {e}") from None
            continue
        integral = k != "time_total_s"
        kinds = (int, np.integer) if integral else (int, float, np.integer, np.floating)
        if isinstance(v, bool) or not isinstance(v, kinds) or not math.isfinite(v) or v < 0:
            raise ValueError(
                f"set_state: counters[{k!r}]={describe(v)}; use a number of at least 0"
                + (" (an int)" if integral else "")
            )
        out[k] = int(v) if integral else float(v)
    return out


class StateSurface:
    """``get_state`` / ``set_state`` of ``Algorithm`` (RLlib's ``Checkpointable``)."""

    def get_state(
        self,
        components: str | Collection[str] | None = None,
        *,
        not_components: str | Collection[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The algorithm's state as a nested dict of numpy arrays (the module docstring gives
        the layout); ``components`` / ``not_components``: the parts to include / leave out,
        by path (``"learner_group/learner/rl_module/<policy_id>"``). RLlib's other keywords
        (``inference_only``, ...) change nothing here: the weights are the inference weights."""
        want = _paths(components, "components")
        drop = _paths(not_components, "not_components")
        algo: Any = self
        state: dict[str, Any] = {}
        learner: dict[str, Any] = {}
        base = f"{LEARNER_GROUP}/{LEARNER}"
        modules = f"{base}/{RL_MODULE}"
        pids = [p for p in algo._policy_ids() if _wanted(f"{modules}/{p}", want, drop)]
        if pids:
            learner[RL_MODULE] = algo.get_weights(pids)
        if _wanted(f"{base}/{RLJAX_STATE}", want, drop):
            # As a save copies it (a leaf split over processes gathered first).
            host = jax.tree.map(np.asarray, distributed.host_value(algo._checkpoint_state(False)))
            learner[RLJAX_STATE] = flax.serialization.to_state_dict(host)
        if learner:
            state[LEARNER_GROUP] = {LEARNER: learner}
        counters = iteration_book.counter_values(algo)
        state[TRAINING_ITERATION] = counters[TRAINING_ITERATION]
        state[COUNTERS] = counters
        return state

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Sets the parts of the algorithm's state that ``state`` holds (``get_state()``'s
        layout, or part of it); checks all of it first, so a state that does not fit raises
        (``CheckpointError`` for the training state, ``ValueError`` otherwise) and changes
        nothing."""
        algo: Any = self
        if not isinstance(state, Mapping):
            raise TypeError(f"set_state(state={describe(state)}); use get_state()'s dict")
        known = {LEARNER_GROUP, TRAINING_ITERATION, COUNTERS}
        unknown = sorted(map(str, set(state) - known))
        if unknown:
            raise ValueError(
                f"set_state: unknown parts {unknown}; rljax's state has {sorted(known)}"
            )
        learner = self._learner_part(state.get(LEARNER_GROUP))
        full = None
        if RLJAX_STATE in learner:
            # Checked against the live state's shapes and dtypes, as a checkpoint's state file.
            live = checkpoints._shapes(algo._checkpoint_state(False))
            given = jax.tree.map(np.asarray, learner[RLJAX_STATE])
            _check_tree(flax.serialization.to_state_dict(live), given, "", _WHERE)
            full = flax.serialization.from_state_dict(live, given)
        weights = learner.get(RL_MODULE, {})
        if not isinstance(weights, Mapping):
            raise ValueError(
                f"set_state: {RL_MODULE} must map policy ids to weights; got {describe(weights)}"
            )
        current = algo.get_weights()
        for pid, given in weights.items():
            if pid not in current:
                raise ValueError(
                    f"set_state: unknown policy {pid!r} in {RL_MODULE}; this algorithm has "
                    f"{sorted(current)}"
                )
            check_weights_fit(pid, given, current[pid])
        counters = None
        if COUNTERS in state:
            counters = _checked_counters(
                state[COUNTERS],
                iteration_book.counter_values(algo),
                algo._policy_ids(),
                iteration_book.agent_ids(algo),
            )
        iteration = state.get(TRAINING_ITERATION)
        if iteration is not None and (
            isinstance(iteration, bool)
            or not isinstance(iteration, numbers.Integral)
            or iteration < 0
        ):
            raise ValueError(
                f"set_state: {TRAINING_ITERATION}={describe(iteration)}; use an int of at least 0"
            )
        if (
            counters is not None
            and iteration is not None
            and counters[TRAINING_ITERATION] != iteration
        ):
            raise ValueError(
                f"set_state: {TRAINING_ITERATION}={iteration} but counters say "
                f"{counters[TRAINING_ITERATION]}"
            )
        with algo._exclusive("set_state()", reentrant=True), self._learner_paused():
            if full is not None:
                algo._restore_state(self._with_live_buffer(full))
            if weights:
                algo.set_weights(dict(weights))
            if counters is not None:
                iteration_book.set_counter_values(algo, counters)
            elif iteration is not None:
                algo.iteration = int(iteration)

    def restore(self, checkpoint_path: Any) -> None:
        """Loads a checkpoint (RLlib's ``restore``): a directory, a ``tune.Checkpoint`` or what
        ``save()`` returned."""
        checkpoint = getattr(checkpoint_path, "checkpoint", checkpoint_path)
        algo: Any = self
        algo.restore_from_path(os.fspath(checkpoint))

    def _restore_component(self, path: str | os.PathLike, component: str) -> None:
        """``restore_from_path(path, component=component)``: one part of a checkpoint (the
        module docstring); checked before anything changes."""
        from rljax.core.rl_module.rl_module import RLModule, one_module, rllib_module_path

        algo: Any = self
        if not isinstance(component, str):
            raise TypeError(f"component={describe(component)}; use a path str")
        modules = f"{LEARNER_GROUP}/{LEARNER}/{RL_MODULE}"
        if component in (LEARNER_GROUP, f"{LEARNER_GROUP}/{LEARNER}"):
            root = _checkpoint_root(path, component)
            state = checkpoints.load_training_state(
                algo, root, algo_name=algo.config.algo_name, policy_ids=algo._policy_ids()
            )
            with algo._exclusive("restore_from_path()", reentrant=True), self._learner_paused():
                algo._restore_state(self._with_live_buffer(state))
            return
        if component != modules and not component.startswith(modules + "/"):
            raise ValueError(
                f"component={component!r}; rljax restores {LEARNER_GROUP!r}, "
                f"'{LEARNER_GROUP}/{LEARNER}', {modules!r} or '{modules}/<policy_id>' (None: the "
                "whole checkpoint)"
            )
        ids = algo._policy_ids()
        pid = component[len(modules) + 1 :] or None
        root = _checkpoint_root(path, component)
        if pid is not None:
            target = pid if pid in ids or len(ids) > 1 else ids[0]
            # RLlib's module swap: path names another policy's module directory of a
            # checkpoint (.../rl_module/default_policy), loaded into this component's policy.
            named = rllib_module_path(path)[1] is not None
            source = Path(os.fspath(path)) if named else Path(root, modules, pid)
            loaded = {target: one_module(RLModule.from_checkpoint(source), source).params}
        else:  # the checkpoint loaded once for all of its policies this algorithm has
            saved = checkpoints.for_inference(root)
            common = [p for p in saved._policy_ids() if p in ids]
            if not common:
                raise CheckpointError(
                    f"{str(path)[:300]!r} holds none of this algorithm's policies {ids}"
                )
            loaded = saved.get_weights(common)
        with algo._exclusive("restore_from_path()", reentrant=True), self._learner_paused():
            algo.set_weights(jax.device_get(loaded))

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _learner_part(group: Any) -> Mapping[str, Any]:
        if group is None:
            return {}
        learner = group.get(LEARNER) if isinstance(group, Mapping) else None
        if (
            not isinstance(group, Mapping)
            or set(group) - {LEARNER}
            or not isinstance(learner, Mapping)
        ):
            raise ValueError(
                f"set_state: {LEARNER_GROUP} must be {{{LEARNER!r}: {{...}}}}; got "
                f"{describe(group)}"
            )
        unknown = sorted(map(str, set(learner) - {RL_MODULE, RLJAX_STATE}))
        if unknown:
            raise ValueError(
                f"set_state: unknown parts {unknown} of {LEARNER_GROUP}/{LEARNER}; rljax's "
                f"learner has {[RL_MODULE, RLJAX_STATE]}"
            )
        return learner

    def _with_live_buffer(self, full: Any) -> Any:
        """An off-policy state without a replay buffer keeps the live one (restoring a
        checkpoint's state without one would start an empty buffer)."""
        state = getattr(self, "state", None)
        live = getattr(state, "buffer", None)
        inner = full.get("state") if isinstance(full, dict) else None
        if live is not None and isinstance(inner, dict) and "buffer" not in inner:
            return {**full, "state": {**inner, "buffer": live}}
        policies = full.get("policies") if isinstance(full, dict) else None
        if isinstance(policies, list) and isinstance(state, list):
            # Multi-agent off-policy: each policy's state keeps its own live buffer.
            kept = [
                {**p, "buffer": s.buffer}
                if isinstance(p, dict)
                and "buffer" not in p
                and getattr(s, "buffer", None) is not None
                else p
                for p, s in zip(policies, state, strict=False)
            ]
            return {**full, "policies": kept}
        return full

    @contextlib.contextmanager
    def _learner_paused(self) -> Iterator[None]:
        """A learner thread (``num_learners >= 1`` with asynchronous sampling) holds between
        updates while the state changes."""
        loop = getattr(self, "_loop", None)
        paused = getattr(loop, "paused", None)
        with paused() if paused is not None else contextlib.nullcontext():
            yield


__all__ = ["StateSurface"]
