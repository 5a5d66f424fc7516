"""Learners across processes and hosts, with ``jax.distributed``.

Every process runs the same program (SPMD, as Cleanba's learners do): it calls
``jax.distributed.initialize`` (``initialize``), samples its own share of the envs, and the learner
mesh covers every process's devices. Each process's trajectories join one global array
(``jax.make_array_from_process_local_data``, split over the env axis), and the post-processing
and the update run as one jitted program over the global mesh, so the gradients are averaged
inside it as they are on one host. Results are reduced across processes (env steps summed,
episodes of every process); process 0 writes checkpoints and logs (``is_writer``).

With one process nothing here adds a host sync or changes a program: every hook returns its
input unchanged.

Where the processes come from:

* ``config.learners(num_processes=N, process_id=i, coordinator_address="host:port")``;
* or the environment: ``JAX_COORDINATOR_ADDRESS`` with ``JAX_NUM_PROCESSES`` and
  ``JAX_PROCESS_ID`` (what ``rljax train --num-processes N`` sets for its children);
* or a cluster JAX detects itself (SLURM's ``srun``, Open MPI's ``mpirun``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np

from rljax.utils.errors import ConfigError

# The variables a launcher sets for each process (JAX reads the first one itself).
ENV_COORDINATOR = "JAX_COORDINATOR_ADDRESS"
ENV_NUM_PROCESSES = "JAX_NUM_PROCESSES"
ENV_PROCESS_ID = "JAX_PROCESS_ID"
# Cluster launchers JAX detects: their task-count variables.
_CLUSTER_SIZE_VARS = ("SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE")
DEFAULT_TIMEOUT_S = 60.0


class ProcessGroupError(RuntimeError):
    """A process of a multi-process run failed or stopped answering: the others end too."""


def check_coordinator_address(name: str, value: Any) -> str | None:
    """``None`` or ``"host:port"``."""
    if value is None:
        return None
    if not isinstance(value, str) or ":" not in value or not value.rsplit(":", 1)[1].isdigit():
        raise ConfigError(
            f"{name}={value!r}: allowed is None (JAX's detection: JAX_COORDINATOR_ADDRESS, "
            "SLURM, Open MPI) or 'host:port', e.g. '10.0.0.1:1234'"
        )
    return value


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"environment variable {name}={raw!r}: allowed is an integer") from None


def wanted(config: Any) -> bool:
    """Whether ``config`` (or the environment) asks for more than one process."""
    n = getattr(config, "num_processes", None)
    if n is not None:
        return int(n) > 1
    env_n = _env_int(ENV_NUM_PROCESSES)
    if env_n is not None:
        return env_n > 1
    return any((_env_int(v) or 1) > 1 for v in _CLUSTER_SIZE_VARS)


def initialize(config: Any) -> bool:
    """Calls ``jax.distributed.initialize`` when ``config`` or the environment asks for more
    than one process (``wanted``); returns whether this is a multi-process run.

    On a CPU the collectives are gloo's. A peer that does not join within
    ``config.process_timeout_s``, or stops sending heartbeats for that long, ends this process
    with JAX's error instead of a hang. Calling it again (a second algorithm in the same
    processes) is a no-op.
    """
    if jax.distributed.is_initialized():
        # A launcher initialized it (Ray Train's JaxTrainer on GPU or TPU, or the user's own
        # code): its process count and index are JAX's, the config's launch settings unused.
        check_cpu_collectives()
        return jax.process_count() > 1
    if not wanted(config):
        return False
    n = getattr(config, "num_processes", None)
    pid = getattr(config, "process_id", None)
    address = getattr(config, "coordinator_address", None)
    if n is None:
        n = _env_int(ENV_NUM_PROCESSES)
    if pid is None:
        pid = _env_int(ENV_PROCESS_ID)
    if n is not None and pid is not None and not 0 <= pid < n:
        raise ConfigError(
            f"process_id={pid} with num_processes={n}: allowed is 0 <= process_id < {n}"
        )
    timeout = int(max(1, round(float(getattr(config, "process_timeout_s", DEFAULT_TIMEOUT_S)))))
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(
            coordinator_address=address,
            num_processes=n,
            process_id=pid,
            initialization_timeout=timeout,
            heartbeat_timeout_seconds=timeout,
            shutdown_timeout_seconds=timeout,
        )
    except RuntimeError as e:
        raise ProcessGroupError(
            f"jax.distributed.initialize failed (coordinator {address or os.environ.get(ENV_COORDINATOR)!r}, "
            f"num_processes={n}, process_id={pid}, timeout {timeout}s): {e}. It must run before "
            "any JAX computation in the process, and every process must reach it"
        ) from e
    return jax.process_count() > 1


CPU_COLLECTIVES_SETTING = "jax_cpu_collectives_implementation"
CPU_COLLECTIVES_ENV = "JAX_CPU_COLLECTIVES_IMPLEMENTATION"


def check_cpu_collectives() -> None:
    """Raises ``ConfigError`` when JAX's process group spans several CPU processes whose
    collectives are not gloo's (the only CPU collectives rljax's cross-process programs run
    on); gloo must be chosen before ``jax.distributed.initialize``, so the error names the
    setting and the environment variable a launcher sets for its processes."""
    if jax.process_count() <= 1 or jax.devices()[0].platform != "cpu":
        return
    chosen = getattr(jax.config, CPU_COLLECTIVES_SETTING)
    if chosen != "gloo":
        raise ConfigError(
            f"{CPU_COLLECTIVES_SETTING}={chosen!r} in a CPU run across {jax.process_count()} "
            "processes: allowed is 'gloo', chosen before jax.distributed.initialize: set "
            f"{CPU_COLLECTIVES_ENV}=gloo in every process's environment (for Ray Train, in the "
            f"workers' runtime_env), or jax.config.update({CPU_COLLECTIVES_SETTING!r}, 'gloo') "
            "before initializing"
        )


LAUNCH_SETTINGS = ("num_processes", "process_id", "coordinator_address")


def launch_settings_cleared(config: Any) -> Any:
    """``config`` with the settings of the launch that saved it cleared (``LAUNCH_SETTINGS``:
    None, JAX's detection), so that a checkpoint of a multi-process run restores in one
    process, or in the processes of another launch."""
    for name in LAUNCH_SETTINGS:
        if getattr(config, name, None) is not None:
            setattr(config, name, None)
    return config


def is_multi_process() -> bool:
    """More than one JAX process (``jax.distributed`` initialized with several)."""
    return jax.process_count() > 1


def is_writer() -> bool:
    """Whether this process writes checkpoints and logs: process 0 (or the only one)."""
    return jax.process_index() == 0


def common_seed(seed: int) -> int:
    """Process 0's seed, on every process (a seed drawn at random differs per process)."""
    if not is_multi_process():
        return seed
    from jax.experimental import multihost_utils

    return int(multihost_utils.broadcast_one_to_all(np.asarray(seed, np.int64)))


def env_share(num_envs: int, seed: int) -> tuple[int, int]:
    """``(envs, env seed)`` of this process: the ``process_index``-th equal share of
    ``num_envs`` sub-envs, seeded as those sub-envs are in a one-process run (EnvPool seeds
    sub-env i with ``seed + i``)."""
    count = jax.process_count()
    if count == 1:
        return num_envs, seed
    if num_envs % count:
        raise ConfigError(
            f"num_envs_per_env_runner={num_envs} across {count} processes: allowed is a multiple "
            f"of the process count ({count}), each process sampling an equal share"
        )
    share = num_envs // count
    return share, seed + jax.process_index() * share


def learner_devices(pool: list[jax.Device], n: int) -> list[jax.Device]:
    """``n`` devices of ``pool`` (global), ``n / process_count`` from every process."""
    count = jax.process_count()
    if n % count:
        raise ConfigError(
            f"num_learners={n} across {count} processes: allowed is a multiple of the process "
            f"count ({count}), every process holding as many learners"
        )
    per = n // count
    out: list[jax.Device] = []
    for p in range(count):
        mine = [d for d in pool if d.process_index == p]
        if len(mine) < per:
            raise ConfigError(
                f"num_learners={n} asks for {per} devices on each of {count} processes, but "
                f"process {p} has {len(mine)}; on a CPU set "
                "XLA_FLAGS=--xla_force_host_platform_device_count=N in every process"
            )
        out += mine[:per]
    return out


def local_copy(tree: Any) -> Any:
    """``tree`` with each global (not fully addressable) array replaced by this process's
    first shard of it: for a replicated array, the whole value, on a local device."""
    if not is_multi_process():
        return tree

    def local(x: Any) -> Any:
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return x.addressable_data(0)
        return x

    return jax.tree.map(local, tree)


def global_array(tree: Any, sharding: Any) -> Any:
    """Places ``tree`` (the same value on every process) with ``sharding`` (one, or a tree of
    them as ``state_shardings`` gives) over the global mesh."""
    if not is_multi_process():
        return jax.device_put(tree, sharding)

    def put(x: Any, where: jax.sharding.Sharding) -> jax.Array:
        x = np.asarray(x)
        return jax.make_array_from_callback(x.shape, where, lambda index: x[index])

    if isinstance(sharding, jax.sharding.Sharding):
        return jax.tree.map(lambda x: put(x, sharding), tree)
    return jax.tree.map(put, tree, sharding)


def state_shardings(state: Any, replicated: jax.sharding.NamedSharding) -> Any:
    """The learner state's shardings: ``replicated``, except, across processes, a replay
    buffer's storage (``state.buffer.storage``, leaves ``[num_envs, rows, ...]``), split over
    the mesh by sub-env: each process holds the rows of its own sub-envs (its replay shard).

    Sampling stays unbiased: the sum tree the indices are drawn from is replicated and covers
    every process's rows, and each process draws the same indices with the same key, so the
    minibatch is the one a single process would sample from the whole buffer; XLA fetches the
    rows from the processes holding them. A sub-env count the devices do not divide keeps the
    storage replicated (every process a whole copy)."""
    storage = getattr(getattr(state, "buffer", None), "storage", None)
    if not is_multi_process() or storage is None:
        return replicated
    leaves = jax.tree.leaves(storage)
    if any(x.ndim == 0 or x.shape[0] % replicated.mesh.size for x in leaves):
        return replicated
    split = jax.sharding.NamedSharding(
        replicated.mesh, jax.sharding.PartitionSpec(replicated.mesh.axis_names[0])
    )
    ids = {id(x) for x in leaves}
    return jax.tree.map(lambda x: split if id(x) in ids else replicated, state)


def host_value(tree: Any) -> Any:
    """``jax.device_get(tree)``; across processes, a leaf split over them (a replay shard) is
    gathered from all of them first (every process must call it)."""
    if not is_multi_process():
        return jax.device_get(tree)
    from jax.experimental import multihost_utils

    def get(x: Any) -> Any:
        if isinstance(x, jax.Array) and not x.is_fully_addressable and not x.is_fully_replicated:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return jax.device_get(x)

    return jax.tree.map(get, tree)


def traj_sharding(mesh: jax.sharding.Mesh, axis: str) -> jax.sharding.NamedSharding:
    """Trajectories ``[T, K, ...]`` split over the env axis K."""
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(None, axis))


