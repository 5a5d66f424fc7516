"""SAC's networks trained on offline data: what CQL and IQL share.

The data are rows of env steps read from ``offline_data(input_=...)`` (``rljax.offline``), once,
when the algorithm is built, and kept on the learner's device; their Box actions (as the env took
them) are mapped into SAC's squashed range (-1, 1). Each ``train()`` is one jitted program of
``dataset_num_iters_per_learner`` gradient steps (None: as many as one pass over the rows takes)
on batches of ``train_batch_size_per_learner`` rows drawn at random, each step followed by the
algorithm's target move. Nothing is sampled: the env named by ``.environment()`` gives the spaces
and runs ``evaluate()``. A subclass builds its learner (``_build_parts``); its config
(an ``OfflineSACConfig``) says what it refuses.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.sac.sac import SAC, SACConfig
from rljax.execution.off_policy import OffPolicyState, ReplayLearner
from rljax.execution.parts import PolicyParts
from rljax.offline.data import read_offline_data
from rljax.offline.learning import offline_iteration, offline_refusal, updates_per_train
from rljax.types import IterationResult
from rljax.utils.errors import ConfigError
from rljax.utils.ids import DEFAULT_MODULE_ID


def _one_step_rows(config: Any) -> str | None:
    if config.n_step_range != (1, 1):
        return f"n_step={config.n_step!r}: the offline rows are one-step transitions; use 1"
    return None


class OfflineSACConfig(SACConfig):
    """What the configs of SAC's networks on offline data share (CQL's, IQL's): no replay
    buffer in the memory estimate, and the offline refusals (``offline_refusal``, and
    ``n_step`` other than 1) at ``validate()``."""

    learns_offline: ClassVar[bool] = True

    def memory_terms(self, observation_space: Any, action_space: Any) -> list[tuple[str, int]]:
        """SAC's terms without the replay buffer (none is allocated; the offline data's size
        is known once the files are read)."""
        terms = super().memory_terms(observation_space, action_space)
        return [(name, size) for name, size in terms if not name.startswith("replay_buffer")]

    def offline_refusal(self) -> str | None:
        """Why this config cannot train here, or None."""
        return offline_refusal(self, _one_step_rows)

    def validate(self) -> None:
        super().validate()
        refusal = self.offline_refusal()
        if refusal is not None:
            raise ConfigError(f"{self.algo_name}: {refusal}")


def make_offline_train(
    replay_learner: ReplayLearner[Any],
    data: dict[str, jax.Array],
    *,
    batch_size: int,
    num_iters: int,
) -> Any:
    """``train(state) -> (state, metrics)``: ``num_iters`` gradient steps of
    ``replay_learner.learn`` on batches of ``batch_size`` rows of ``data`` (``obs``, ``action``,
    ``reward``, ``discount``, ``next_obs`` on the device) drawn at random, each followed by the
    target move; the learner's step count (its bc phase, its rate schedules, its target
    period) is the gradient steps (``num_updates``). Metrics are means over the steps."""
    num_rows = int(data["reward"].shape[0])

    def one(carry: Any, _: Any) -> tuple[Any, dict[str, jax.Array]]:
        learner, key, step = carry
        key, k_rows, k_learn = jax.random.split(key, 3)
        rows = jax.random.randint(k_rows, (batch_size,), 0, num_rows)
        batch = {name: column[rows] for name, column in data.items()}
        weights = jnp.ones((batch_size,), jnp.float32)
        learner, _, metrics = replay_learner.learn(learner, batch, weights, k_learn, step)
        learner = replay_learner.update_target(learner)
        return (learner, key, step + 1), metrics

    def train(state: OffPolicyState) -> tuple[OffPolicyState, dict[str, jax.Array]]:
        carry = (state.learner, state.key, state.num_updates)
        (learner, key, step), metrics = jax.lax.scan(one, carry, None, length=num_iters)
        state = state._replace(learner=learner, key=key, num_updates=step, timestep=step)
        return state, {name: jnp.mean(value) for name, value in metrics.items()}

    return train


class OfflineSAC(SAC):
    """SAC's networks learning from offline data (the base of CQL and IQL); evaluation runs the
    policy in the config's env."""

    config: OfflineSACConfig
    continuous_only = True
    discrete_hint = ". For Discrete actions from offline data, use BC or MARWIL"

    @classmethod
    def multi_agent_class(cls) -> None:
        """None: offline SAC learns one policy from recorded data."""
        return None

    def _build_parts(
        self, key: jax.Array
    ) -> tuple[PolicyParts[OffPolicyState], ReplayLearner[Any]]:
        """SAC's actor and critics; a subclass changes the learner (and its state's type)."""
        return super()._build_parts(key)

    def _setup(self) -> None:
        cfg = self.config
        refusal = cfg.offline_refusal()
        if refusal is not None:
            raise ConfigError(f"{cfg.algo_name}: {refusal}")
        key = jax.random.PRNGKey(self.seed)
        key, init_key, self._action_key = jax.random.split(key, 3)
        self.parts, self.replay_learner = self._build_parts(init_key)
        # Three counters, three arrays: the jitted train donates each of them.
        counters = [jnp.zeros((), jnp.int32) for _ in range(3)]
        state = OffPolicyState(self.replay_learner.init, None, key, *counters)
        self._loop, self.fused = None, False  # no replay buffer, runner or loop
        self._jit_acting_params = jax.jit(self.parts.acting_params)
        self.state = self._place_learner_state(state)
        if self._inference_only or self._population_member:
            return
        data = read_offline_data(cfg.input_, self.observation_space, self.action_space)
        batch = cfg.train_batch_size_per_learner
        self.num_iters = updates_per_train(cfg, data.num_rows)
        box = self.action_space
        low, high = np.asarray(box.low, np.float32), np.asarray(box.high, np.float32)
        # The env's actions in SAC's squashed range, the inverse of the policy's to_env.
        squashed = np.clip(2.0 * (data.actions - low) / (high - low) - 1.0, -1.0, 1.0)
        host = {
            "obs": data.obs.astype(np.float32),
            "action": squashed.astype(np.float32),
            "reward": data.rewards,
            "discount": (cfg.gamma * (1.0 - data.terminateds)).astype(np.float32),
            "next_obs": data.new_obs.astype(np.float32),
        }
        device_data = jax.device_put(host, self.learner_devices[0])
        train = make_offline_train(
            self.replay_learner, device_data, batch_size=batch, num_iters=self.num_iters
        )
        self._train = jax.jit(train, donate_argnums=0)

    def _includes_replay_buffer(self, include_replay_buffer: bool | None) -> bool:
        return False  # no replay buffer: the data are the offline files

    def _restore_state(self, loaded: Any) -> None:
        from rljax.learners.hyperparams import live_layout

        fields = dict(loaded["state"])
        fields["learner"] = live_layout(fields["learner"], self.state.learner)
        fields["buffer"] = None
        self.state = jax.device_put(
            jax.tree.map(jnp.asarray, OffPolicyState(**fields)), self.learner_devices[0]
        )

    def _training_step(self) -> IterationResult:
        start = time.perf_counter()
        self.state, metrics = self._train(self.state)
        metrics = jax.device_get(metrics)
        rows = self.num_iters * self.config.train_batch_size_per_learner
        return offline_iteration(DEFAULT_MODULE_ID, metrics, rows, time.perf_counter() - start)


__all__ = ["OfflineSAC", "OfflineSACConfig", "make_offline_train"]
