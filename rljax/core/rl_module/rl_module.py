"""``RLModule``: jitted inference of a trained policy (an algorithm's current one,
``algo.get_module()``, or a checkpoint's, ``RLModule.from_checkpoint``), a user's own module
(RLlib's keywords, a forward pass of its own), and the recurrent policy's evaluation actor
(``RecurrentActor``). ``RLModuleSpec`` (a user's own Flax module) is re-exported from
``rljax.core.rl_module.spec`` at RLlib's import path.

Nothing here imports ``rljax.algorithms``: the algorithm behind a module is reached through
``InferenceSource``, what a module reads of it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, cast

import jax
import jax.numpy as jnp
import numpy as np

from rljax.core import DEFAULT_POLICY_ID, RL_MODULE_PATH
from rljax.core.rl_module.action_dist import ActionDistributionClass
from rljax.core.rl_module.forward_module import ForwardModuleBase, forward_module_outputs
from rljax.core.rl_module.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.execution import checkpoints
from rljax.execution.parts import Params, PolicyParts
from rljax.runners.acting import RecurrentSpec, recurrent_input, recurrent_spec
from rljax.utils.errors import CheckpointError

DEFAULT_POLICY = DEFAULT_POLICY_ID


class InferenceSource(Protocol):
    """What an ``RLModule`` reads of the algorithm behind it (``Algorithm`` provides it)."""

    parts: PolicyParts[Any]
    state: Any

    def _policy_ids(self) -> list[str]: ...
    def _check_obs(self, obs: Any, batched: bool) -> Any:
        """Observations checked against the observation space."""
        ...

    def _forward(
        self, obs: Any, explore: bool, policy_id: str | None = None, params: Params | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One jitted pass: (action_dist_inputs, env actions)."""
        ...

    def _recurrent_infer_fn(self, explore: bool) -> Callable[..., Any]: ...
    def _next_action_key(self) -> jax.Array:
        """A new key of the algorithm's inference key stream."""
        ...

    def get_module(self, policy_id: str | None = None) -> Any: ...
    def set_weights(self, weights: dict[str, Any]) -> None: ...
    def save_to_path(self, path: str | os.PathLike | None = None) -> str: ...


class RecurrentActor:
    """A recurrent policy acting in evaluation envs: one state per sub-env, reset where an
    episode starts (the row after an episode end, as the runners' act step does). Called with
    each whole ``StepResult`` (``takes_result``).

    Args:
      spec: The policy's recurrent spec (``runners.acting.recurrent_spec``).
      infer: The jitted ``recurrent_inference(explore)``.
      params: The weights it acts with.
      to_env_action: Policy actions (host arrays) -> env actions.
      next_key: A new random key per step (the algorithm's inference key stream).
    """

    takes_result = True

    def __init__(
        self,
        spec: RecurrentSpec | None,
        infer: Callable[..., Any],
        params: Any,
        to_env_action: Callable[[Any], Any],
        next_key: Callable[[], jax.Array],
    ):
        self._spec = spec
        self._infer = infer
        self._params = params
        self._to_env_action = to_env_action
        self._next_key = next_key
        self._state: dict[str, Any] = {}

    def __call__(self, result: Any) -> np.ndarray:
        spec = self._spec
        assert spec is not None
        ids = np.asarray(result.env_id)
        n = int(ids.max()) + 1
        if not self._state or len(self._state["valid"]) < n:
            self._state = {
                "memory": spec.initial_state(n),
                "action": spec.action_zeros(n),
                "valid": np.zeros(n, bool),
            }
        st = self._state
        first = jnp.asarray(~st["valid"][ids])
        rin = recurrent_input(
            spec,
            jax.tree.map(jnp.asarray, result.obs),
            jax.tree.map(lambda m: m[ids], st["memory"]),
            first,
            st["action"][ids],
            jnp.asarray(result.reward, jnp.float32),
        )
        key = self._next_key()
        _, action, state_out = self._infer(self._params, rin, key)
        st["memory"] = jax.tree.map(lambda m, o: m.at[ids].set(o), st["memory"], state_out)
        st["action"] = st["action"].at[ids].set(action)
        st["valid"][ids] = ~(np.asarray(result.terminated) | np.asarray(result.truncated))
        return self._to_env_action(jax.tree.map(np.asarray, action))