def join_local(tree: Any, sharding: jax.sharding.Sharding) -> Any:
    """This process's part of a global batch, joined with every other process's into one
    global array per leaf (``jax.make_array_from_process_local_data``)."""
    return jax.tree.map(
        lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), tree
    )


def offset_env_ids(traj: Any) -> Any:
    """A local fragment's env ids as the one-process run numbers them: process p's sub-envs
    come after the earlier processes' (equal shares)."""
    k = traj.env_id.shape[1]
    return traj._replace(env_id=traj.env_id + jax.process_index() * k)


def fused_programs(
    rollout: Callable[..., Any],
    postprocess: Callable[[Any], Any],
    update: Callable[[Any, Any], tuple[Any, Any]],
    mesh: jax.sharding.Mesh,
    state_sharding: Any,
    batch_sharding: jax.sharding.Sharding,
    compiler_options: dict[str, Any] | None = None,
    update_options: dict[str, Any] | None = None,
) -> tuple[Callable[..., Any], Callable[..., Any], jax.sharding.NamedSharding]:
    """The multi-process fused path: ``(sample, update, traj_sharding)``.

    ``sample(params, runner_state) -> (runner_state, traj, episodes)`` runs this process's
    EnvPool rollout on its runner device; its ``traj`` joins the global trajectory (split over
    the env axis), and ``update(state, traj)`` post-processes the global trajectory and updates,
    one program over the whole mesh (advantages normalised over every process's rows, as in
    one process).
    """
    from rljax.runners.acting import episode_arrays

    def sample(params: Any, rs: Any) -> tuple[Any, Any, Any]:
        rs, traj = rollout(params, rs)
        return rs, offset_env_ids(traj), episode_arrays(traj)

    def post_update(state: Any, traj: Any) -> tuple[Any, Any]:
        batch = jax.lax.with_sharding_constraint(postprocess(traj), batch_sharding)
        return update(state, batch)

    sharding = traj_sharding(mesh, batch_sharding.spec[0])  # type: ignore[attr-defined]
    replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    return (
        jax.jit(sample, donate_argnums=(1,), compiler_options=compiler_options),
        jax.jit(
            post_update,
            in_shardings=(state_sharding, sharding),
            out_shardings=(state_sharding, replicated),
            donate_argnums=(0,),
            compiler_options=update_options,
        ),
        sharding,
    )


