"""MetricsLogger's reductions against hand-computed values (RLlib 2.60's semantics: for the
reductions, the same calls through RLlib's own logger gave the values asserted)."""

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


def test_series_start_afresh_at_each_reduction_and_lifetime_sum_keeps_counting():
    # The same calls, run through RLlib 2.60's MetricsLogger, gave these values.
    m = MetricsLogger()
    for x in (1.0, 2.0, 6.0):
        m.log_value("w", x, window=2)  # a window and no reduce: a mean
        m.log_value(("nested", "lo"), x, reduce="min")
        m.log_value(("nested", "hi"), x, reduce="max", window=2)
        m.log_value("count", 1, reduce="sum")
        m.log_value("total", 1, reduce="lifetime_sum")
        m.log_value("m", x, reduce="mean")
    assert m.reduce() == {
        "w": 4.0,
        "nested": {"lo": 1.0, "hi": 6.0},
        "count": 3.0,
        "total": 3.0,
        "m": 3.0,
    }
    m.log_value("count", 1, reduce="sum")
    m.log_value(("nested", "lo"), 0.5, reduce="min")
    m.log_value("total", 2, reduce="lifetime_sum")
    out = m.reduce()
    assert out["count"] == 1.0 and out["nested"]["lo"] == 0.5 and out["total"] == 5.0
    assert math.isnan(out["w"]) and math.isnan(out["m"]) and math.isnan(out["nested"]["hi"])


def test_later_calls_log_into_the_keys_first_settings_as_rllibs_do():
    m = MetricsLogger()
    m.log_value("k", 1.0, reduce="max")
    m.log_value("k", 5.0)
    m.log_value("k", 3.0, reduce="min")
    assert m.peek("k") == 5.0
    m.log_value("n", float("nan"), reduce="ema")  # a NaN leaves a moving average alone
    m.log_value("n", 2.0)
    m.log_value("n", float("nan"))
    assert m.peek("n") == 2.0
    m.log_dict({"a": 1.0, "b": {"c": 2.0}}, key="d")  # log_dict's default is a mean
    m.log_dict({"a": 3.0, "b": {"c": 4.0}}, key="d")
    assert m.peek("d") == {"a": 2.0, "b": {"c": 3.0}}


def test_deprecated_forms_keep_their_meaning(caplog):
    m = MetricsLogger()
    for x in (10.0, 0.0):
        m.log_value("e", x, ema_coeff=0.5)  # no reduce: a moving average
        m.log_value("old_mean", x, reduce="mean", ema_coeff=0.5)  # RLlib < 2.50's EMA
        m.log_value("old_sum", 1, reduce="sum", clear_on_reduce=False)  # a lifetime sum
        m.log_value("cleared", x, reduce="max", clear_on_reduce=True)  # ignored, warned once
    assert m.peek("e") == 5.0 and m.peek("old_mean") == 5.0
    m.reduce()
    assert m.peek("old_sum") == 2.0 and math.isnan(m.peek("cleared"))


def test_throughput_and_log_time(monkeypatch):
    from rljax.utils.metrics import metrics_logger as ml

    clock = iter([100.0, 102.0, 102.0, 110.0, 111.0, 111.0])
    monkeypatch.setattr(ml.time, "perf_counter", lambda: next(clock))
    m = MetricsLogger()
    for _ in range(3):
        m.log_value("steps", 5, reduce="lifetime_sum", with_throughput=True)  # created at 100
    # 15 over the 2 s since it was created (RLlib's dict for a lifetime sum).
    assert m.peek("steps", throughput=True) == {
        "throughput_since_last_reduce": 7.5,
        "throughput_since_last_restore": 7.5,
    }
    m.reduce()  # at 102: the count goes on, the rate starts again
    with m.log_time("block", reduce="mean"):  # 110 -> 111
        pass
    assert m.peek("block") == 1.0 and m.peek("steps") == 15.0
    with pytest.raises(KeyError, match="with_throughput=True"):
        m.peek("block", throughput=True)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"reduce": "median"}, "not a reduction"),
        ({"window": 0}, "window"),
        ({"reduce": "sum", "ema_coeff": 0.1}, "ema_coeff"),
        ({"reduce": "ema", "window": 3}, "takes no window"),
        ({"reduce": "max", "with_throughput": True}, "with_throughput=True needs"),
        ({"percentiles": True}, "percentiles are not built"),
    ],
)
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MetricsLogger().log_value("k", 1.0, **kwargs)


def test_bad_values_and_keys_are_refused():
    m = MetricsLogger()
    with pytest.raises(ValueError, match="one number"):
        m.log_value("k", [1, 2])
    with pytest.raises(ValueError, match="non-empty"):
        m.log_value("", 1.0)
    m.log_value("k", 1.0, reduce="sum")
    with pytest.raises(ValueError, match="clashes"):
        m.log_value(("k", "sub"), 1.0)
    with pytest.raises(ValueError, match="reduced with 'sum' must be one number"):
        m.log_value("k", "text")  # the key's own reduction decides


def test_merge_into_refuses_to_replace_rljax_keys():
    result = {"episode_return_mean": 1.0, "a": {"b": 1}}
    merge_into(result, {"mine": 2.0, "a": {"c": 3}}, "env_runners/")
    assert result == {"episode_return_mean": 1.0, "mine": 2.0, "a": {"b": 1, "c": 3}}
    with pytest.raises(ValueError, match="env_runners/episode_return_mean"):
        merge_into(result, {"episode_return_mean": 0.0}, "env_runners/")


def test_item_series_item_and_ema():
    m = MetricsLogger()
    frames = [np.full((1, 2, 3), i, np.uint8) for i in range(3)]
    for f in frames:
        m.log_value("video", f, reduce="item_series", window=2)  # the last two only
        m.log_value("last", {"step": int(f[0, 0, 0])}, reduce="item")
        m.log_value("avg", float(f[0, 0, 0]), reduce="ema", ema_coeff=0.5)
    out = m.reduce()
    assert [int(v[0, 0, 0]) for v in out["video"]] == [1, 2]
    assert out["last"] == {"step": 2}
    assert out["avg"] == pytest.approx(0.5 * (0.5 * 0 + 0.5 * 1) + 0.5 * 2)  # 1.25
    again = m.reduce()  # RLlib 2.60: series and items start afresh, the EMA stays
    assert again == {"video": [], "last": None, "avg": pytest.approx(1.25)}


def test_a_timed_block_that_raises_logs_nothing_and_keeps_its_exception():
    m = MetricsLogger()
    with pytest.raises(KeyError, match="inside"), m.log_time("t", reduce="ema", window=3):
        raise KeyError("inside")  # the bad window would raise in log_value: not reached
    assert "t" not in m