def rllib_module_path(path: str | os.PathLike) -> tuple[str | os.PathLike, str | None]:
    """RLlib's module path inside a checkpoint, ``<checkpoint>/learner_group/learner/rl_module``
    with an optional ``/<policy_id>``, as ``(<checkpoint>, policy_id or None)``; any other path
    as ``(path, None)``. The part after ``rl_module`` must be one policy id: ``..``, ``.`` or
    further parts are a ``CheckpointError`` (RLlib's directories do not exist here, so a path
    is never resolved through them)."""
    if not isinstance(path, (str, os.PathLike)):
        return path, None
    parts = Path(os.fspath(path)).parts
    n = len(RL_MODULE_PATH)
    for i in range(len(parts) - n, -1, -1):
        if parts[i : i + n] != RL_MODULE_PATH:
            continue
        tail = parts[i + n :]
        if len(tail) > 1 or (tail and tail[0] in (".", "..")):
            raise CheckpointError(
                f"{str(path)[:300]!r}: after {'/'.join(RL_MODULE_PATH)} RLlib's module path "
                f"takes one policy id (<checkpoint>/{'/'.join(RL_MODULE_PATH)}/<policy_id>); "
                f"got {'/'.join(tail)[:200]!r}"
            )
        root = Path(*parts[:i]) if i else Path(".")
        return root, tail[0] if tail else None
    return path, None


