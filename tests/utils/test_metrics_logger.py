"""MetricsLogger's reductions against hand-computed values (RLlib's semantics)."""

import math

import numpy as np
import pytest

from rljax.utils.metrics.metrics_logger import MetricsLogger, merge_into


def test_mean_without_window_is_an_ema_with_coefficient_0_01_kept_across_reductions():
    m = MetricsLogger()
    m.log_value("loss", 0.1)
    m.log_value("loss", 0.2)
    assert m.peek("loss") == pytest.approx(0.101)  # 0.99 * 0.1 + 0.01 * 0.2
    assert m.reduce() == {"loss": pytest.approx(0.101)}
    m.log_value("loss", 1.0)
    assert m.reduce()["loss"] == pytest.approx(0.99 * 0.101 + 0.01)


def test_windowed_mean_min_max_and_lifetime_sum():
    m = MetricsLogger()
    for x in (1.0, 2.0, 6.0):
        m.log_value("w", x, window=2)
        m.log_value(("nested", "lo"), x, reduce="min")
        m.log_value(("nested", "hi"), x, reduce="max", window=2)
        m.log_value("count", 1, reduce="sum")
    assert m.reduce() == {"w": 4.0, "nested": {"lo": 1.0, "hi": 6.0}, "count": 3.0}
    m.log_value("count", 1, reduce="sum")
    m.log_value(("nested", "lo"), 0.5, reduce="min")
    out = m.reduce()
    assert out["count"] == 4.0 and out["nested"]["lo"] == 0.5 and out["w"] == 4.0


def test_clear_on_reduce_reports_one_iteration_and_empty_keys_as_nan_or_zero():
    m = MetricsLogger()
    m.log_value("m", 2.0, window=100, clear_on_reduce=True)
    m.log_value("m", 4.0, window=100, clear_on_reduce=True)
    m.log_value("s", 5, reduce="sum", clear_on_reduce=True)
    m.log_value("items", "a", reduce=None)
    m.log_value("items", "b", reduce=None)
    assert m.reduce() == {"m": 3.0, "s": 5.0, "items": ["a", "b"]}
    out = m.reduce()
    assert math.isnan(out["m"]) and out["s"] == 0.0 and out["items"] == []


def test_explicit_ema_coefficient():
    m = MetricsLogger()
    for x in (10.0, 0.0):
        m.log_value("e", x, ema_coeff=0.5)
    assert m.peek("e") == 5.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"reduce": "median"}, "not a reduction"),
        ({"window": 0}, "window"),
        ({"reduce": "sum", "ema_coeff": 0.1}, "ema_coeff"),
        ({"window": 3, "ema_coeff": 0.1}, "both"),
    ],
)
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MetricsLogger().log_value("k", 1.0, **kwargs)


def test_bad_values_keys_and_changed_settings_are_refused():
    m = MetricsLogger()
    with pytest.raises(ValueError, match="one number"):
        m.log_value("k", [1, 2])
    with pytest.raises(ValueError, match="non-empty"):
        m.log_value("", 1.0)
    m.log_value("k", 1.0, reduce="sum")
    with pytest.raises(ValueError, match="first logged with reduce='sum'"):
        m.log_value("k", 1.0, reduce="max")
    with pytest.raises(ValueError, match="clashes"):
        m.log_value(("k", "sub"), 1.0)


def test_merge_into_refuses_to_replace_rljax_keys():
    result = {"episode_return_mean": 1.0, "a": {"b": 1}}
    merge_into(result, {"mine": 2.0, "a": {"c": 3}}, "env_runners/")
    assert result == {"episode_return_mean": 1.0, "mine": 2.0, "a": {"b": 1, "c": 3}}
    with pytest.raises(ValueError, match="env_runners/episode_return_mean"):
        merge_into(result, {"episode_return_mean": 0.0}, "env_runners/")


def test_rllibs_newer_reductions_item_series_item_ema_lifetime_sum():
    m = MetricsLogger()
    frames = [np.full((1, 2, 3), i, np.uint8) for i in range(3)]
    for f in frames:
        m.log_value("video", f, reduce="item_series", window=2)  # the last two only
        m.log_value("total", 2, reduce="lifetime_sum")
        m.log_value("last", {"step": int(f[0, 0, 0])}, reduce="item")
        m.log_value("avg", float(f[0, 0, 0]), reduce="ema", ema_coeff=0.5)
    out = m.reduce()
    assert [int(v[0, 0, 0]) for v in out["video"]] == [1, 2]
    assert out["total"] == 6.0 and out["last"] == {"step": 2}
    assert out["avg"] == pytest.approx(0.5 * (0.5 * 0 + 0.5 * 1) + 0.5 * 2)  # 1.25
    m.log_value("total", 1, reduce="lifetime_sum")
    again = m.reduce()
    assert again["video"] == [] and again["total"] == 7.0 and again["last"] == {"step": 2}
    with pytest.raises(ValueError, match="first logged with reduce='item_series'"):
        m.log_value("video", 1, reduce="sum")
