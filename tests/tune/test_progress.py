"""The live table of trials (rljax.tune.progress), rendered to strings."""

from __future__ import annotations

import io

from rljax import tune
from rljax.tune.progress import ProgressReporter, TrialTable


def _table(**kwargs):
    table = TrialTable(searched=[("lr",), ("model", "h")], **kwargs)
    table.add("t1", "PPO_t1", {"lr": 0.001, "model": {"h": 64}})
    table.add("t2", "PPO_t2", {"lr": 0.0003, "model": {"h": 32}})
    table.add("t3", "PPO_t3", {"lr": 1e-05, "model": {"h": 16}})
    return table


def test_render_rows_columns_and_best_trial():
    table = _table(metric="env_runners/episode_return_mean", mode="max")
    table.set_status("t1", "TERMINATED")
    table.report(
        "t1",
        {
            "training_iteration": 5,
            "time_total_s": 12.34,
            "env_runners": {"episode_return_mean": 80.5},
        },
    )
    table.set_status("t2", "RUNNING")
    table.report(
        "t2",
        {
            "training_iteration": 2,
            "time_total_s": 3.0,
            "env_runners": {"episode_return_mean": 95.0},
        },
    )
    text = table.render(elapsed_s=15.5)
    lines = text.splitlines()
    assert lines[0] == "Trial status: 3 trials: 1 TERMINATED | 1 RUNNING | 1 PENDING"
    assert lines[1] == "Total running time: 15.5 s"
    assert lines[2] == "Current best trial: PPO_t2 with env_runners/episode_return_mean=95"
    header = [c.strip() for c in lines[4].strip("|").split("|")]
    assert header == [
        "Trial name",
        "status",
        "lr",
        "model/h",
        "iter",
        "episode_return_mean",
        "total time (s)",
    ]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[6:9]]
    assert rows[0] == ["PPO_t1", "TERMINATED", "0.001", "64", "5", "80.5", "12.3"]
    assert rows[1] == ["PPO_t2", "RUNNING", "0.0003", "32", "2", "95", "3.0"]
    assert rows[2] == ["PPO_t3", "PENDING", "1e-05", "16", "0", "", ""]
    assert len({len(line) for line in lines[3:]}) == 1  # every table line equally wide
    table.add("t4", "PPO_" + "x" * 30, {"lr": "a" * 30})
    long_row = table.render().splitlines()[-2]
    assert "| PPO_xxxxxxxxxxxxxxxxx... |" in long_row and "aaaaaaaaaaaaaaaaaaaaa... |" in long_row
    assert text.endswith("+\n")


def test_no_metric_column_without_a_metric_and_min_mode_best():
    table = _table()
    table.report("t1", {"training_iteration": 1, "score": 3})
    text = table.render()
    assert "Total running time" not in text and "Current best" not in text
    assert "score" not in text and "| iter | total time (s) |" in text
    table = _table(metric="loss", mode="min")
    table.report("t1", {"loss": 0.5})
    table.report("t2", {"loss": 0.25})
    table.report("t3", {"loss": float("nan")})
    assert "Current best trial: PPO_t2 with loss=0.25" in table.render()


def test_many_trials_keep_running_ones_in_view():
    table = TrialTable(max_rows=3)
    for i in range(6):
        table.add(f"t{i}", f"trial_{i}", {})
    table.set_status("t0", "RUNNING")
    text = table.render()
    assert "trial_0" in text and "trial_5" in text and "trial_1" not in text
    assert "... 3 more trials not shown" in text


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _Pipe(io.StringIO):
    """A stream that is not a terminal, saying so as a pipe or log file does."""

    def isatty(self):
        return False


def _run_three_trials(reporter, clock):
    """Fake trials reporting over 60 s: t1 and t2 a result every 2 s, then both finish."""
    reporter.status("t1", "RUNNING")
    reporter.status("t2", "RUNNING")
    for i in range(1, 31):
        clock.now = 2.0 * i
        reporter.result("t1", {"training_iteration": i, "time_total_s": 2.0 * i})
        reporter.result("t2", {"training_iteration": i, "time_total_s": 2.0 * i})
    reporter.status("t1", "TERMINATED")
    reporter.status("t2", "TERMINATED")
    reporter.log("Trial t3 ERROR: boom")
    reporter.status("t3", "ERROR")
    reporter.close()


def test_off_a_terminal_the_table_prints_once_at_the_end():
    out, clock = _Pipe(), _Clock()
    reporter = ProgressReporter(_table(), stream=out, clock=clock)  # tty from out.isatty()
    assert not reporter.tty
    _run_three_trials(reporter, clock)
    text = out.getvalue()
    assert text.count("Trial status") == 1 and "\x1b[" not in text
    # The line logged during the run, then the final table: every trial's last state.
    assert text.startswith("Trial t3 ERROR: boom\nTrial status: 3 trials: 2 TERMINATED | 1 ERROR")
    assert "Total running time: 60.0 s" in text
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[-5:-2]]
    assert rows == [
        ["PPO_t1", "TERMINATED", "0.001", "64", "30", "60.0"],
        ["PPO_t2", "TERMINATED", "0.0003", "32", "30", "60.0"],
        ["PPO_t3", "ERROR", "1e-05", "16", "0", ""],
    ]


