"""PPO's networks: the action distribution and the actor-critic Flax module a config asks for
(``rljax.algorithms.actor_critic.policy.build_policy``, which IMPALA and APPO build too)."""

from rljax.algorithms.actor_critic.policy import build_policy

__all__ = ["build_policy"]
