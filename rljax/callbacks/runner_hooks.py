"""The user callbacks an algorithm's runners give rise to: ``on_environment_created`` for each
vector env built, ``on_env_runners_recreated`` for runners a group replaced, and the episode
hooks replayed after each iteration (``rljax.callbacks.episodes``) with ``on_sample_end``.

Each takes what it calls the hooks with (the runner group, the envs, the modules); the
algorithm passes itself only as the hooks' ``algorithm`` argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rljax.callbacks.dispatch import Callbacks
from rljax.callbacks.episodes import EpisodeReplay, replay_multi_agent
from rljax.env.env_context import EnvContext
from rljax.utils.metrics.metrics_logger import MetricsLogger

if TYPE_CHECKING:
    from rljax.runners.group import RunnerGroup


class RunnerCallbacks:
    """The runners' user callbacks: ``on_environment_created`` for each vector env built, and
    ``on_env_runners_recreated`` for the runners a group replaced since the last call."""

    def __init__(self, callbacks: Callbacks, config: Any, metrics_logger: MetricsLogger):
        self._callbacks = callbacks
        self._config = config
        self._metrics = metrics_logger  # the env runners' logger (results' env_runners)
        self._replaced_seen = 0

    def envs_created(self, envs: list[tuple[int, Any, Any]]) -> None:
        """``on_environment_created`` for each ``(worker_index, env_runner, env)``."""
        if not self._callbacks.defines("on_environment_created"):
            return
        for worker_index, runner, env in envs:
            context = EnvContext(
                self._config.env_config, worker_index, 0, self._config.num_env_runners
            )
            self._callbacks(
                "on_environment_created",
                env_runner=runner,
                metrics_logger=self._metrics,
                env=env,
                env_context=context,
            )

    def runners_recreated(
        self,
        algorithm: Any,
        runners: RunnerGroup | None,
        envs_of: Callable[[list[int]], list[tuple[int, Any, Any]]],
    ) -> None:
        """The hooks for the runners ``runners`` replaced since the last call; ``envs_of(slots)``
        gives those runners' envs (``runner_envs``)."""
        if runners is None:
            return
        new = runners.replaced[self._replaced_seen :]
        self._replaced_seen += len(new)
        if not new:
            return
        self._callbacks(
            "on_env_runners_recreated",
            algorithm=algorithm,
            env_runner_group=runners,
            env_runner_indices=[i + 1 for i in new],
            is_evaluation=False,
        )
        self.envs_created(envs_of(sorted(set(new))))

    def replay_episodes(
        self,
        out: dict[str, Any],
        replay: EpisodeReplay | None,
        multi_agent_context: Callable[[int, int], dict[str, Any]],
        env_runner: Any,
        live_finished: list[Any] | None = None,
        module_spaces: dict[str, tuple[Any, Any]] | None = None,
    ) -> None:
        """The episode hooks over an iteration's steps (``out``, the training step's): through
        ``replay`` (single-agent), or from the episodes a multi-agent run's env copies logged
        (hook arguments from ``multi_agent_context(slot, env_index)``); then
        ``on_sample_end`` (``env_runner``: the local runner, or None with runner threads).
        ``live_finished``: the runners ran the hooks live at each step (``HostRunner``'s
        ``live_steps``); these are the episodes that ended, and nothing is replayed.
        ``module_spaces``: each policy's spaces, its agents' episodes'."""
        finished: list[Any] = []
        if live_finished is not None:
            finished = live_finished
        elif replay is not None:
            for steps, infos in out.get("episode_steps", []):
                finished += replay.replay(steps, infos)
        else:  # multi-agent: the env copies logged their finished episodes
            finished = replay_multi_agent(
                self._callbacks,
                self._metrics,
                out.get("multi_agent_episodes", []),
                multi_agent_context,
                module_spaces,
            )
        if not self._callbacks.defines("on_sample_end"):
            return
        self._callbacks(
            "on_sample_end",
            env_runner=env_runner,
            metrics_logger=self._metrics,
            samples=[ep.to_numpy() for ep in finished],  # RLlib's episodes_to_numpy
        )


class ReplayedEnv:
    """The env as episode hooks on the fused path see it: they are replayed after sampling
    (``rljax.callbacks.episodes``), when the env has moved on, so reading its state (rendering,
    its sub-envs) says so instead of giving another step's; anything else is the env's."""

    _AT_A_STEP = ("render", "envs", "step", "reset")

    def __init__(self, env: Any):
        self._env = env

    @property
    def unwrapped(self) -> ReplayedEnv:
        """Itself: RLlib's callbacks reach sub-envs through ``env.unwrapped.envs``."""
        return self

    def __getattr__(self, name: str) -> Any:
        if name in ReplayedEnv._AT_A_STEP:
            raise AttributeError(
                f"env.{name}: episode hooks on the fused path (EnvPool or JAX envs, stepped "
                "inside the compiled rollout) are replayed after sampling, when the env is no "
                "longer at the hook's step; per-step hooks see the env live on host runners "
                "(a gymnasium env: register_env('name', lambda cfg: gymnasium.make(...)))"
            )
        return getattr(self._env, name)

    def __repr__(self) -> str:
        return f"ReplayedEnv({self._env!r})"


def episode_context(
    stream: int,
    streams_per_runner: int,
    runners: RunnerGroup | None,
    local_runner: Any,
    local_env: Any,
    module: Any,
) -> dict[str, Any]:
    """The hook arguments of an episode of ``stream`` (a sub-env id across runners): its
    runner (``local_runner`` without runner threads), env, index in that env and ``module``."""
    slot, env_index = divmod(stream, streams_per_runner)
    runner: Any
    if runners is None:  # the fused path: replayed after sampling
        runner, env = local_runner, ReplayedEnv(local_env)
    else:
        runner = runners.runners[min(slot, len(runners.runners) - 1)]
        env = runner.env
    return {"env_runner": runner, "env": env, "env_index": env_index, "rl_module": module}


def multi_agent_episode_context(
    slot: int, env_index: int, runners: RunnerGroup | None, modules: dict[str, Any]
) -> dict[str, Any]:
    """The hook arguments of a multi-agent episode of runner ``slot``'s env copy
    ``env_index``, with each policy's module."""
    runner = runners.runners[slot] if runners is not None else None
    return {
        "env_runner": runner,
        "env": getattr(runner, "env", None),
        "env_index": env_index,
        "rl_module": modules,
    }


__all__ = ["ReplayedEnv", "RunnerCallbacks", "episode_context", "multi_agent_episode_context"]