_RESHARD: dict[Any, Callable[[Any], Any]] = {}


def replicated_traj(traj: Any, mesh: jax.sharding.Mesh) -> Any:
    """A fragment ``[T, K_local]`` made one ``[T, K]`` array replicated on every device of the
    mesh, for the off-policy learners' jitted cycle (which adds each sub-env's rows to the
    replay shard holding them, ``state_shardings``). One process: ``jax.device_put`` onto the
    mesh, as before."""
    replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    if not is_multi_process():
        return jax.device_put(traj, replicated)
    axis = mesh.axis_names[0]
    joined = join_local(offset_env_ids(traj), traj_sharding(mesh, axis))
    if mesh not in _RESHARD:  # one all-gather program per mesh
        _RESHARD[mesh] = jax.jit(lambda x: x, out_shardings=replicated)
    return _RESHARD[mesh](joined)


def raise_if_peer_failed(error: BaseException) -> None:
    """Raises ``ProcessGroupError`` from ``error`` when it is XLA's runtime error in a
    multi-process run: a collective that lost a peer (gloo's "Connection reset by peer", NCCL's
    or the coordination service's errors). Otherwise returns, and the caller re-raises."""
    if not is_multi_process() or not isinstance(error, jax.errors.JaxRuntimeError):
        return
    raise ProcessGroupError(
        f"process {jax.process_index()} of {jax.process_count()}: a collective failed, most "
        f"likely because another process died or stopped answering: {error}"
    ) from error


