"""The names RLlib gives its ids and checkpoint components, with RLlib's values (re-exported at
``rljax.core``, RLlib's path, which documents them). Defined here, below every package that
needs them, so that the execution layer reads them without importing ``rljax.core``."""

DEFAULT_AGENT_ID = "default_agent"
DEFAULT_POLICY_ID = "default_policy"
DEFAULT_MODULE_ID = DEFAULT_POLICY_ID

COMPONENT_ENV_RUNNER = "env_runner"
COMPONENT_ENV_TO_MODULE_CONNECTOR = "env_to_module_connector"
COMPONENT_EVAL_ENV_RUNNER = "eval_env_runner"
COMPONENT_LEARNER = "learner"
COMPONENT_LEARNER_GROUP = "learner_group"
COMPONENT_METRICS_LOGGER = "metrics_logger"
COMPONENT_MODULE_TO_ENV_CONNECTOR = "module_to_env_connector"
COMPONENT_OPTIMIZER = "optimizer"
COMPONENT_RL_MODULE = "rl_module"

# The path of a module inside RLlib's checkpoint tree, below the checkpoint directory.
RL_MODULE_PATH = (COMPONENT_LEARNER_GROUP, COMPONENT_LEARNER, COMPONENT_RL_MODULE)


def rl_module_path(module_id: str = DEFAULT_MODULE_ID) -> str:
    """RLlib's path of module ``module_id`` inside a checkpoint directory
    (``learner_group/learner/rl_module/default_policy``), which
    ``RLModule.from_checkpoint(checkpoint / rl_module_path(...))`` accepts."""
    return "/".join((*RL_MODULE_PATH, module_id))
