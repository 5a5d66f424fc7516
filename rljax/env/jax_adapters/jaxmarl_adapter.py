"""JaxMARL's MPE tasks (``"jaxmarl:MPE_simple_spread_v3"``), Overcooked
(``"jaxmarl:overcooked"``), Hanabi, SMAX, the Coin Game and the Switch Riddle as
``JaxMultiAgentEnv``s.

``env_config`` holds the task's keyword arguments (``{"num_agents": 4, "local_ratio": 0.5}``);
``max_episode_steps`` is accepted as RLlib's name for the task's ``max_steps``. An MPE or
Overcooked episode ends only at its time limit, for every agent at once: the adapter steps
without JaxMARL's auto-reset (``step_env``) and reports that end as truncation, not
termination, so PPO bootstraps the last value as RLlib does for a time limit.

Overcooked: ``env_config["layout"]`` is a layout's name (``"cramped_room"``,
``"asymm_advantages"``, ``"coord_ring"``, ``"forced_coord"``, ``"counter_circuit"``) or
JaxMARL's layout dict; ``"shaped_reward_coeff"`` (default 0) adds that share of JaxMARL's
shaped reward (for picking up onions, plates, soup) to each agent's reward, as JaxMARL's IPPO
baseline does. Observations are the grid's 26 feature planes as float32, shaped as the env
returns them (height, width, 26; JaxMARL's declared space has the two swapped).

Hanabi (``"jaxmarl:hanabi"``, its keyword arguments in ``env_config``) is turn-based: the agent
whose seat is to play acts (``acting(state)``), each agent observes RLlib's action-masking Dict
``{"action_mask": JaxMARL's legal moves, "observations": its 658-value view}`` (the other
agent's only legal move is the no-op), and the game's end is termination.

SMAX (``"jaxmarl:HeuristicEnemySMAX"``: the allies against JaxMARL's scripted enemies;
``"jaxmarl:SMAX"``: both teams as agents) takes ``env_config["scenario"]`` as a map's name
(``"3m"``, ``"2s3z"``, ``"smacv2_5_units"``, ...) or JaxMARL's ``Scenario``. Its units die at
different times, and each agent's episode ends when its unit dies, as in RLlib's multi-agent
episodes: the env says which agents act (``acting(state)``: the living ones), so a dead unit's
agent is no longer stepped, and it is credited only the rewards up to its death (SMAX gives
every agent of a team the team's reward, the dead ones' too). Its last action is then
bootstrapped as terminal, as RLlib does for an agent terminated early; its row comes back with
the episode's end. Observations are RLlib's action-masking Dict (``"action_mask"``: JaxMARL's
available actions; a dead unit's only one is the stop action). A team's destruction is
termination, and so is a unit's death for its agent; the time limit is truncation for the
agents still alive (``max_episode_steps``, JaxMARL's ``max_steps``, default 100; JaxMARL checks
the step count before counting the step, so an episode ends after ``max_steps + 1`` steps, as
its MPE tasks do). Discrete actions only (``action_type="discrete"``, SMAX's default).

The Coin Game (``"jaxmarl:coin_game"``; ``env_config``: ``num_inner_steps``,
``num_outer_steps``, ``cnn``, ``egocentric``, ``shared_rewards``, ``payoff_matrix``) is a
two-agent social dilemma whose episode is ``num_outer_steps`` games of ``num_inner_steps``
steps (10 x 10 by default; the coins and agents are placed anew between games, inside the
episode). The episode's end is its time limit, truncation for both agents, as for MPE; the
limit is set by those two numbers, so ``max_episode_steps`` is refused. Observations (the
grid's 0/1 planes, flat unless ``cnn``) are float32 Boxes in [0, 1] (JaxMARL returns int8
while declaring uint8).

The Switch Riddle (``"jaxmarl:switch_riddle"``; ``env_config``: ``num_agents`` (3 or more),
``initial_bulb_state``, ``reward_all_die``, ``reward_all_live``): each step one agent, drawn at
random, is in the room; it sees whether it is there and the bulb's state (each agent's
observation a float32 Box of those two 0/1 flags), and only its action counts (nothing, switch
the light, or tell). Telling ends the episode as termination for every agent (each is given +1
when every agent has been in the room, -1 otherwise); the time limit, ``4 * num_agents - 6``
steps, ends it as truncation. The limit follows from ``num_agents``, so ``max_episode_steps``
is refused.

Other JaxMARL families (STORM, MABrax, JaxNav, ...) are refused by name: they have not been
checked against rljax yet.
"""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.utils.checks import TIME_LIMIT
from rljax.utils.errors import ConfigError, closest


