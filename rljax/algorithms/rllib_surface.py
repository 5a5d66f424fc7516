"""What RLlib's scripts reach into beside training: the env runner group
(``algo.env_runner_group.foreach_env_runner(fn)``) and the value ``algo.save()`` returns."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import flax.serialization
import jax
import numpy as np

from rljax.algorithms.config_names import warn_once
from rljax.core.rl_module.multi_rl_module import MultiRLModule
from rljax.env.single_agent_episode import SingleAgentEpisode, start_episode
from rljax.execution.episode_stats import episode_summary
from rljax.utils.checkpoint import _check_tree
from rljax.utils.errors import ConfigError
from rljax.utils.ids import COMPONENT_LEARNER_GROUP as LEARNER_GROUP

if TYPE_CHECKING:
    from rljax.algorithms.algorithm_config import AlgorithmConfig

logger = logging.getLogger("rljax")


@dataclass
class SaveResult:
    """What ``Algorithm.save()`` returns, as RLlib's: ``checkpoint.path`` is the directory."""

    checkpoint: Any
    metrics: dict[str, Any] = field(default_factory=dict)

    def __fspath__(self) -> str:
        return str(self.checkpoint.path)


def _config_env(config: Any, spaces: tuple[Any, Any]) -> Any:
    """The env spec of ``config``'s env and env_config, for ``make_env()``; its spaces must be
    the policy's ``spaces``."""
    from rljax.connectors.env_to_module.episode_connector import spec_with_host_pieces
    from rljax.env.vector import resolve_env

    # The connector setting's host pieces run in the rebuilt envs too.
    spec = resolve_env(config.env, config.env_config)
    spec, got = spec_with_host_pieces(config.env_to_module_connector, spec)
    if got != spaces:
        raise ConfigError(
            f"make_env(): env {spec.name!r} with this env_config has spaces {got}; the policy "
            f"acts on {spaces}"
        )
    return spec


class EnvRunner:
    """One env runner as RLlib's scripts see it: ``worker_index`` (0 for sampling in the
    driver, 1..n for runner threads), ``config`` (the algorithm's), ``env`` (its vector env),
    ``num_envs``, and ``foreach_env(fn)`` over its sub-envs."""

    def __init__(
        self,
        worker_index: int,
        runner: Any,
        env: Any,
        config: Any,
        algo: Any = None,
        slot: int = 0,
    ):
        self.worker_index = worker_index
        self.env = getattr(env, "env", env)  # a gymnasium vector env where there is one
        if algo is not None and runner is algo and getattr(algo, "fused", False):
            self.env = FusedEnvView(self.env, config)  # EnvPool's (or a JAX env's) batch
        self.config = config
        self._runner = runner
        self._algo = algo
        self._slot = slot

    def make_env(self) -> None:
        """Rebuilds this runner's envs from its ``config``'s env and ``env_config`` (RLlib's
        ``make_env()``: a curriculum script sets ``env_runner.config.environment(env_config=
        ...)`` first). The spaces must stay the policy's; every sub-env starts a new episode.
        Runner threads' envs only: EnvPool's fused path builds its envs once, and a runner
        thread on EnvPool rebuilds EnvPool envs. The local runner beside runner threads has no
        envs and nothing samples there: it does nothing (RLlib's builds an env it never
        steps)."""
        from rljax.runners.fused import FusedRunner
        from rljax.runners.host import HostRunner

        algo = self._algo
        if self._envless:
            return  # the local runner beside runner threads: nothing samples here
        if algo is None or not isinstance(self._runner, HostRunner | FusedRunner):
            raise ConfigError(
                "make_env(): this runner's envs cannot be rebuilt (EnvPool's fused path builds "
                "them once); for a curriculum, use a gymnasium env, or set the task through "
                "foreach_env(lambda env: env.set_task(...))"
            )
        if algo._runners.max_policy_lag != 0:
            raise ConfigError(
                "make_env(): these runners sample the next fragment while the learner updates "
                "(sample_async=True, or IMPALA/APPO), so they never rest between iterations; "
                "rebuild envs with synchronous sampling (sample_async=False, e.g. PPO)"
            )
        spec = _config_env(self.config, (algo.observation_space, algo.action_space))
        self._runner.rebuild_env(spec, algo._runners.params)  # a FusedRunner: EnvPool only
        algo._runner_env_specs[self._slot] = spec  # a restarted runner is built on it too
        self.env = getattr(self._runner.env, "env", self._runner.env)

    @property
    def _envless(self) -> bool:
        """The driver's runner beside runner threads: a module and a config, no envs."""
        return self._runner is None and self.env is None and self.worker_index == 0

    @property
    def num_envs(self) -> int:
        return 0 if self._envless else int(getattr(self.env, "num_envs", 1))

    @property
    def module(self) -> Any:
        """The policy's module (RLlib's ``env_runner.module``), as ``algo.get_module()``
        gives it; a multi-agent run's is a ``MultiRLModule`` of every policy's (by policy id,
        with ``forward_inference({policy_id: batch})``), as RLlib's multi-agent runner has."""
        algo = self._algo
        if algo is None:
            raise AttributeError("module: this runner view has no algorithm")
        ids = algo._policy_ids()
        if len(ids) == 1 and not algo.config.is_multi_agent:
            return algo._module()
        return MultiRLModule({pid: algo._module(pid) for pid in ids})

    def get_state(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """RLlib's env runner state, the parts rljax's runners have: ``"rl_module"`` (the
        weights the runner acts with: its module's ``get_state()``, per policy id for a
        multi-agent run) and, where the driver's runner is the only one that samples
        (``num_env_runners=0``), ``"num_env_steps_sampled_lifetime"`` (runner threads' own
        counts are not kept apart). The connectors' states travel in the algorithm's
        checkpoints and ``get_state()``."""
        algo = self._algo
        if algo is None:
            raise AttributeError("get_state: this runner view has no algorithm")
        module = self.module
        if isinstance(module, MultiRLModule):
            weights = {pid: module[pid].get_state() for pid in module}
        else:
            weights = module.get_state()
        state: dict[str, Any] = {"rl_module": weights}
        if algo.config.num_env_runners == 0:  # the one runner: its steps are the run's
            state["num_env_steps_sampled_lifetime"] = int(algo.num_env_steps_sampled_lifetime)
        return state

    def get_policy(self, policy_id: str | None = None) -> Any:
        """RLlib 1.x's ``worker.get_policy()``: an old API trainer's policy
        (``trainer.get_policy``); the new API's runners have ``module`` instead."""
        get = getattr(self._algo, "get_policy", None)
        if get is None:
            raise AttributeError(
                "get_policy() is RLlib's old API (rljax.agents trainers); on the new API use "
                "env_runner.module (or algo.get_module())"
            )
        return get(policy_id) if policy_id else get()

    def sub_envs(self) -> Iterator[Any]:
        """The runner's sub-env objects where its vector env holds them in this process (a
        gymnasium ``SyncVectorEnv``); EnvPool's and ASYNC envs keep theirs elsewhere."""
        if self._envless:
            raise TypeError(
                "the local env runner has no envs while runner threads sample (RLlib's "
                "create_env_on_local_worker=False); reach theirs with "
                "algo.env_runner_group.foreach_env_runner(lambda r: r.foreach_env(fn))"
            )
        envs = None if isinstance(self.env, FusedEnvView) else getattr(self.env, "envs", None)
        if envs is None:
            inner = getattr(self.env, "env", None)
            envs = getattr(inner, "envs", None)
        if envs is None:
            raise TypeError(
                f"env runner {self.worker_index}'s envs ({type(self.env).__name__}) are not "
                "Python objects in this process (EnvPool's, or in ASYNC worker processes); "
                "change them through env_config instead"
            )
        return iter(_users_env(env) for env in envs)

    def foreach_env(self, func: Callable[[Any], Any]) -> list[Any]:
        """``func(sub_env)`` for each sub-env (see ``sub_envs``: the env as the env creator
        returned it, without rljax's own wrappers), in order; [] for the local runner beside
        runner threads, which has none (as RLlib's ``RolloutWorker.foreach_env``)."""
        if self._envless:
            return []
        return [func(env) for env in self.sub_envs()]


class FusedEnvView:
    """The fused path's env as ``env_runner.env``: EnvPool's (or a JAX env's) batch, stepped
    inside the compiled rollout. Its attributes are the env's; ``unwrapped.envs`` (RLlib's
    scripts step ``env.unwrapped.envs[0]`` by hand) gives gymnasium copies of the same task,
    built on first use, ``num_envs`` of them, for stepping outside training: the fused envs
    themselves are not Python objects."""

    def __init__(self, env: Any, config: Any):
        self._env = env
        self._config = config
        self._copies: list[Any] | None = None

    @property
    def unwrapped(self) -> FusedEnvView:
        return self

    @property
    def envs(self) -> list[Any]:
        if self._copies is None:
            import gymnasium as gym

            name = self._config.env
            try:
                n = int(getattr(self._env, "num_envs", 1) or 1)
                self._copies = [gym.make(name, **(self._config.env_config or {})) for _ in range(n)]
            except Exception as e:  # noqa: BLE001 (an id gymnasium does not have, say)
                raise AttributeError(
                    f"env.envs: the fused path's envs ({name!r}) step inside the compiled "
                    f"rollout, and gymnasium has no copy of them to give ({type(e).__name__}: "
                    f"{e}); use a gymnasium env (register_env) to step envs by hand"
                ) from None
        return self._copies

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._env, name)


