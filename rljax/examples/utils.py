"""RLlib's example-script harness at its newer path (``ray.rllib.examples.utils``); the same
functions as ``rljax.utils.test_utils``."""

from rljax.utils.test_utils import (
    add_rllib_example_script_args,
    run_rllib_example_script_experiment,
)

__all__ = ["add_rllib_example_script_args", "run_rllib_example_script_experiment"]