def to_gym_space(space: Any) -> gym.Space:
    """A JaxMARL space as a gymnasium one (Discrete, MultiDiscrete, Box)."""
    from jaxmarl.environments import spaces

    if isinstance(space, spaces.Discrete):
        return gym.spaces.Discrete(int(space.n))
    if isinstance(space, spaces.MultiDiscrete):
        return gym.spaces.MultiDiscrete(np.asarray(space.num_categories, np.int64))
    if isinstance(space, spaces.Box):
        shape = tuple(int(d) for d in np.atleast_1d(space.shape))  # Hanabi's is an int
        dtype: Any = np.dtype(space.dtype)  # gymnasium < 1.4 types Box's dtype narrower
        low = np.broadcast_to(np.asarray(space.low, dtype), shape)
        high = np.broadcast_to(np.asarray(space.high, dtype), shape)
        return gym.spaces.Box(low, high, shape, dtype)
    raise ConfigError(f"JaxMARL space {type(space).__name__} has no gymnasium counterpart here")


def mpe_ids() -> list[str]:
    """JaxMARL's registered MPE task ids."""
    import jaxmarl

    return sorted(e for e in jaxmarl.registered_envs if e.startswith("MPE_"))


# JaxMARL's SMAX ids rljax runs (LearnedPolicyEnemySMAX needs a policy JaxMARL holds).
SMAX_IDS = ("HeuristicEnemySMAX", "SMAX")


def supported_ids() -> list[str]:
    """The JaxMARL ids rljax runs: the MPE tasks, Overcooked, Hanabi, SMAX, the Coin Game and
    the Switch Riddle."""
    return [*mpe_ids(), "overcooked", "hanabi", *SMAX_IDS, "coin_game", "switch_riddle"]


# The Switch Riddle's "tell" action, which ends its episode.
SWITCH_RIDDLE_TELL = 2


def _look_up(
    kwargs: dict[str, Any], key: str, table: dict[str, Any], env_id: str, what: str, other: str
) -> dict[str, Any]:
    """``kwargs`` with ``kwargs[key]``, where it is a name, replaced by ``table``'s entry;
    an unknown name is refused, naming the known ones (``what``) and ``other`` ways."""
    name = kwargs.get(key)
    if isinstance(name, str):
        if name not in table:
            names = sorted(table)
            raise ConfigError(
                f"jaxmarl env {env_id!r}: {key} {name!r} is not one of JaxMARL's {what} "
                f"{names}{closest(name, names)} (or give {other})"
            )
        kwargs[key] = table[name]
    return kwargs


def _keywords(cls: type) -> set[str] | None:
    """The keyword arguments ``cls(...)`` reads: its ``__init__``'s named parameters and,
    where it passes ``**kwargs`` on, its bases' (None when every one takes ``**kwargs``)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names |= {
            p.name
            for p in params
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
        }
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            return names
    return None


def _overcooked_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Overcooked's keyword arguments with a layout given by name looked up."""
    from jaxmarl.environments.overcooked import overcooked_layouts

    return _look_up(kwargs, "layout", overcooked_layouts, "overcooked", "layouts", "a layout dict")


