"""Training goes on while envs crash: ``CartPoleCrashing`` raises now and then on runners 1
and 2, and the failed runners are rebuilt (``restart_failed_env_runners``), or only the failed
sub-env (``--restart-failed-envs``: ``restart_failed_sub_environments``).

``python -m rljax.examples.fault_tolerance.crashing_cartpole --no-tune --stop-reward=200``
"""

from gymnasium.wrappers import TimeLimit

from rljax.examples.envs.classes.cartpole_crashing import CartPoleCrashing
from rljax.tune.registry import get_trainable_cls, register_env
from rljax.utils.test_utils import (
    add_rllib_example_script_args,
    run_rllib_example_script_experiment,
)

parser = add_rllib_example_script_args(default_reward=450.0, default_timesteps=500_000)
parser.set_defaults(num_env_runners=2, num_envs_per_env_runner=4)
parser.add_argument("--restart-failed-envs", action="store_true")
args = parser.parse_args()

register_env(
    "crashing_cartpole", lambda cfg: TimeLimit(CartPoleCrashing(cfg), max_episode_steps=500)
)

config = (
    get_trainable_cls(args.algo)
    .get_default_config()
    .environment(
        "crashing_cartpole",
        env_config={"p_crash": 0.0005, "p_crash_reset": 0.001, "crash_on_worker_indices": [1, 2]},
    )
    .fault_tolerance(
        restart_failed_env_runners=True,
        restart_failed_sub_environments=args.restart_failed_envs,
    )
)

if __name__ == "__main__":
    run_rllib_example_script_experiment(config, args)
