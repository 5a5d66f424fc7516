import json
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.slow
def test_ppo_cartpole_benchmark_quick_run_writes_json_and_plot(tmp_path, run_benchmark):
    report = run_benchmark("ppo_cartpole.py", "--quick", "--out", str(tmp_path))
    assert report == json.loads((tmp_path / "ppo_cartpole.json").read_text())
    assert (tmp_path / "ppo_cartpole.png").stat().st_size > 10_000
    for variant in ("rljax_fused", "rljax_host"):
        res = report["results"][variant]
        assert res["throughput_env_steps_per_s"] > 0
        assert len(res["curve"]) == 3