def _smax_kwargs(env_id: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """SMAX's keyword arguments with a scenario given by its map's name looked up."""
    from jaxmarl.environments.smax.smax_env import MAP_NAME_TO_SCENARIO

    return _look_up(kwargs, "scenario", MAP_NAME_TO_SCENARIO, env_id, "maps", "a jaxmarl Scenario")


def _masked_spaces(
    observation_spaces: dict[str, gym.Space], action_spaces: dict[str, gym.Space]
) -> dict[str, gym.Space]:
    """RLlib's action-masking Dict spaces: ``{"action_mask": one flag per action,
    "observations": the agent's own space}``."""
    return {
        a: gym.spaces.Dict(
            {
                "action_mask": gym.spaces.Box(0.0, 1.0, (int(getattr(space, "n", 0)),), np.float32),
                "observations": observation_spaces[a],
            }
        )
        for a, space in action_spaces.items()
    }


def _masked_obs(masks: dict[str, Any], obs: dict[str, Any], agents: list[str]) -> dict[str, Any]:
    """Each agent's observation in its action-masking Dict (float32 leaves)."""
    return {
        a: {
            "action_mask": jnp.asarray(masks[a], jnp.float32),
            "observations": jnp.asarray(obs[a], jnp.float32),
        }
        for a in agents
    }


class JaxMARLEnv:
    """One JaxMARL MPE task with its keyword arguments bound (it follows
    ``rljax.env.jax_multi_agent.JaxMultiAgentEnv``'s protocol).

    Args:
      env_id: A JaxMARL MPE id (``mpe_ids()``), ``"overcooked"``, ``"coin_game"`` or
        ``"switch_riddle"`` (``"hanabi"`` is ``JaxMARLHanabi``'s, the SMAX ids
        ``JaxMARLSMAX``'s).
      env_config: The task's keyword arguments (``max_episode_steps`` for ``max_steps``, but
        for the Coin Game, whose limit is ``num_inner_steps * num_outer_steps``, and the Switch
        Riddle, whose limit is ``4 * num_agents - 6``; Overcooked's ``layout`` by name, and
        ``shaped_reward_coeff``).
    """

    def __init__(self, env_id: str, env_config: dict[str, Any]):
        import jaxmarl

        ids = supported_ids()
        if env_id not in ids:
            raise ConfigError(
                f"jaxmarl env {env_id!r}: rljax runs JaxMARL's MPE tasks, Overcooked, Hanabi, "
                f"SMAX, the Coin Game and the Switch Riddle {ids}{closest(env_id, ids)} (the "
                "other families have not been checked against rljax yet)"
            )
        kwargs = dict(env_config)
        self.coin_game = env_id == "coin_game"
        if self.coin_game and "max_episode_steps" in kwargs:
            raise ConfigError(
                f"jaxmarl env 'coin_game': max_episode_steps={kwargs['max_episode_steps']!r}; "
                "its episode is num_outer_steps games of num_inner_steps steps (10 x 10 by "
                "default): set those in env_config instead"
            )
        self.switch_riddle = env_id == "switch_riddle"
        if self.switch_riddle:
            if "max_episode_steps" in kwargs:
                raise ConfigError(
                    "jaxmarl env 'switch_riddle': max_episode_steps="
                    f"{kwargs['max_episode_steps']!r}; its time limit is 4 * num_agents - 6 "
                    "steps: set num_agents in env_config instead"
                )
            n = kwargs.get("num_agents", 3)
            if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 3:
                raise ConfigError(
                    f"jaxmarl env 'switch_riddle': num_agents={n!r}; use an int of at least 3"
                )
            kwargs["num_agents"] = int(n)
        if "max_episode_steps" in kwargs:
            kwargs["max_steps"] = TIME_LIMIT("max_episode_steps", kwargs.pop("max_episode_steps"))
        self.overcooked = env_id == "overcooked"
        self.shaped_reward_coeff = 0.0
        if self.overcooked:
            coeff = kwargs.pop("shaped_reward_coeff", 0.0)
            if isinstance(coeff, bool) or not isinstance(coeff, int | float):
                raise ConfigError(
                    f"jaxmarl env 'overcooked': shaped_reward_coeff={coeff!r}; use a number "
                    "(0, the default: the env's own reward only)"
                )
            self.shaped_reward_coeff = float(coeff)
            kwargs = _overcooked_kwargs(kwargs)
        if env_id in SMAX_IDS:
            kwargs = _smax_kwargs(env_id, kwargs)
        try:
            self.env = jaxmarl.make(env_id, **kwargs)
        except TypeError as e:
            raise ConfigError(
                f"jaxmarl env {env_id!r} does not take env_config {sorted(kwargs)}: {e}"
            ) from e
        # MPE's tasks take **kwargs, pass them up their base classes and drop what none reads:
        # refused here. (SMAX's wrappers hand theirs to an inner env instead: not walked.)
        accepted = _keywords(type(self.env)) if env_id.startswith("MPE_") else None
        unknown = sorted(set(kwargs) - accepted) if accepted is not None else []
        if unknown:
            raise ConfigError(
                f"jaxmarl env {env_id!r} does not take env_config {unknown}"
                f"{closest(unknown[0], sorted(accepted or ()))}; it takes {sorted(accepted or ())}"
            )
        self.agents = list(self.env.agents)
        self.observation_spaces = {
            a: to_gym_space(self.env.observation_space(a)) for a in self.agents
        }
        if self.overcooked or self.coin_game or self.switch_riddle:
            # float32 Boxes of the observations' own shape: Overcooked's declared space swaps
            # h and w; the Coin Game's int8 0/1 planes are declared uint8; the Switch Riddle's
            # two 0/1 int flags are declared MultiDiscrete([2, 2]).
            high = 255.0 if self.overcooked else 1.0
            obs = jax.eval_shape(self.env.reset, jax.random.PRNGKey(0))[0]
            self.observation_spaces = {
                a: gym.spaces.Box(0.0, high, tuple(obs[a].shape), np.float32) for a in self.agents
            }
        self.action_spaces = {a: to_gym_space(self.env.action_space(a)) for a in self.agents}
        if self.coin_game:
            self.max_episode_steps = int(self.env.num_inner_steps * self.env.num_outer_steps)
        else:
            self.max_episode_steps = int(getattr(self.env, "max_steps", 0) or 0)

    def _obs(self, obs: dict[str, Any]) -> dict[str, Any]:
        if self.overcooked or self.coin_game or self.switch_riddle:
            return {a: jnp.asarray(obs[a], jnp.float32) for a in self.agents}
        return obs

    def reset(self, key: jax.Array) -> tuple[Any, dict[str, Any]]:
        obs, state = self.env.reset(key)
        return state, self._obs(obs)

    def step(
        self, state: Any, actions: dict[str, Any], key: jax.Array
    ) -> tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], dict]:
        before = state.agent_in_room if self.switch_riddle else None
        obs, state, rewards, dones, info = self.env.step_env(key, state, actions)
        if self.overcooked and self.shaped_reward_coeff:
            shaped = info["shaped_reward"]
            rewards = {a: rewards[a] + self.shaped_reward_coeff * shaped[a] for a in self.agents}
        never = jnp.zeros((), bool)
        # MPE, Overcooked and the Coin Game end only at their time limit.
        terminated = {a: never for a in self.agents}
        if self.switch_riddle:  # the agent in the room told: the end of the game
            acted = jnp.stack([jnp.asarray(actions[a]) for a in self.agents])[before]
            told = jnp.asarray(acted == SWITCH_RIDDLE_TELL, bool)
            terminated = {a: told for a in self.agents}
        truncated = {a: jnp.asarray(dones[a], bool) & ~terminated[a] for a in self.agents}
        return state, self._obs(obs), rewards, terminated, truncated, {}


