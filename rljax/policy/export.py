"""A trained policy exported for serving: StableHLO through ``jax.export``, plus a small JSON.

``algo.export_policy(path)`` (``rljax export CHECKPOINT OUT``) writes into the directory ``path``:

- ``policy_greedy.stablehlo``: ``actions = f(obs)``, the distribution's mode;
- ``policy_sample.stablehlo``: ``actions = f(obs, key)``, a sample (``key``: a uint32[2] JAX
  PRNG key, ``jax.random.key_data(jax.random.PRNGKey(seed))``);
- ``policy.json``: the observation and action spaces (``rljax.env.spaces``), the input and
  output dtypes, the env and its settings (EnvPool's preprocessing, frame stacking and so on
  are the env's: build the same env to serve), the files and the platforms.

The weights are constants inside each program; the batch size is symbolic (any ``B``);
actions are the env's (clipped to a Box's bounds where the config clips). Env-to-module
connectors (a ``MeanStdFilter``'s statistics) are inside the programs, which take the env's raw
observations. For a Dict / Tuple observation space the programs take a dict (keys sorted) /
tuple of arrays and ``observation_dtype`` is that structure of dtype names. Both programs are
lowered for CPU and CUDA. ``rljax.policy.load_exported(path)`` loads it with JAX and numpy
alone (no rljax, Flax or EnvPool: ``rljax/policy/loader.py`` below its docstring is the code to
copy into a serving program)::

    from rljax.policy import load_exported

    policy = load_exported(path)  # greedy: policy(obs) -> actions
    sample = load_exported(path, explore=True)  # sample(obs, key) -> actions

It reads only the files ``policy.json`` names inside the directory (bare names, regular files,
sizes capped). An exported program is code, as trusted as its source: a crafted one can loop
for ever or allocate any amount of memory.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.env.spaces import is_structured, space_to_data, zeros_batch
from rljax.policy.loader import FORMAT_VERSION
from rljax.utils import safe_io
from rljax.utils.errors import ConfigError

PLATFORMS = ("cpu", "cuda")


def check_export_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as the directory an export writes: a new one, or an existing directory (its
    policy files are replaced). Anything else there (a file, a link to one) or a place that
    cannot be written is a ``ConfigError`` naming it, before anything is loaded or lowered."""
    out = Path(path)
    # lexists: a dangling link is there too (mkdir would fail on it after all the work).
    if os.path.lexists(out) and not out.is_dir():
        raise ConfigError(
            f"cannot export to {str(path)!r}: it exists and is not a directory; give a new "
            "directory or an existing one (its policy files are replaced)"
        )
    existing = out
    for parent in out.parents:
        if os.path.lexists(parent):
            if not parent.is_dir():
                raise ConfigError(
                    f"cannot export to {str(path)!r}: {str(parent)!r} is not a directory"
                )
            break
    while not os.path.lexists(existing):
        existing = existing.parent
    try:  # writable: an empty directory made and removed there (nothing stays)
        os.rmdir(tempfile.mkdtemp(prefix=".tmp-rljax-probe-", dir=existing))
    except OSError as e:
        where = "" if existing == out else f" (nothing can be created in {str(existing)!r})"
        raise ConfigError(
            f"cannot export to {str(path)!r}: not writable{where}: {e.strerror or e}"
        ) from None
    return out


def export_policy(
    algo: Any,
    path: str | os.PathLike[str],
    policy_id: str | None = None,
    platforms: tuple[str, ...] = PLATFORMS,
) -> str:
    """Writes ``algo``'s current policy ``policy_id`` to the directory ``path``; returns it.

    See the module docstring for what is written and how to load it.
    """
    out = check_export_dir(path)
    algo._check_policy_id(policy_id)
    parts = algo.parts
    if parts.recurrent_inference is not None:
        raise ValueError(
            "a recurrent policy (use_lstm) is not exported yet: the programs are stateless; "
            "serve it with RLModule.from_checkpoint(...).forward_inference, which carries the state"
        )
    params = jax.device_get(parts.inference_params(algo.state, policy_id))
    greedy = parts.inference(policy_id, False)
    sample = parts.inference(policy_id, True)
    to_env = parts.to_env_action
    obs_space = algo.observation_space
    if not is_structured(obs_space):
        algo._observation_shape()  # a space without a shape: ConfigError
    (batch,) = jax.export.symbolic_shape("batch")
    # The dtypes JAX computes in (EnvPool's MuJoCo float64 observations: float32); a Dict /
    # Tuple space's program takes a dict (keys sorted) / tuple of such arrays.
    obs_spec = jax.tree.map(
        lambda z: jax.ShapeDtypeStruct((batch, *z.shape[1:]), z.dtype), zeros_batch(obs_space, 1)
    )
    obs_dtypes = jax.tree.map(lambda z: np.dtype(z.dtype).name, obs_spec)
    key_spec = jax.ShapeDtypeStruct((2,), jnp.uint32)
    constants = jax.tree.map(jnp.asarray, params)

    def greedy_fn(obs: jax.Array) -> jax.Array:
        return to_env(greedy(constants, obs, jax.random.PRNGKey(0))[1])

    def sample_fn(obs: jax.Array, key: jax.Array) -> jax.Array:
        return to_env(sample(constants, obs, key)[1])

    out.mkdir(parents=True, exist_ok=True)
    files = {"greedy": "policy_greedy.stablehlo", "sample": "policy_sample.stablehlo"}
    lowered = {
        "greedy": jax.export.export(jax.jit(greedy_fn), platforms=platforms)(obs_spec),
        "sample": jax.export.export(jax.jit(sample_fn), platforms=platforms)(obs_spec, key_spec),
    }
    for kind, exported in lowered.items():
        safe_io.write_atomic_bytes(out / files[kind], bytes(exported.serialize()))
    action_dtype = lowered["greedy"].out_avals[0].dtype
    cfg = algo.config
    meta = {
        "format_version": FORMAT_VERSION,
        "algo": cfg.algo_name,
        "policy_id": policy_id or algo._policy_ids()[0],
        "env": cfg.env if isinstance(cfg.env, str) else getattr(cfg.env, "__name__", None),
        "env_config": json.loads(json.dumps(cfg.env_config, default=repr)),
        "observation_space": space_to_data(obs_space),
        "action_space": space_to_data(algo.action_space),
        "observation_dtype": obs_dtypes,
        "action_dtype": np.dtype(action_dtype).name,
        "inputs": {
            "greedy": ["obs [B, *observation_space.shape]"],
            "sample": ["obs [B, *observation_space.shape]", "key uint32[2]"],
        },
        "outputs": "actions [B, *action_space.shape], the env's actions",
        "files": files,
        "platforms": list(platforms),
        "jax_version": jax.__version__,
        "training_iteration": algo.iteration,
    }
    safe_io.write_atomic(out / "policy.json", json.dumps(meta, indent=2) + "\n")
    return str(out)


__all__ = ["export_policy"]
