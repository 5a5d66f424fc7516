"""Building an algorithm's runners from its config: the fused path's EnvPool env (the rollout
inside jit), or a started ``RunnerGroup`` of runner threads; the runners' fault-tolerance
figures, and the resources a run of a config asks for (``resource_bundles``).

Every function takes what it builds from (the config, the env spec, the seed, the policy's
``PolicyParts``, the devices); nothing here reads an algorithm.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import gymnasium as gym
import jax
import numpy as np

from rljax import distributed
from rljax.env.failures import REPEATS_OF_A_BUG, EnvBugError
from rljax.env.jax_env import is_jax_spec
from rljax.env.vector import EnvSpec, envpool_batch_size, make_envpool
from rljax.runners.acting import ActStep, FusedRunnerState
from rljax.runners.fused import FusedRunner, start_envpool
from rljax.runners.group import RunnerGroup
from rljax.runners.host import HostRunner, RunnerSpec
from rljax.runners.jax_env import check_jax_env_run
from rljax.types import Params, PolicyParts
from rljax.utils.errors import ConfigError
from rljax.utils.seeding import derive_seed

logger = logging.getLogger("rljax")


def needs_x64(*spaces: gym.Space) -> bool:
    """Whether a space holds 64-bit floats (EnvPool's MuJoCo tasks) while JAX computes in 32
    bits: such an env cannot be stepped inside jit, so it runs on the host path (a runner in
    the driver that hands EnvPool numpy arrays of its dtypes)."""
    if jax.config.read("jax_enable_x64"):
        return False

    def holds_float64(s: gym.Space) -> bool:
        if isinstance(s, gym.spaces.Dict):
            return any(holds_float64(x) for x in s.spaces.values())
        if isinstance(s, gym.spaces.Tuple):
            return any(holds_float64(x) for x in s.spaces)
        return isinstance(s, gym.spaces.Box) and np.dtype(s.dtype) == np.float64

    return any(holds_float64(s) for s in spaces)


def fused_envpool(
    env_spec: EnvSpec | None,
    config: Any,
    observation_space: gym.Space,
    action_space: gym.Space,
    devices: tuple[jax.Device, jax.Device] | None = None,
) -> bool:
    """EnvPool env, no runner threads: the rollout runs inside jit, through EnvPool's XLA
    interface (the fused path), or a JAX env, stepped inside the same program (``runners.jax_env``;
    refused there by name where the algorithm or the knobs do not run on it yet).

    ``devices`` is ``(learner device, runner device)`` of a run with one learner (None with a
    learner mesh, whose fused rollout runs on the runner device): one program runs on one
    device, so an EnvPool env whose runner acts on another device than the learner's
    (``num_gpus_per_learner=1`` with ``num_gpus_per_env_runner=0``: the learner on the GPU,
    acting on the CPU) runs with a runner thread acting on the runner's device;
    a JAX env, which lives inside the program, is refused there."""
    split = devices is not None and devices[0] != devices[1]
    if env_spec is not None and is_jax_spec(env_spec):
        check_jax_env_run(config, env_spec.name)
        if split:
            assert devices is not None  # (split says so)
            raise ConfigError(
                f"env {env_spec.name!r} is a JAX env, stepped inside the training program on "
                f"the learner's device ({devices[0].platform}): num_gpus_per_env_runner="
                f"{config.num_gpus_per_env_runner} puts acting on the {devices[1].platform}. "
                "Set num_gpus_per_env_runner like num_gpus_per_learner (both 1 on a GPU)"
            )
        return True
    return (
        env_spec is not None
        and env_spec.backend == "envpool"
        and config.num_env_runners == 0
        # Episodes buffered across fragments: the runner thread's fragments, on the host.
        and config.batch_mode != "complete_episodes"
        and not split
        and not needs_x64(observation_space, action_space)
    )


def make_fused_env(config: Any, env_spec: EnvSpec, seed: int) -> Any:
    """The driver's EnvPool env of the fused path (``num_envs_per_env_runner`` envs)."""
    # Across processes: this process's share of the sub-envs, seeded as in one process.
    n, env_seed = distributed.env_share(config.num_envs_per_env_runner, seed)
    batch = envpool_batch_size(n, config.gym_env_vectorize_mode, config.async_batch_size)
    return make_envpool(env_spec, n, batch, env_seed)


def start_fused_runner(
    env: Any,
    config: Any,
    parts: PolicyParts[Any],
    params: Params,
    seed: int,
    runner_device: Any,
    act_step: ActStep | None = None,
    *,
    keep_info: bool = False,
    same_step_reset: bool = False,
) -> tuple[Callable[..., Any], FusedRunnerState, Callable[..., Any] | None]:
    """Resets the fused path's EnvPool ``env``: ``(xla_step, runner_state, reset_ended)``
    (``runners.fused.start_envpool``), the runner state (the env's handle, the actor state and
    the first result) on ``runner_device``.

    ``keep_info``: EnvPool's infos travel with each step (episode callbacks). With ``act_step``
    and a SYNC env the rollout resets same-step where ``same_step_reset`` says so.
    """
    xla_step, rs, reset_ended = start_envpool(
        env,
        parts.act,
        act_step,
        params,
        config.num_envs_per_env_runner,
        seed,
        parts.to_env_action,
        keep_info=keep_info,
        same_step=act_step is not None and same_step_reset,
    )
    return xla_step, jax.device_put(rs, runner_device), reset_ended


def restarts_sub_envs(config: Any) -> bool:
    """Whether a gymnasium sub-env that raises is rebuilt alone: with
    ``restart_failed_sub_environments=True``, or "auto" (the default) while runners may
    restart (with ``restart_failed_env_runners=False`` the first env error is to stop the
    run). Multi-agent runners build their own envs and replace a failed runner whole;
    EnvPool's C++ envs do not raise."""
    if config.restart_failed_sub_environments == "auto":
        return bool(config.restart_failed_env_runners)
    return bool(config.restart_failed_sub_environments)


def make_runner_group(
    config: Any,
    env_spec: EnvSpec | None,
    seed: int,
    parts: PolicyParts[Any],
    params: Params,
    act_step: ActStep,
    fragment_length: int,
    runner_device: Any,
    *,
    streams_per_runner: int,
    runner_env: Callable[[int], Any],
    runner_env_specs: Mapping[int, EnvSpec],
    record_infos: bool = False,
    live_steps: Callable[..., None] | None = None,
    same_step_reset: bool = False,
    max_policy_lag: int | None = None,
    free_running: bool = False,
    max_queued_fragments: int | None = None,
    fused_runners: bool = False,
) -> RunnerGroup:
    """``max(1, num_env_runners)`` runners, each with its own vector env, as a started group.

    Args:
      config: The algorithm's config (the env-runner and fault-tolerance settings).
      env_spec: The env each runner builds; None for a multi-agent run, whose runners get
        their env from ``runner_env``.
      seed: The run's seed; each runner (and each rebuild of one) derives its own.
      parts: The policy's parts (``act``, the env actions).
      params: The weights the runners start acting with.
      act_step: The jitted act step the runners call.
      fragment_length: Env steps per runner per fragment.
      runner_device: Where the runners act.
      streams_per_runner: Streams (sub-envs, or agent slots) per runner: the offset between
        runners' ids.
      runner_env: ``runner_env(i)``: a vector env for runner ``i``, or None to build its own.
      runner_env_specs: Per runner slot, an env spec a script rebuilt its envs from
        (``EnvRunner.make_env``); read at each (re)build, so a restarted runner gets it.
      record_infos: The runners keep their envs' infos (episode callbacks).
      live_steps: Host runners hand each row to it as they write it (``RunnerSpec``).
      same_step_reset: Runners reset an ended episode's sub-env in the step that ended it.
      max_policy_lag: How many weight versions a runner may sample ahead of the learner
        (``RunnerGroup``); None: 1 with ``sample_async``, else 0.
      free_running: No lag bound, the runners held back only by ``max_queued_fragments``
        (IMPALA, APPO).
      max_queued_fragments: Finished fragments a free-running runner may hold.
      fused_runners: With an EnvPool env, each runner samples a whole fragment as one jitted
        call (``FusedRunner``: EnvPool's XLA step inside ``lax.scan``, the transitions of
        stepping it from Python) instead of one Python call per env step (``HostRunner``);
        not where ``live_steps`` is set, nor with ``record_infos`` in lock step (episode
        hooks replay the env's infos row by row). The caller checks that the spaces fit in
        jit (``needs_x64``).

    Fault tolerance: ``restart_failed_sub_environments`` (True, or "auto", the default,
    while ``restart_failed_env_runners`` is on) rebuilds a gymnasium sub-env that raises
    (its broken episode dropped); ``restart_failed_env_runners`` replaces a runner
    whose env raised or hung past ``sample_timeout_s``, up to ``max_num_env_runner_restarts``
    (each replacement built within ``env_runner_health_probe_timeout_s``);
    ``ignore_env_runner_failures`` drops a runner that cannot be restarted.
    """
    cfg = config
    builds = [0] * cfg.num_runners
    group: RunnerGroup | None = None
    fused = (
        fused_runners
        and env_spec is not None
        and env_spec.backend == "envpool"
        and live_steps is None
        and (free_running or not record_infos)
    )
    spec = RunnerSpec(
        # None for a multi-agent run: its runners get their env from runner_env.
        env_spec,
        cfg.num_envs_per_env_runner,
        cfg.gym_env_vectorize_mode,
        seed,
        cfg.async_batch_size,
        parts.act,
        act_step,
        parts.to_env_action_host,
        runner_device,
        num_workers=cfg.num_env_runners,
        restart_sub_envs=restarts_sub_envs(cfg),
        record_infos=record_infos,
        same_step=same_step_reset,
        live_steps=live_steps,
    )

    def make(i: int) -> HostRunner | FusedRunner:
        restart = builds[i]
        builds[i] += 1
        current = params if group is None or group.params is None else group.params
        runner_spec = dataclasses.replace(
            spec,
            # A runner whose envs a script rebuilt (EnvRunner.make_env) is restarted on them.
            env=runner_env_specs.get(i, spec.env),
            seed=derive_seed(seed, 1000 * i + 100_003 * restart),  # rebuilt: new episodes
            env_id_offset=i * streams_per_runner,
            worker_index=i + 1 if cfg.num_env_runners else 0,
            make_env=lambda: runner_env(i),
        )
        if fused:
            return FusedRunner(runner_spec, current, parts.to_env_action)
        return HostRunner(runner_spec, current)

    max_restarts = cfg.max_num_env_runner_restarts if cfg.restart_failed_env_runners else 0
    runners: list[HostRunner | FusedRunner] = []
    try:
        for i in range(len(builds)):
            runners.append(first_build(make, i, max_restarts))
    except BaseException:  # a runner failed to build, or Ctrl-C: close those already built
        for runner in runners:
            runner.close(force=True)
        raise
    lag: int | None = max_policy_lag
    if lag is None:
        lag = 1 if cfg.sample_async else 0
    group = RunnerGroup(
        runners,
        fragment_length,
        max_policy_lag=None if free_running else lag,
        max_queued_fragments=max_queued_fragments,
        streams_per_runner=streams_per_runner,
        make_runner=make,
        max_restarts=max_restarts,
        ignore_failures=cfg.ignore_env_runner_failures,
        probe_timeout_s=cfg.env_runner_health_probe_timeout_s,
        local_runner=cfg.num_env_runners == 0,
    )
    group.publish(params)
    return group


def first_build(
    make: Callable[[int], HostRunner | FusedRunner], i: int, max_restarts: int
) -> HostRunner | FusedRunner:
    """Runner ``i``, built by ``make``. Where runners are restarted (``max_restarts > 0``), an
    env that raises while the runner is built (a crash in its first reset: a runner resets its
    envs when it is built, where RLlib's resets them in its first sample) is built again with
    new envs, as a failed runner is replaced later, up to ``REPEATS_OF_A_BUG`` tries in all;
    the last error is raised. A ``ConfigError`` or ``EnvBugError`` (the config, or a bug the
    envs repeat) is raised at once. These builds are not counted as restarts."""
    tries = 1 + min(max_restarts, REPEATS_OF_A_BUG - 1)
    for attempt in range(tries):
        try:
            return make(i)
        except (ConfigError, EnvBugError):
            raise
        except Exception as e:
            if attempt == tries - 1:
                raise
            logger.warning(
                "env runner %d failed while it was built (%s: %s); building it again",
                i + 1,
                type(e).__name__,
                str(e)[:300],
            )
    raise AssertionError("unreachable")  # the loop returns or raises


def fault_tolerance_metrics(runners: RunnerGroup | None) -> dict[str, int]:
    """The result's ``fault_tolerance`` section: healthy runners, runner and sub-env restarts."""
    if runners is None:  # the fused EnvPool rollout: C++ envs, nothing to restart
        return {
            "num_healthy_env_runners": 1,
            "num_env_runner_restarts": 0,
            "num_sub_env_restarts": 0,
        }
    return {
        "num_healthy_env_runners": runners.num_healthy,
        "num_env_runner_restarts": runners.num_restarts,
        "num_sub_env_restarts": runners.num_sub_env_restarts,
    }


def runner_envs(
    runners: RunnerGroup | None,
    num_env_runners: int,
    local_runner: Any,
    local_env: Any,
    slots: Iterable[int] | None = None,
) -> list[tuple[int, Any, Any]]:
    """``(worker_index, env_runner, vector env)`` of the runners (``slots``: those only);
    without runner threads (the fused path) ``local_runner`` with ``local_env`` is the one
    runner, where there is an env."""
    if runners is None:
        return [(0, local_runner, local_env)] if local_env is not None else []
    chosen = range(len(runners.runners)) if slots is None else slots
    return [
        (i + 1 if num_env_runners else 0, runners.runners[i], runners.runners[i].env)
        for i in chosen
    ]


def resource_bundles(config: Any) -> list[dict[str, float]]:
    """RLlib's resource request of a run of ``config``, as bundles: the driver's (with the
    learner's GPUs when ``num_learners`` is 0), one per env runner and evaluation env runner
    (``num_cpus_per_env_runner``, ``num_gpus_per_env_runner``) and one per learner
    (``num_cpus_per_learner``, "auto" as 1 CPU without GPUs, ``num_gpus_per_learner``)."""
    c = config
    gpus = float(c.num_gpus_per_learner)
    cpus = c.num_cpus_per_learner
    learner_cpus = float(cpus) if cpus != "auto" else (0.0 if gpus else 1.0)
    if c.num_learners == 0:
        main = {"CPU": max(learner_cpus, 1.0), "GPU": gpus}
    else:
        main = {"CPU": 1.0, "GPU": 0.0}
    runner = {"CPU": float(c.num_cpus_per_env_runner), "GPU": float(c.num_gpus_per_env_runner)}
    runners = int(c.num_env_runners)
    if c.evaluation_interval:
        runners += int(c.evaluation_num_env_runners)
    learners = [{"CPU": learner_cpus, "GPU": gpus}] * int(c.num_learners)
    return [main, *([runner] * runners), *learners]


__all__ = [
    "resource_bundles",
    "fault_tolerance_metrics",
    "first_build",
    "fused_envpool",
    "make_fused_env",
    "make_runner_group",
    "needs_x64",
    "restarts_sub_envs",
    "runner_envs",
    "start_fused_runner",
]
