"""CQL: conservative Q-learning from offline data (RLlib's ``CQLConfig``), SAC's networks and
update with CQL's term in the critics' loss.

The data are rows of env steps read from ``offline_data(input_=...)`` (``rljax.offline``), once,
when the algorithm is built, and kept on the learner's device; their Box actions (as the env took
them) are mapped into SAC's squashed range (-1, 1). Each ``train()`` is one jitted program of
``dataset_num_iters_per_learner`` gradient steps (None: as many as one pass over the rows
takes) on batches of ``train_batch_size_per_learner`` rows drawn at random, each step followed by
the target critics' move (``tau``; RLlib 2.60 moves them once per ``train()``'s update call,
``target_network_update_freq`` is not used here). SAC's replay settings
(``replay_buffer_config``, ``training_intensity``, ``num_steps_sampled_before_learning_starts``,
``store_buffer_in_checkpoints``) are accepted and unused: the data are the files. The soft target bootstraps ``gamma * min Q'(s', a')`` where
the episode did not terminate (``deterministic_backup``, RLlib's default: no entropy term); for
the first ``bc_iters`` gradient steps the actor learns the data's actions
(``alpha * log pi(a~|s) - log pi(a|s)``), as RLlib's does. The conservative term:
``rljax.algorithms.cql.losses``. Schedules of the rates run on gradient steps here (no env is
sampled). The env named by ``.environment()`` gives the spaces and runs ``evaluate()``.

Example:
    ```python
    from rljax.algorithms.cql import CQLConfig

    config = (
        CQLConfig()
        .environment("Pendulum-v1")
        .offline_data(input_="/tmp/pendulum-data")
        .training(bc_iters=100, train_batch_size_per_learner=256)
    )
    ```
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

from rljax.algorithms.algorithm_config import UNSET
from rljax.algorithms.cql.losses import cql_penalty
from rljax.algorithms.off_policy import rate_setting
from rljax.algorithms.sac.learner import SAC_METRICS, make_sac_learn
from rljax.algorithms.sac.offline import OfflineSAC, OfflineSACConfig
from rljax.algorithms.settings import Setting
from rljax.utils.checks import Bool, Int, Number
from rljax.utils.errors import ConfigError


def _no_lagrangian(name: str, value: Any) -> bool:
    checked = Bool()(name, value)
    if checked:
        raise ConfigError(
            f"{name}=True: CQL's Lagrangian weight (RLlib's old API stack) is not built; "
            "min_q_weight sets the term's weight"
        )
    return False


class CQLConfig(OfflineSACConfig):
    """CQL's config: SAC's settings with RLlib's CQL defaults, and CQL's own.

    Example:
        ```python
        from rljax.algorithms.cql import CQLConfig

        config = (
            CQLConfig()
            .environment("Pendulum-v1")
            .offline_data(input_="/tmp/pendulum-data")
        )
        ```
    """

    algo_name: ClassVar[str] = "CQL"

    actor_lr = rate_setting(1e-4, "The actor's")
    critic_lr = rate_setting(1e-3, "The critics'")
    alpha_lr = rate_setting(1e-3, "The temperature's")
    bc_iters = Setting(
        20_000,
        Int(0),
        "Gradient steps at the start in which the actor learns the data's actions instead of "
        "the critics' values.",
    )
    temperature = Setting(1.0, Number(0, low_open=True), "The logsumexp's temperature.")
    MODEL_CONFIG_SETTINGS: ClassVar[dict[str, str]] = {"num_actions": "num_actions"}
    num_actions = Setting(
        10, Int(1, 1_000), "Random and policy actions of each kind per row in the CQL term."
    )
    lagrangian = Setting(
        False, _no_lagrangian, "RLlib's Lagrangian weight of the term: False only (not built)."
    )
    lagrangian_thresh = Setting(
        5.0, Number(0), "The Lagrangian's threshold: accepted, unused (lagrangian is False)."
    )
    min_q_weight = Setting(5.0, Number(0), "The CQL term's weight.")
    deterministic_backup = Setting(
        True, Bool(), "Leave the entropy term out of the soft target (RLlib's default)."
    )

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class or CQL)

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
        bc_iters: int = UNSET,
        temperature: float = UNSET,
        num_actions: int = UNSET,
        lagrangian: bool = UNSET,
        lagrangian_thresh: float = UNSET,
        min_q_weight: float = UNSET,
        deterministic_backup: bool = UNSET,
        **kwargs: Any,
    ) -> CQLConfig:
        """Sets CQL's training settings (RLlib's names)."""
        if lr is None:
            lr = UNSET
        return self._set("training", locals())


class CQL(OfflineSAC):
    """CQL on offline data; evaluation runs the policy in the config's env."""

    config_class = CQLConfig
    config: CQLConfig
    metric_names = (*SAC_METRICS, "cql_loss")

    def _make_learn(self) -> Callable[..., Any]:
        cfg = self.config
        penalty = functools.partial(
            cql_penalty,
            num_actions=int(cfg.num_actions),
            temperature=float(cfg.temperature),
            min_q_weight=float(cfg.min_q_weight),
        )
        return make_sac_learn(
            self.networks,
            self.optimizers,
            self.hp,
            critic_penalty=penalty,
            bc_steps=int(cfg.bc_iters),
            backup_entropy=not cfg.deterministic_backup,
        )


__all__ = ["CQL", "CQLConfig"]
