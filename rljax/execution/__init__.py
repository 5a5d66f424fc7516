"""The execution layer: what runs training for any algorithm, knowing none of them.

``parts``: the typed bundle of pure functions an algorithm hands over (``PolicyParts``);
``off_policy``: the replay loop's factories; ``evaluation``: one evaluation loop for single- and
multi-agent envs, and an algorithm's evaluation as its config asks; ``checkpoints``: saving,
restoring and loading for inference, every field checked first; ``weights``: a policy's weights
written into its training state. Sampling lives in ``rljax.runners`` (the acting step, the
fused EnvPool rollout, runner threads, building them: ``runners.build``);
``rljax.algorithms.algorithm.Algorithm`` ties them to RLlib's public methods.
"""
