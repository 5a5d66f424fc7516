"""PettingZoo envs as rljax ``MultiAgentEnv`` s: ``ParallelPettingZooEnv`` and ``PettingZooEnv``.

The class names and constructors are RLlib's (``ray.rllib.env.wrappers.pettingzoo_env``), so a
script ported to rljax changes only the import::

    from rljax.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv

    register_env("pistonball", lambda cfg: ParallelPettingZooEnv(pistonball_v6.parallel_env()))

Both follow rljax's multi-agent contract (see ``rljax.env.multi_agent_env``):

* ``reset(*, seed, options) -> (obs, infos)``; ``seed`` and ``options`` go to the PettingZoo env.
* ``step(action_dict) -> (obs, rewards, terminateds, truncateds, infos)``. An agent whose
  episode ends in a step is in that step's ``terminateds`` / ``truncateds`` with ``True`` (with
  its final observation in ``obs`` where PettingZoo gives one) and does not act again.
* ``terminateds["__all__"]`` / ``truncateds["__all__"]``: once no agent of the episode is left,
  exactly one of them is ``True``: ``truncateds["__all__"]`` when every agent that finished in
  that last step was truncated (and none terminated), ``terminateds["__all__"]`` otherwise.
  Both are ``False`` while any agent remains.

PettingZoo is imported when a wrapper is built, so ``rljax`` imports without it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from rljax.env.multi_agent_env import AgentID, MultiAgentEnv

if TYPE_CHECKING:
    from pettingzoo import AECEnv, ParallelEnv


def _import_pettingzoo() -> Any:
    try:
        import pettingzoo
    except ImportError as e:
        raise ImportError(
            "rljax.env.wrappers.pettingzoo_env needs PettingZoo: pip install pettingzoo"
        ) from e
    return pettingzoo


def _possible_agents(env: Any) -> list[AgentID]:
    agents = getattr(env, "possible_agents", None)
    if not agents:
        # possible_agents is optional in PettingZoo's API; a reset tells the agents instead.
        env.reset()
        agents = env.agents
    return list(agents)


def _all_flags(finished: dict[AgentID, tuple[bool, bool]], over: bool) -> tuple[bool, bool]:
    """``(terminateds["__all__"], truncateds["__all__"])`` given the agents that finished in
    this step (``agent -> (terminated, truncated)``) and whether no agent is left."""
    if not over:
        return False, False
    truncated = bool(finished) and all(trunc and not term for term, trunc in finished.values())
    return not truncated, truncated


def _adopt(wrapper: MultiAgentEnv, env: Any, parallel: bool) -> None:
    """Checks ``env`` is the PettingZoo kind ``wrapper`` wraps, then takes its agents, spaces,
    render mode and metadata."""
    pettingzoo = _import_pettingzoo()
    want, other = (
        (pettingzoo.ParallelEnv, pettingzoo.AECEnv)
        if parallel
        else (pettingzoo.AECEnv, pettingzoo.ParallelEnv)
    )
    if not isinstance(env, want):
        hint = ""
        if isinstance(env, other):
            hint = (
                " (an AECEnv: wrap it with PettingZooEnv)"
                if parallel
                else " (a ParallelEnv: wrap it with ParallelPettingZooEnv)"
            )
        raise TypeError(
            f"{type(wrapper).__name__} wraps a pettingzoo.{want.__name__}; got "
            f"{type(env).__name__}{hint}"
        )
    MultiAgentEnv.__init__(wrapper)
    wrapper.possible_agents = _possible_agents(env)
    wrapper.observation_spaces = {a: env.observation_space(a) for a in wrapper.possible_agents}
    wrapper.action_spaces = {a: env.action_space(a) for a in wrapper.possible_agents}
    wrapper.render_mode = getattr(env, "render_mode", None)
    wrapper.metadata = dict(getattr(env, "metadata", None) or wrapper.metadata)


class ParallelPettingZooEnv(MultiAgentEnv):
    """A ``pettingzoo.ParallelEnv`` (every live agent acts at every step) as a ``MultiAgentEnv``.

    ``reset`` and ``step`` pass PettingZoo's dicts through and add the ``"__all__"`` flags (see
    the module docstring). PettingZoo's parallel envs observe every agent that was alive at the
    start of a step, so an agent that finishes is in that step's ``obs`` (its final observation)
    with ``terminateds`` or ``truncateds`` ``True``; from the next step on it is not in
    ``agents`` and gets no action.

    Attributes:
      par_env: The wrapped PettingZoo env (``env`` is the same object).
    """

    def __init__(self, env: ParallelEnv):
        """Args:
        env: A PettingZoo parallel env, e.g. ``pistonball_v6.parallel_env()``.
        """
        _adopt(self, env, parallel=True)
        self.par_env = env
        self._finished: set[AgentID] = set()

    @property
    def env(self) -> ParallelEnv:
        """The wrapped PettingZoo env (same as ``par_env``)."""
        return self.par_env

    @property
    def agents(self) -> list[AgentID]:  # type: ignore[override]
        """The agents still in the episode: the env's ``agents`` less those reported done."""
        return [a for a in self.par_env.agents if a not in self._finished]

    def reset(  # type: ignore[override]  # per-agent dicts: see MultiAgentEnv
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[AgentID, Any], dict[AgentID, Any]]:
        """Resets the PettingZoo env with ``seed`` and ``options``; every agent observes."""
        obs, infos = self.par_env.reset(seed=seed, options=options)
        self._finished = set()
        return dict(obs), dict(infos)

    def step(  # type: ignore[override]  # per-agent dicts: see MultiAgentEnv
        self, action_dict: dict[AgentID, Any]
    ) -> tuple[dict, dict[Any, float], dict[Any, bool], dict[Any, bool], dict]:
        """Steps the PettingZoo env with ``action_dict`` (one action per agent in ``agents``)."""
        obs, rewards, terms, truncs, infos = self.par_env.step(action_dict)
        obs, rewards, terms, truncs, infos = (
            dict(obs),
            dict(rewards),
            dict(terms),
            dict(truncs),
            dict(infos),
        )
        finished = {}
        for agent in dict.fromkeys([*terms, *truncs]):
            term, trunc = bool(terms.get(agent, False)), bool(truncs.get(agent, False))
            if term or trunc:
                finished[agent] = (term, trunc)
        self._finished.update(finished)
        terms["__all__"], truncs["__all__"] = _all_flags(finished, not self.agents)
        return obs, rewards, terms, truncs, infos

    def render(self) -> Any:
        """The PettingZoo env's ``render()``."""
        return self.par_env.render()

    def close(self) -> None:
        self.par_env.close()


