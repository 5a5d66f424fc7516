"""RLlib's example Learner classes at their paths: the custom PPO loss in JAX
(``custom_ppo_loss_fn_learner``), the others PyTorch code that refuses where it is used."""
