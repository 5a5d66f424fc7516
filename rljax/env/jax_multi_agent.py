"""Multi-agent environments written in JAX, stepped inside multi-agent PPO's training program.

The protocol (``JaxMultiAgentEnv``) is the single-agent one (``rljax.env.jax_env``) keyed by
agent id:

```python
reset(key) -> (state, obs: {agent: obs})
step(state, actions: {agent: action}, key)
    -> (state, obs, rewards, terminated, truncated, info)   # dicts keyed by agent id
```

with a fixed list of ``agents`` and gymnasium ``observation_spaces`` / ``action_spaces`` dicts.
The episode ends when every agent is terminated or truncated; agents end their episodes together
(as JaxMARL's MPE tasks and Pgx's games do): an agent's own end before the episode's is ignored
(it goes on acting), and the env resets when all of its agents are done.

Every agent acts in every step (simultaneous moves), unless the env defines
``acting(state) -> bool [A]`` (defining it makes the env turn-based): which agents act on the
state's observations (``"pgx:<game>"``). Then the others' actions are ignored, and an agent's rewards are summed from
its action until it next acts (or the episode ends) and credited to that action, as RLlib's
multi-agent episodes do. One agent acts a step there (a turn is an env step), unless the env
sets ``simultaneous = True``: then ``acting`` names the agents still in the episode, who act
together (SMAX's living units, ``"jaxmarl:HeuristicEnemySMAX"``); an agent that stops acting
has its last action credited with the rewards until the episode's end (an env ends an agent's
episode by giving it none after, and by reporting it terminated at the episode's end), and
an episode's length is the most transitions any agent made, its env steps where some agent
acts in every step until the end (as SMAX's last survivor does).

Envs are selected by name with ``.environment("jaxmarl:MPE_simple_spread_v3")`` or
``.environment("pgx:connect_four")`` and ``.multi_agent(...)``
(``rljax.env.jax_adapters.jaxmarl_adapter``, ``pgx_adapter``), or a user's
``JaxMultiAgentEnv`` subclass (passed to ``.environment()`` or registered with
``register_env``), built with the ``env_config``.

Two ways run one:

- ``AgentSlots``: ``num_envs`` copies vmapped, their agents laid out as ``num_envs * A`` slot
  rows (env-major: row ``n * A + a`` is agent ``a`` of env ``n``), each row
  ``{"obs": ..., "policy": <the agent's policy index>}`` as multi-agent PPO's runners give; the
  fused rollout (``rljax.runners.jax_env``) steps simultaneous envs with same-step auto-reset,
  and turn-based ones (``AgentSlots.turn_step``) with next-step auto-reset and a ``present``
  flag per row, as ``MultiAgentVectorEnv``'s rows have.
- ``JaxMultiAgentGymEnv``: one copy as an RLlib ``MultiAgentEnv`` stepped from the host (jitted
  reset and step), for evaluation, the spaces and runner threads.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.env.jax_env import AutoResetStep, check_library, host_action, strong_types
from rljax.env.multi_agent_env import MultiAgentEnv
from rljax.utils.errors import ConfigError


class JaxMultiAgentEnv:
    """The protocol of a multi-agent environment written in JAX (subclass it).

    Attributes:
      agents: Every agent's id, in a fixed order; each acts in every step, unless the env
        defines ``acting(state)`` (turn-based; see the module docstring).
      observation_spaces: ``{agent: gymnasium space}``.
      action_spaces: ``{agent: gymnasium space}``.
      simultaneous: With ``acting(state)``: whether the agents it names act together (the ones
        still in the episode) rather than one a step; False by default.
    """

    simultaneous: bool = False
    agents: list[str]
    observation_spaces: dict[str, gym.Space]
    action_spaces: dict[str, gym.Space]

    def reset(self, key: jax.Array) -> tuple[Any, dict[str, Any]]:
        """``(state, {agent: obs})`` of a new episode; traceable."""
        raise NotImplementedError

    def step(
        self, state: Any, actions: dict[str, Any], key: jax.Array
    ) -> tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], dict]:
        """``(state, obs, rewards, terminated, truncated, info)``, the middle four keyed by agent
        id; traceable. No auto-reset."""
        raise NotImplementedError


class SlotResult(NamedTuple):
    """A turn-based step's rows ``[N * A]`` (what the acting step reads of a result).

    Attributes:
      obs: The slot observations ``{"obs", "policy"}``.
      reward: Each agent's rewards since it last acted, where ``present`` (else 0).
      terminated, truncated: The episode's end, on the row where it ended (all present).
      env_id: The slot index (the acting step's stream).
      present: The row is a result: the agent acts next, or the episode ended.
    """

    obs: Any
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    env_id: jax.Array
    present: jax.Array


class TurnState(NamedTuple):
    """A turn-based env's slot state: the env's, each agent's rewards not yet credited [A],
    and whether the last step ended the episode (this step resets)."""

    env: Any
    pending: jax.Array
    ended: jax.Array


def is_jax_multi_agent_env(obj: Any) -> bool:
    """Whether ``obj`` (an instance) follows the protocol: a ``JaxMultiAgentEnv``, or an object
    with ``reset``, ``step``, ``agents`` and ``observation_spaces`` / ``action_spaces`` dicts."""
    if isinstance(obj, JaxMultiAgentEnv):
        return True
    if isinstance(obj, MultiAgentEnv):  # RLlib's kind, stepped from the host
        return False
    methods = all(callable(getattr(obj, name, None)) for name in ("reset", "step"))
    spaces = all(
        isinstance(getattr(obj, name, None), dict)
        for name in ("observation_spaces", "action_spaces")
    )
    return methods and spaces and bool(getattr(obj, "agents", None))


# "library:id" prefixes of multi-agent JAX envs and the adapter that builds each.
_EXTRAS = {"jaxmarl": "jaxmarl", "pgx": "pgx"}


def jax_multi_agent_prefix(env: Any) -> str | None:
    """The adapter prefix of a multi-agent JAX env id (``"jaxmarl"``), or None."""
    if isinstance(env, str) and ":" in env and env.split(":", 1)[0] in _EXTRAS:
        return env.split(":", 1)[0]
    return None


def make_jax_multi_agent_env(env: Any, env_config: dict[str, Any], name: str | None = None) -> Any:
    """Builds ``env``: an id (``"jaxmarl:MPE_simple_spread_v3"``) or a ``JaxMultiAgentEnv``
    class taking the ``env_config``; checks what it built."""
    name = name or str(env)
    if jax_multi_agent_prefix(env) is not None:
        prefix, env_id = env.split(":", 1)
        check_library(prefix, env, _EXTRAS[prefix])
        from rljax.env.jax_adapters import jaxmarl_adapter, pgx_adapter

        adapters = {"jaxmarl": jaxmarl_adapter.make, "pgx": pgx_adapter.make}
        built = adapters[prefix](env_id, dict(env_config))
    else:
        try:
            built = env(dict(env_config))
        except TypeError as e:
            raise ConfigError(
                f"building the JAX multi-agent env {name!r} failed: {e}. rljax builds a "
                "JaxMultiAgentEnv class with the env_config: define __init__(self, config=None)"
            ) from e
    if not is_jax_multi_agent_env(built):
        raise ConfigError(
            f"{name!r} built {type(built).__name__}, which does not follow rljax's "
            "JaxMultiAgentEnv protocol (reset(key), step(state, actions, key), agents, "
            "observation_spaces / action_spaces dicts)"
        )
    agents = list(getattr(built, "agents", None) or [])
    for which in ("observation_spaces", "action_spaces"):
        spaces = getattr(built, which, None)
        if not isinstance(spaces, dict) or sorted(map(str, spaces)) != sorted(map(str, agents)):
            raise ConfigError(
                f"the JAX multi-agent env {name!r} needs {which} as a dict of a gymnasium space "
                f"for each of its agents {agents}; it has {spaces!r}"
            )
    if not agents:
        raise ConfigError(f"the JAX multi-agent env {name!r} has no agents")
    return built


class JaxMultiAgentCreator:
    """``creator(env_config) -> JaxMultiAgentGymEnv`` of an id or a ``JaxMultiAgentEnv`` class
    (picklable). The fused rollout steps the wrapper's ``jax_env``.

    Attributes:
      env, name: What was selected, and by which name.
    """

    def __init__(self, env: Any, name: str):
        self.env, self.name = env, name
        self._compiled: dict[str, HostPrograms] = {}

    def __call__(self, env_config: Any) -> JaxMultiAgentGymEnv:
        config = dict(env_config or {})
        env = make_jax_multi_agent_env(self.env, config, self.name)
        # An adapter's env is a pure function of its id and env_config: the copies a vector
        # env builds share one compiled reset and step instead of compiling one each (a user's
        # class may read the EnvContext's indices, so its copies compile their own).
        key = _config_key(config) if jax_multi_agent_prefix(self.env) is not None else None
        gym_env = JaxMultiAgentGymEnv(env, self._compiled.get(key) if key else None)
        if key is not None:
            self._compiled.setdefault(key, gym_env.programs)
        return gym_env

    def __getstate__(self) -> dict[str, Any]:
        return {"env": self.env, "name": self.name}  # compiled programs stay in this process

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.env, self.name = state["env"], state["name"]
        self._compiled = {}


def _config_key(config: dict[str, Any]) -> str | None:
    """A key equal for equal ``env_config`` dicts of plain values (strings, numbers, None and
    lists or tuples of them); None for any other (an array's repr abbreviates, an object's can
    hide a change), whose envs compile their own programs."""

    def plain(v: Any) -> bool:
        if isinstance(v, list | tuple):
            return all(plain(x) for x in v)
        return v is None or isinstance(v, str | int | float | bool)

    if not all(isinstance(k, str) and plain(v) for k, v in config.items()):
        return None
    return repr(sorted(config.items()))


class HostPrograms(NamedTuple):
    """A JAX multi-agent env's jitted ``reset``, ``step`` and ``acting`` (None where the env
    has no ``acting``), shared by the copies of one env built from equal configs."""

    reset: Callable[..., Any]
    step: Callable[..., Any]
    acting: Callable[..., Any] | None


def jax_multi_agent_creator(env: Any) -> JaxMultiAgentCreator | None:
    """The creator of a multi-agent JAX env given to ``.environment()``: an adapter id, a
    ``JaxMultiAgentEnv`` class, or a name registered for one; None for any other env."""
    from rljax.env.registry import registered_creator

    if jax_multi_agent_prefix(env) is not None:
        return JaxMultiAgentCreator(env, env)
    if isinstance(env, str):
        registered = registered_creator(env)
        if inspect.isclass(registered) and issubclass(registered, JaxMultiAgentEnv):
            return JaxMultiAgentCreator(registered, env)
        return None
    if inspect.isclass(env) and issubclass(env, JaxMultiAgentEnv):
        return JaxMultiAgentCreator(env, env.__qualname__)
    return None


def _space_key(space: gym.Space) -> str:
    if isinstance(space, gym.spaces.Dict):  # RLlib's action-mask observations, nested spaces
        return repr({k: _space_key(sub) for k, sub in space.spaces.items()})
    return repr((type(space).__name__, space.shape, space.dtype, getattr(space, "n", None)))


def _as_space_dtypes(obs: Any, space: gym.Space, xp: Any = jnp) -> Any:
    """``obs`` with each leaf as an array of its space's dtype (a ``Dict`` space's leaf by
    leaf), with ``xp`` (``jnp`` inside programs, ``np`` on the host)."""
    if isinstance(space, gym.spaces.Dict):
        return {k: _as_space_dtypes(obs[k], sub, xp) for k, sub in space.spaces.items()}
    return xp.asarray(obs, space.dtype)


class AgentSlots:
    """``num_envs`` copies of a ``JaxMultiAgentEnv`` as slot rows: what the fused rollout's
    ``batched_reset`` / ``batched_step`` (``rljax.env.jax_env``) call instead of vmapping
    a single-agent env.

    Args:
      env: The ``JaxMultiAgentEnv``; its agents must share one observation space and one action
        space (one slot layout).
      agent_policy: Each agent's policy index, ``[A]`` in ``env.agents``' order (the mapping is
        fixed when the algorithm is built: the agents are the same in every episode).
    """

    batches_itself = True  # rljax.env.jax_env's batched_reset / batched_step call its own

    def __init__(self, env: Any, agent_policy: np.ndarray):
        self.env = env
        self.agents = list(env.agents)
        misfit = self.misfit(env)
        if misfit is not None:
            raise ConfigError(misfit)
        self.observation_space = env.observation_spaces[self.agents[0]]
        self.action_space = env.action_spaces[self.agents[0]]
        self.agent_policy = np.asarray(agent_policy, np.int32)
        if self.agent_policy.shape != (len(self.agents),):
            raise ValueError(f"agent_policy must be [{len(self.agents)}]; got {agent_policy!r}")

    @staticmethod
    def misfit(env: Any) -> str | None:
        """Why ``env``'s agents cannot share slot rows (their spaces differ), or None."""
        for which in ("observation_spaces", "action_spaces"):
            spaces = getattr(env, which)
            if len({_space_key(spaces[a]) for a in env.agents}) > 1:
                return (
                    f"the JAX multi-agent env's agents have different {which} "
                    f"({ {a: spaces[a] for a in env.agents} }); the fused rollout stacks the "
                    "agents' rows, so they must share one (with num_env_runners=1 the env is "
                    "stepped from the host, which pads the rows)"
                )
        return None

    @property
    def num_agents(self) -> int:
        """Agents per env (``A``)."""
        return len(self.agents)

    @property
    def turn_based(self) -> bool:
        """Whether the env says which agents act (``acting(state)``)."""
        return callable(getattr(self.env, "acting", None))

    @property
    def simultaneous(self) -> bool:
        """Whether several agents act in a step: every env without ``acting``, and one with it
        whose ``simultaneous`` attribute is True (one mover a step otherwise)."""
        return not self.turn_based or bool(getattr(self.env, "simultaneous", False))

    def _acting(self, state: Any) -> jax.Array:
        return jnp.asarray(self.env.acting(state), bool).reshape(self.num_agents)

    def turn_reset(self, key: jax.Array, num_slots: int) -> tuple[TurnState, SlotResult]:
        """Turn-based: ``num_slots / A`` envs reset; the first movers' rows present."""
        states, obs = self.batched_reset(key, num_slots)
        n = self._num_envs(num_slots)
        present = self._rows(jax.vmap(self._acting)(states))
        zeros = jnp.zeros((num_slots,), bool)
        pending = jnp.zeros((n, self.num_agents), jnp.float32)
        turn = TurnState(states, pending, jnp.zeros((n,), bool))
        env_id = jnp.arange(num_slots, dtype=jnp.int32)
        return turn, SlotResult(
            obs, jnp.zeros((num_slots,), jnp.float32), zeros, zeros, env_id, present
        )

    def _one_turn(self, turn: TurnState, actions: jax.Array, key: jax.Array) -> tuple[Any, ...]:
        """One turn-based env's step, next-step auto-reset: where the last step ended the
        episode the env resets (the actions are ignored) and its first movers are present."""
        step_key, reset_key = jax.random.split(key)
        acts = {a: actions[i] for i, a in enumerate(self.agents)}
        state, obs, rewards, terminated, truncated, _ = self.env.step(turn.env, acts, step_key)
        term, trunc, reward, done = self._ends(terminated, truncated, rewards)
        owed = turn.pending + reward
        present = done | self._acting(state)
        stepped = (
            TurnState(state, jnp.where(present, 0.0, owed), done),
            self._slot_obs(obs),
            jnp.where(present, owed, 0.0),
            term,
            trunc,
            present,
        )
        reset_state, reset_obs = self.env.reset(reset_key)
        never = jnp.zeros((self.num_agents,), bool)
        reset = (
            TurnState(reset_state, jnp.zeros_like(owed), jnp.zeros((), bool)),
            self._slot_obs(reset_obs),
            jnp.zeros_like(owed),
            never,
            never,
            self._acting(reset_state),
        )
        pick = lambda new, old: jnp.where(turn.ended, new, old)  # noqa: E731
        return jax.tree.map(pick, reset, stepped)

    def turn_step(
        self, turn: TurnState, actions: jax.Array, key: jax.Array
    ) -> tuple[TurnState, SlotResult]:
        """Turn-based: every env stepped on its acting agents' actions (``[N * A]`` rows);
        ``(turn state, SlotResult [N * A])``."""
        n = turn.ended.shape[0]
        per_env = actions.reshape((n, self.num_agents, *actions.shape[1:]))
        turn, obs, reward, term, trunc, present = jax.vmap(self._one_turn)(
            turn, per_env, jax.random.split(key, n)
        )
        env_id = jnp.arange(n * self.num_agents, dtype=jnp.int32)
        rows = self._rows((obs, reward, term, trunc, present))
        return turn, SlotResult(rows[0], rows[1], rows[2], rows[3], env_id, rows[4])

    def _slot_obs(self, obs: dict[str, Any]) -> dict[str, jax.Array]:
        """One env's observations as ``{"obs": [A, ...], "policy": [A]}``."""
        space = self.observation_space
        per_agent = [_as_space_dtypes(obs[a], space) for a in self.agents]
        stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *per_agent)
        return {"obs": stacked, "policy": jnp.asarray(self.agent_policy)}

    def _rows(self, tree: Any) -> Any:
        """``[N, A, ...]`` leaves as ``[N * A, ...]`` slot rows."""
        return jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), tree)

    def _num_envs(self, num_slots: int) -> int:
        if num_slots % self.num_agents:
            raise ValueError(f"{num_slots} slots are not whole envs of {self.num_agents} agents")
        return num_slots // self.num_agents

    def batched_reset(self, key: jax.Array, num_slots: int) -> tuple[Any, Any]:
        """``(states [N], slot obs [N * A])`` of ``num_slots / A`` envs."""
        keys = jax.random.split(key, self._num_envs(num_slots))
        states, obs = jax.vmap(self.env.reset)(keys)
        return states, self._rows(jax.vmap(self._slot_obs)(obs))

    def _one_step(self, state: Any, actions: jax.Array, key: jax.Array) -> tuple[Any, Any]:
        """One env's step with same-step auto-reset: ``[A]`` rows of ``AutoResetStep``."""
        step_key, reset_key = jax.random.split(key)
        acts = {a: actions[i] for i, a in enumerate(self.agents)}
        state, obs, rewards, terminated, truncated, _ = self.env.step(state, acts, step_key)
        term, trunc, reward, done = self._ends(terminated, truncated, rewards)
        reset_state, reset_obs = self.env.reset(reset_key)
        pick = lambda new, old: jnp.where(done, new, old)  # noqa: E731
        next_state = jax.tree.map(pick, reset_state, state)
        final_obs = self._slot_obs(obs)
        next_obs = jax.tree.map(pick, self._slot_obs(reset_obs), final_obs)
        return next_state, AutoResetStep(next_obs, reward, term, trunc, final_obs, {})

    def _ends(self, terminated: dict, truncated: dict, rewards: dict) -> tuple[jax.Array, ...]:
        """``(terminated [A], truncated [A], reward [A], done)``: the agents' ends count where
        all are done (the episode's end); an agent's own end before it is ignored."""
        term = jnp.stack([jnp.asarray(terminated[a], bool) for a in self.agents])
        trunc = jnp.stack([jnp.asarray(truncated[a], bool) for a in self.agents]) & ~term
        reward = jnp.stack([jnp.asarray(rewards[a], jnp.float32) for a in self.agents])
        done = jnp.all(term | trunc)
        return term & done, trunc & done, reward, done

    def batched_step(self, states: Any, actions: jax.Array, key: jax.Array) -> tuple[Any, Any]:
        """Every env stepped on its agents' actions (``[N * A]`` slot rows, env-major):
        ``(states, AutoResetStep [N * A])``."""
        n = jax.tree.leaves(states)[0].shape[0]
        per_env = actions.reshape((n, self.num_agents, *actions.shape[1:]))
        states, out = jax.vmap(self._one_step)(states, per_env, jax.random.split(key, n))
        return states, self._rows(out)


