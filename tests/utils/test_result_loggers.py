"""The log sinks read back with the formats' own readers: every finite number of each result
under its nested key, at its env step."""

from __future__ import annotations

import csv
import json
import math

import pytest
from log_readers import tensorboard_scalars, wandb_offline_run

from rljax.utils.result_loggers import (
    CSVLogger,
    JsonLogger,
    TensorBoardLogger,
    WandbLogger,
    numeric_leaves,
)

RESULTS = [
    {
        "training_iteration": i,
        "num_env_steps_sampled_lifetime": 1000 * i,
        "env_runners": {"episode_return_mean": 10.5 * i, "custom": {"x": -i}},
        "learners": {"default_policy": {"total_loss": 1.0 / i}},
        "note": "text",
        "done": False,
        "nan": math.nan,
        # An algorithm's results carry its config; the figures leave it out, as Tune's do.
        "config": {"lr": 1e-3, "gamma": 0.99, "env": "CartPole-v1"},
    }
    for i in (1, 2, 3)
]


def test_numeric_leaves_keeps_finite_numbers_only_and_not_the_config():
    assert numeric_leaves(RESULTS[0]) == {
        "training_iteration": 1.0,
        "num_env_steps_sampled_lifetime": 1000.0,
        "env_runners/episode_return_mean": 10.5,
        "env_runners/custom/x": -1.0,
        "learners/default_policy/total_loss": 1.0,
    }


def test_tensorboard_csv_and_json_read_back(tmp_path):
    sinks = [TensorBoardLogger(tmp_path), CSVLogger(tmp_path), JsonLogger(tmp_path)]
    for r in RESULTS:
        for s in sinks:
            s.log(r)
    for s in sinks:
        s.close()
    scalars = tensorboard_scalars(tmp_path)
    assert set(scalars) == set(numeric_leaves(RESULTS[0]))
    for key, points in scalars.items():
        assert points == [
            (1000 * i, pytest.approx(numeric_leaves(r)[key]))
            for i, r in zip((1, 2, 3), RESULTS, strict=True)
        ]
    with open(tmp_path / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    assert [float(r["env_runners/episode_return_mean"]) for r in rows] == [10.5, 21.0, 31.5]
    assert rows[0]["note"] == "text" and rows[2]["learners/default_policy/total_loss"]
    assert not any(k.startswith("config") for k in rows[0])
    lines = (tmp_path / "result.json").read_text().splitlines()
    assert [json.loads(line)["env_runners"]["custom"]["x"] for line in lines] == [-1, -2, -3]
    assert json.loads(lines[0])["config"]["lr"] == 1e-3  # result.json keeps it, as Tune's does


def test_pretty_print_shows_a_result_as_tunes_does_without_its_config():
    from rljax.tune.logger import pretty_print

    text = pretty_print({**RESULTS[1], "skip": None, "hist_stats": {"x": [1]}}, exclude={"note"})
    assert text.splitlines()[:4] == [
        "done: false",
        "env_runners:",
        "  custom:",
        "    x: -2",
    ]
    assert "episode_return_mean: 21.0" in text and "total_loss: 0.5" in text
    for absent in ("config", "lr", "skip", "hist_stats", "note"):
        assert absent not in text


def test_wandb_offline_run_reads_back(tmp_path):
    pytest.importorskip("wandb")
    sink = WandbLogger("rljax-test", tmp_path, config={"lr": 0.001}, mode="offline")
    for r in RESULTS:
        sink.log(r)
    sink.close()
    config, history = wandb_offline_run(tmp_path)
    assert config["lr"] == 0.001
    assert [step for step, _ in history] == [1000, 2000, 3000]
    for (_, values), r in zip(history, RESULTS, strict=True):
        assert values == pytest.approx(numeric_leaves(r))
