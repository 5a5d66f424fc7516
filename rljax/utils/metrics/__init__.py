"""Metrics: RLlib's ``MetricsLogger`` (``rljax.utils.metrics.metrics_logger``)."""
