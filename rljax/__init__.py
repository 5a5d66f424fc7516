"""rljax: RLlib's API and scaling knobs on one host, with EnvPool and JAX."""

__version__ = "0.1.0"

import os as _os  # noqa: E402

from rljax.env.registry import register_env  # noqa: E402

if _os.environ.get("RLJAX_COMPILATION_CACHE"):
    from rljax.utils.jit import enable_compilation_cache

    enable_compilation_cache(_os.environ["RLJAX_COMPILATION_CACHE"])

__all__ = ["__version__", "register_env"]
