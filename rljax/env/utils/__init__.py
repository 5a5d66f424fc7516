"""RLlib's ``ray.rllib.env.utils`` path: the episodes' lookback buffer
(``infinite_lookback_buffer``)."""
