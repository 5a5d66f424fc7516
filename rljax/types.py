"""The data types the packages share: what a vector env returns, what a policy is, what
acting produces and a recurrent policy reads (as brax's ``training/types.py``).

Data only: NamedTuples, a frozen dataclass and type aliases, with no behaviour and no import of
rljax, so that every layer (env, replay, runners, learners, execution, algorithms) can take them
from here without importing the layer that produces them. ``rljax.env.steps``,
``rljax.env.vector`` and ``rljax.runners.acting`` re-export them at their old paths.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:  # annotations only: an ASYNC env worker imports these types, not jax
    import jax
    import numpy as np


class StepResult(NamedTuple):
    """What a vector env returns for the sub-envs of one batch.

    Attributes:
      obs: Observations of shape [K, *obs_shape].
      reward: A float32 tensor of shape [K].
      terminated: A bool tensor of shape [K].
      truncated: A bool tensor of shape [K].
      env_id: An int32 tensor of shape [K]: which sub-env each row belongs to.
      raw_reward: For metrics, the unclipped reward (Atari with reward clipping), or None.
      game_over: For metrics, where a whole game ended (Atari with episodic life, where losing a
        life terminates the learning episode), or None: then every end counts.
      restarted: Where a sub-env raised and was rebuilt (``restart_failed_sub_environments``):
        the row is the fresh env's first observation, and the broken episode is dropped. None
        when restarts are off.
      info: The env's info arrays, where episode callbacks asked for them; else None.
      final_obs: With same-step auto-reset (``same_step_reset``): the observation each row's
        step led to, [K, *obs_shape]. Where a row's episode ended, ``obs`` is already the next
        episode's first observation and ``final_obs`` the ended episode's last one; elsewhere
        the two are equal. None with next-step auto-reset, where the step after an episode end
        returns the first observation of the next episode and is no transition.
    """

    obs: Any
    reward: Any
    terminated: Any
    truncated: Any
    env_id: Any
    raw_reward: Any = None
    game_over: Any = None
    restarted: Any = None
    info: Any = None
    final_obs: Any = None


# policy_fn(params, obs [B, ...], key) -> (action [B, ...], extras): the algorithm's acting
# policy (``PolicyParts.act``); obs is an array, or a pytree such as multi-agent slots'.
PolicyFn = Callable[[Any, Any, "jax.Array"], "tuple[jax.Array, dict[str, jax.Array]]"]


class Transition(NamedTuple):
    """Time-major transitions: every leaf has leading shape [T, K] (K sub-envs per env step).

    Attributes:
      obs: Observations acted on, [T, K, *obs_shape].
      action: Actions taken, [T, K, *action_shape].
      reward: Rewards, float32 [T, K].
      terminated: The episode ended in a terminal state, bool [T, K].
      truncated: The episode was cut without a terminal state, bool [T, K].
      valid: False where a row is no transition, bool [T, K]: the auto-reset step after an
        episode end (next-step resets only), a runner's first row (next-step resets only), a cut
        or dropped row.
      env_id: The sub-env of each row, int32 [T, K].
      extras: The policy's outputs for ``obs`` (e.g. ``action_logp``, ``vf_preds``).
      next_extras: The policy's outputs for the next observation, restricted to bootstrap keys.
      episode_return: The return of an episode that ended at this step, float32 [T, K].
      episode_len: Its length, int32 [T, K].
      episode_done: Whether an episode ended here, bool [T, K].
      next_obs: Only when the act step records steps for episode callbacks
        (``make_act_step(record_steps=True)``): the observation each row's action led to,
        [T, K, *obs_shape]; else None.
      info: Likewise, the env's info arrays that came with ``next_obs`` (EnvPool's, traced
        on the fused path), a dict of [T, K, ...] arrays; else None.
      present: Multi-agent agent slots only: whether the row is a result of the slot's agent,
        bool [T, K] (False where the agent neither acted nor finished in the step: the row
        continues nothing); None for single-agent sub-envs, whose every row is a result.
      stepped: Multi-agent agent slots only: whether the slot's env copy took an env step in
        the call, bool [T, K] (False for a call that only reset it, after its episode ended);
        None for single-agent sub-envs.
    """

    obs: Any
    action: Any
    reward: Any
    terminated: Any
    truncated: Any
    valid: Any
    env_id: Any
    extras: dict[str, Any]
    next_extras: dict[str, Any]
    episode_return: Any
    episode_len: Any
    episode_done: Any
    next_obs: Any = None
    info: Any = None
    present: Any = None
    stepped: Any = None


class ActorState(NamedTuple):
    """Per-sub-env state of a runner, leading shape [N] (N sub-envs).

    ``memory``: a recurrent policy's state after each sub-env's last observation (None for a
    policy without memory)."""

    obs: Any
    action: Any
    extras: dict[str, Any]
    valid: Any
    episode_return: Any
    episode_len: Any
    memory: Any = None


class RecurrentInput(NamedTuple):
    """What a recurrent policy reads: observations with its state and the episode marks.

    Acting passes one step per row (leading [B]); the learner passes sequences ([B, L],
    ``state_in`` at each sequence's first step).

    Attributes:
      obs: The observations.
      state_in: The policy's state before them, zeros where an episode starts.
      first: bool: the observation is an episode's first (the state resets there).
      prev_action: The action before it (zeros at an episode start), or None.
      prev_reward: The reward before it (0 at an episode start), or None.
    """

    obs: Any
    state_in: Any
    first: Any
    prev_action: Any = None
    prev_reward: Any = None


@dataclasses.dataclass(frozen=True)
class RecurrentSpec:
    """How the act step feeds a recurrent policy; a policy function carries it as its
    ``recurrent`` attribute (``policy_fn.recurrent``).

    Attributes:
      initial_state: ``initial_state(n) -> state`` of n rows (zeros).
      action_zeros: ``action_zeros(n)``: n zero actions of the policy's shape and dtype.
      prev_action: Pass the previous action (``lstm_use_prev_action``).
      prev_reward: Pass the previous reward (``lstm_use_prev_reward``).
    """

    initial_state: Callable[[int], Any]
    action_zeros: Callable[[int], Any]
    prev_action: bool = False
    prev_reward: bool = False


# act_step(params, key, actor_state, result) -> (action, actor_state, transition); ``result`` is
# a ``StepResult`` or a multi-agent env's ``MultiAgentStepResult`` of agent slots (read by field
# name: ``present`` and the metrics fields are optional), traced.
ActStep = Callable[[Any, "jax.Array", ActorState, Any], "tuple[jax.Array, ActorState, Transition]"]


class FusedRunnerState(NamedTuple):
    """Carry of the fused rollout: the EnvPool handle, actor state, the unprocessed last result."""

    handle: Any
    actor: ActorState
    result: StepResult
    key: jax.Array


__all__ = [
    "ActStep",
    "ActorState",
    "AgentMetrics",
    "FusedRunnerState",
    "InferenceFn",
    "IterationResult",
    "Params",
    "PolicyFn",
    "PolicyParts",
    "RecurrentInput",
    "RecurrentSpec",
    "RunnerLag",
    "RunnerStats",
    "State",
    "StateT",
    "StepResult",
    "Timers",
    "Transition",
]


# The algorithm's whole training state as the execution layer holds it (a PPOTrainState, an
# off-policy loop's OffPolicyState, multi-agent PPO's list of stacked states): the execution
# layer only passes it to the algorithm's functions, saves it and restores it.
State = Any
StateT = TypeVar("StateT")
# A policy's parameters as its act and inference functions take them (any pytree).
Params = Any


class InferenceFn(Protocol):
    """``infer(params, obs [B, ...], key) -> (action_dist_inputs [B, D], action [B, ...])``.

    The action is the policy's (before ``to_env_action_host``); with ``explore=False`` it is the
    greedy one and ``key`` is unused.
    """

    def __call__(
        self, params: Params, obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, jax.Array]: ...


@dataclasses.dataclass(frozen=True)
class PolicyParts(Generic[StateT]):
    """An algorithm's policy as pure functions, built once when the algorithm is built; those
    that read the training state take the algorithm's own ``StateT``.

    Attributes:
      act: ``act(acting_params, obs [B, ...], key) -> (action [B, ...], extras)``: the training
        policy, run by runner threads and inside the fused rollout (``runners/acting.py``).
        ``extras`` is a dict of [B, ...] arrays the update needs (log-probs, values, ...).
      acting_params: ``acting_params(state) -> params`` that ``act`` takes (jit-able: the
        off-policy loop calls it inside its jitted iteration).
      bootstrap_keys: The keys of ``extras`` that a transition also needs for its next
        observation (PPO's ``vf_preds``, to bootstrap a truncated episode's value).
      inference: ``inference(policy_id, explore) -> infer``; the same function object for
        policies that share a network, so that they share one compilation.
      inference_params: ``inference_params(state, policy_id) -> params`` that ``infer`` takes.
      to_env_action: Policy action -> env action, traced (the fused EnvPool rollout).
      to_env_action_host: The same on host arrays (runner threads, inference, evaluation).
      greedy_slots: Multi-agent only: ``greedy_slots(acting_params, slot_obs) -> action`` of
        every agent slot with its own policy, for evaluation; None: evaluation acts through
        ``inference(None, False)``.
      recurrent_inference: A recurrent policy's inference, ``recurrent_inference(explore) ->
        infer(params, RecurrentInput [B], key) -> (action_dist_inputs, action, state_out)``
        (its ``inference`` then refuses: it needs the state); None: not recurrent.
    """

    act: PolicyFn
    acting_params: Callable[[StateT], Params]
    bootstrap_keys: tuple[str, ...]
    inference: Callable[[str | None, bool], InferenceFn]
    inference_params: Callable[[StateT, str | None], Params]
    to_env_action: Callable[[jax.Array], jax.Array]
    to_env_action_host: Callable[[np.ndarray], np.ndarray]
    greedy_slots: Callable[[Params, Any], jax.Array] | None = None
    recurrent_inference: Callable[[bool], Callable[..., Any]] | None = None


# What one training iteration did: every loop (rljax.execution.loop) returns an IterationResult,
# and rljax.execution.results turns it into RLlib's result dict.
class Timers(NamedTuple):
    """Seconds of parts of an iteration (RLlib's ``timers``); None: not measured by this loop.

    Attributes:
      training_step: The loop's whole step (sampling and learning).
      env_runner_sampling_timer: Sampling (with post-processing), where it is measured apart
        from learning (not inside one fused program).
      learner_update_timer: The updates, where measured apart from sampling.
      learner_wait_for_runners_s: How long the learner waited for the runners' fragments.
      population_step_s: A population's step, shared by its trials.
    """

    training_step: float | None = None
    env_runner_sampling_timer: float | None = None
    learner_update_timer: float | None = None
    learner_wait_for_runners_s: float | None = None
    population_step_s: float | None = None

    def as_dict(self) -> dict[str, float]:
        """The measured timers by name."""
        return {k: float(v) for k, v in self._asdict().items() if v is not None}


class RunnerStats(NamedTuple):
    """One runner's fragments over an iteration (``env_runners/per_runner/<n>``).

    Attributes:
      num_fragments: Fragments it gave (0: a straggler, or a dropped runner).
      num_env_steps_sampled: Env steps of those fragments.
      sample_s: Seconds it spent sampling them.
      env_steps_per_s: Its throughput (NaN without sampling time).
      wait_for_learner_s: Mean seconds it waited for weights (NaN without fragments).
      policy_lag: Mean lag of its fragments, in weight versions (NaN without fragments).
    """

    num_fragments: int
    num_env_steps_sampled: int
    sample_s: float
    env_steps_per_s: float
    wait_for_learner_s: float
    policy_lag: float


class RunnerLag(NamedTuple):
    """Policy lag and throughput of a runner group's fragments (``env_runners``).

    Attributes:
      policy_lag_mean: Mean lag of the fragments, in weight versions (updates).
      policy_lag_max: The largest lag (0 without fragments).
      runner_wait_for_learner_s: Mean seconds the runners waited for weights.
      per_runner: Every runner's ``RunnerStats``, runner ``i + 1`` at index ``i``.
      learner_wait_s: Seconds the learner waited for the fragments (reported as the timer
        ``learner_wait_for_runners_s``).
    """

    policy_lag_mean: float
    policy_lag_max: int
    runner_wait_for_learner_s: float
    per_runner: tuple[RunnerStats, ...]
    learner_wait_s: float

    def env_runner_metrics(self) -> dict[str, Any]:
        """The ``env_runners`` keys: lag, waits and ``per_runner`` (runners ``"1"``, ...)."""
        return {
            "policy_lag_mean": self.policy_lag_mean,
            "policy_lag_max": self.policy_lag_max,
            "runner_wait_for_learner_s": self.runner_wait_for_learner_s,
            "per_runner": {str(i + 1): s._asdict() for i, s in enumerate(self.per_runner)},
        }


class AgentMetrics(NamedTuple):
    """A multi-agent iteration's per-module and per-agent figures (``env_runners``).

    Attributes:
      module_episode_returns_mean: Per policy, the mean return of its agents per episode.
      agent_episode_returns_mean: Per agent id (as a string), its mean episode return.
      agent_steps: Per agent id (as a string), its agent steps sampled in the iteration.
      agent_steps_lifetime: Per agent id, its agent steps sampled so far.
      module_steps: Per policy id, the agent steps its agents sampled in the iteration.
      module_steps_lifetime: Per policy id, those so far.
    """

    module_episode_returns_mean: dict[str, float]
    agent_episode_returns_mean: dict[str, float]
    agent_steps: dict[str, int]
    agent_steps_lifetime: dict[str, int]
    module_steps: dict[str, int]
    module_steps_lifetime: dict[str, int]


@dataclasses.dataclass(frozen=True)
class IterationResult:
    """What one training iteration did, as every loop reports it.

    Attributes:
      num_env_steps_sampled: Env steps sampled.
      num_env_steps_trained: Env steps trained (rows of the updates' batches).
      episode_returns: Returns of the episodes finished, [E].
      episode_lens: Their lengths, [E].
      learner_metrics: Per policy id, the learner's metrics (means over the iteration's
        updates; ``num_*`` counts summed).
      timers: Seconds of the iteration's parts.
      runner_lag: A runner group's policy lag and throughput; None on the fused path.
      agents: A multi-agent iteration's per-module and per-agent figures; None otherwise.
      shared_s: Seconds of a population's step, shared by its trials, that ran before the
        trial's ``train()``; 0 otherwise.
      episode_steps: Episode callbacks: per update or cycle, its recorded rows and the runners'
        infos (or None).
      multi_agent_episodes: Multi-agent episode callbacks: ``(runner slot, episode log)`` of
        every finished episode.
      non_finite_total: Skipped non-finite updates counted in the learner state the iteration
        ended with, where its program counted them (``count_non_finite``'s number); None:
        the algorithm counts them itself.
    """

    num_env_steps_sampled: int
    num_env_steps_trained: int
    episode_returns: np.ndarray
    episode_lens: np.ndarray
    learner_metrics: Mapping[str, Mapping[str, Any]]
    timers: Timers = Timers()
    runner_lag: RunnerLag | None = None
    agents: AgentMetrics | None = None
    shared_s: float = 0.0
    episode_steps: tuple[tuple[Any, Any], ...] = ()
    multi_agent_episodes: tuple[tuple[int, Any], ...] = ()
    non_finite_total: int | None = None
