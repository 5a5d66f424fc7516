"""RLlib 1.x's ``Policy`` as old scripts use it: ``trainer.get_policy()`` for acting, with
``compute_single_action`` returning ``(action, state_outs, extra_fetches)``."""

from __future__ import annotations

from typing import Any

from rljax.core import DEFAULT_POLICY_ID as DEFAULT_POLICY


def single_obs(observation: Any, where: str) -> Any:
    """Refuses gymnasium's ``(obs, info)`` (what ``env.reset()`` returns now) with the fix."""
    if (
        isinstance(observation, tuple)
        and len(observation) == 2
        and isinstance(observation[1], dict)
    ):
        raise TypeError(
            f"{where} got a tuple (observation, info dict): gymnasium's env.reset() returns "
            "both; pass the observation alone: obs, info = env.reset(); "
            "action = trainer.compute_single_action(obs) (and env.step returns obs, reward, "
            "terminated, truncated, info)"
        )
    return observation


class Policy:
    """RLlib 1.x's ``trainer.get_policy()``: one policy of a trainer, for acting."""

    def __init__(self, trainer: Any, policy_id: str = DEFAULT_POLICY):
        self.trainer = trainer
        self.policy_id = policy_id
        self.observation_space = trainer.observation_space
        self.action_space = trainer.action_space

    def _pid(self) -> str | None:
        return None if self.policy_id == DEFAULT_POLICY else self.policy_id

    def compute_single_action(
        self, obs: Any = None, state: Any = None, *, explore: bool = False, **kwargs: Any
    ) -> tuple[Any, list[Any], dict[str, Any]]:
        """``(action, state_outs, extra_fetches)`` for one observation, as RLlib 1.x's policy
        returns them (no recurrent state here: ``[]``, ``{}``)."""
        if obs is None:
            obs = kwargs.pop("observation", None)
        obs = single_obs(obs, "Policy.compute_single_action")
        action = self.trainer.compute_single_action(obs, explore=explore, policy_id=self._pid())
        return action, [], {}

    def compute_actions(
        self, obs_batch: Any, state_batches: Any = None, *, explore: bool = False, **kwargs: Any
    ) -> tuple[Any, list[Any], dict[str, Any]]:
        """``(actions, state_outs, extra_fetches)`` for a batch of observations, as RLlib
        1.x's policy returns them (no recurrent state here: ``[]``, ``{}``)."""
        actions = self.trainer.compute_actions(obs_batch, explore=explore, policy_id=self._pid())
        return actions, [], {}

    @property
    def config(self) -> dict[str, Any]:
        """The trainer's settings as a dict (``config.to_dict()``; this policy's overrides
        applied in a multi-agent run)."""
        config = self.trainer.config
        if self._pid() is not None:
            config = config.get_config_for_module(self.policy_id)
        return dict(config.to_dict())

    @property
    def model(self) -> Any:
        """The policy's network: its ``RLModule`` (``trainer.get_module``), a Flax module with
        the current weights (RLlib 1.x's was a PyTorch or TF model)."""
        return self.trainer.get_module(self._pid()) if self._pid() else self.trainer.get_module()

    def export_model(self, export_dir: Any, onnx: int | None = None) -> str:
        """Exports the policy as StableHLO programs (``trainer.export_policy_model``)."""
        return str(self.trainer.export_policy_model(export_dir, self._pid(), onnx))

    def compute_action(self, obs: Any, explore: bool = False) -> Any:
        """The action for one observation."""
        return self.compute_single_action(obs, explore=explore)[0]

    def get_weights(self) -> Any:
        """The policy's weights (numpy arrays)."""
        return self.trainer.get_weights([self.policy_id])[self.policy_id]

    def set_weights(self, weights: Any) -> None:
        """Sets the policy's weights."""
        self.trainer.set_weights({self.policy_id: weights})


__all__ = ["Policy", "single_obs"]
