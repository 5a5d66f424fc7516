"""RLlib's ``ray.rllib.examples.learners`` path: its example Learners are PyTorch code, kept
at their paths so that a script importing them fails with one clear error where it uses them."""
