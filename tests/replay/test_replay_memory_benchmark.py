import json
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.xla_optimized
@pytest.mark.slow
def test_replay_memory_benchmark_quick_run_prints_json(tmp_path, run_benchmark):
    out = tmp_path / "replay_memory.json"
    report = run_benchmark("replay_memory.py", "--quick", "--out", str(out), timeout=300)
    assert report == json.loads(out.read_text())
    assert report["stacked"]["bytes_per_transition"] == pytest.approx(56458.0, abs=0.01)
    assert report["stacked"]["allocated"] is False
    frames = report["frame_stack"]
    assert frames["allocated"] is True
    # One frame per slot instead of two stacks of four: about 8x smaller.
    assert 7000 < frames["bytes_per_transition"] < 7200
    assert report["ratio_stacked_over_frame_stack"] > 7.5
    assert frames["sampleable_slots"] > 0.9 * frames["filled_slots"]
    for mode in ("stacked", "frame_stack", "frame_stack_prioritized"):
        assert report[mode]["add"]["median_ms"] > 0
        assert report[mode]["sample"]["median_ms"] > 0
    assert frames["memory_mb"]["peak_rss"] >= frames["memory_mb"]["rss_after_init"]
