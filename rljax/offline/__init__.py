"""Offline data (RLlib's ``ray.rllib.offline``): Parquet files of episodes or of env steps that
an algorithm records (``offline_data(output=...)``) and BC, MARWIL, CQL and IQL learn from
(``offline_data(input_=...)``)."""

from rljax.offline.data import COLUMNS, OfflineData, OfflineWriter, read_offline_data
from rljax.offline.recording import EpisodeRecorder

__all__ = ["COLUMNS", "EpisodeRecorder", "OfflineData", "OfflineWriter", "read_offline_data"]
