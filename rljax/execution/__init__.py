"""The execution layer: what runs training for any algorithm, knowing none of them.

``parts``: the typed bundle of pure functions an algorithm hands over (``PolicyParts``);
``off_policy``: the replay loop's factories; ``evaluation``: one evaluation loop for single- and
multi-agent envs. Sampling lives in ``rljax.runners`` (the acting step, the fused EnvPool rollout,
runner threads); ``rljax.algorithms.algorithm.Algorithm`` ties them to RLlib's public methods.
"""