class JaxMultiAgentGymEnv(MultiAgentEnv):
    """A ``JaxMultiAgentEnv`` as an RLlib ``MultiAgentEnv``: jitted reset and step called from
    the host (evaluation, the algorithm's spaces, runner threads).

    Args:
      env: The ``JaxMultiAgentEnv``.
      programs: Another copy's compiled functions, for an env built from an equal config;
        None compiles this env's own.

    Attributes:
      programs: The ``HostPrograms`` this copy steps with (the creator hands them on).
    """

    def __init__(self, env: Any, programs: HostPrograms | None = None):
        self.jax_env = env
        self.possible_agents = list(env.agents)
        self.agents = list(env.agents)
        self.observation_spaces = dict(env.observation_spaces)
        self.action_spaces = dict(env.action_spaces)
        super().__init__()
        if programs is None:
            # Strong-typed states: a reset writing Python numbers would make the step compile
            # twice (JaxMARL's SMAX does).
            programs = HostPrograms(
                jax.jit(lambda key: strong_types(env.reset(key))),
                jax.jit(env.step),
                jax.jit(env.acting) if callable(getattr(env, "acting", None)) else None,
            )
        self.programs = programs
        self._reset, self._step, self._acting_fn = programs
        self._state: Any = None
        self._key = jax.random.PRNGKey(0)
        self._ids: list[Any] = list(env.agents)
        self._obs_spaces: dict[Any, gym.Space] = dict(env.observation_spaces)
        self._pending: dict[Any, float] = dict.fromkeys(self._ids, 0.0)

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        if seed is not None:
            self._key = jax.random.PRNGKey(seed)
        self._key, key = jax.random.split(self._key)
        self._state, obs = self._reset(key)
        self.agents = list(self.possible_agents)
        self._pending = dict.fromkeys(self._ids, 0.0)
        acting = self._acting_now(done=False)
        return self._host_obs(obs, acting), {a: {} for a in acting}

    def _acting_now(self, done: bool) -> list[Any]:
        """The agents that act next (all at an episode's end and in simultaneous envs)."""
        if done or self._acting_fn is None:
            return list(self._ids)
        flags = np.asarray(self._acting_fn(self._state))
        return [a for a, on in zip(self._ids, flags, strict=True) if on]

    def _host_obs(self, obs: dict[Any, Any], agents: list[Any]) -> dict[Any, Any]:
        return {a: _as_space_dtypes(obs[a], self._obs_spaces[a], np) for a in agents}

    def step(  # type: ignore[override]
        self, action_dict: dict[str, Any]
    ) -> tuple[dict, dict, dict, dict, dict]:
        if self._state is None:
            raise RuntimeError("step() before reset()")
        ids = self._ids
        acting = self._acting_now(done=False)
        missing = [a for a in acting if a not in action_dict]
        if missing:
            raise ValueError(
                f"agents {acting} act in this step of the JAX multi-agent env; no action for "
                f"{missing} (given: {sorted(action_dict)})"
            )
        self._key, key = jax.random.split(self._key)
        # Agents that do not act this turn send a placeholder the env ignores.
        spaces = self.jax_env.action_spaces
        actions = {
            a: host_action(action_dict[a] if a in action_dict else self._noop(a), spaces[a])
            for a in ids
        }
        self._state, obs, rewards, term, trunc, _ = self._step(self._state, actions, key)
        terminateds: dict[Any, bool] = {a: bool(term[a]) for a in ids}
        truncateds: dict[Any, bool] = {a: bool(trunc[a]) and not terminateds[a] for a in ids}
        done = all(terminateds[a] or truncateds[a] for a in ids)
        if not done:  # an agent's own end counts at the episode's end (AgentSlots._ends)
            terminateds = dict.fromkeys(ids, False)
            truncateds = dict.fromkeys(ids, False)
        terminateds["__all__"] = done and all(terminateds[a] for a in ids)
        truncateds["__all__"] = done and not terminateds["__all__"]
        for a in ids:
            self._pending[a] += float(rewards[a])
        nxt = self._acting_now(done)
        # RLlib's rule: an agent's rewards since it acted reach it with its next observation.
        rews = {a: self._pending[a] for a in nxt}
        for a in nxt:
            self._pending[a] = 0.0
        return self._host_obs(obs, nxt), rews, terminateds, truncateds, {a: {} for a in nxt}

    def _noop(self, agent: Any) -> Any:
        space = self.jax_env.action_spaces[agent]
        return np.zeros(space.shape, space.dtype)


__all__ = [
    "AgentSlots",
    "HostPrograms",
    "SlotResult",
    "TurnState",
    "JaxMultiAgentCreator",
    "JaxMultiAgentEnv",
    "JaxMultiAgentGymEnv",
    "is_jax_multi_agent_env",
    "jax_multi_agent_creator",
    "jax_multi_agent_prefix",
    "make_jax_multi_agent_env",
]