@dataclasses.dataclass
class _StepOut:
    obs: dict = dataclasses.field(default_factory=dict)
    rewards: dict = dataclasses.field(default_factory=dict)
    terminateds: dict = dataclasses.field(default_factory=dict)
    truncateds: dict = dataclasses.field(default_factory=dict)
    infos: dict = dataclasses.field(default_factory=dict)
    finished: dict = dataclasses.field(default_factory=dict)  # agent -> (terminated, truncated)


class PettingZooEnv(MultiAgentEnv):
    """A turn-based ``pettingzoo.AECEnv`` as a ``MultiAgentEnv``: one agent acts per step.

    * ``reset`` returns the observation of ``env.agent_selection`` only.
    * ``step`` takes exactly ``{agent_to_move: action}`` (anything else is a ``ValueError``) and
      returns the observation of the next agent to move. Agents that finish are stepped with
      ``env.step(None)`` here, as the AEC API requires, so the next agent to move is always a
      live one; each finished agent is in ``terminateds`` / ``truncateds`` once, with its final
      observation in ``obs``.
    * ``rewards`` holds, for every agent, the sum of ``env.rewards`` (each AEC step's
      rewards, of every agent) over the AEC steps this ``step`` ran, so every reward of every
      agent is returned exactly once, whether or not that agent moves next.

    Attributes:
      env: The wrapped PettingZoo env.
    """

    def __init__(self, env: AECEnv):
        """Args:
        env: A PettingZoo AEC env, e.g. ``tictactoe_v3.env()``.
        """
        _adopt(self, env, parallel=False)
        self.env = env

    @property
    def agents(self) -> list[AgentID]:  # type: ignore[override]
        """The agents still in the episode (the env's ``agents``)."""
        return list(self.env.agents)

    def reset(  # type: ignore[override]  # per-agent dicts: see MultiAgentEnv
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[AgentID, Any], dict[AgentID, Any]]:
        """Resets the PettingZoo env with ``seed`` and ``options``; the first agent to move
        observes."""
        self.env.reset(seed=seed, options=options)
        self._skip_finished(_StepOut())  # an agent done at reset never moves; nothing to report
        if not self.env.agents:
            return {}, {}
        agent = self.env.agent_selection
        return {agent: self.env.observe(agent)}, {agent: self._info(agent)}

    def step(  # type: ignore[override]  # per-agent dicts: see MultiAgentEnv
        self, action_dict: dict[AgentID, Any]
    ) -> tuple[dict, dict[Any, float], dict[Any, bool], dict[Any, bool], dict]:
        """Plays ``action_dict[env.agent_selection]``, then steps finished agents out."""
        env = self.env
        if not env.agents:
            raise ValueError("PettingZooEnv.step: the episode is over (no agent is left); reset")
        agent = env.agent_selection
        if set(action_dict) != {agent}:
            raise ValueError(
                f"PettingZooEnv.step: it is agent {agent!r}'s turn, so the action dict must "
                f"hold exactly that agent; got agents {list(action_dict)}"
            )
        out = _StepOut()
        self._aec_step(action_dict[agent], out)
        self._skip_finished(out)
        if env.agents:
            nxt = env.agent_selection
            out.obs[nxt] = env.observe(nxt)
            out.terminateds[nxt] = out.truncateds[nxt] = False
            out.infos[nxt] = self._info(nxt)
        term_all, trunc_all = _all_flags(out.finished, not env.agents)
        out.terminateds["__all__"], out.truncateds["__all__"] = term_all, trunc_all
        return out.obs, out.rewards, out.terminateds, out.truncateds, out.infos

    def _info(self, agent: AgentID) -> Any:
        return self.env.infos.get(agent, {})

    def _aec_step(self, action: Any, out: _StepOut) -> None:
        """One ``env.step(action)``: adds its rewards, reports the agents it removed."""
        env = self.env
        before = {
            a: (bool(env.terminations.get(a, False)), bool(env.truncations.get(a, False)))
            for a in env.agents
        }
        env.step(action)
        for a, r in env.rewards.items():
            out.rewards[a] = out.rewards.get(a, 0.0) + float(r)
        left = set(env.agents)
        for a, (term, trunc) in before.items():
            if a not in left:
                # An agent the env removed without a flag has still ended its episode.
                term = term or not trunc
                out.terminateds[a], out.truncateds[a] = term, trunc
                out.finished[a] = (term, trunc)

    def _skip_finished(self, out: _StepOut) -> None:
        """Steps out (``env.step(None)``) finished agents until a live agent is to move."""
        env = self.env
        while env.agents:
            agent = env.agent_selection
            if not (env.terminations.get(agent, False) or env.truncations.get(agent, False)):
                return
            out.obs[agent] = env.observe(agent)
            out.infos[agent] = self._info(agent)
            self._aec_step(None, out)
            if agent in env.agents:
                raise RuntimeError(
                    f"env.step(None) for the finished agent {agent!r} left it in env.agents; "
                    "PettingZoo's AEC API removes it (AECEnv._was_dead_step)"
                )

    def render(self) -> Any:
        """The PettingZoo env's ``render()``."""
        return self.env.render()

    def close(self) -> None:
        self.env.close()


__all__ = ["ParallelPettingZooEnv", "PettingZooEnv"]
