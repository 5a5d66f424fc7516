"""The algorithm's side of its env runners (``RunnerHooks``, a base of ``Algorithm``): building
them (``rljax.runners.build``) with the algorithm's env, seed, policy and devices, the weights
they act with on the runner device, and the runner callbacks (``rljax.callbacks.runner_hooks``):
the envs the hooks see, recreated runners, and the iteration's episodes replayed.

A subclass's loop calls ``_make_runner_group`` / ``_make_fused_runner`` and
``_on_runner_device``; a subclass overrides ``_runner_env`` and ``_slots_per_runner`` where its
runners differ (multi-agent PPO's agent slots).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

import jax
import jax.numpy as jnp

from rljax import distributed
from rljax.callbacks.dispatch import Callbacks
from rljax.callbacks.episodes import EpisodeReplay
from rljax.callbacks.runner_hooks import (
    RunnerCallbacks,
    episode_context,
    multi_agent_episode_context,
)
from rljax.env.vector import EnvSpec
from rljax.execution.parts import Params, PolicyParts
from rljax.offline.recording import end_of_sampling
from rljax.runners import build as runner_build
from rljax.runners.group import RunnerGroup
from rljax.types import ActStep, FusedRunnerState
from rljax.utils.metrics.metrics_logger import MetricsLogger

if TYPE_CHECKING:
    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.core.rl_module.rl_module import RLModule


class RunnerHooks:
    """An algorithm's env runners and their callbacks; ``Algorithm`` sets what is declared."""

    # Set by the execution layer's builders: the runner threads, or the fused path's EnvPool env.
    _runners: RunnerGroup | None = None
    _env: Any = None
    # The fused path's runner state (EnvPool handle, pending result, acting key); None otherwise.
    runner_state: Any = None
    # Runners reset an ended episode's sub-env in the step that ended it, so every row is an
    # env step (``rljax.env.vector``): on-policy algorithms, whose batches count env steps as
    # RLlib's do. Off-policy ones keep next-step resets, which their replay buffers read.
    _same_step_reset: bool = False
    # An EnvPool env's runner threads sample a fragment in one jitted call (``FusedRunner``)
    # where the spaces fit in jit: on-policy algorithms. Off-policy runners step from Python.
    _fused_envpool_runners: bool = False

    # Set by ``Algorithm.__init__`` (and ``parts`` by the subclass's ``_setup()``).
    config: AlgorithmConfig
    parts: PolicyParts[Any]
    env_spec: EnvSpec | None
    observation_space: Any
    action_space: Any
    seed: int
    mesh: jax.sharding.Mesh | None
    learner_devices: list[jax.Device]
    runner_device: jax.Device
    _record_episodes: bool
    _episode_replay: EpisodeReplay | None
    # Live episode hooks (``_live_episodes``): the runners' episodes that ended since the last
    # ``on_sample_end``, and the lock runner threads call the hooks under.
    _live_finished: list[Any]
    _live_lock: threading.Lock
    _runner_callbacks: RunnerCallbacks
    callbacks: Callbacks
    _env_runner_metrics: MetricsLogger
    _runner_env_specs: dict[int, EnvSpec]
    _recorder: Any  # offline_data(output=...)'s EpisodeRecorder, or None

    if TYPE_CHECKING:  # ``Algorithm``'s

        def _policy_ids(self) -> list[str]: ...
        def _module(self, policy_id: str | None = None) -> RLModule: ...

    def _fused_envpool(self) -> bool:
        """EnvPool env, no runner threads and, with one learner, acting on the learner's
        device: the rollout runs inside jit (the fused path). A learner mesh's fused rollout
        runs on the runner device by design, its batch then split over the mesh."""
        one_learner = (self.learner_devices[0], self.runner_device) if self.mesh is None else None
        return runner_build.fused_envpool(
            self.env_spec, self.config, self.observation_space, self.action_space, one_learner
        )

    def _on_runner_device(self, params: Any) -> Any:
        """A copy of ``params`` on the runner device, for runner threads to act with.

        A copy, because the update donates the train state while runner threads may still act
        with the previous weights; with a learner mesh ``device_put`` alone may hand back the
        runner device's shard of the replicated state, so the copy is made there.
        """
        params = distributed.local_copy(params)  # across processes: this one's replica
        params = jax.device_put(params, self.runner_device, may_alias=False)
        if self.mesh is not None:
            params = jax.tree.map(jnp.copy, params)
        return params

    def _live_runners(self) -> RunnerGroup:
        """The runner threads, on a path that has them (not the fused one)."""
        assert self._runners is not None, "no runner threads: the fused path, or stopped"
        return self._runners

    def _make_fused_runner(
        self, params: Params, act_step: ActStep | None = None
    ) -> tuple[Callable[..., Any], FusedRunnerState, Callable[..., Any] | None]:
        """Builds the driver's EnvPool env for the fused path (kept in ``self._env``, closed by
        ``stop``); returns ``(xla_step, runner_state, reset_ended)``
        (``runners.build.start_fused_runner``)."""
        assert self.env_spec is not None  # only EnvPool envs run fused
        self._env = runner_build.make_fused_env(self.config, self.env_spec, self.seed)
        return runner_build.start_fused_runner(
            self._env,
            self.config,
            self.parts,
            params,
            self.seed,
            self.runner_device,
            act_step,
            keep_info=self._record_episodes,  # EnvPool's infos for episode callbacks
            same_step_reset=self._same_step_reset,
        )

    def _runner_env(self, runner_index: int) -> Any:
        """A vector env for runner ``runner_index``; None lets the runner build its own."""
        return None

    def _slots_per_runner(self) -> int:
        """Streams (sub-envs, or agent slots) per runner: the offset between runners' ids."""
        return self.config.num_envs_per_env_runner

    def _make_runner_group(
        self,
        params: Params,
        act_step: ActStep,
        fragment_length: int,
        max_policy_lag: int | None = None,
        free_running: bool = False,
        max_queued_fragments: int | None = None,
    ) -> RunnerGroup:
        """``max(1, num_env_runners)`` runners as a started group
        (``runners.build.make_runner_group``, which documents the arguments and the fault
        tolerance settings)."""
        return runner_build.make_runner_group(
            self.config,
            self.env_spec,
            self.seed,
            self.parts,
            params,
            act_step,
            fragment_length,
            self.runner_device,
            streams_per_runner=self._slots_per_runner(),
            runner_env=self._runner_env,
            runner_env_specs=self._runner_env_specs,
            record_infos=self._record_episodes,
            live_steps=self._live_episode_step if self._live_episodes() else None,
            same_step_reset=self._same_step_reset,
            max_policy_lag=max_policy_lag,
            free_running=free_running,
            max_queued_fragments=max_queued_fragments,
            fused_runners=self._fused_envpool_runners
            and not runner_build.needs_x64(self.observation_space, self.action_space),
        )

    def _fault_tolerance_metrics(self) -> dict[str, int]:
        return runner_build.fault_tolerance_metrics(self._runners)

    # ------------------------------------------------------------------ callbacks
    def _start_runner_callbacks(self, population_member: bool) -> None:
        """After the runners are built: the episode hooks' replay (a single-agent run with
        episode hooks), and ``on_environment_created`` for the runners' envs (not for a
        population's trial)."""
        if self._record_episodes and not self.config.is_multi_agent:
            with self._live_lock:  # live runners may have made it already
                if self._episode_replay is None:
                    self._episode_replay = self._new_episode_replay()
        if not population_member:
            self._runner_callbacks.envs_created(self._runner_envs())

    def _new_episode_replay(self) -> EpisodeReplay:
        """The episode hooks' replay, its episodes with the env's spaces (RLlib's)."""
        return EpisodeReplay(
            self.callbacks,
            self._env_runner_metrics,
            self._episode_context,
            observation_space=self.observation_space,
            action_space=self.action_space,
        )

    def _runner_envs(self, slots: Iterable[int] | None = None) -> list[tuple[int, Any, Any]]:
        """``(worker_index, env_runner, vector env)`` of the runners (``slots``: those only);
        on the fused path the algorithm is the one runner."""
        return runner_build.runner_envs(
            self._runners, self.config.num_env_runners, self, self._env, slots
        )

    def _runners_recreated(self) -> None:
        """Calls the hooks for runners the group replaced since the last call."""
        self._runner_callbacks.runners_recreated(self, self._runners, self._runner_envs)

    def _episode_context(self, stream: int) -> dict[str, Any]:
        """The hook arguments of an episode of ``stream`` (a sub-env id across runners)."""
        if not hasattr(self, "_callback_module"):
            self._callback_module = self._module()
        ctx = episode_context(
            stream, self._slots_per_runner(), self._runners, self, self._env, self._callback_module
        )
        ctx["env_runner"] = self._runner_view(ctx["env_runner"])
        return ctx

    def _runner_view(self, runner: Any) -> Any:
        """The env runner hooks get for a runner thread: its ``EnvRunner`` view (RLlib's
        attributes: ``worker_index``, ``config``, ``env``, ``module``), not the thread's
        internals; the algorithm itself where it samples (the fused path)."""
        if runner is None or runner is self:
            return runner
        views = self.__dict__.setdefault("_runner_views", {})
        view = views.get(id(runner))
        if view is None or view._runner is not runner:
            group = cast(Any, self).env_runner_group  # the Algorithm's (rllib_surface)
            view = next((v for v in group._runners() if v._runner is runner), None)
            if view is None:
                return runner
            views[id(runner)] = view
        return view

    def _module_spaces(self) -> dict[str, tuple[Any, Any]]:
        """Each policy's ``(observation_space, action_space)`` (a multi-agent run's; empty
        otherwise), the spaces of its agents' episodes in the hooks."""
        obs = getattr(self, "policy_observation_spaces", None) or {}
        act = getattr(self, "policy_action_spaces", None) or {}
        return {pid: (obs[pid], act.get(pid)) for pid in obs}

    def _multi_agent_episode_context(self, slot: int, env_index: int) -> dict[str, Any]:
        modules = {pid: self._module(pid) for pid in self._policy_ids()}
        ctx = multi_agent_episode_context(slot, env_index, self._runners, modules)
        ctx["env_runner"] = self._runner_view(ctx["env_runner"])
        return ctx

    def _live_episodes(self) -> bool:
        """Whether episode hooks run live, in the runner threads at each step (a per-step hook
        on the host runners of a single-agent gymnasium env), not replayed after sampling."""
        return (
            self._record_episodes
            and not self.config.is_multi_agent
            and self.callbacks.defines("on_episode_step")
            and self.env_spec is not None
            and self.env_spec.backend == "gymnasium"
        )

    def _live_episode_step(
        self, runner: Any, row: dict[str, Any], infos: list[list[dict[str, Any]]] | None
    ) -> None:
        """A runner's row, as it wrote it: the episode hooks it gives rise to, now, with the
        runner's env at that step (one runner thread at a time)."""
        with self._live_lock:
            if self._episode_replay is None:
                self._episode_replay = self._new_episode_replay()
            self._live_finished.extend(self._episode_replay.replay(row, infos))

    def _reduce_runner_metrics(self) -> dict[str, Any]:
        """The episode hooks' metrics of the iteration, reduced (under the lock live hooks
        log with from runner threads)."""
        with self._live_lock:
            return self._env_runner_metrics.reduce()

    def _close_runners(self) -> None:
        """Closes the runner threads and the fused path's env (``stop()``)."""
        if self._runners is not None:
            self._runners.close()
            self._runners = None
        if self._env is not None:
            self._env.close()
            self._env = None

    def _replay_episodes(self, out: dict[str, Any]) -> None:
        """Episode hooks over the iteration's steps (or those the runners ran live), then
        ``on_sample_end``."""
        if self._record_episodes:
            # Live hooks run in runner threads, one at a time under the lock: on_sample_end
            # (and the metrics' reduction after it) take the lock too.
            with self._live_lock:
                live = None
                if self._live_episodes():
                    live, self._live_finished = self._live_finished, []
                self._runner_callbacks.replay_episodes(
                    out,
                    self._episode_replay,
                    self._multi_agent_episode_context,
                    self if self._runners is None else None,
                    live_finished=live,
                    module_spaces=self._module_spaces(),
                )
        end_of_sampling(self._recorder)  # offline_data(output=...)'s rows of this train()


__all__ = ["RunnerHooks"]
