"""RLlib's example Learner classes at their paths (PyTorch: each refuses where it is used)."""
