"""TQC: truncated quantile critics (RLlib 2.60's ``TQCConfig``), SAC with distributional
critics whose largest target quantiles are dropped against overestimation.

Everything but the critics and their loss is SAC's: the actor, the temperature, replay (the
fused EnvPool path, runner threads, prioritized replay, ``n_step``), checkpoints and evaluation.
``n_critics`` critics (RLlib's default 2) each give ``n_quantiles`` quantiles (25) of
``Q(s, a)``; the target pools the target critics' quantiles at ``(s', a' ~ pi)``, keeps the
smallest ``(n_quantiles - top_quantiles_to_drop_per_net) * n_critics`` (dropping 2 per critic
by default) and is ``r + gamma^n * (kept - alpha * log pi(a'|s'))``; each critic learns by the
quantile Huber loss (``rljax.algorithms.tqc.losses``) and the actor maximises the mean of all
the quantiles. ``twin_q`` is not read (``n_critics`` counts the critics). Continuous (1-D Box)
actions only, as RLlib's.

Example:
    ```python
    from rljax.algorithms.tqc import TQCConfig

    config = (
        TQCConfig()
        .environment("Pendulum-v1")
        .training(n_quantiles=25, n_critics=2, top_quantiles_to_drop_per_net=2)
    )
    ```
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import flax.linen as nn

from rljax.algorithms.algorithm_config import UNSET
from rljax.algorithms.sac.sac import SAC, SACConfig
from rljax.algorithms.settings import Setting
from rljax.algorithms.tqc.losses import TQC_METRICS, make_tqc_learn
from rljax.networks.q_models import TwinCritic
from rljax.utils import memory
from rljax.utils.checks import Int
from rljax.utils.errors import ConfigError


class TQCConfig(SACConfig):
    """TQC's config: SAC's settings and defaults, and TQC's three.

    Example:
        ```python
        from rljax.algorithms.tqc import TQCConfig

        config = TQCConfig().environment("Pendulum-v1").training(n_quantiles=25)
        ```
    """

    algo_name: ClassVar[str] = "TQC"

    n_quantiles = Setting(25, Int(1, 1_000), "Quantiles each critic gives of Q(s, a).")
    n_critics = Setting(2, Int(1, 100), "Critic networks (twin_q is not read).")
    top_quantiles_to_drop_per_net = Setting(
        2,
        Int(0),
        "The largest target quantiles dropped, per critic, from the pooled target (against "
        "overestimation).",
    )

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or TQC)

    def training(
        self,
        *,
        lr: float | None = UNSET,
        gamma: float = UNSET,
        train_batch_size_per_learner: int = UNSET,
        train_batch_size: int | None = UNSET,
        grad_clip: float | None = UNSET,
        grad_clip_by: str = UNSET,
        learner_class: type | None = UNSET,
        learner_config_dict: dict[str, Any] | None = UNSET,
        replay_buffer_config: dict[str, Any] = UNSET,
        n_step: int | tuple[int, int] = UNSET,
        num_steps_sampled_before_learning_starts: int = UNSET,
        training_intensity: float | None = UNSET,
        target_network_update_freq: int = UNSET,
        tau: float = UNSET,
        store_buffer_in_checkpoints: bool = UNSET,
        twin_q: bool = UNSET,
        initial_alpha: float = UNSET,
        target_entropy: str | float = UNSET,
        actor_lr: float | list[list[float]] = UNSET,
        critic_lr: float | list[list[float]] = UNSET,
        alpha_lr: float | list[list[float]] = UNSET,
        n_quantiles: int = UNSET,
        n_critics: int = UNSET,
        top_quantiles_to_drop_per_net: int = UNSET,
        **kwargs: Any,
    ) -> TQCConfig:
        """Sets TQC's training settings (RLlib's names)."""
        if lr is None:
            lr = UNSET
        return self._set("training", locals())

    def network_params(self, observation_space: Any, action_space: Any) -> int:
        """SAC's actor and ``n_critics`` critics of ``n_quantiles`` outputs."""
        mc = self.model_config
        hiddens = [*mc.fcnet_hiddens, *mc.head_fcnet_hiddens]
        obs, act = memory.flat_size(observation_space), memory.flat_size(action_space)
        actor = memory.mlp_params(obs, hiddens, 2 * act)
        return actor + self.n_critics * memory.mlp_params(obs + act, hiddens, self.n_quantiles)

    @property
    def kept_target_quantiles(self) -> int:
        """The pooled target quantiles kept: ``(n_quantiles - drop) * n_critics``."""
        return (self.n_quantiles - self.top_quantiles_to_drop_per_net) * self.n_critics

    def validate(self) -> None:
        super().validate()
        if self.kept_target_quantiles < 1:
            raise ConfigError(
                f"top_quantiles_to_drop_per_net={self.top_quantiles_to_drop_per_net} drops "
                f"every one of n_quantiles={self.n_quantiles} x n_critics={self.n_critics} "
                "target quantiles; drop fewer than n_quantiles per critic"
            )


class TQC(SAC):
    """TQC: SAC with truncated quantile critics."""

    config_class = TQCConfig
    config: TQCConfig
    continuous_only = True
    metric_names = TQC_METRICS

    def _make_critic(self, num_actions: int) -> nn.Module:
        # n_critics networks of n_quantiles outputs each, on (s, a).
        cfg = self.config
        return TwinCritic(
            cfg.model_config, num_critics=int(cfg.n_critics), num_actions=int(cfg.n_quantiles)
        )

    def _make_learn(self) -> Callable[..., Any]:
        return make_tqc_learn(
            self.networks, self.optimizers, self.hp, keep=self.config.kept_target_quantiles
        )


__all__ = ["TQC", "TQCConfig"]
