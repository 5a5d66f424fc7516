"""rljax: RLlib's API and scaling knobs on one host, with EnvPool and JAX."""

__version__ = "0.1.0"

from rljax.env.registry import register_env  # noqa: E402

__all__ = ["__version__", "register_env"]
