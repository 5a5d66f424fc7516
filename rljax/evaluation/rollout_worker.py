"""RLlib 1.x's ``RolloutWorker``, as old evaluation scripts use it: an env built by
``env_creator`` and a policy to act with.

``RolloutWorker(env_creator=..., policy=trainer.get_policy(), config=config)`` has ``env`` (the
env ``env_creator(config["env_config"])`` builds) and ``compute_action(obs)`` (the policy's
greedy action). It does not sample batches (``sample()``) or train: rljax's algorithms sample
with their own env runners, and ``algo.evaluate()`` runs a whole evaluation (episodes on their
own env copies, greedy by default) and reports ``env_runners/episode_return_mean``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rljax.env.env_context import EnvContext
from rljax.policy.old_api import Policy
from rljax.utils.errors import ConfigError

_EVALUATE = (
    "for an evaluation use the trainer's own: result = trainer.evaluate(); "
    "result['env_runners']['episode_return_mean'] (or result['episode_reward_mean'])"
)


class RolloutWorker:
    """An env and a policy (RLlib 1.x's ``RolloutWorker`` for stepping by hand).

    Args:
      env_creator: ``env_config -> env``.
      policy: What ``trainer.get_policy()`` returns (or a dict policy id -> policy).
      config: The dict config; its ``env_config`` goes to ``env_creator``.
    """

    def __init__(
        self,
        *,
        env_creator: Callable[[Any], Any],
        policy: Any = None,
        config: Mapping[str, Any] | None = None,
        policy_spec: Any = None,
        **kwargs: Any,
    ):
        if not callable(env_creator):
            raise ConfigError(
                f"RolloutWorker(env_creator={env_creator!r}): expected env_config -> env"
            )
        if policy is None:
            policy = policy_spec
        policies = policy if isinstance(policy, Mapping) else {"default_policy": policy}
        for pid, p in policies.items():
            if not isinstance(p, Policy):
                raise ConfigError(
                    f"RolloutWorker(policy=...): policy {pid!r} is {type(p).__name__}; give "
                    "trainer.get_policy() (a policy class is built by the trainer here). "
                    + _EVALUATE
                )
        if kwargs:
            raise ConfigError(
                f"RolloutWorker got {sorted(kwargs)}: here it holds an env and a policy only "
                f"(env_creator, policy, config); {_EVALUATE}"
            )
        config = dict(config or {})
        self.policy_map: dict[str, Policy] = dict(policies)
        self.env = env_creator(EnvContext(dict(config.get("env_config") or {})))

    def get_policy(self, policy_id: str = "default_policy") -> Policy:
        """The policy ``policy_id``."""
        if policy_id not in self.policy_map:
            raise KeyError(f"no policy {policy_id!r}; this worker has {sorted(self.policy_map)}")
        return self.policy_map[policy_id]

    def compute_action(
        self, obs: Any, policy_id: str = "default_policy", explore: bool = False
    ) -> Any:
        """The policy's action for one observation (greedy unless ``explore``)."""
        return self.get_policy(policy_id).compute_single_action(obs, explore=explore)[0]

    def sample(self) -> Any:
        """Not built: rljax's algorithms sample with their own env runners."""
        raise NotImplementedError(f"RolloutWorker.sample() is not built here; {_EVALUATE}")


__all__ = ["RolloutWorker"]
