"""rljax: RLlib's API and scaling knobs on one host, with EnvPool and JAX."""

__version__ = "0.1.0"

import os as _os  # noqa: E402

from rljax.env.registry import (  # noqa: E402
    register_env,
    register_module_class,
    register_policy_mapping_fn,
)

if _os.environ.get("RLJAX_COMPILATION_CACHE"):
    from rljax.utils.jit import enable_compilation_cache

    enable_compilation_cache(_os.environ["RLJAX_COMPILATION_CACHE"])

__all__ = [
    "__version__",
    "register_env",
    "register_module_class",
    "register_policy_mapping_fn",
]