def _users_env(env: Any) -> Any:
    """A sub-env without the wrappers rljax puts around it (API checks, state access,
    restarts): the object the user's env creator returned."""
    from rljax.env.api_check import ApiCheckedEnv
    from rljax.env.fault_tolerance import RestartingEnv
    from rljax.env.vector import _StateAccess

    while isinstance(env, ApiCheckedEnv | RestartingEnv | _StateAccess):
        env = env.env
    return env


class EnvRunnerGroup:
    """The algorithm's env runners (RLlib's ``EnvRunnerGroup``): called between iterations,
    while no runner samples."""

    def __init__(self, algo: Any):
        self._algo = algo

    def _runners(self) -> list[EnvRunner]:
        out = []
        configs = self._algo._runner_configs
        for slot, (i, runner, env) in enumerate(self._algo._runner_envs()):
            # Each runner slot keeps a config of its own (RLlib's runners hold copies), which
            # scripts change before make_env(); a restarted runner keeps its slot's.
            if slot not in configs:
                configs[slot] = self._algo.config.copy()
            out.append(EnvRunner(i, runner, env, configs[slot], self._algo, slot))
        return out

    def foreach_env_runner(
        self,
        func: Callable[[Any], Any],
        local_env_runner: bool = True,
        healthy_only: bool = True,
        remote_worker_ids: list[int] | None = None,
        timeout_seconds: float | None = None,
    ) -> list[Any]:
        """``func(env_runner)`` for each runner (``remote_worker_ids``: those remote indexes
        only), returned in order, as RLlib's: with runner threads, the local runner (index 0:
        a module and a config, no envs) first unless ``local_env_runner=False``; sampling in
        the driver is the one runner, index 0."""
        runners = self._runners()
        if remote_worker_ids is not None:
            wanted = set(remote_worker_ids)
            runners = [r for r in runners if r.worker_index == 0 or r.worker_index in wanted]
        local = [r for r in runners if r.worker_index == 0]
        if not local_env_runner:
            runners = [r for r in runners if r.worker_index != 0]
        elif not local and (envless := self.local_env_runner) is not None:
            runners = [envless, *runners]
        return [func(r) for r in runners]

    def sync_weights(
        self,
        policies: str | list[str] | None = None,
        from_worker_or_learner_group: Any = None,
        to_worker_indices: list[int] | None = None,
        global_vars: dict[str, Any] | None = None,
        timeout_seconds: float | None = 0.0,
        inference_only: bool | None = False,
    ) -> None:
        """Hands the learner's current weights to the runners (RLlib's ``sync_weights``).

        rljax's runners act with the learner's weights from their next fragment on: they are
        handed over after every update, ``set_weights`` and restore, so this only hands them
        over again, without counting a new weights version. The learner is always the source,
        every runner the destination, and there is nothing to wait for (the other arguments
        are RLlib's and change nothing here); ``policies`` (a policy id or a list of them)
        must name this algorithm's policies. With no runner threads (the fused path) the one
        program reads the learner's weights itself, and after ``stop()`` there are no runners:
        nothing is handed over then.

        Raises:
          ValueError: a policy id this algorithm does not have.
        """
        wanted = [policies] if isinstance(policies, str) else list(policies or ())
        ids = self._algo._policy_ids()
        unknown = [p for p in wanted if p not in ids]
        if unknown:
            raise ValueError(
                f"sync_weights(policies={wanted}): unknown {unknown}; this algorithm has {ids}"
            )
        runners = self._algo._runners
        if runners is not None:
            runners.publish(self._algo._runner_params(), advance=False)

    def local_worker(self) -> EnvRunner | None:
        """RLlib 1.x's ``workers.local_worker()``: ``local_env_runner`` (its ``get_policy()``,
        ``foreach_env(fn)``, ``env``)."""
        return self.local_env_runner

    def remote_workers(self) -> list[EnvRunner]:
        """RLlib 1.x's ``workers.remote_workers()``: the runner threads' views (index >= 1)."""
        return [r for r in self._runners() if r.worker_index != 0]

    def foreach_worker(
        self, func: Callable[[Any], Any], local_worker: bool = True, **kwargs: Any
    ) -> list[Any]:
        """RLlib 1.x's ``workers.foreach_worker(fn)``: ``foreach_env_runner``."""
        return self.foreach_env_runner(func, local_env_runner=local_worker, **kwargs)

    def num_healthy_remote_workers(self) -> int:
        group = self._algo._runners
        return 0 if group is None or not self._algo.config.num_env_runners else group.num_healthy

    def num_remote_env_runners(self) -> int:
        return int(self._algo.config.num_env_runners)

    def num_healthy_remote_env_runners(self) -> int:
        """Runner threads that sample (RLlib's name of ``num_healthy_remote_workers``)."""
        return self.num_healthy_remote_workers()

    def num_healthy_env_runners(self) -> int:
        """The healthy remote runners and the local one (RLlib's count)."""
        return self.num_healthy_remote_env_runners() + int(self.local_env_runner is not None)

    def healthy_env_runner_ids(self) -> list[int]:
        """The remote runners' indexes (1, 2, ...): rljax replaces a failed runner at once, so
        each one that exists is healthy."""
        return self.foreach_env_runner(lambda runner: runner.worker_index, local_env_runner=False)

    def foreach_env(self, func: Callable[[Any], Any]) -> list[list[Any]]:
        """``func(env)`` for each sub-env, one list per runner (the local runner's first, empty
        beside runner threads), as RLlib's."""
        return self.foreach_env_runner(lambda runner: runner.foreach_env(func))

    def foreach_env_runner_async(
        self,
        func: Callable[[Any], Any],
        tag: str | None = None,
        healthy_only: bool = True,
        remote_worker_ids: list[int] | None = None,
    ) -> int:
        """RLlib's asynchronous ``foreach_env_runner`` on the remote runners: here each call
        runs now, between iterations, and ``fetch_ready_async_reqs()`` returns its result
        (``(runner index, result)``). Returns the number of calls made."""
        results = self.foreach_env_runner(
            lambda runner: (runner.worker_index, func(runner), tag),
            local_env_runner=False,
            remote_worker_ids=remote_worker_ids,
        )
        self._ready().extend(results)
        return len(results)

    def _ready(self) -> list[tuple[int, Any, Any]]:
        """The async calls' results not fetched yet, kept on the algorithm (each access to
        ``algo.env_runner_group`` gives a new group view)."""
        ready: list[tuple[int, Any, Any]] = self._algo.__dict__.setdefault("_async_ready", [])
        return ready

    def fetch_ready_async_reqs(
        self,
        *,
        tags: str | list[str] | tuple[str, ...] = (),
        timeout_seconds: float | None = 0.0,
        return_obj_refs: bool = False,
        mark_healthy: bool = False,
    ) -> list[tuple[int, Any]]:
        """The results of ``foreach_env_runner_async`` calls not fetched yet, as ``(runner
        index, result)`` pairs (those of the ``tags`` given, else all); each is returned once."""
        wanted = {tags} if isinstance(tags, str) else set(tags)
        ready = self._ready()
        out = [(i, r) for i, r, t in ready if not wanted or t in wanted]
        ready[:] = [x for x in ready if wanted and x[2] not in wanted]
        return out

    def probe_unhealthy_env_runners(self) -> list[int]:
        """RLlib's probe of failed runners, restored since: none here, where a failed runner is
        replaced as soon as it fails (``restart_failed_env_runners``)."""
        return []

    def sync_env_runner_states(self, config: Any = None, **kwargs: Any) -> None:
        """RLlib's hand-over of the connectors' states and counters to the runners: rljax's
        runners read them with the weights after every update, so nothing is left to do."""

    @property
    def local_env_runner(self) -> EnvRunner | None:
        """The driver's runner (index 0). With runner threads the driver samples nothing, and
        its runner has the module and the config but no envs, as RLlib's local env runner
        has beside remote ones (with a copy of the algorithm's config); None where there are
        no runners (offline algorithms, after ``stop()``) and for an evaluation group."""
        runners = [r for r in self._runners() if r.worker_index == 0]
        if runners:
            return runners[0]
        algo = getattr(self, "_algo", None)  # an evaluation group has none
        if algo is None or getattr(algo, "_runners", None) is None:
            return None  # no runners at all: offline algorithms, or after stop()
        # Its own copy of the config, as RLlib's local runner and rljax's other slots have.
        config = algo._runner_configs.setdefault(-1, algo.config.copy())
        return EnvRunner(0, None, None, config, algo, slot=-1)


