"""host_call: a host function inside a jitted program, on numpy arrays, as io_callback calls it."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import io_callback

from rljax.utils import host_call as host_call_module
from rljax.utils.host_call import host_call


def test_the_installed_jax_gets_the_primitive_not_the_fallback():
    assert host_call_module._primitive() is not None


_FIRST_CALL_IN_A_TRACE = """
import jax, jax.numpy as jnp
from rljax.utils import host_call
f = jax.jit(lambda x: host_call.host_call(lambda a: a * 2, jax.ShapeDtypeStruct((), jnp.float32), x))
print(float(f(jnp.float32(3.0))), host_call._primitive() is not None)
"""


def test_a_first_call_made_while_a_program_is_traced_still_gets_the_primitive():
    """A fresh process whose first host_call is traced (as EnvPool's reset is, inside the
    rollout): the primitive's one-off check must not be staged into that trace and fail."""
    out = subprocess.run(
        [sys.executable, "-c", _FIRST_CALL_IN_A_TRACE], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "6.0 True"


def test_numpy_operands_and_the_same_results_as_io_callback_under_scan_and_cond():
    seen: list[tuple[str, str]] = []

    def host(x, ids):
        seen.append((type(x["a"]).__name__, type(ids).__name__))
        out = np.array(x["a"])
        out[np.asarray(ids) % 2 == 0] = -1.0
        return {"a": out, "n": np.int32(np.sum(ids))}

    def run(call):
        shapes = {
            "a": jax.ShapeDtypeStruct((4,), jnp.float32),
            "n": jax.ShapeDtypeStruct((), jnp.int32),
        }

        def body(x, i):
            ids = jnp.arange(4) + i

            def called(args):
                return call(host, shapes, *args)

            def skipped(args):
                return {"a": args[0]["a"], "n": jnp.int32(0)}

            out = jax.lax.cond(i % 3 != 0, called, skipped, ({"a": x}, ids))
            return out["a"] + 1.0, out["n"]

        return jax.jit(lambda x: jax.lax.scan(body, x, jnp.arange(6)))(jnp.zeros(4))

    fast = jax.device_get(run(host_call))
    assert seen == [("ndarray", "ndarray")] * 4  # steps 1, 2, 4, 5: numpy, no device arrays
    slow = jax.device_get(run(io_callback))
    for a, b in zip(jax.tree.leaves(fast), jax.tree.leaves(slow), strict=True):
        np.testing.assert_array_equal(a, b)
    # By hand: the sums of ids 1-4, 2-5, 4-7, 5-8 where called, 0 elsewhere.
    np.testing.assert_array_equal(fast[1], [0, 10, 14, 0, 22, 26])


def test_a_call_whose_result_is_unused_still_runs():
    calls = []

    def host(x):
        calls.append(float(x))
        return np.float32(0.0)

    @jax.jit
    def f(x):
        host_call(host, jax.ShapeDtypeStruct((), jnp.float32), x)
        return x * 2

    assert float(f(jnp.float32(3.0))) == 6.0
    assert calls == [3.0]


def test_results_of_a_dtype_jax_does_not_have_are_refused_before_compiling():
    with pytest.raises(ValueError, match="host_call: a result of dtype float64"):
        jax.jit(lambda x: host_call(lambda a: a, jax.ShapeDtypeStruct((), np.float64), x))(1.0)


_TWO_DEVICES = """
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from rljax.utils.host_call import host_call
mesh = Mesh(np.asarray(jax.devices()), ("d",))
x = jax.device_put(jnp.arange(4.0), NamedSharding(mesh, P("d")))
f = jax.jit(lambda x: host_call(lambda a: a * 2 + 1, jax.ShapeDtypeStruct((4,), jnp.float32), x))
print(len(jax.devices()), np.asarray(f(x)).tolist())
"""


def test_a_program_over_two_devices_runs_the_call_once_on_one():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    out = subprocess.run(
        [sys.executable, "-c", _TWO_DEVICES], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "2 [1.0, 3.0, 5.0, 7.0]"
