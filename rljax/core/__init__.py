"""Core building blocks shared by every algorithm (RLlib's ``ray.rllib.core`` paths).

The names RLlib gives its ids and checkpoint components, with RLlib's values:

- ``DEFAULT_MODULE_ID`` / ``DEFAULT_POLICY_ID`` (``"default_policy"``): a single-agent run's
  module (policy) id, the key of its ``learners`` results and weights; ``DEFAULT_AGENT_ID``
  (``"default_agent"``): a single-agent episode's agent id; ``ALL_MODULES``: the ``learners``
  results' all-module key.
- ``COMPONENT_*``: the names of an algorithm's parts in RLlib's checkpoint tree
  (``<checkpoint>/learner_group/learner/rl_module/default_policy``). rljax writes its
  checkpoints in a format of its own, but ``RLModule.from_checkpoint`` accepts that RLlib path
  (``COMPONENT_LEARNER_GROUP``/``COMPONENT_LEARNER``/``COMPONENT_RL_MODULE``/module id,
  ``rl_module_path``) and reads it from these constants.
"""

from rljax.core.columns import Columns
from rljax.utils.ids import (
    COMPONENT_ENV_RUNNER,
    COMPONENT_ENV_TO_MODULE_CONNECTOR,
    COMPONENT_EVAL_ENV_RUNNER,
    COMPONENT_LEARNER,
    COMPONENT_LEARNER_GROUP,
    COMPONENT_METRICS_LOGGER,
    COMPONENT_MODULE_TO_ENV_CONNECTOR,
    COMPONENT_OPTIMIZER,
    COMPONENT_RL_MODULE,
    DEFAULT_AGENT_ID,
    DEFAULT_MODULE_ID,
    DEFAULT_POLICY_ID,
    RL_MODULE_PATH,
    rl_module_path,
)
from rljax.utils.metrics import ALL_MODULES

__all__ = [
    "ALL_MODULES",
    "COMPONENT_ENV_RUNNER",
    "COMPONENT_ENV_TO_MODULE_CONNECTOR",
    "COMPONENT_EVAL_ENV_RUNNER",
    "COMPONENT_LEARNER",
    "COMPONENT_LEARNER_GROUP",
    "COMPONENT_METRICS_LOGGER",
    "COMPONENT_MODULE_TO_ENV_CONNECTOR",
    "COMPONENT_OPTIMIZER",
    "COMPONENT_RL_MODULE",
    "Columns",
    "DEFAULT_AGENT_ID",
    "DEFAULT_MODULE_ID",
    "DEFAULT_POLICY_ID",
    "RL_MODULE_PATH",
    "rl_module_path",
]