class RLModule(ForwardModuleBase):
    """Jitted inference of a policy: an algorithm's current one (``algo.get_module()``), or a
    checkpoint's (``RLModule.from_checkpoint(path)``).

    As RLlib's ``RLModule``: ``forward_inference({"obs": batch})`` returns a dict with
    ``action_dist_inputs`` (and, here, the greedy ``actions``); ``forward_exploration`` samples.
    """

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike,
        *,
        policy_id: str | None = None,
        allow_imports: Iterable[str] | None = None,
        env: Any = None,
        module_class: Any = None,
    ) -> RLModule | MultiRLModule:
        """A checkpoint's policy ``policy_id`` (its networks and weights), for inference.

        Builds no env, runner, learner program or replay buffer: the checkpoint describes the
        spaces. RLlib's module path inside a checkpoint
        (``<checkpoint>/learner_group/learner/rl_module/<policy_id>``) is accepted too and
        names the policy; the ``rl_module`` directory itself, with no ``policy_id``, gives
        every policy as a ``MultiRLModule`` (``["default_policy"]`` for a single-agent
        checkpoint), as RLlib's does. Code the checkpoint names loads only as
        ``Algorithm.from_checkpoint`` allows (a user Flax module must be trusted:
        ``module_class=``, registered, or ``allow_imports``).
        """
        given = path
        path, named = rllib_module_path(path)
        # The rl_module directory itself: RLlib's module path with no policy id after it.
        all_policies = policy_id is None and named is None and path is not given
        if named is not None and policy_id is not None and named != policy_id:
            raise CheckpointError(
                f"{str(path)!r}: the path names policy {named!r} and policy_id={policy_id!r}; "
                "give one"
            )
        policy_id = policy_id if policy_id is not None else named
        algo = checkpoints.for_inference(
            path, allow_imports=allow_imports, env=env, module_class=module_class
        )
        if all_policies:
            return MultiRLModule({pid: algo._module(pid) for pid in algo._policy_ids()})
        if policy_id is None and algo._policy_ids() == [DEFAULT_POLICY]:
            policy_id = None
        if policy_id is not None and policy_id not in algo._policy_ids():
            raise CheckpointError(
                f"{str(path)!r} has no policy {policy_id[:200]!r}; its policies are "
                f"{algo._policy_ids()[:20]}"
            )
        return algo._module(policy_id)

    def __init__(
        self, algo: InferenceSource | None = None, policy_id: str | None = None, **kwargs: Any
    ):
        """An algorithm's policy (``algo``, ``policy_id``), or, built by RLlib's keywords
        (``observation_space``, ``action_space``, ``model_config``), a module of a user's own:
        a subclass that overrides ``_forward`` (or ``_forward_inference`` /
        ``_forward_exploration``) acts without learning (see ``ForwardModuleBase``)."""
        # A user module has no algorithm (``self._algo is None`` guards every use).
        self._algo = cast(InferenceSource, algo)
        self._policy_id = policy_id
        if algo is None:
            super().__init__(**kwargs)
            return
        # RLlib's module attributes: the policy's spaces and settings.
        self.observation_space, self.action_space = _module_spaces(algo, policy_id)
        self.inference_only = False

    @property
    def model_config(self) -> dict[str, Any]:
        """The module's settings as a dict (RLlib's ``module.model_config``): the default
        networks' (the config's ``model_config`` with the policy's own over it), or a module
        class's ``model_config``."""
        if self._algo is None:
            return self.__dict__.get("_model_config", {})
        config: Any = cast(Any, self._algo).config
        pid = self._policy_id or DEFAULT_POLICY_ID
        spec = self._own_spec()
        if spec is not None and spec.module_class is not None:
            return dict(spec.model_config)
        out = dict(config.model_config.to_dict())
        if spec is not None:
            out.update(spec.model_config)
        own = config.module_overrides(pid).get("model_config") if config.policies else None
        if own is not None:
            out.update(own if isinstance(own, dict) else own.to_dict())
        return out

    @model_config.setter
    def model_config(self, value: dict[str, Any]) -> None:  # a user module's (its __init__)
        self.__dict__["_model_config"] = value

    def _own_spec(self) -> Any:
        """This policy's ``RLModuleSpec`` in its algorithm's config (None: none given)."""
        spec = cast(Any, self._algo).config.rl_module_spec
        if isinstance(spec, MultiRLModuleSpec):
            spec = spec.spec_of(self._policy_id or DEFAULT_POLICY_ID)
        return spec

    def is_stateful(self) -> bool:
        """Whether the module keeps a recurrent state (RLlib's ``is_stateful``: ``use_lstm``)."""
        return bool(self.get_initial_state())

    def get_inference_action_dist_cls(self) -> ActionDistributionClass:
        """RLlib's distribution class of ``forward_inference``'s ``"action_dist_inputs"``:
        ``from_logits(inputs).sample()`` (``rljax.core.rl_module.action_dist``)."""
        return ActionDistributionClass(_module_dist(self))

    def get_exploration_action_dist_cls(self) -> ActionDistributionClass:
        """RLlib's distribution class of ``forward_exploration``'s outputs (the same family)."""
        return ActionDistributionClass(_module_dist(self))

    def get_train_action_dist_cls(self) -> ActionDistributionClass:
        """RLlib's distribution class of ``forward_train``'s outputs (the same family)."""
        return ActionDistributionClass(_module_dist(self))

    def forward_train(self, batch: Any) -> dict[str, Any]:
        """RLlib's training pass: the action distribution's inputs for ``{"obs": ...}``
        (``forward_inference``'s ``"action_dist_inputs"``; rljax's training passes run inside
        the compiled update, so this one is for a script's own checks)."""
        return {"action_dist_inputs": self.forward_inference(batch)["action_dist_inputs"]}

    @property
    def params(self) -> Any:
        return self._algo.parts.inference_params(self._algo.state, self._policy_id)

    def get_state(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The module's weights as numpy arrays (RLlib's ``RLModule.get_state()``): for an
        algorithm's policy the structure ``algo.get_weights()[policy_id]`` has, so
        ``algo.set_state({"learner_group": {"learner": {"rl_module": {pid: state}}}})`` or
        ``set_state`` on another module of the same architecture takes it; a module of a
        user's own that only acts has none (``{}``). RLlib's keywords (``inference_only``,
        ...) change nothing here."""
        if self._algo is None:
            return {}
        return jax.tree.map(np.asarray, jax.device_get(self.params))

    def set_state(self, state: dict[str, Any]) -> None:
        """Replaces the module's weights (``get_state()``'s structure) where its algorithm
        trains and acts with them (``algo.set_weights``: a structure or shape that differs is
        refused, naming both)."""
        if self._algo is None:
            if state:
                raise ValueError(
                    "set_state: this module acts by its own forward pass and has no weights; "
                    f"got {sorted(map(str, state))[:10]}"
                )
            return
        self._algo.set_weights({self._policy_id or DEFAULT_POLICY: state})

    def save_to_path(self, path: str | os.PathLike | None = None, **kwargs: Any) -> str:
        """Writes the module to ``path`` (None: a new temporary directory) and returns it,
        for ``RLModule.from_checkpoint(path)``, another module's ``restore_from_path(path)``
        or ``algo.restore_from_path(path, component="learner_group/learner/rl_module/
        default_policy")`` (RLlib's ``Checkpointable.save_to_path``). The file is a
        checkpoint of the module's algorithm (config, spaces, weights; no pickle); a module
        built by ``RLModuleSpec.build()`` holds no optimizer state.

        Raises:
          CheckpointError: the module has no weights (its own forward pass), or is one policy
            of several (save the algorithm and name the policy's module path instead).
        """
        if self._algo is None:
            raise CheckpointError(
                f"{type(self).__name__}.save_to_path: this module acts by its own forward pass "
                "and has no weights to save (its class and settings are code: build it again "
                "from its RLModuleSpec)"
            )
        ids = self._algo._policy_ids()
        if len(ids) != 1:
            raise CheckpointError(
                f"save_to_path on policy {self._policy_id!r}'s module of an algorithm with "
                f"policies {ids[:20]}: save the algorithm (algo.save_to_path(path)) and load "
                f"{'/'.join(RL_MODULE_PATH)}/<policy_id> inside it"
            )
        return self._algo.save_to_path(path)

    def as_multi_rl_module(self) -> MultiRLModule:
        """This module as the only one of a ``MultiRLModule``, under ``"default_policy"``
        (RLlib's ``RLModule.as_multi_rl_module``)."""
        return MultiRLModule({DEFAULT_POLICY: self})

    def restore_from_path(self, path: str | os.PathLike, **kwargs: Any) -> None:
        """Loads the weights of the module saved at ``path`` (``save_to_path``'s directory, a
        checkpoint with one policy, or RLlib's module path inside a checkpoint) into this
        module (``set_state``: the architectures must match)."""
        saved = one_module(RLModule.from_checkpoint(path), path)
        self.set_state(saved.get_state())

    def _obs(self, batch: Any) -> np.ndarray:
        obs = batch["obs"] if isinstance(batch, dict) and "obs" in batch else batch
        return self._algo._check_obs(obs, batched=True)

    def forward_inference(self, batch: Any) -> dict[str, Any]:
        """Greedy pass over ``{"obs": [B, *obs_shape]}`` (or the array itself).

        A recurrent policy (``use_lstm``) also takes ``"state_in"`` (the last call's
        ``"state_out"``; absent: the initial state, an episode's first step) and, with
        ``lstm_use_prev_action`` / ``lstm_use_prev_reward``, ``"prev_actions"`` /
        ``"prev_rewards"``; it returns ``"state_out"``.
        """
        if self._algo is None:
            return self._user_forward(batch, False)
        if self._algo.parts.recurrent_inference is not None:
            return self._recurrent(batch, False)
        inputs, actions = self._algo._forward(self._obs(batch), False, self._policy_id)
        return {"action_dist_inputs": inputs, "actions": actions}

    def forward_exploration(self, batch: Any) -> dict[str, Any]:
        """Sampling pass over ``{"obs": [B, *obs_shape]}`` (or the array itself); a recurrent
        policy's as ``forward_inference``."""
        if self._algo is None:
            return self._user_forward(batch, True)
        if self._algo.parts.recurrent_inference is not None:
            return self._recurrent(batch, True)
        inputs, actions = self._algo._forward(self._obs(batch), True, self._policy_id)
        return {"action_dist_inputs": inputs, "actions": actions}

    def _user_forward(self, batch: Any, explore: bool) -> dict[str, Any]:
        """A user module's forward pass on the host (a fresh key per call)."""
        batch = batch if isinstance(batch, dict) and "obs" in batch else {"obs": batch}
        obs = jax.tree.map(jnp.asarray, batch["obs"])
        seed = int(np.random.randint(2**31 - 1))
        out = forward_module_outputs(self, obs, jax.random.PRNGKey(seed), explore)
        return jax.tree.map(np.asarray, out)

    def get_initial_state(self) -> Any:
        """A recurrent policy's state for one row (RLlib's ``get_initial_state``): the default
        LSTM's as RLlib's, ``{"h": [cell], "c": [cell]}``."""
        if self._algo is None:
            return {}
        spec = recurrent_spec(self._algo.parts.act)
        if spec is None:
            return {}
        state = jax.tree.map(lambda x: np.asarray(x[0]), spec.initial_state(1))
        return _lstm_dict(state) if self._default_lstm() else state

    def _default_lstm(self) -> bool:
        """Whether the module is the default networks' LSTM (its state Flax's ``(c, h)``)."""
        spec = self._own_spec()
        return (spec is None or spec.module_class is None) and bool(
            self.model_config.get("use_lstm")
        )

    def _recurrent(self, batch: Any, explore: bool) -> dict[str, Any]:
        """A recurrent forward pass over ``[B, ...]`` observations, or ``[B, T, ...]`` ones
        (RLlib's time axis: T steps in turn, each from the last one's state; the outputs get
        the time axis too)."""
        algo = self._algo
        spec = recurrent_spec(algo.parts.act)
        assert spec is not None and algo.parts.recurrent_inference is not None
        batch = batch if isinstance(batch, dict) and "obs" in batch else {"obs": batch}
        lstm = self._default_lstm()
        state_in = batch.get("state_in")
        if lstm and isinstance(state_in, dict) and set(state_in) == {"h", "c"}:
            state_in = (state_in["c"], state_in["h"])  # RLlib's dict: Flax's (c, h)
        obs = batch["obs"]
        space_rank = len(getattr(self.observation_space, "shape", None) or ())
        first_leaf = np.asarray(jax.tree.leaves(obs)[0])
        if isinstance(obs, np.ndarray | jax.Array) and first_leaf.ndim == space_rank + 2:
            steps = first_leaf.shape[1]
            outs: list[dict[str, Any]] = []
            for t in range(steps):  # RLlib's [B, T, ...]: one step after another
                at_t = {
                    "obs": np.asarray(obs)[:, t],
                    "state_in": state_in if t == 0 else outs[-1]["state_out"],
                }
                for name in ("prev_actions", "prev_rewards"):
                    if batch.get(name) is not None:
                        at_t[name] = np.asarray(batch[name])[:, t]
                outs.append(self._recurrent_step(at_t, explore, spec))
            out: dict[str, Any] = {
                k: np.stack([o[k] for o in outs], 1) for k in ("action_dist_inputs", "actions")
            }
            out["state_out"] = outs[-1]["state_out"]
        else:
            out = self._recurrent_step({**batch, "state_in": state_in}, explore, spec)
        if lstm:
            out["state_out"] = _lstm_dict(out["state_out"])
        return out

    def _recurrent_step(self, batch: dict[str, Any], explore: bool, spec: Any) -> dict[str, Any]:
        algo = self._algo
        obs = self._obs(batch)
        n = len(jax.tree.leaves(obs)[0])
        state_in = batch.get("state_in")
        first = jnp.full((n,), state_in is None)
        memory = spec.initial_state(n) if state_in is None else jax.tree.map(jnp.asarray, state_in)
        prev_a = batch.get("prev_actions")
        prev_r = batch.get("prev_rewards")
        rin = recurrent_input(
            spec,
            jax.tree.map(jnp.asarray, obs),
            memory,
            first,
            spec.action_zeros(n) if prev_a is None else jnp.asarray(prev_a),
            jnp.zeros((n,), jnp.float32) if prev_r is None else jnp.asarray(prev_r, jnp.float32),
        )
        infer = algo._recurrent_infer_fn(explore)
        key = algo._next_action_key()
        inputs, action, state_out = infer(self.params, rin, key)
        return {
            "action_dist_inputs": np.asarray(inputs),
            "actions": algo.parts.to_env_action_host(jax.tree.map(np.asarray, action)),
            "state_out": jax.tree.map(np.asarray, state_out),
        }


def _lstm_dict(state: Any) -> dict[str, Any]:
    """Flax's LSTM state ``(c, h)`` as RLlib's ``{"h": h, "c": c}``."""
    c, h = state
    return {"h": h, "c": c}


# Algorithms whose policy is SAC's squashed Gaussian (the others' follows the action space).
_SQUASHED = ("SAC", "CQL", "IQL", "TQC")


def _module_dist(module: RLModule) -> Any:
    """The action distribution family of ``module``'s ``action_dist_inputs``: its group's (a
    multi-agent PPO policy), its algorithm's, SAC's squashed Gaussian, or the one of its action
    space (``make_distribution``)."""
    from rljax.networks.distributions import SquashedDiagGaussian, make_distribution

    algo: Any = module._algo
    space: Any = module.action_space
    if algo is None:
        return make_distribution(space)
    for group in getattr(algo, "groups", None) or ():
        if any(algo.policy_ids[m] == module._policy_id for m in group.members):
            return group.dist
    if getattr(algo, "_dist", None) is not None:
        return algo._dist
    if algo.config.algo_name in _SQUASHED:
        return SquashedDiagGaussian(int(np.prod(space.shape)))
    return make_distribution(space, algo.config.model_config.log_std_clip_param)


def _module_spaces(algo: Any, policy_id: str | None) -> tuple[Any, Any]:
    """The (observation, action) spaces of ``algo``'s policy ``policy_id``."""
    by_policy = getattr(algo, "policy_observation_spaces", None)
    if isinstance(by_policy, dict) and policy_id in by_policy:
        return by_policy[policy_id], algo.policy_action_spaces[policy_id]
    return algo.observation_space, algo.action_space


def pretrained_weights(config: Any) -> dict[str, Any]:
    """``{policy_id: weights}`` of the policies whose ``RLModuleSpec`` names a
    ``load_state_path`` (RLlib's pre-trained module), read from those checkpoints by
    ``RLModule.from_checkpoint``; ``{}`` where none does. Called while an algorithm is built,
    before its training programs compile: a path that is not a checkpoint, or names no policy
    of it, raises ``CheckpointError`` naming it."""
    given = getattr(config, "rl_module_spec", None)
    policies = list(getattr(config, "policies", None) or {}) or [DEFAULT_POLICY_ID]
    specs: dict[str, RLModuleSpec] = {}
    if isinstance(given, MultiRLModuleSpec):
        specs = given.specs(policies)
    elif isinstance(given, RLModuleSpec):
        specs = dict.fromkeys(policies, given)
    out: dict[str, Any] = {}
    for pid, spec in specs.items():
        path = spec.load_state_path
        if path is None:
            continue
        if not Path(os.fspath(path)).exists() and not _names_module_path(path):
            raise CheckpointError(
                f"RLModuleSpec(load_state_path={str(path)[:300]!r}) for policy {pid!r}: "
                "no such file or directory"
            )
        module = RLModule.from_checkpoint(path)
        if isinstance(module, MultiRLModule):
            # The rl_module directory itself (RLlib's example scripts load a single-agent
            # checkpoint so): the policy of the same id, or the checkpoint's only one.
            if pid in module:
                module = module[pid]
            elif len(module) == 1:
                module = next(iter(module.values()))
        out[pid] = jax.device_get(one_module(module, path).params)
    return out


def one_module(module: RLModule | MultiRLModule, path: Any) -> RLModule:
    """``module`` where a path must name one policy's module; a ``MultiRLModule`` (the path
    is the ``rl_module`` directory itself) raises ``CheckpointError`` saying so."""
    if isinstance(module, MultiRLModule):
        raise CheckpointError(
            f"{str(path)[:300]!r} names every policy's modules; name one: "
            f"{'/'.join(RL_MODULE_PATH)}/<policy_id> (its policies are {list(module)[:20]})"
        )
    return module


def _names_module_path(path: str | os.PathLike) -> bool:
    """Whether ``path`` is RLlib's module path inside an existing checkpoint."""
    root, named = rllib_module_path(path)
    return named is not None and Path(os.fspath(root)).exists()


__all__ = [
    "InferenceSource",
    "RLModule",
    "RLModuleSpec",
    "RecurrentActor",
    "one_module",
    "pretrained_weights",
    "rllib_module_path",
]