class _MaskedJaxMARLEnv(JaxMARLEnv):
    """A JaxMARL env whose agents observe RLlib's action-masking Dict: ``{"action_mask": the
    env's legal actions (``_legal(state)``), "observations": the agent's own}``."""

    def __init__(self, env_id: str, env_config: dict[str, Any]):
        super().__init__(env_id, env_config)
        self.observation_spaces = _masked_spaces(self.observation_spaces, self.action_spaces)

    def _legal(self, state: Any) -> dict[str, Any]:
        """``{agent: one flag per action}`` in ``state``."""
        raise NotImplementedError

    def _masked(self, state: Any, obs: dict[str, Any]) -> dict[str, Any]:
        return _masked_obs(self._legal(state), obs, self.agents)

    def reset(self, key: jax.Array) -> tuple[Any, dict[str, Any]]:
        """``(state, {agent: {"action_mask", "observations"}})`` of a new episode."""
        obs, state = self.env.reset(key)
        return state, self._masked(state, obs)


class JaxMARLHanabi(_MaskedJaxMARLEnv):
    """JaxMARL's Hanabi, turn-based, with RLlib's action-masking observations.

    Args:
      env_id: ``"hanabi"``.
      env_config: Hanabi's keyword arguments (``num_agents``, ``hand_size``, ...).
    """

    def _legal(self, state: Any) -> dict[str, Any]:
        return self.env.get_legal_moves(state)

    def acting(self, state: Any) -> jax.Array:
        """``[A]`` bool: the agent in the seat to play."""
        seat = jnp.argmax(state.cur_player_idx)
        return jnp.arange(len(self.agents)) == state.seat_order[seat]

    def step(
        self, state: Any, actions: dict[str, Any], key: jax.Array
    ) -> tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], dict]:
        obs, state, rewards, dones, _ = self.env.step_env(key, state, actions)
        never = jnp.zeros((), bool)
        terminated = {a: jnp.asarray(dones[a], bool) for a in self.agents}  # the game's end
        truncated = {a: never for a in self.agents}
        rewards = {a: jnp.asarray(rewards[a], jnp.float32) for a in self.agents}
        return state, self._masked(state, obs), rewards, terminated, truncated, {}


