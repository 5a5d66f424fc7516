"""Acting: policies on batches of sub-envs, fused into jit (EnvPool XLA) or stepped from Python."""