def test_off_a_terminal_intermediate_tables_print_every_interval():
    out, clock = _Pipe(), _Clock()
    reporter = ProgressReporter(
        _table(), stream=out, interval_s=5.0, clock=clock, intermediate=True
    )
    _run_three_trials(reporter, clock)
    # At 0 s (the first update), then 6, 12, ..., 60 s (the first result 5 s or more after
    # the last table), and the final one.
    assert out.getvalue().count("Trial status") == 1 + 10 + 1


def test_no_intermediate_tables_on_a_terminal_either_when_turned_off():
    out, clock = io.StringIO(), _Clock()
    reporter = ProgressReporter(_table(), stream=out, tty=True, clock=clock, intermediate=False)
    _run_three_trials(reporter, clock)
    text = out.getvalue()
    assert text.count("Trial status") == 1 and "\x1b[" not in text
    assert "3 trials: 2 TERMINATED | 1 ERROR" in text


def test_cli_reporter_settings_choose_intermediate_tables_off_a_terminal():
    def tables(cli_reporter, verbose=1):
        reporter = cli_reporter.reporter(_table(), verbose=verbose)
        out, clock = _Pipe(), _Clock()
        reporter._stream, reporter._clock = out, clock
        _run_three_trials(reporter, clock)
        return out.getvalue().count("Trial status")

    assert tables(tune.CLIReporter()) == 1  # the default: the final table alone
    assert tables(tune.CLIReporter(), verbose=3) == 1 + 10 + 1  # every 5 s, as asked
    assert tables(tune.CLIReporter(max_report_frequency=20)) == 1 + 3 + 1  # 20, 40, 60 s
    assert tables(tune.CLIReporter(print_intermediate_tables=True)) == 1 + 10 + 1
    no = tune.CLIReporter(max_report_frequency=20, print_intermediate_tables=False)
    assert tables(no, verbose=3) == 1
    assert no.reporter(_table()).intermediate is False


def test_reporter_prints_every_interval_off_a_terminal_and_at_the_end():
    out, clock = io.StringIO(), _Clock()
    reporter = ProgressReporter(
        _table(), stream=out, tty=False, interval_s=5.0, clock=clock, intermediate=True
    )
    reporter.status("t1", "RUNNING")  # the first update draws
    reporter.result("t1", {"training_iteration": 1})
    clock.now = 4.9
    reporter.result("t1", {"training_iteration": 2})
    assert out.getvalue().count("Trial status") == 1
    clock.now = 5.0
    reporter.result("t1", {"training_iteration": 3})
    assert out.getvalue().count("Trial status") == 2
    reporter.log("a line")
    reporter.close()
    text = out.getvalue()
    assert text.count("Trial status") == 3 and "\x1b[" not in text
    assert "a line\n" in text and "Total running time: 5.0 s" in text


def test_reporter_redraws_in_place_on_a_terminal():
    out, clock = io.StringIO(), _Clock()
    reporter = ProgressReporter(_table(), stream=out, tty=True, redraw_s=0.2, clock=clock)
    reporter.status("t1", "RUNNING")
    first = out.getvalue()
    height = first.count("\n")
    assert "\x1b[" not in first  # nothing drawn before
    clock.now = 0.1
    reporter.status("t1", "TERMINATED")  # too soon: not drawn
    assert out.getvalue() == first
    clock.now = 0.3
    reporter.status("t2", "RUNNING")
    assert out.getvalue()[len(first) :].startswith(f"\x1b[{height}F\x1b[J")
    reporter.log("Trial t1 ERROR: boom")  # above the table, which is drawn again below it
    tail = out.getvalue().rsplit("\x1b[J", 1)[1]
    assert tail.startswith("Trial t1 ERROR: boom\nTrial status")


def test_fit_prints_the_table_by_verbosity(tmp_path, capsys):
    def fn(config):
        for i in range(3):
            tune.report({"score": config["a"] * i})

    def fit(verbose):
        tune.Tuner(
            fn,
            param_space={"a": tune.grid_search([1, 2])},
            tune_config=tune.TuneConfig(metric="score", mode="max"),
            run_config=tune.RunConfig(storage_path=str(tmp_path), verbose=verbose),
        ).fit()
        return capsys.readouterr().out

    assert fit(0) == ""
    out = fit(1)
    assert out.count("Trial status") == 1  # captured output is not a terminal: the final table
    last = out.rsplit("Trial status", 1)[1]
    assert last.startswith(": 2 trials: 2 TERMINATED")
    assert "Current best trial: fn_" in last and "with score=4" in last
    assert "| TERMINATED | 2 |    3 |     4 |" in last
    out = fit(2)
    assert "iteration 3: score=4" in out and out.count("Trial status") == 1
    out = fit(3)  # intermediate tables: the first as the trials start, then the final one
    assert out.count("Trial status") >= 2 and out.startswith("Trial status: 2 trials:")
