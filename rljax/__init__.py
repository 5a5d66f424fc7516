"""rljax: RLlib's API and scaling knobs, rebuilt on EnvPool and JAX: one host at the core, an
algorithm's learners across processes and hosts, and Ray Tune trials on a Ray cluster."""

__version__ = "0.1.0"
"""rljax's version (``rljax --version`` prints it)."""

import os as _os  # noqa: E402

from rljax.utils.registry import (  # noqa: E402
    register_env,
    register_module_class,
    register_policy_mapping_fn,
)

if _os.environ.get("RLJAX_COMPILATION_CACHE"):
    from rljax.utils.jit import enable_compilation_cache

    enable_compilation_cache(_os.environ["RLJAX_COMPILATION_CACHE"])

# The CPU client's threads, where ``RLJAX_XLA_CPU_THREADS`` gives a number, before anything
# creates the client (``rljax.utils.xla_threads``; unset, the first algorithm's build chooses).
from rljax.utils.xla_threads import apply_at_import as _apply_xla_threads  # noqa: E402

_apply_xla_threads()


def __getattr__(name: str) -> object:
    # ``rljax.tune`` on first use, so that ``import rljax`` imports no more than it did;
    # ``from rljax import tune`` imports the submodule directly.
    if name == "tune":
        import importlib

        return importlib.import_module("rljax.tune")
    raise AttributeError(f"module 'rljax' has no attribute {name!r}")


__all__ = [
    "__version__",
    "register_env",
    "register_module_class",
    "register_policy_mapping_fn",
    "tune",
]
