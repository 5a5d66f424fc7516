"""RLlib's ``ray.rllib.utils.spaces`` path: helpers for data of gymnasium spaces
(``space_utils``)."""
