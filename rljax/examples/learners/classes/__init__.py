"""RLlib's example Learner classes at their paths: the custom PPO loss and the separate
value-function optimizer in JAX (``custom_ppo_loss_fn_learner``,
``separate_vf_lr_and_optimizer_learner``), the others PyTorch code that refuses where it is
used."""
