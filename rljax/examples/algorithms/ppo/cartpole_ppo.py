"""PPO on CartPole-v1 with RLlib's example-script flags.

Run ``python -m rljax.examples.algorithms.ppo.cartpole_ppo`` (Tune, until a mean return of
450 or 200,000 env steps), or with ``--no-tune`` for a plain ``algo.train()`` loop. Scale with
``--num-env-runners=2 --num-envs-per-env-runner=8``; ``--as-test`` fails the run unless it
reaches ``--stop-reward``.
"""

from rljax.algorithms.ppo import PPOConfig
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.examples.utils import add_rllib_example_script_args, run_rllib_example_script_experiment

parser = add_rllib_example_script_args(default_reward=450.0, default_timesteps=200_000)
parser.set_defaults(num_envs_per_env_runner=16)
args = parser.parse_args()

config = (
    PPOConfig()
    .environment("CartPole-v1")
    .training(lr=3e-4, num_epochs=6, vf_loss_coeff=0.01, train_batch_size_per_learner=4000)
    .rl_module(
        model_config=DefaultModelConfig(
            fcnet_hiddens=[64, 64],
            fcnet_kernel_initializer="orthogonal_",
            fcnet_kernel_initializer_kwargs={"gain": 1.41},
            vf_share_layers=False,
        )
    )
)

if __name__ == "__main__":
    run_rllib_example_script_experiment(config, args)