# RLlib's ``merge_algorithm_configs`` rules: the dicts that take new sub-keys, those replaced
# whole when their ``type`` changes, and those always replaced whole.
_NEW_SUBKEYS_OK = (
    "env_config",
    "model",
    "model_config",
    "optimizer",
    "custom_resources_per_env_runner",
    "custom_resources_per_learner",
    "evaluation_config",
    "exploration_config",
    "replay_buffer_config",
    "extra_python_environs_for_worker",
    "input_config",
    "output_config",
)
_REPLACED_ON_TYPE = ("exploration_config", "replay_buffer_config")
_REPLACED = ("off_policy_estimation_methods", "policies")


class LearnerGroup:
    """The algorithm's learners, as RLlib's ``LearnerGroup`` (here one jitted update over the
    learner devices): ``get_weights(module_ids)``, ``get_state`` / ``set_state`` and
    ``foreach_learner(fn)``."""

    def __init__(self, algo: Any):
        self._algo = algo

    def get_weights(self, module_ids: Any = None) -> dict[str, Any]:
        """``{module_id: weights}`` (numpy), as ``Algorithm.get_weights``."""
        return dict(self._algo.get_weights(module_ids))

    def get_state(
        self,
        components: str | Collection[str] | None = None,
        *,
        not_components: str | Collection[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The learner's state, RLlib's ``{"learner": {"rl_module": {module_id: weights},
        ...}}``: the algorithm's ``get_state()["learner_group"]``. ``components`` /
        ``not_components`` are paths inside it (``"learner/rl_module/<module_id>"``)."""

        def under(paths: str | Collection[str] | None) -> list[str] | None:
            if paths is None:
                return None
            return [f"{LEARNER_GROUP}/{p}" for p in ([paths] if isinstance(paths, str) else paths)]

        wanted = under(components) if components is not None else LEARNER_GROUP
        if wanted == []:  # no component asked for: nothing, as RLlib's
            return {}
        state = self._algo.get_state(wanted, not_components=under(not_components), **kwargs)
        return dict(state.get(LEARNER_GROUP, {}))

    def set_state(self, state: dict[str, Any]) -> None:
        """Loads ``get_state()``'s dict (or part of it), checked as ``Algorithm.set_state``
        checks it; the env runners act with the new weights from their next sample."""
        self._algo.set_state({LEARNER_GROUP: state})

    def foreach_learner(self, func: Callable[[Any], Any], **kwargs: Any) -> list[Any]:
        """``[func(algorithm)]``: the one learner is the algorithm's update."""
        return [func(self._algo)]

    @property
    def is_local(self) -> bool:
        return True


def _row(tree: Any, i: int) -> Any:
    return jax.tree.map(lambda x: np.asarray(x)[i], tree)


class ReplayBufferView:
    """An off-policy algorithm's replay buffer as RLlib's ``algo.local_replay_buffer``: its
    contents as host arrays (``get_state``), put back (``set_state``), and its size. The
    buffer itself lives on the learner's device, in the state the jitted loop carries."""

    def __init__(self, algo: Any):
        self._algo = algo

    def _live(self) -> Any:
        buffer = getattr(self._algo.state, "buffer", None)
        if buffer is None:
            raise ValueError(
                "local_replay_buffer: this algorithm has no replay buffer (offline algorithms "
                "keep their data apart; a module loaded for inference has none)"
            )
        return buffer

    def get_state(self) -> dict[str, Any]:
        """The buffer's arrays (the stored rows, the ring positions and sizes, priorities)
        as a nested dict of numpy arrays, which msgpack, numpy or pickle can write."""
        return dict(flax.serialization.to_state_dict(jax.device_get(self._live())))

    def set_state(self, state: dict[str, Any]) -> None:
        """Puts ``get_state()``'s dict back; checked against the live buffer (every key, shape
        and dtype, counters within the capacity) before anything changes.

        Raises:
          CheckpointError: ``state`` does not fit this buffer.
        """
        live = self._live()
        host = jax.device_get(live)
        given = jax.tree.map(np.asarray, state)
        _check_tree(flax.serialization.to_state_dict(host), given, "", "set_state")
        restored = flax.serialization.from_state_dict(host, given)
        self._algo._check_loaded_state({"state": {"buffer": restored}}, "set_state")
        placed = jax.tree.map(lambda new, old: jax.device_put(new, old.sharding), restored, live)
        self._algo.state = self._algo.state._replace(buffer=placed)

    def get_num_timesteps(self) -> int:
        """Rows (env steps) the buffer holds."""
        return int(np.sum(jax.device_get(self._live().size)))

    def __len__(self) -> int:
        return self.get_num_timesteps()


class EvaluationEnvRunner(EnvRunner):
    """One evaluation runner of a ``custom_evaluation_function``: its env copies (a gymnasium
    ``SyncVectorEnv`` as ``env`` for gymnasium envs), the evaluation policy and a config of its
    own, with RLlib's ``sample()``, ``get_metrics()`` and ``make_env()``."""

    def __init__(
        self,
        worker_index: int,
        host_env: Any,
        actions: Callable[[Any], Any],
        config: Any,
        make_host_env: Callable[[Any], Any],
        spaces: tuple[Any, Any],
    ):
        super().__init__(worker_index, None, host_env, config)
        self._host = host_env
        self._actions = actions
        self._make_host_env = make_host_env  # EnvSpec -> a host vector env like this one
        self._spaces = spaces
        self._result: Any = None
        self._ids: Any = None
        self._open: list[SingleAgentEpisode | None] = []
        self._totals: list[tuple[float, int]] = []  # per env copy: its episode's return, length
        self._done: list[tuple[float, int]] = []  # episodes finished since get_metrics()
        self._finished: list[SingleAgentEpisode] = []  # those of the current sample() call
        self._steps = 0  # env steps since get_metrics()
        self._closed = False  # close() / stop(): the env copies are gone until make_env()

    @property
    def num_envs(self) -> int:
        return int(self._host.num_envs)

    def make_env(self) -> None:
        """Rebuilds the env copies from this runner's ``config`` (env and env_config); the
        spaces must stay the policy's."""
        new = self._make_host_env(_config_env(self.config, self._spaces))
        self._host.close()
        self._host, self.env, self._result = new, getattr(new, "env", new), None
        self._closed = False

    def _start(self) -> None:
        self._result = self._host.reset()
        self._ids = self._result.env_id
        self._open = [None] * self.num_envs
        self._totals = [(0.0, 0)] * self.num_envs
        for k, i in enumerate(self._ids):
            self._open[int(i)] = self._new_episode(_row(self._result.obs, k), int(i))

    def _new_episode(self, obs: Any, env_index: int) -> SingleAgentEpisode:
        observation_space, action_space = self._spaces
        return start_episode(
            obs, {}, env_index, observation_space=observation_space, action_space=action_space
        )

    def _step(self) -> tuple[int, int]:
        """One step of every env copy: (episodes it finished, env steps it took)."""
        result, ids = self._result, self._ids
        actions = self._actions(result.obs)
        nxt = self._host.step(actions, ids)
        finished = steps = 0
        by_id = {int(i): k for k, i in enumerate(ids)}
        for k, i in enumerate(nxt.env_id):
            i = int(i)
            episode = self._open[i]
            if episode is None:  # the auto-reset row: the next episode's first observation
                self._open[i] = self._new_episode(_row(nxt.obs, k), i)
                self._totals[i] = (0.0, 0)
                continue
            reward = float(nxt.reward[k])
            episode.add_env_step(
                _row(nxt.obs, k),
                _row(actions, by_id[i]),
                reward,
                {},
                terminated=bool(nxt.terminated[k]),
                truncated=bool(nxt.truncated[k]),
            )
            ret, length = self._totals[i]
            self._totals[i] = (ret + reward, length + 1)
            steps += 1
            if episode.is_done:
                self._finished.append(episode)
                self._done.append(self._totals[i])  # the whole episode's, over its chunks
                self._open[i] = None
                finished += 1
        self._result, self._ids = nxt, nxt.env_id
        self._steps += steps
        return finished, steps

    def sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool | None = None,
        force_reset: bool = False,
        **kwargs: Any,
    ) -> list[SingleAgentEpisode]:
        """Steps the env copies with the evaluation policy and returns the episodes.

        ``num_episodes``: new episodes (the env copies are reset, as RLlib's) until that many
        finished; all finished ones are returned. ``num_timesteps``: until that many env steps,
        returning the finished episodes and the unfinished ones as chunks (``cut()``: they go on
        in the next call as chunks of the same ``id_``). Neither: one episode per env copy. ``explore`` must match the
        evaluation's (``evaluation_config``'s ``explore``). When no episode finishes for
        ``evaluation_sample_timeout_s``, sampling stops there with a warning."""
        wanted = bool((self.config.evaluation_config or {}).get("explore", False))
        if explore is not None and bool(explore) != wanted:
            raise ValueError(
                f"sample(explore={explore}): this evaluation acts with explore={wanted} "
                "(set evaluation_config's explore)"
            )
        return self._collect(num_timesteps, num_episodes, force_reset)

    def _collect(
        self, num_timesteps: int | None, num_episodes: int | None, force_reset: bool
    ) -> list[SingleAgentEpisode]:
        """``sample()``'s stepping, with this runner's ``_actions``."""
        if self._closed:
            raise RuntimeError(
                "sample() after stop(): this runner's envs are closed; call make_env() to "
                "build them again, or build a new runner"
            )
        if num_timesteps is None and num_episodes is None:
            num_episodes = self.num_envs
        if self._result is None or force_reset or num_episodes is not None:
            self._start()
        self._finished = []
        timeout = self.config.evaluation_sample_timeout_s
        steps, last_episode = 0, time.monotonic()
        while (num_episodes is not None and len(self._finished) < num_episodes) or (
            num_timesteps is not None and steps < num_timesteps
        ):
            done, n = self._step()
            steps += n
            if done:
                last_episode = time.monotonic()
            elif timeout is not None and time.monotonic() - last_episode > timeout:
                logger.warning(
                    "evaluation runner %d: no episode finished within "
                    "evaluation_sample_timeout_s=%s s; returning what it sampled",
                    self.worker_index,
                    timeout,
                )
                break
        episodes = list(self._finished)
        if num_timesteps is not None:  # unfinished episodes as chunks, continued next call
            for i, ep in enumerate(self._open):
                if ep is not None and len(ep):
                    self._open[i] = ep.cut()
                    episodes.append(ep)
        else:  # as RLlib's: the episodes left open are dropped; the next call starts anew
            self._result = None
        return [ep.to_numpy() for ep in episodes]  # RLlib's episodes_to_numpy

    def get_metrics(self) -> dict[str, Any]:
        """RLlib's episode figures of the episodes finished (whole episodes, over all their
        chunks) and the env steps taken since the last call: ``episode_return_mean`` /
        ``_max`` / ``_min``, ``episode_len_mean``, ``num_episodes``,
        ``num_env_steps_sampled``."""
        done, self._done = self._done, []
        steps, self._steps = self._steps, 0
        return episode_summary([r for r, _ in done], [n for _, n in done], steps)

    def close(self) -> None:
        self._host.close()
        self._closed = True


class SingleAgentEnvRunner(EvaluationEnvRunner):
    """RLlib's ``SingleAgentEnvRunner`` on its own, outside an algorithm: the config's env
    (``num_envs_per_env_runner`` copies, ``gym_env_vectorize_mode``, the host pieces of its
    ``env_to_module_connector``) and the module ``config.get_rl_module_spec(env=...).build()``
    gives (fresh weights, or the ones ``set_state`` / ``module.set_state`` load), stepped on
    the host.

    ``sample(num_timesteps=..., num_episodes=..., explore=..., random_actions=...)`` returns
    RLlib's episodes (``SingleAgentEpisode``, numpy'd; unfinished ones as chunks that go on in
    the next call); ``get_metrics()`` the finished episodes' figures; ``get_state()`` /
    ``set_state()`` the module's weights (``{"rl_module": ...}``); ``stop()`` closes the envs.
    An algorithm samples through its own runners; this is for scripts that collect data, check
    an env or act with a trained module outside training.

    Args:
      config: The algorithm config (its env settings and networks).
      worker_index: This runner's index (RLlib's; seeds the envs and is the envs'
        ``EnvContext.worker_index``).
      num_workers: How many runners the script makes (the envs' ``EnvContext.num_workers``).

    Raises:
      ConfigError: the config has no env, is multi-agent, or names an env written in JAX
        (those run inside the algorithm's program; ``config.build_algo()``).
      TypeError: a keyword RLlib's constructor does not take (its ``tune_trial_id``,
        ``spaces`` and ``recreated_worker`` are taken and unused).
    """

    # The module of this runner (an instance attribute, not the algorithm view's property).
    module: Any = None

    def __init__(
        self, *, config: Any, worker_index: int = 0, num_workers: int = 0, **kwargs: Any
    ) -> None:
        from rljax.algorithms.algorithm_config import AlgorithmConfig
        from rljax.connectors.env_to_module.episode_connector import spec_with_host_pieces
        from rljax.env.vector import make_host_env, resolve_env

        unknown = sorted(set(kwargs) - {"tune_trial_id", "spaces", "recreated_worker"})
        if unknown:
            raise TypeError(f"SingleAgentEnvRunner() got unexpected keywords {unknown}")
        if not isinstance(config, AlgorithmConfig):
            raise TypeError(
                f"SingleAgentEnvRunner(config={type(config).__name__}); use an algorithm "
                "config (PPOConfig().environment(...))"
            )
        if config.env is None:
            raise ConfigError("SingleAgentEnvRunner: the config has no env; set .environment()")
        if config.is_multi_agent:
            raise ConfigError(
                "SingleAgentEnvRunner: the config is multi-agent; a multi-agent run samples "
                "through config.build_algo()"
            )
        config = config.copy()
        spec = resolve_env(config.env, config.env_config)
        if spec.backend == "jax":
            raise ConfigError(
                f"SingleAgentEnvRunner: {spec.name!r} is an env written in JAX, which steps "
                "inside the algorithm's program; sample it through config.build_algo()"
            )
        spec, spaces = spec_with_host_pieces(config.env_to_module_connector, spec)
        seed = 0 if config.seed is None else int(config.seed)
        mode = config.gym_env_vectorize_mode

        def build(env_spec: Any) -> Any:
            return make_host_env(
                env_spec,
                config.num_envs_per_env_runner,
                mode,
                seed + worker_index,
                None,
                worker_index,
                num_workers,
            )

        host = build(spec)
        try:
            self.module = config.get_rl_module_spec(spaces={"default_policy": spaces}).build()
        except BaseException:
            host.close()
            raise
        self._explore = bool(config.explore)
        self._random = False
        super().__init__(worker_index, host, self._act, config, build, spaces)

    def _act(self, obs: Any) -> Any:
        if self._random:
            space = self._spaces[1]
            return np.stack([space.sample() for _ in range(len(jax.tree.leaves(obs)[0]))])
        forward = (
            self.module.forward_exploration if self._explore else self.module.forward_inference
        )
        return np.asarray(forward({"obs": obs})["actions"])

    def sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool | None = None,
        random_actions: bool = False,
        force_reset: bool = False,
        **kwargs: Any,
    ) -> list[SingleAgentEpisode]:
        """Steps the envs and returns the episodes (RLlib's ``sample``): ``num_episodes`` new
        episodes (the envs are reset) until that many finished, or ``num_timesteps`` env steps
        (finished episodes and the unfinished ones as chunks); with neither, as RLlib's, one
        fragment per env copy (``rollout_fragment_length`` env steps each, as chunks), or
        with ``batch_mode="complete_episodes"`` one episode per env copy. ``explore``: sample
        from the module's distribution (the config's ``explore`` by default) or take its greedy
        action; ``random_actions``: the action space's samples instead of the module's.
        Another keyword raises ``TypeError``; both counts, ``ValueError``."""
        from rljax.utils.checks import require_bool

        if kwargs:
            raise TypeError(f"sample() got unexpected keywords {sorted(kwargs)}")
        if num_timesteps is not None and num_episodes is not None:
            raise ValueError(
                f"sample(num_timesteps={num_timesteps!r}, num_episodes={num_episodes!r}): give "
                "one of them, or neither for a fragment per env copy"
            )
        for name, value in (("num_timesteps", num_timesteps), ("num_episodes", num_episodes)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(f"sample({name}={value!r}); use an int of at least 1, or None")
        self._explore = self.config.explore if explore is None else require_bool("explore", explore)
        self._random = require_bool("random_actions", random_actions)
        if num_timesteps is None and num_episodes is None:
            if self.config.batch_mode == "truncate_episodes":
                num_timesteps = self.config.get_rollout_fragment_length() * self.num_envs
            else:
                num_episodes = self.num_envs
        return self._collect(num_timesteps, num_episodes, force_reset)

    def get_state(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """``{"rl_module": the module's state}`` (RLlib's runner state, weights part)."""
        return {"rl_module": self.module.get_state()}

    def set_state(self, state: dict[str, Any]) -> None:
        """Loads ``state["rl_module"]`` (``get_state()``'s, or an algorithm's module's
        ``get_state()``) into the module; the next ``sample()`` acts with it."""
        if not isinstance(state, dict) or "rl_module" not in state:
            raise ValueError(
                f"set_state({type(state).__name__}): use a dict with an 'rl_module' entry "
                "(get_state()'s)"
            )
        self.module.set_state(state["rl_module"])

    def stop(self) -> None:
        """Closes the envs (RLlib's ``stop()``)."""
        self.close()


class MultiAgentEnvRunner:
    """RLlib's ``MultiAgentEnvRunner``, by name: ``.env_runners(env_runner_cls=
    MultiAgentEnvRunner)`` names the default runners of a multi-agent config (rljax's runner
    threads step the multi-agent envs). A standalone one is not built: constructing it raises
    ``ConfigError`` saying where the runners are (``algo.env_runner_group``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(
            "MultiAgentEnvRunner on its own is not built: build the algorithm "
            "(config.build_algo()) and reach its runners with algo.env_runner_group."
            "foreach_env_runner(...); single-agent configs have SingleAgentEnvRunner(config=...)"
        )


class EvaluationEnvRunnerGroup(EnvRunnerGroup):
    """The evaluation runners handed to ``custom_evaluation_function`` (RLlib's
    ``eval_env_runner_group``); there is no local one."""

    def __init__(self, runners: list[EvaluationEnvRunner]):
        self._eval_runners = runners

    def _runners(self) -> list[EnvRunner]:
        return list(self._eval_runners)

    def num_healthy_remote_workers(self) -> int:
        return len(self._eval_runners)

    def sync_weights(self, *args: Any, **kwargs: Any) -> None:
        """Does nothing (RLlib's ``sync_weights``, which custom evaluation functions call
        first): the evaluation runners act with the weights the learner had when this
        evaluation started, which are the learner's current ones unless the function changes
        them (then build a new evaluation rather than syncing these runners)."""

    def num_remote_env_runners(self) -> int:
        return len(self._eval_runners)


__all__ = [
    "EnvRunner",
    "EnvRunnerGroup",
    "EvaluationEnvRunner",
    "EvaluationEnvRunnerGroup",
    "LearnerGroup",
    "MultiAgentEnvRunner",
    "ReplayBufferView",
    "SaveResult",
    "SingleAgentEnvRunner",
]


class TrainableSurface:
    """What an ``Algorithm`` has of Tune's ``Trainable``, RLlib's runner and learner groups and
    RLlib's older names: ``step``, ``cleanup``, ``reset_config``, ``trial_id``,
    ``trial_name``, ``env_runner``, ``env_runner_group``, ``learner_group``, ``workers``,
    ``export_policy_model``, ``training_step``, ``merge_algorithm_configs``, the ``setup``
    hook, ``eval_env_runner_group`` and ``restore_env_runners`` (``Algorithm`` inherits
    them)."""

    @property
    def env_runner(self) -> Any:
        """The local env runner (RLlib's ``algo.env_runner``): the driver's sampling, or with
        runner threads the driver's runner without envs (its ``module`` and ``config``)."""
        return self.env_runner_group.local_env_runner

    def setup(self, config: Any) -> None:
        """RLlib's (Tune's) ``setup`` hook, called once at the end of the build with the
        algorithm's config: it runs the callbacks' ``on_algorithm_init``. A subclass that
        overrides it calls ``super().setup(config)`` first, as with RLlib, and then builds its
        own parts (the runners, learner and modules exist by then)."""
        algo: Any = self
        if not algo._population_member:
            algo.callbacks("on_algorithm_init", algorithm=algo, metrics_logger=algo.metrics)

    @property
    def eval_env_runner_group(self) -> None:
        """RLlib's evaluation runner group: None here. rljax builds an evaluation's env copies
        for each evaluation (``custom_evaluation_function`` receives them as its argument), so
        between evaluations there is no group to reach."""
        return None

    def restore_env_runners(self, env_runner_group: Any) -> list[int]:
        """RLlib's hook after runners were restarted: the indices it brought back. rljax
        replaces a failed runner within the training step that saw it fail (with the current
        weights and connector states), so there is nothing left to restore: ``[]``."""
        return []

    @property
    def learner_group(self) -> LearnerGroup:
        """The learners as RLlib's ``LearnerGroup``: ``get_weights()``, ``get_state()`` /
        ``set_state()``, ``foreach_learner``."""
        return LearnerGroup(self)

    @property
    def env_runner_group(self) -> EnvRunnerGroup:
        """The env runners, as RLlib's ``EnvRunnerGroup``: ``foreach_env_runner(fn)``."""
        return EnvRunnerGroup(self)

    @classmethod
    def merge_algorithm_configs(
        cls,
        config1: dict[str, Any],
        config2: dict[str, Any],
        _allow_unknown_configs: bool | None = None,
    ) -> dict[str, Any]:
        """RLlib's: a copy of the whole config dict ``config1`` with the partial dict
        ``config2`` over it, as RLlib merges them: nested dicts key by key; new sub-keys only
        in the dicts RLlib allows them in (``env_config``, ``model_config``,
        ``evaluation_config``, ``replay_buffer_config``, ...); ``policies`` replaced whole, and
        ``replay_buffer_config`` too when its ``type`` changes. A key of ``config2`` that
        ``config1`` does not have raises ``ConfigError`` naming it, unless
        ``_allow_unknown_configs`` (top level) or the dict allows new sub-keys."""
        import copy

        for name, value in (("config1", config1), ("config2", config2)):
            if not isinstance(value, dict):
                raise ConfigError(
                    f"merge_algorithm_configs: {name} is a {type(value).__name__}; give a dict "
                    "(config.to_dict())"
                )

        def merge(base: dict[str, Any], over: dict[str, Any], new_ok: bool, where: str) -> None:
            for key, value in over.items():
                if key not in base and not new_ok:
                    raise ConfigError(
                        f"merge_algorithm_configs: unknown setting {where}{str(key)[:60]!r} in "
                        "config2; pass _allow_unknown_configs=True to add it"
                        if not where
                        else f"merge_algorithm_configs: {where.rstrip('/')} has no "
                        f"{str(key)[:60]!r}; only {', '.join(_NEW_SUBKEYS_OK)} take new keys"
                    )
                old = base.get(key)
                if isinstance(old, dict) and isinstance(value, dict) and key not in _REPLACED:
                    new_type = "type" in value and "type" in old and value["type"] != old["type"]
                    if key in _REPLACED_ON_TYPE and new_type:
                        base[key] = copy.deepcopy(value)
                    else:
                        merge(old, value, new_ok or key in _NEW_SUBKEYS_OK, f"{where}{key}/")
                else:
                    base[key] = copy.deepcopy(value)

        out = copy.deepcopy(config1)
        merge(out, config2, bool(_allow_unknown_configs), "")
        return out

    @classmethod
    def default_resource_request(cls, config: AlgorithmConfig | dict[str, Any]) -> Any:
        """RLlib's resource request of a run of ``config``, as a
        ``tune.PlacementGroupFactory``: the driver's bundle (with the learner's GPUs when
        ``num_learners`` is 0), one per env runner and evaluation env runner
        (``num_cpus_per_env_runner``, ``num_gpus_per_env_runner``) and one per learner
        (``num_cpus_per_learner``, "auto" as 1 CPU without GPUs, ``num_gpus_per_learner``).

        On one host nothing is reserved with it (``rljax.tune.resources``): it records what
        the config's knobs already say, for ``tune.with_resources``.
        """
        from rljax.runners import build as runner_build
        from rljax.tune.resources import PlacementGroupFactory

        if isinstance(config, dict):
            config = cast(Any, cls).get_default_config().update_from_dict(config)
        return PlacementGroupFactory(runner_build.resource_bundles(config))

    def __new__(cls, config: Any = None, *args: Any, **kwargs: Any) -> Any:
        """``PPO(config=...)`` with a ``.multi_agent(...)`` config builds the algorithm's
        multi-agent class (``multi_agent_class()``), as ``config.build_algo()`` does."""
        from rljax.algorithms.algorithm_config import AlgorithmConfig, multi_agent_trainer

        target = cls
        if isinstance(config, AlgorithmConfig) and config.is_multi_agent:
            target = multi_agent_trainer(cls, config.algo_name)
        algo = super().__new__(target)
        if not isinstance(algo, cls):  # another class: Python does not call its __init__
            algo.__init__(config, *args, **kwargs)  # type: ignore[misc]
        return algo

    _step_result: Any = None  # what super().training_step() ran, for train() to report
    _in_training_step: bool = False

    def training_step(self) -> None:
        """One iteration's sampling and learning (RLlib's ``Algorithm.training_step``), which
        ``train()`` calls: the algorithm's own step, its rollout and update compiled together.

        A subclass may override it to do work around that step, calling
        ``super().training_step()`` once; what it logs with ``self.metrics.log_value(...)``
        goes into ``train()``'s result, as in RLlib. The env runners and learners have no
        ``sample()`` or ``update()`` to call one by one, so an override that does not call
        ``super().training_step()`` fails ``train()`` with a ``ConfigError`` saying so.

        Raises:
          ConfigError: called outside ``train()``, or twice in one iteration.
        """
        name = type(self).__name__
        if not self._in_training_step:
            raise ConfigError(
                f"{name}.training_step() ran outside train(): call algo.train(), which runs "
                "it and returns the iteration's result dict"
            )
        if self._step_result is not None:
            raise ConfigError(
                f"{name}.training_step() called super().training_step() twice in one "
                "iteration; call it once (train() is one iteration)"
            )
        self._step_result = cast(Any, self)._training_step()

    def _iteration_step(self) -> Any:
        """What ``train()`` runs for one iteration: the algorithm's ``_training_step()``, or
        a subclass's ``training_step()`` around it."""
        if type(self).training_step is TrainableSurface.training_step:
            return cast(Any, self)._training_step()
        self._in_training_step, self._step_result = True, None
        try:
            self.training_step()
        finally:
            self._in_training_step = False
        out, self._step_result = self._step_result, None
        if out is None:
            raise ConfigError(
                f"{type(self).__name__}.training_step() returned without calling "
                "super().training_step(): rljax samples and learns in one compiled step per "
                "iteration, and its env runners and learners have no sample() or update() to "
                "call one by one. Do your work before or after super().training_step() (log "
                "with self.metrics.log_value(...)), or use callbacks (rljax.callbacks)"
            )
        return out

    def step(self) -> dict[str, Any]:
        """One training iteration (Tune's ``Trainable.step``, which RLlib's ``train()``
        calls): ``train()``, whose result already holds Tune's keys."""
        return cast(Any, self).train()

    def cleanup(self) -> None:
        """Releases the algorithm's envs and threads (Tune's ``Trainable.cleanup``): ``stop()``."""
        cast(Any, self).stop()

    def reset_config(self, new_config: dict[str, Any]) -> bool:
        """Tune's hook for reusing a trainable with another config: rljax builds each trial
        anew, so this changes nothing and says so (False), as Tune's default does."""
        return False

    @property
    def trial_id(self) -> str:
        """Tune's trial id of this trainable: ``"default"`` outside a trial, as Tune's."""
        return "default"

    @property
    def trial_name(self) -> str:
        """Tune's trial name of this trainable: ``"default"`` outside a trial, as Tune's."""
        return "default"

    @property
    def workers(self) -> EnvRunnerGroup:
        """RLlib's deprecated name of ``env_runner_group`` (with a one-time warning)."""
        warn_once("workers", "algo.workers is deprecated (as in RLlib); use algo.env_runner_group")
        return cast(Any, self).env_runner_group

    def export_policy_model(
        self, export_dir: str | os.PathLike, policy_id: str | None = None, onnx: int | None = None
    ) -> str:
        """RLlib's name of ``export_policy`` (``export_dir``, ``policy_id``): the policy as
        StableHLO programs and a JSON of its spaces.

        Raises:
          ConfigError: ``onnx`` asks for ONNX (an opset number; rljax exports StableHLO, which
            JAX loads alone). None, 0 and False mean no ONNX, as in RLlib (``if onnx:``).
        """
        if onnx:
            raise ConfigError(
                f"export_policy_model(onnx={onnx!r}): rljax exports StableHLO programs (load "
                "them with rljax.policy.loader.load_exported, JAX alone); drop onnx"
            )
        return cast(Any, self).export_policy(export_dir, policy_id)
