"""RLlib's example algorithm classes at their paths (PyTorch or Ray-actor code: each refuses
where it is used)."""
