"""DQN (double, dueling, 3-step, prioritized replay) on CartPole-v1, RLlib's example flags.

``python -m rljax.examples.algorithms.dqn.cartpole_dqn --no-tune --stop-reward=400``
"""

from rljax.algorithms.dqn import DQNConfig
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.examples.utils import add_rllib_example_script_args, run_rllib_example_script_experiment

parser = add_rllib_example_script_args(default_reward=450.0, default_timesteps=200_000)
args = parser.parse_args()

config = (
    DQNConfig()
    .environment("CartPole-v1")
    .training(
        lr=5e-4,
        train_batch_size_per_learner=32,
        replay_buffer_config={
            "type": "PrioritizedEpisodeReplayBuffer",
            "capacity": 50_000,
            "alpha": 0.6,
            "beta": 0.4,
        },
        n_step=3,
        double_q=True,
        dueling=True,
        epsilon=[(0, 1.0), (10_000, 0.02)],
        target_network_update_freq=500,
    )
    .rl_module(
        model_config=DefaultModelConfig(
            fcnet_hiddens=[128],
            fcnet_activation="relu",
            fcnet_bias_initializer="zeros_",
            head_fcnet_hiddens=[128],
            head_fcnet_use_layernorm=True,
        )
    )
)

if __name__ == "__main__":
    run_rllib_example_script_experiment(config, args)
