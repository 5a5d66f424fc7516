"""A host function called from inside a jitted program, on numpy arrays, at a small cost per call.

``jax.experimental.io_callback`` places its operands on a device (``device_put``) and runs the
function under a default-device context on every call, and the function's ``np.asarray`` copies
them back. On the project's 2-core machine (jax 0.10.2) that is 110-210 us per call of a function
that itself takes 3 us. EnvPool's same-step reset (``rljax.env.envpool_vector``) makes one such
call in every rollout step where an episode ended, which with an untrained CartPole policy is
most steps of a 16-env rollout.

``host_call`` lowers to the same XLA custom call as ``io_callback`` (JAX's
``emit_python_callback``, with a side effect so it is neither removed nor merged) and hands the
function its operands as the numpy arrays the custom call receives: no transfers and no
context. It builds on JAX internals (tested with jax 0.10.2); where they are not as this module
expects (another JAX version: the primitive is built, compiled and run once, and any failure
counts), ``host_call`` is ``io_callback`` itself, with the same results.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np


@functools.cache
def _primitive() -> Any:
    """``(primitive, ShapedArray)`` of ``rljax_host_call``, or None where JAX's internals
    differ: any failure to build it, or to compile and run a call of it once, leaves
    ``host_call`` to ``io_callback``."""
    try:
        built = _build()
        if built is not None:
            _self_test(*built)
        return built
    except Exception:  # pragma: no cover - another JAX's internals
        return None


def _build() -> Any:
    from jax._src import callback as jax_callback
    from jax._src import core, dispatch, effects
    from jax._src.interpreters import mlir

    emit = jax_callback.emit_python_callback
    op_sharding = jax_callback._callback_op_sharding
    wanted = {"has_side_effect", "returns_token", "sharding"}
    if not wanted <= set(inspect.signature(emit).parameters):
        return None  # pragma: no cover - another JAX's signature

    class HostCallEffect(effects.Effect):
        """The call's side effect: never removed, merged or moved out of control flow."""

        def __str__(self) -> str:
            return "rljax_host_call"

    effect = HostCallEffect()
    effects.lowerable_effects.add_type(HostCallEffect)
    effects.control_flow_allowed_effects.add_type(HostCallEffect)

    prim = core.Primitive("rljax_host_call")
    prim.multiple_results = True
    prim.def_impl(functools.partial(dispatch.apply_primitive, prim))
    if hasattr(dispatch, "prim_requires_devices_during_lowering"):  # as io_callback's
        dispatch.prim_requires_devices_during_lowering.add(prim)

    def abstract_eval(*avals: Any, callback: Any, result_avals: Any) -> Any:
        del avals, callback
        return result_avals, {effect}

    prim.def_effectful_abstract_eval(abstract_eval)

    def lowering(ctx: Any, *args: Any, callback: Any, result_avals: Any) -> Any:
        del result_avals

        def flat(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
            return tuple(callback(*arrays))

        result, _, _ = emit(
            ctx,
            flat,
            None,
            list(args),
            ctx.avals_in,
            ctx.avals_out,
            has_side_effect=True,
            returns_token=False,
            # As io_callback's: in a program over several devices, the call runs on one.
            sharding=op_sharding(ctx.module_context.axis_context, None, ctx.avals_out),
        )
        return result

    mlir.register_lowering(prim, lowering, cacheable=False)
    return prim, core.ShapedArray


def _self_test(prim: Any, shaped_array: Any) -> None:
    """One call compiled and run: raises where this JAX lowers or runs it otherwise. The
    first ``host_call`` is usually made while a program is traced: the test runs outside that
    trace (``ensure_compile_time_eval``), or it would be staged into it."""
    with jax.ensure_compile_time_eval():
        out = jax.jit(
            lambda x: prim.bind(
                x, callback=lambda a: [a + 1], result_avals=(shaped_array((), np.dtype(np.int32)),)
            )[0]
        )(np.int32(1))
        value = int(out)
    if value != 2:  # pragma: no cover - another JAX's behaviour
        raise RuntimeError("rljax_host_call returned a wrong value")


def host_call(fn: Callable[..., Any], result_shape_dtypes: Any, *args: Any) -> Any:
    """``fn(*args)`` on the host from inside a traced program, as ``io_callback`` calls it
    (unordered, with a side effect), but ``fn`` receives the flattened operands' numpy arrays
    rebuilt into ``args``' structure and must return arrays of ``result_shape_dtypes``'
    structure, shapes and dtypes. The operands are read-only copies. Not for ``vmap`` or
    ``grad``; inside a program over several devices the call runs on one, as
    ``io_callback``'s does."""
    built = _primitive()
    if built is None:  # pragma: no cover - another JAX version
        from jax.experimental import io_callback

        return io_callback(fn, result_shape_dtypes, *args)
    prim, shaped_array = built
    flat_args, in_tree = jax.tree.flatten(args)
    flat_results, out_tree = jax.tree.flatten(result_shape_dtypes)
    for r in flat_results:  # as io_callback does, before anything compiles
        if jax.dtypes.canonicalize_dtype(r.dtype) != np.dtype(r.dtype):
            raise ValueError(
                f"host_call: a result of dtype {np.dtype(r.dtype)} is not one of this JAX's "
                f"dtypes (it would be {jax.dtypes.canonicalize_dtype(r.dtype)}); with 64-bit "
                "types off, ask for 32-bit results"
            )
    result_avals = tuple(shaped_array(r.shape, r.dtype) for r in flat_results)

    def callback(*arrays: np.ndarray) -> Sequence[np.ndarray]:
        out = fn(*jax.tree.unflatten(in_tree, arrays))
        return jax.tree.leaves(out)

    outs = prim.bind(*flat_args, callback=callback, result_avals=result_avals)
    return jax.tree.unflatten(out_tree, outs)


__all__ = ["host_call"]