def gather_episodes(host: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[Any]:
    """Each update's ``(metrics, episodes)`` with every process's episodes: returns, lengths
    and done flags concatenated (process order), env steps summed. One process: unchanged."""
    if not is_multi_process():
        return host
    from jax.experimental import multihost_utils

    out = []
    for metrics, episodes in host:
        if "steps" in episodes:
            raise ConfigError(
                "episode callbacks (on_episode_*) are not supported across processes yet"
            )
        local = {
            "returns": np.asarray(episodes["returns"]),
            "lens": np.asarray(episodes["lens"]),
            "done": np.asarray(episodes["done"]),
            "num_valid": np.asarray(episodes["num_valid"]).reshape(1),
        }
        every = multihost_utils.process_allgather(local, tiled=True)
        out.append(
            (
                metrics,
                {
                    "returns": every["returns"],
                    "lens": every["lens"],
                    "done": every["done"].astype(bool),
                    "num_valid": int(np.sum(every["num_valid"])),
                },
            )
        )
    return out


def same_actions_as_one_process(policy_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``policy_fn`` that samples this process's actions exactly as the one-process run samples
    the same sub-envs': it acts on a batch of the global width (this process's observations at
    its rows) with the common key and keeps its rows. It costs ``process_count`` times the
    acting compute; for checking a multi-process run against one process."""
    count = jax.process_count()
    if count == 1:
        return policy_fn
    index = jax.process_index()

    def act(params: Any, obs: Any, key: jax.Array) -> Any:
        import jax.numpy as jnp

        b = jax.tree.leaves(obs)[0].shape[0]
        wide = jax.tree.map(lambda x: jnp.concatenate([x] * count, axis=0), obs)
        out = policy_fn(params, wide, key)
        return jax.tree.map(lambda x: x[index * b : (index + 1) * b], out)

    return act


def check_process_settings(algorithm: Any) -> None:
    """Refuses what a multi-process run does not support yet, naming it."""
    if not is_multi_process():
        return
    config = algorithm.config
    count = jax.process_count()
    # The on- and off-policy algorithms' fused paths are the ones supported (named, not
    # imported: the algorithms import this module).
    bases = {c.__name__ for c in type(algorithm).__mro__}
    if not bases & {"OnPolicyAlgorithm", "OffPolicyAlgorithm"} or config.is_multi_agent:
        raise ConfigError(
            f"{type(algorithm).__name__}{' (multi-agent)' if config.is_multi_agent else ''} across "
            f"{count} processes: only single-agent on-policy (PPO, IMPALA, APPO) and off-policy "
            "(DQN, SAC, TD3) algorithms run across processes yet"
        )
    if config.num_env_runners != 0 or not algorithm._fused_envpool():
        raise ConfigError(
            f"num_env_runners={config.num_env_runners} across {count} processes: only the fused "
            "EnvPool path (num_env_runners=0, an EnvPool env) runs across processes yet"
        )


# ---------------------------------------------------------------------- the local launcher
def free_port() -> int:
    """A TCP port free on this host now (for the coordinator of local processes)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def is_launched_process() -> bool:
    """Whether a launcher set this process's JAX process settings (``JAX_PROCESS_ID``)."""
    return os.environ.get(ENV_PROCESS_ID) is not None


def process_env(
    process_id: int, num_processes: int, address: str, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of local process ``process_id``: ``base`` (default ``os.environ``) with
    JAX's coordinator address and rljax's process count and id."""
    env = dict(os.environ if base is None else base)
    env[ENV_COORDINATOR] = address
    env[ENV_NUM_PROCESSES] = str(num_processes)
    env[ENV_PROCESS_ID] = str(process_id)
    return env


def _end(procs: list[subprocess.Popen[bytes]], grace_s: float) -> None:
    """SIGTERM to every process still running, SIGKILL to those left after ``grace_s``."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def launch_local(
    argv: Sequence[str],
    num_processes: int,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    grace_s: float = 10.0,
    poll_s: float = 0.1,
    stdout: Any = None,
) -> None:
    """Runs ``argv`` as ``num_processes`` local JAX processes and waits for all of them.

    Each child gets ``JAX_COORDINATOR_ADDRESS`` (a free local port, process 0 serving it),
    ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID``, which ``initialize`` reads. When a child
    exits with a non-zero status, the others are ended (SIGTERM, then SIGKILL after
    ``grace_s``) and ``ProcessGroupError`` names it; so they are when ``timeout_s`` passes.
    ``stdout``: where the children's standard output goes (None: this process's).

    Raises:
      ProcessGroupError: A child failed, or the run passed ``timeout_s``.
    """
    if not isinstance(num_processes, int) or num_processes < 1:
        raise ConfigError(f"num_processes={num_processes!r}: allowed is an integer >= 1")
    address = f"127.0.0.1:{free_port()}"
    procs: list[subprocess.Popen[bytes]] = []
    start = time.monotonic()
    try:
        for i in range(num_processes):
            procs.append(
                subprocess.Popen(
                    list(argv), env=process_env(i, num_processes, address, env), stdout=stdout
                )
            )
        while True:
            codes = [p.poll() for p in procs]
            failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                i, code = failed[0]
                _end(procs, grace_s)
                raise ProcessGroupError(
                    f"process {i} of {num_processes} exited with status {code}"
                    f"{_signal_name(code)}; the other processes were ended"
                )
            if all(c == 0 for c in codes):
                return
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                _end(procs, grace_s)
                raise ProcessGroupError(
                    f"the {num_processes} processes ran past timeout_s={timeout_s}; they were ended"
                )
            time.sleep(poll_s)
    finally:
        _end(procs, grace_s)


def _signal_name(code: int | None) -> str:
    if code is None or code >= 0:
        return ""
    try:
        return f" (killed by {signal.Signals(-code).name})"
    except ValueError:
        return ""


__all__ = [
    "ProcessGroupError",
    "common_seed",
    "env_share",
    "gather_episodes",
    "initialize",
    "is_multi_process",
    "is_writer",
    "join_local",
    "launch_local",
    "local_copy",
]
