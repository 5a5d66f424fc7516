"""A ``MultiAgentEnv`` in its own spawned process: the copies of an ASYNC multi-agent runner.

``MultiAgentVectorEnv`` sends every copy its action dict first (``step_async``) and collects the
results after (``step_wait``), so the copies' ``step`` calls run in parallel processes, as
gymnasium's ``AsyncVectorEnv`` does for single-agent envs. The env creator travels by value with
cloudpickle, so envs written in a notebook or a script work.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import traceback
from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym
from gymnasium.vector.utils import CloudpickleWrapper

from rljax.env.multi_agent_env import AgentID, MultiAgentEnv
from rljax.env.workers import main_hidden, sigint_blocked


def _worker(env_fn: CloudpickleWrapper, pipe: Any, parent_end: Any) -> None:
    parent_end.close()
    try:
        # (gymnasium < 1.4's CloudpickleWrapper takes no type parameter to say it)
        env = cast(MultiAgentEnv, env_fn())
        agents = list(env.possible_agents)
        spaces = (
            {a: env.get_observation_space(a) for a in agents},
            {a: env.get_action_space(a) for a in agents},
        )
        pipe.send(("ok", (agents, *spaces)))
    except Exception:  # noqa: BLE001 (sent to the parent, which raises it)
        with contextlib.suppress(OSError):  # the parent is gone (Ctrl-C): nobody to tell
            pipe.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            command, payload = pipe.recv()
        except (EOFError, KeyboardInterrupt):
            break
        try:
            if command == "reset":
                pipe.send(("ok", env.reset(**payload)))
            elif command == "step":
                obs, rewards, terms, truncs, infos = env.step(payload)
                pipe.send(("ok", (obs, rewards, terms, truncs, infos)))
            elif command == "close":
                env.close()
                pipe.send(("ok", None))
                break
        except Exception:  # noqa: BLE001
            with contextlib.suppress(OSError):  # the parent is gone; the next recv ends the loop
                pipe.send(("error", traceback.format_exc()))
    pipe.close()


class RemoteMultiAgentEnv(MultiAgentEnv):
    """Runs ``env_fn()`` in a spawned process; ``step`` = ``step_async`` + ``step_wait``."""

    def __init__(self, env_fn: Callable[[], MultiAgentEnv], timeout_s: float | None = None):
        ctx = mp.get_context("spawn")
        self._pipe, child = ctx.Pipe()
        self._timeout_s = timeout_s
        with main_hidden(), sigint_blocked():
            self._process = ctx.Process(
                target=_worker, args=(CloudpickleWrapper(env_fn), child, self._pipe), daemon=True
            )
            self._process.start()
        child.close()
        self._closed = False
        self._waiting = False
        try:
            agents, obs_spaces, act_spaces = self._receive("start")
        except BaseException:  # the env failed to start, or Ctrl-C: no process left behind
            self.close(force=True)
            raise
        self.possible_agents = agents
        self.agents = list(agents)
        self.observation_spaces: dict[AgentID, gym.Space] = obs_spaces
        self.action_spaces: dict[AgentID, gym.Space] = act_spaces

    def _receive(self, what: str) -> Any:
        if self._timeout_s is not None and not self._pipe.poll(self._timeout_s):
            self.close(force=True)
            raise TimeoutError(f"the env process gave no answer to {what} in {self._timeout_s} s")
        try:
            status, payload = self._pipe.recv()
        except EOFError:
            raise RuntimeError(
                f"the env process (pid {self._process.pid}) died during {what} "
                f"(exit code {self._process.exitcode})"
            ) from None
        if status == "error":
            raise RuntimeError(f"the env raised in its process during {what}:\n{payload}")
        return payload

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._pipe.send(("reset", {"seed": seed, "options": options}))
        return self._receive("reset")

    def step_async(self, action_dict: dict[AgentID, Any]) -> None:
        self._pipe.send(("step", action_dict))
        self._waiting = True

    def step_wait(self):
        self._waiting = False
        return self._receive("step")

    def step(self, action_dict: dict[AgentID, Any]):
        self.step_async(action_dict)
        return self.step_wait()

    def close(self, force: bool = False) -> None:
        """Ends the env's process; ``force``: at once (its step may hang), without asking."""
        if self._closed:
            return
        self._closed = True
        if force:
            self._process.terminate()
        elif self._process.is_alive():
            try:
                if self._waiting and self._pipe.poll(5.0):  # a hung step: do not wait for it
                    self._pipe.recv()
                self._pipe.send(("close", None))
                if self._pipe.poll(5.0):
                    self._pipe.recv()
            except (EOFError, BrokenPipeError, OSError):
                pass
        self._process.join(timeout=5.0)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join()
        self._pipe.close()


__all__ = ["RemoteMultiAgentEnv"]