class JaxMARLSMAX(_MaskedJaxMARLEnv):
    """JaxMARL's SMAX: the living units' agents act, each agent's episode ends at its unit's
    death (see the module docstring), with RLlib's action-masking observations.

    Args:
      env_id: ``"HeuristicEnemySMAX"`` or ``"SMAX"``.
      env_config: SMAX's keyword arguments (``scenario`` by map name, ``max_episode_steps``
        for ``max_steps``, ``enemy_shoots``, ...).
    """

    simultaneous = True  # the living units act together (rljax.env.jax_multi_agent)

    def __init__(self, env_id: str, env_config: dict[str, Any]):
        action_type = env_config.get("action_type", "discrete")
        if action_type != "discrete":
            raise ConfigError(
                f"jaxmarl env {env_id!r}: action_type={action_type!r}; rljax runs SMAX with "
                "action_type='discrete' (its default), whose available actions are the masks"
            )
        super().__init__(env_id, env_config)
        # The units' indices in SMAX's state (allies first, then enemies).
        self._units = np.asarray([self.env.agent_ids[a] for a in self.agents], np.int32)
        self._stop = int(self.env.num_movement_actions) - 1  # SMAX's stop action
        self._num_allies = int(self.env.num_allies)

    @staticmethod
    def _smax_state(state: Any) -> Any:
        """SMAX's own state (HeuristicEnemySMAX's wraps it with its enemies' policy state)."""
        return state.state if hasattr(state, "enemy_policy_state") else state

    def acting(self, state: Any) -> jax.Array:
        """``[A]`` bool: the agents whose units are alive."""
        return self._smax_state(state).unit_alive[self._units]

    def _legal(self, state: Any) -> dict[str, Any]:
        return self.env.get_avail_actions(state)

    def step(
        self, state: Any, actions: dict[str, Any], key: jax.Array
    ) -> tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], dict]:
        """SMAX's step without auto-reset (dead units stop); rewards up to each unit's death,
        terminated / truncated as the module docstring says."""
        alive = self.acting(state)
        # A dead unit's action is SMAX's stop, whatever was sent for it.
        actions = {
            a: jnp.where(alive[i], jnp.asarray(actions[a], jnp.int32), self._stop)
            for i, a in enumerate(self.agents)
        }
        obs, state, rewards, dones, _ = self.env.step_env(key, state, actions)
        smax = self._smax_state(state)
        units = smax.unit_alive
        team_dead = ~jnp.any(units[: self._num_allies]) | ~jnp.any(units[self._num_allies :])
        done = jnp.asarray(dones["__all__"], bool)
        # A dead unit's episode ended with its death (terminal), also when the episode itself
        # ends at the time limit; the living ones' are cut off there (truncated).
        ended = done & (team_dead | ~self.acting(state))
        terminated = {a: ended[i] for i, a in enumerate(self.agents)}
        truncated = {a: done & ~ended[i] for i, a in enumerate(self.agents)}
        # A unit's agent is credited rewards up to its death, not its team's after it.
        rewards = {
            a: jnp.where(alive[i], jnp.asarray(rewards[a], jnp.float32), 0.0)
            for i, a in enumerate(self.agents)
        }
        return state, self._masked(state, obs), rewards, terminated, truncated, {}


def make(env_id: str, env_config: dict[str, Any]) -> JaxMARLEnv:
    """``"jaxmarl:<id>"``'s env."""
    if env_id == "hanabi":
        return JaxMARLHanabi(env_id, env_config)
    if env_id in SMAX_IDS:
        return JaxMARLSMAX(env_id, env_config)
    return JaxMARLEnv(env_id, env_config)


__all__ = [
    "SMAX_IDS",
    "SWITCH_RIDDLE_TELL",
    "JaxMARLEnv",
    "JaxMARLHanabi",
    "JaxMARLSMAX",
    "make",
    "mpe_ids",
    "supported_ids",
    "to_gym_space",
]
