"""RLlib's error types at their path (``ray.rllib.utils.error``)."""


class EnvError(RuntimeError):
    """An env failed (RLlib's ``EnvError``): example envs raise it to simulate crashes."""


__all__ = ["EnvError"]
