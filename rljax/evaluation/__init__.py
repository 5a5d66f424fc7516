"""RLlib 1.x's ``ray.rllib.evaluation``: ``rollout_worker.RolloutWorker`` for scripts that step
an env with a trainer's policy by hand."""
