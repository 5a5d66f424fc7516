"""Tune's result-key constants (``ray.tune.result``) for the keys every rljax result has."""

TRAINING_ITERATION = "training_iteration"
TIME_THIS_ITER_S = "time_this_iter_s"
TIME_TOTAL_S = "time_total_s"
DONE = "done"

__all__ = ["DONE", "TIME_THIS_ITER_S", "TIME_TOTAL_S", "TRAINING_ITERATION"]
