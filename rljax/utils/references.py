"""References to code in configs and checkpoints, and the caller's opt-in to each.

A config saved to a file names code by import path: ``{"import": "mypkg.envs:MyEnv"}`` for an
env class or creator, a policy mapping function or a Flax module class. A file may come from
anyone, and importing or calling what it names runs that code, so a loaded reference resolves
only through something the loading process chose, in this order:

1. an object the caller passes for that field (``Algorithm.from_checkpoint(path, env=MyEnv)``);
2. an object registered in this process (``rljax.register_env``,
   ``rljax.register_module_class``, ``rljax.register_policy_mapping_fn``), by its registered
   name or by the import path it was saved under;
3. a module under a prefix the caller allows (``allow_imports=["mypkg"]``; the CLI's
   ``--allow-import mypkg``), and rljax's own example envs and mapping functions (a fixed table).

An imported object must be defined in the module the path names, under the path's name (a path
cannot walk from an allowed module into what it imports, such as ``numpy`` or ``os``), and be of
its field's kind: an env class (``gymnasium.Env`` or ``MultiAgentEnv``) or a function for
``env``, a function for ``policy_mapping_fn``, a Flax module class for ``module_class``, a
``PPOLearner`` subclass for ``learner_class``.

Anything else is refused with an error naming the field and the import path and saying how to
opt in; nothing is imported and nothing else from the file is printed.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import types
from collections.abc import Iterable, Mapping
from typing import Any

from rljax.utils.errors import ConfigError
from rljax.utils.registry import registered

# Fields of a config that name code.
FIELDS = (
    "env",
    "policy_mapping_fn",
    "module_class",
    "callbacks",
    "env_to_module_connector",
    "learner_class",
)
# rljax's own example code, importable without opting in: env classes, mapping functions and
# Flax modules (RLlib's example RLModules, ported) that do nothing beyond their documented job.
# Exact paths, not prefixes.
BUILTIN = {
    "env": frozenset(
        {
            "rljax.examples.envs.classes.multi_agent:MultiAgentCartPole",
            "rljax.examples.envs.classes.multi_agent:MultiAgentPendulum",
            "rljax.examples.envs.classes.multi_agent:MultiAgentMountainCar",
            "rljax.examples.envs.classes.multi_agent:MultiAgentStatelessCartPole",
            "rljax.examples.envs.classes.cartpole_crashing:MultiAgentCartPoleCrashing",
            "rljax.examples.envs.classes.multi_agent.tic_tac_toe:TicTacToe",
            "rljax.examples.envs.classes.multi_agent.rock_paper_scissors:RockPaperScissors",
            "rljax.examples.envs.classes.random_env:RandomEnv",
            "rljax.examples.envs.classes.action_mask_env:ActionMaskEnv",
            "rljax.examples.envs.classes.stateless_cartpole:StatelessCartPole",
            "rljax.examples.envs.classes.simple_corridor:SimpleCorridor",
            "rljax.examples.envs.classes.cartpole_crashing:CartPoleCrashing",
        }
    ),
    "policy_mapping_fn": frozenset({"rljax.examples.policy_mapping:policy_per_agent"}),
    "module_class": frozenset(
        {
            "rljax.examples.rl_modules.classes.tiny_atari_cnn_rlm:TinyAtariCNN",
            "rljax.examples.rl_modules.classes.lstm_containing_rlm:LSTMContainingRLModule",
        }
    ),
    "callbacks": frozenset(),
    "env_to_module_connector": frozenset(),
    "learner_class": frozenset(
        {
            "rljax.examples.learners.classes.custom_ppo_loss_fn_learner:"
            "PPOTorchLearnerWithWeightRegularizerLoss",
            "rljax.examples.learners.classes.separate_vf_lr_and_optimizer_learner:"
            "PPOTorchLearnerWithSeparateVfOptimizer",
        }
    ),
}
_MAX_PATH = 300


def qualified_name(obj: Any) -> str:
    """``module:qualname`` of a class or function (how configs store code)."""
    return f"{obj.__module__}:{obj.__qualname__}"


def _shown(text: str) -> str:
    """A reference read from a file, safe to print: repr, cut short."""
    return repr(text[:_MAX_PATH] + ("..." if len(text) > _MAX_PATH else ""))


def _normalise_prefixes(prefixes: Iterable[str] | None) -> tuple[str, ...]:
    if prefixes is None:
        return ()
    if isinstance(prefixes, str):
        prefixes = [prefixes]
    out = []
    for p in prefixes:
        if not isinstance(p, str) or not p.strip(".").strip():
            raise ConfigError(
                f"allow_imports entries must be module prefixes such as 'mypkg' or 'mypkg.envs'; "
                f"got {p!r}"
            )
        out.append(p.strip().rstrip("."))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class LoadPolicy:
    """What code a loaded config may name (see the module docstring).

    Attributes:
      allow_imports: Module prefixes whose objects may be imported (``"mypkg"`` allows
        ``mypkg`` and ``mypkg.*``).
      objects: Objects the caller passes for fields (``"env"``, ``"policy_mapping_fn"``,
        ``"module_class"``); they replace whatever the file names.
    """

    allow_imports: tuple[str, ...] = ()
    objects: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def make(cls, allow_imports: Iterable[str] | None = None, **objects: Any) -> LoadPolicy:
        unknown = [k for k in objects if k not in FIELDS]
        if unknown:
            raise TypeError(f"unknown code fields {unknown}; these can be passed: {FIELDS}")
        return cls(
            _normalise_prefixes(allow_imports),
            {k: v for k, v in objects.items() if v is not None},
        )

    def allows(self, field: str, module: str, path: str) -> bool:
        if path in BUILTIN[field]:
            return True
        return any(module == p or module.startswith(p + ".") for p in self.allow_imports)


def _split(path: str) -> tuple[str, list[str]] | None:
    module, sep, qualname = path.partition(":")
    parts = qualname.split(".")
    if (
        not sep
        or not module
        or not all(p.isidentifier() for p in module.split("."))
        or not all(p.isidentifier() and not p.startswith("__") for p in parts)
    ):
        return None
    return module, parts


def how_to_opt_in(field: str, module: str | None) -> str:
    prefix = module.split(".")[0] if module else "mypkg"
    register = {
        "env": "rljax.register_env(name, creator)",
        "module_class": "rljax.register_module_class(name, cls)",
        "policy_mapping_fn": "rljax.register_policy_mapping_fn(name, fn)",
        "callbacks": "",
        "env_to_module_connector": "",
        "learner_class": "",
    }[field]
    if field == "learner_class":
        return (
            f"to trust it, pass the class (learner_class=...) or allow its module: "
            f"allow_imports=[{prefix!r}] (CLI: --allow-import {prefix})"
        )
    if field == "env_to_module_connector":
        return f"to trust it, allow its module: allow_imports=[{prefix!r}] (CLI: --allow-import {prefix})"
    if field == "callbacks":
        return (
            f"to trust it, pass the callbacks (callbacks=...) or allow its module: "
            f"allow_imports=[{prefix!r}] (CLI: --allow-import {prefix})"
        )
    return (
        f"to trust it, pass the object ({field}=...), register it in this process ({register}), "
        f"or allow its module: allow_imports=[{prefix!r}] (CLI: --allow-import {prefix})"
    )


def resolve(field: str, reference: Any, policy: LoadPolicy, error_type: type[Exception]) -> Any:
    """The object a loaded config's ``field`` names, through the caller's opt-in only.

    Args:
      field: ``"env"``, ``"policy_mapping_fn"`` or ``"module_class"``.
      reference: ``{"import": "module:qualname"}``, or a registered name (a string).
      policy: What the caller allows.
      error_type: Raised, naming the field and the reference, when nothing allows it.
    """
    if field in policy.objects:
        return policy.objects[field]
    names = registered(field)
    if isinstance(reference, str) and ":" in reference:  # an import path saved as a plain string
        reference = {"import": reference}
    if isinstance(reference, str):  # a registered name (env ids are handled by the env resolver)
        if reference in names:
            return names[reference]
        raise error_type(
            f"{field} names {_shown(reference)}, which is not registered in this process; "
            + how_to_opt_in(field, None)
        )
    if not (isinstance(reference, dict) and set(reference) == {"import"}):
        raise error_type(
            f"{field} must be a registered name or {{'import': 'module:qualname'}}; got a "
            f"{type(reference).__name__}"
        )
    path = reference["import"]
    split = _split(path) if isinstance(path, str) and len(path) <= _MAX_PATH else None
    if split is None:
        shown = _shown(path) if isinstance(path, str) else type(path).__name__
        # A lambda, or a function or class made inside a function, is saved under such a path:
        # no import reaches it, but Algorithm.from_checkpoint takes these fields as objects.
        # (Its callbacks= replaces callbacks_class only, not the per-event callbacks.)
        passing = (
            f"; pass it again when loading a checkpoint (Algorithm.from_checkpoint(path, "
            f"{field}=...)), or name one defined at a module's top level"
            if field in _PASSABLE
            else "; name one defined at a module's top level"
        )
        raise error_type(
            f"{field} names import path {shown}, which is not of the form "
            "'package.module:Name' (public names only; a lambda, or a function or class made "
            f"inside a function, has no such name){passing}"
        )
    for registered_obj in names.values():  # registered under another name, saved by its path
        try:
            if qualified_name(registered_obj) == path:
                return registered_obj
        except AttributeError:  # a callable instance without __qualname__
            continue
    module, parts = split
    if not policy.allows(field, module, path):
        raise error_type(
            f"{field} names code to import, {_shown(path)}, and loading a config or checkpoint "
            "never imports code it names unless you opt in; " + how_to_opt_in(field, module)
        )
    try:
        obj: Any = importlib.import_module(module)
        for part in parts:
            obj = inspect.getattr_static(obj, part)
            if inspect.ismodule(obj):
                raise error_type(
                    f"{field} names {_shown(path)}, which reaches a module through "
                    f"{module!r}; name the object where it is defined"
                )
    except (ImportError, AttributeError) as e:
        raise error_type(
            f"{field}: cannot import {_shown(path)} ({type(e).__name__}); import or define it "
            "before loading"
        ) from None
    defined_at = f"{getattr(obj, '__module__', None)}:{getattr(obj, '__qualname__', None)}"
    if defined_at != path:
        raise error_type(
            f"{field} names {_shown(path)}, which is not defined there (it is "
            f"{_shown(defined_at)}); name the object where it is defined"
        )
    if not _of_kind(field, obj):
        raise error_type(f"{field} names {_shown(path)}, which is not {_KINDS[field]}")
    return obj


# The fields Algorithm.from_checkpoint takes as objects (env=..., policy_mapping_fn=..., ...).
_PASSABLE = frozenset({"env", "policy_mapping_fn", "module_class", "learner_class"})


def passable_unimportable(config_data: dict[str, Any]) -> list[str]:
    """The fields of a config's data form (``to_dict()``) that ``Algorithm.from_checkpoint``
    takes as objects and that name an import path no import reaches (a lambda's)."""
    out = []
    for field in sorted(_PASSABLE):
        ref = config_data.get(field)
        path = ref.get("import") if isinstance(ref, dict) else None
        if isinstance(path, str) and _split(path) is None:
            out.append(field)
    return out


_KINDS = {
    "env": "a gymnasium.Env or MultiAgentEnv class, or a function",
    "policy_mapping_fn": "a function",
    "module_class": "a flax.linen.Module class or an rljax RLModule subclass",
    "callbacks": "a class or a function",
    "learner_class": "a subclass of rljax's PPOLearner (rljax.algorithms.ppo.ppo_learner)",
    "env_to_module_connector": (
        "a SingleAgentObservationPreprocessor, MultiAgentObservationPreprocessor or ConnectorV2 "
        "subclass"
    ),
}


def _of_kind(field: str, obj: Any) -> bool:
    if field == "env_to_module_connector":
        # Upward on purpose, at a load only (see module_class below).
        from rljax.connectors.env_to_module.episode_connector import ConnectorV2
        from rljax.connectors.env_to_module.observation_preprocessor import (
            MultiAgentObservationPreprocessor,
            SingleAgentObservationPreprocessor,
        )

        bases = (SingleAgentObservationPreprocessor, MultiAgentObservationPreprocessor, ConnectorV2)
        return inspect.isclass(obj) and issubclass(obj, bases)
    if field == "callbacks":
        return inspect.isclass(obj) or isinstance(obj, types.FunctionType)
    if field == "learner_class":
        from rljax.algorithms.ppo.ppo_learner import is_learner_class  # upward: see below

        return is_learner_class(obj)
    if field == "policy_mapping_fn":
        return isinstance(obj, types.FunctionType)
    if field == "module_class":
        import flax.linen as nn

        # Upward on purpose, at a load only: the kinds a reference may name are classes of the
        # layers that use them (an RLModule subclass, a MultiAgentEnv); this checks against
        # them without making utils, which those layers import, depend on them at import.
        from rljax.core.rl_module.forward_module import is_forward_module_class

        return (inspect.isclass(obj) and issubclass(obj, nn.Module)) or is_forward_module_class(obj)
    import gymnasium as gym

    from rljax.env.multi_agent_env import MultiAgentEnv  # upward on purpose: see above

    if inspect.isclass(obj):
        return issubclass(obj, (gym.Env, MultiAgentEnv))
    return isinstance(obj, types.FunctionType)


# Class-level names a user's subclass of an algorithm may define without changing how it trains
# (a multi-agent config trains with the algorithm's multi-agent class, which its other methods
# would not reach; a population steps its trials without their training_step).
_CLASS_LEVEL = frozenset({"get_default_config", "multi_agent_class", "config_class"})


def user_overrides(algo_class: type, class_level: bool = False) -> list[str]:
    """The methods that subclasses of an rljax algorithm defined outside rljax add or replace
    (``training_step``, ``_setup``, ...), besides ``get_default_config`` and
    ``multi_agent_class`` unless ``class_level``; [] for rljax's own classes."""
    names: set[str] = set()
    for klass in algo_class.__mro__:
        if klass.__module__.split(".")[0] == "rljax":
            break
        names.update(
            n
            for n, v in vars(klass).items()
            if not n.startswith("__")
            and (callable(v) or isinstance(v, (classmethod, staticmethod, property)))
        )
    return sorted(names if class_level else names - _CLASS_LEVEL)
