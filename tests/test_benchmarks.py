import importlib.util
import json
import math
import os
import subprocess
import sys
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
        assert len(res["curve"]) == 2
    # The fused variant's profile (ppo_profile.py): one round under --quick, every part timed.
    profile = report["results"]["rljax_fused"]["profile"]
    assert "profile" not in report["results"]["rljax_host"]
    assert profile["rounds"] == 1 and profile["env_steps_per_iteration"] == 4000
    for part in (
        "rollout",
        "acting",
        "postprocess",
        "update",
        "fused_iteration",
        "envpool_only",
        "network_floor",
    ):
        assert 0 < profile[part]["min_s"] <= profile[part]["median_s"], part
    # The separate 64x64 networks' products: (4*64 + 64*64 + 64*2 + 4*64 + 64*64 + 64*1) = 8,896
    # multiply-adds a row, 3 products of 2 operations each, 128 rows; 6 epochs of 31 minibatches.
    arithmetic = profile["arithmetic"]
    assert arithmetic["matmul_flops_per_gradient_step"] == 6 * 128 * 8896
    assert arithmetic["gradient_steps_per_update"] == 6 * 31
    trips = profile["reset_round_trips"]
    # An untrained CartPole policy ends an episode in most of its 250 steps (about 22 steps
    # each, 16 sub-envs), and each such step is one host call; the others skip it.
    assert 0 < trips["steps_with_an_ended_episode_first_fragment"] <= trips["fragment_steps"]
    assert 0 < trips["host_calls_per_rollout"] <= 250


@pytest.mark.slow
def test_off_policy_benchmarks_short_runs_write_json_and_plot(tmp_path, run_benchmark):
    # Two iterations each (the second one updating): the throughput is that of the second.
    # DQN's two iterations end at 955 and 1918 env steps (measured, seed 0); updates from 1000 on.
    dqn = run_benchmark("dqn_cartpole.py", "--max-timesteps", "1800", "--out", str(tmp_path))
    res = dqn["results"]["rljax"]
    assert res["status"] == "ok" and res["throughput_env_steps_per_s"] > 0
    assert 1800 <= res["env_steps_total"] < 2800 and not res["reached_target"]
    assert "rllib" not in dqn["results"]  # only with --compare
    assert (tmp_path / "dqn_cartpole.png").stat().st_size > 10_000
    curve = json.loads((tmp_path / "dqn_cartpole.json").read_text())["results"]["rljax"]["curve"]
    assert len(curve) == 2 and curve[0]["updates"] == 0 and curve[1]["updates"] > 800
    sac = run_benchmark("sac_pendulum.py", "--max-timesteps", "1500", "--out", str(tmp_path))
    res = sac["results"]["rljax"]
    # 256x256 twin critics and actor, batch 256: about 0.55 GFLOP per update.
    assert 4e8 < res["update_flops"] < 7e8
    assert res["updates_per_s"] > 0 and res["achieved_gflops_per_s"] > 0
    saved = json.loads((tmp_path / "sac_pendulum.json").read_text())
    curve = saved["results"]["rljax"]["curve"]
    # 995 env steps an iteration (measured), updates from env step 1000 on.
    assert [p["env_steps"] for p in curve] == [995, 1990]
    assert curve[0]["updates"] == 0 and curve[1]["updates"] > 900


@pytest.mark.xla_optimized
@pytest.mark.slow
def test_td3_benchmark_short_run_and_compare_needs_stable_baselines3(tmp_path, run_benchmark):
    td3 = run_benchmark("td3_pendulum.py", "--max-timesteps", "4000", "--out", str(tmp_path))
    res = td3["results"]["rljax"]
    assert res["status"] == "ok" and res["throughput_env_steps_per_s"] > 0
    # Two iterations of 10 whole episodes (2000 transitions) each.
    assert res["env_steps_total"] == 4000 and not res["reached_target"]
    assert "sb3" not in td3["results"]  # only with --compare
    saved = json.loads((tmp_path / "td3_pendulum.json").read_text())
    assert [p["env_steps"] for p in saved["results"]["rljax"]["curve"]] == [2000, 4000]
    if importlib.util.find_spec("stable_baselines3") is None:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "td3_pendulum.py"), "--compare"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2 and "pip install stable-baselines3" in proc.stderr


@pytest.mark.slow
def test_appo_benchmark_short_run_reports_both_algorithms(tmp_path, run_benchmark):
    # 800 rows per iteration (32 sub-envs x 25), of which the auto-reset rows are no env steps:
    # it stops at the first iteration past 3200 real env steps.
    report = run_benchmark("appo_cartpole.py", "--max-timesteps", "3200", "--out", str(tmp_path))
    assert set(report["results"]) == {"rljax_appo", "rljax_impala"}  # RLlib only with --compare
    for res in report["results"].values():
        assert res["status"] == "ok" and res["throughput_env_steps_per_s"] > 0
        assert 3200 <= res["env_steps_total"] < 4000
    assert (tmp_path / "appo_cartpole.png").stat().st_size > 10_000


@pytest.mark.slow
def test_appo_async_benchmark_reports_stragglers_per_runner(tmp_path, run_benchmark):
    report = run_benchmark(
        "appo_async.py", "--quick", "--parts", "a", "--measure-s", "0.5", "--out", str(tmp_path)
    )
    stragglers = report["results"]["stragglers"]
    for algo in ("appo", "ppo"):
        for key in ("no_straggler", "straggler"):
            run = stragglers[algo][key]
            assert run["env_steps_per_s"] > 0 and run["timed_iterations"] >= 3
            assert set(run["fragments_per_runner"]) == {"1", "2", "3", "4"}
        ratio = stragglers[algo]["straggler_over_no_straggler"]
        assert ratio == pytest.approx(
            stragglers[algo]["straggler"]["env_steps_per_s"]
            / stragglers[algo]["no_straggler"]["env_steps_per_s"]
        )
    # PPO takes one fragment of every runner per update, the straggler's too.
    ppo = stragglers["ppo"]["straggler"]["fragments_per_runner"]
    assert len(set(ppo.values())) == 1
    assert (tmp_path / "appo_async.json").exists()


@pytest.mark.slow
def test_appo_atari_benchmark_quick_run_and_plot_only(
    tmp_path, run_benchmark, load_benchmark, monkeypatch, capsys
):
    report = run_benchmark("appo_atari.py", "--quick", "--out", str(tmp_path))
    assert report == json.loads((tmp_path / "appo_atari.json").read_text())
    res = report["results"]
    # 4 sub-envs x 16 steps per iteration; the auto-reset rows are no env steps.
    assert 0 < res["env_steps_timed"] <= 2 * 4 * 16
    assert math.isfinite(res["throughput_env_steps_per_s"])
    assert res["throughput_env_steps_per_s"] > 0 and res["first_iteration_s"] > 0
    assert report["settings"]["model_config"]["conv_filters"][0] == [32, [8, 8], 4]
    # --plot-only redraws the figure and report from a curve file alone.
    curve = [
        {"wall_s": 10.0, "iter_s": 5.0, "env_steps": 1600, "episode_return_mean": None},
        {"wall_s": 15.0, "iter_s": 5.0, "env_steps": 3200, "episode_return_mean": -21.0},
        {"wall_s": 20.0, "iter_s": 5.0, "env_steps": 4800, "episode_return_mean": -19.0},
    ]
    (tmp_path / "appo_atari_curve.jsonl").write_text(
        "".join(json.dumps(p) + "\n" for p in curve) + '{"wall_s": 2'  # a line cut by a kill
    )
    # The script's own command line, in this process: --plot-only trains nothing, so a
    # subprocess would only add an interpreter's imports.
    monkeypatch.setattr(sys, "argv", ["appo_atari.py", "--plot-only", "--out", str(tmp_path)])
    capsys.readouterr()
    load_benchmark("appo_atari").main()
    redrawn = json.loads(capsys.readouterr().out)
    assert redrawn["results"]["iterations"] == 3
    assert redrawn["results"]["throughput_env_steps_per_s"] == pytest.approx(320.0)
    assert redrawn["results"]["return_first"] == -21.0
    assert redrawn["results"]["return_smoothed_last"] == pytest.approx(-20.0)
    assert (tmp_path / "appo_atari.png").stat().st_size > 10_000


@pytest.mark.slow
def test_multi_agent_benchmarks_short_runs(tmp_path, run_benchmark):
    many = run_benchmark(
        "many_policies.py",
        *("--policies", "1", "4", "--total-rows", "512", "--repeats", "1", "--out", str(tmp_path)),
    )
    assert [r["num_policies"] for r in many["results"]] == [1, 4]
    assert [r["rows_per_policy"] for r in many["results"]] == [512, 128]
    assert all(r["update_s"] > 0 for r in many["results"])
    assert (tmp_path / "many_policies.png").stat().st_size > 5_000
    # Multi-agent DQN at RLlib's tuned settings: two iterations (1,000 calls each, of which
    # those that reset a finished copy are no env steps), RLlib only with --compare.
    dqn = run_benchmark("multi_agent_dqn.py", "--max-timesteps", "1500", "--out", str(tmp_path))
    res = dqn["results"]["rljax"]
    assert res["status"] == "ok" and res["throughput_env_steps_per_s"] > 0
    assert 1800 <= res["env_steps_total"] <= 2000 and "rllib" not in dqn["results"]


@pytest.mark.slow
def test_soak_short_run_reports_memory_and_no_recompilation(tmp_path, run_benchmark):
    # 1.2 s: shorter than its minimum of 3 iterations, so it runs those 3.
    report = run_benchmark(
        "soak.py", "--minutes", "0.02", "--sample-s", "1", "--env", "gym", "--out", str(tmp_path)
    )
    assert report == json.loads((tmp_path / "soak.json").read_text())
    assert report["iterations"] >= 2 and len(report["rss_mb"]) >= 2
    assert report["compilations_first_iteration"] > 0  # the listener sees compilations
    assert report["compilations_after_first_iteration"] == 0
    assert report["rss_end_mb"] > 100 and abs(report["rss_growth_after_warmup"]) < 1.0


def test_ppo_profile_network_floor_is_plain_gradient_steps_of_the_network(load_benchmark):
    import jax.numpy as jnp

    profile = load_benchmark("ppo_profile")
    params = {"Dense_0": {"kernel": jnp.ones((2, 1)), "bias": jnp.zeros((1,))}}

    def apply(p, x):
        return x @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"]

    obs = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    # One step on both rows of the squared loss 0.5 * sum((x W)^2): the gradient is
    # x^T (x W) = [[1, 3], [2, 4]] @ [[3], [7]] = [[24], [34]], the bias's 3 + 7 = 10.
    out = profile.network_floor(apply, obs, steps=1, minibatch=2)(params)
    assert jnp.allclose(out["Dense_0"]["kernel"], 1.0 - 1e-6 * jnp.array([[24.0], [34.0]]))
    assert jnp.allclose(out["Dense_0"]["bias"], -1e-6 * jnp.array([10.0]))
    # Only kernels count: 3 products of 2 operations per multiply-add, 2 * 1 of them per row.
    assert profile.dense_kernels(params) == [(2, 1)]
    assert profile.matmul_flops_per_step(params, rows=128) == 3 * 2 * 128 * 2


def test_revisions_keeps_speed_figures_and_interleaves_the_sides(load_benchmark):
    revisions = load_benchmark("revisions")
    report = {
        "results": {
            "rljax": {
                "throughput_env_steps_per_s": 100,
                "time_to_target_s": 2.5,
                "reached_target": True,
                "curve": [{"env_steps_per_s": 1}],
            }
        },
        "runs": [{"env_calls_per_s": 7.0, "ideal_env_steps_per_s": 8}],
    }
    assert revisions.speed_figures(report) == {
        "results/rljax/throughput_env_steps_per_s": 100.0,
        "results/rljax/time_to_target_s": 2.5,
        "runs/0/env_calls_per_s": 7.0,
        "runs/0/ideal_env_steps_per_s": 8.0,
    }
    assert revisions.failed_parts(report) == []
    crashed = {"results": {"rljax": {"status": "failed"}, "rllib": {"status": "ok"}}}
    assert revisions.failed_parts(crashed) == ["results/rljax"]
    assert revisions.order(3) == ["base", "head", "head", "base", "base", "head"]
    assert revisions.last_json_object('a table {x}\n{"a": {"b": 1}}\n') == {"a": {"b": 1}}
    summary = revisions.summarize(
        {
            "base": [{"figures": {"x_steps_per_s": 100.0}}, {"figures": {"x_steps_per_s": 300.0}}],
            "head": [{"figures": {"x_steps_per_s": 220.0}}],
        }
    )
    assert summary["x_steps_per_s"]["median_base"] == 200.0
    assert summary["x_steps_per_s"]["head_over_base"] == pytest.approx(1.1)


@pytest.mark.slow
def test_tune_benchmark_quick_run_compares_population_and_trials_one_by_one(
    tmp_path, run_benchmark
):
    # Part (c), trials in worker processes against one process, checks what
    # tests/tune/test_workers.py checks more strictly (the same losses, per iteration); its
    # two variants would double this test's time.
    args = ("--parts", "a", "--quick", "--out", str(tmp_path))
    report = run_benchmark("tune_ppo_cartpole.py", *args)
    assert report == json.loads((tmp_path / "tune_ppo_cartpole.json").read_text())
    res = report["results"]
    assert "a_ray" not in res  # only with --compare
    assert not any(name.startswith("c_") for name in res)
    # The quick grid: 2 learning rates x 2 seeds, 2 iterations of 256 env steps each.
    for variant, trials in (("a_one", 1), ("a_population", 4), ("a_sequential", 4)):
        assert res[variant]["status"] == "ok", res[variant]
        assert res[variant]["trials"] == trials
        assert [t["iterations"] for t in res[variant]["per_trial"]] == [2] * trials
        assert res[variant]["env_steps_total"] > 0
    # The same trials, the same numbers, whether trained together or one after another.
    steps = [
        [t["env_steps"] for t in res[v]["per_trial"]] for v in ("a_population", "a_sequential")
    ]
    assert steps[0] == steps[1] and steps[0][0] == res["a_one"]["env_steps_total"]
    together = sorted(t["return"] for t in res["a_population"]["per_trial"])
    apart = sorted(t["return"] for t in res["a_sequential"]["per_trial"])
    assert together == pytest.approx(apart, rel=1e-4)
    ratios = report["ratios"]
    assert ratios["a_population_over_one"] > 0 and ratios["a_ray_over_population"] is None
    assert ratios["c_workers2_over_sequential"] is None  # part (c) was not asked for


@pytest.mark.slow
def test_xla_cpu_flags_benchmark_runs_each_mode_in_its_own_process(tmp_path, run_benchmark):
    args = ["--configs", "tuned_16env", "--modes", "default", "one_core"]
    report = run_benchmark("xla_cpu_flags.py", *args, "--repeats", "1", "--iterations", "2",
                           "--out", str(tmp_path))  # fmt: skip
    assert report == json.loads((tmp_path / "xla_cpu_flags.json").read_text())
    assert set(report["results"]) == {"tuned_16env/default", "tuned_16env/one_core"}
    for res in report["results"].values():
        assert [r["status"] for r in res["runs"]] == ["ok"]
        assert 0 < res["iteration_s"][0] < res["first_s"][0]  # the first one compiles


@pytest.mark.slow
def test_xla_cpu_threads_benchmark_compares_a_process_started_each_way(tmp_path, run_benchmark):
    args = ["--configs", "small", "--iterations", "2", "--out", str(tmp_path)]
    report = run_benchmark("xla_cpu_threads.py", *args)
    assert report == json.loads((tmp_path / "xla_cpu_threads.json").read_text())
    variants = report["variants"]
    if len(os.sched_getaffinity(0)) >= 2:  # one pool thread per core by default
        assert variants["default"]["xla_pool_threads"] >= 2
    assert variants["1_thread"]["xla_pool_threads"] == 1
    assert variants["1_thread"]["pjrt_nproc"] == "1" and variants["default"]["pjrt_nproc"] is None
    # The process keeps its cores: only the pool is smaller.
    assert variants["1_thread"]["cores"] == variants["default"]["cores"]
    row = report["small"]
    for v in ("default", "1_thread"):
        assert row[v]["env_steps_per_iteration"] == 256
        assert 0 < row[v]["iteration_s_median"] < row[v]["first_iteration_s"]
    assert row["speedup_median"] > 0


@pytest.mark.slow
def test_ppo_halfcheetah_benchmark_quick_run_compares_the_filter(tmp_path, run_benchmark):
    report = run_benchmark("ppo_halfcheetah.py", "--quick", "--out", str(tmp_path))
    assert report == json.loads((tmp_path / "ppo_halfcheetah.json").read_text())
    assert (tmp_path / "ppo_halfcheetah.png").stat().st_size > 10_000
    for variant in ("mean_std_filter", "no_filter"):
        res = report["results"][variant]
        assert res["env_steps"] >= 512 and res["env_steps_per_s"] > 0


@pytest.mark.slow
def test_same_step_reset_benchmark_counts_env_steps_per_row(tmp_path, run_benchmark):
    args = ("--envs", "CartPole-v1", "--num-envs", "4", "--fragment", "64", "--rounds", "1")
    report = run_benchmark("same_step_reset.py", *args, "--fragments", "2", "--out", str(tmp_path))
    assert report == json.loads((tmp_path / "same_step_reset.json").read_text())
    res = report["results"]["CartPole-v1"]
    # Untrained CartPole episodes end every ~20 steps: same-step resets keep every row an env
    # step; next-step resets lose one row per episode.
    assert res["same_step"]["env_steps_per_fragment"] == res["same_step"]["rows_per_fragment"]
    nxt = res["next_step"]
    assert nxt["env_steps_per_fragment"] < nxt["rows_per_fragment"] - 5
    assert res["same_step"]["env_steps_per_s"] > 0 and nxt["env_steps_per_s"] > 0


@pytest.mark.slow
def test_envpool_handoff_benchmark_times_the_env_with_and_without_work_between_steps(
    tmp_path, run_benchmark
):
    report = run_benchmark(
        "envpool_handoff.py", "--quick", "--dots", "0", "2", "--out", str(tmp_path)
    )
    assert report == json.loads((tmp_path / "envpool_handoff.json").read_text())
    assert report["settings"] == {"steps": 500, "rounds": 2, "width": 256, "num_envs": 1}
    by_dots = report["by_dots_between_steps"]
    assert sorted(by_dots) == ["0", "2"]
    for figures in by_dots.values():
        assert figures["us_per_step"] > 0 and figures["dots_only_us_per_step"] > 0
        share = figures["us_per_step"] - figures["dots_only_us_per_step"]
        assert figures["env_share_us"] == pytest.approx(share, abs=0.02)


@pytest.mark.slow
def test_device_check_quick_run_reports_every_case(tmp_path, run_benchmark):
    # 31-36 s on the 2-core machine with the full test suite beside it (load 6): five cases of
    # 4-10 s each, mostly compilation; the other four are skipped on one CPU device.
    report = run_benchmark("device_check.py", "--quick", "--out", str(tmp_path))
    assert report == json.loads((tmp_path / "device_check.json").read_text())
    assert not (tmp_path / "device_check.partial.json").exists()  # only a killed run leaves it
    assert report["backend"] == "cpu" and report["device_kinds"] == ["cpu"]
    assert (
        report["device_memory"]["stats"] is None and "no memory" in report["device_memory"]["note"]
    )
    cases = report["cases"]
    assert set(cases) == {
        "ppo_envpool",
        "appo_envpool",
        "dqn_envpool",
        "sac_envpool",
        "ppo_gymnax",
        "ppo_num_learners",
        "ppo_envpool_readme_settings",
        "ppo_envpool_runner_on_cpu",
        "ppo_envpool_all_cpu",
    }
    skipped = {"ppo_num_learners", "ppo_envpool_runner_on_cpu", "ppo_envpool_all_cpu"}
    if importlib.util.find_spec("gymnax") is None:
        skipped.add("ppo_gymnax")
        assert cases["ppo_gymnax"]["why"] == "gymnax not installed"
    assert "one device" in cases["ppo_num_learners"]["why"]  # the fixture's one CPU device
    for name, case in cases.items():
        if name in skipped:
            assert case["status"] == "skipped" and case["why"], (name, case)
            continue
        assert case["status"] == "ok", (name, case)
        assert case["env_steps_per_s"] > 0 and case["first_iteration_s"] > 0, name
        assert case["iterations"] == 3 and case["compiles_after_first_iteration"] == 0, name
        assert case["placement"] == {"num_gpus_per_learner": 0, "num_gpus_per_env_runner": 0}
    for name in ("dqn_envpool", "sac_envpool"):
        assert cases[name]["updates_per_s"] > 0  # learning starts in the first iteration


@pytest.mark.slow
def test_purejaxrl_parity_quick_run_scores_every_system_by_env_steps(tmp_path, run_benchmark):
    report = run_benchmark("purejaxrl_parity.py", "--quick", "--out", str(tmp_path))
    assert report == json.loads((tmp_path / "purejaxrl_parity.json").read_text())
    assert (tmp_path / "purejaxrl_parity.png").stat().st_size > 10_000
    assert report["settings"]["total_steps"] == 5120 and report["settings"]["seeds"] == [0]
    for name in ("rljax_purejaxrl", "rljax_literal"):
        run = report["results"][name]["per_seed"]["0"]
        # 10 updates of 512 env steps in windows of 1,024: five points. An untrained policy's
        # CartPole episodes last 8 to a few dozen steps, so every window finishes some.
        assert run["curve"]["window_end_env_steps"] == [1024, 2048, 3072, 4096, 5120]
        returns = run["curve"]["return_mean"]
        assert all(8 <= r < 200 for r in returns), returns
        assert run["final"] == returns[-1] and run["num_episodes"] > 5120 / 200
    assert report["results"]["rljax_purejaxrl"]["changes"] == {
        "vf_clip_param": 0.2,
        "vf_clip_mode": "prediction",
        "vf_loss_coeff": 0.25,
    }
    baseline = report["results"]["baseline"]
    if importlib.util.find_spec("gymnax") is None:  # an install without the gymnax extra
        assert baseline["status"] == "not installed"
    else:
        plotted = baseline["per_seed"]["0"]["purejaxrl_plotted_return"]
        assert len(plotted) == 10 and all(0 <= r <= 500 for r in plotted)


def test_purejaxrl_tuned_example_is_the_parity_benchmarks_config(load_benchmark):
    # The documented config (rljax/tuned_examples/ppo_cartpole_purejaxrl.yaml) is the one the
    # benchmark measures.
    from rljax.algorithms.ppo import PPOConfig

    module = load_benchmark("purejaxrl_parity")
    measured = module.rljax_config("purejaxrl", seed=0, total_steps=500_000)
    tuned = PPOConfig.from_yaml(ROOT / "rljax" / "tuned_examples" / "ppo_cartpole_purejaxrl.yaml")
    assert tuned.to_dict() == measured.to_dict()
    assert tuned.lr == ((0, 2.5e-4), (500_000, 0.0)) and tuned.vf_clip_param == 0.2
    assert tuned.vf_clip_mode == "prediction"
    with pytest.raises(ValueError, match="variant='nope'; use one of"):
        module.rljax_config("nope", seed=0, total_steps=1)


def test_rllib_examples_takes_every_script_outside_rllibs_helper_folders(tmp_path, load_benchmark):
    module = load_benchmark("rllib_examples")
    files = {
        "utils.py": "def add_rllib_example_script_args(): ...\n",  # the harness itself
        "__init__.py": "",
        "envs/custom.py": "parser = add_rllib_example_script_args()\n",
        "envs/classes/env.py": "class Env: ...\n",
        "offline_rl/no_harness.py": "config = 1\n",  # neither harness nor __main__: still one
        "_old_api_stack/old.py": "if __name__ == '__main__': ...\n",  # the old stack's script
        "_old_api_stack/models/model.py": "class Model: ...\n",  # its helper modules
        "_old_api_stack/policy/random_policy.py": "class RandomPolicy: ...\n",
        "rl_modules/classes/utils/helper.py": "x = 1\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = [p.relative_to(tmp_path).as_posix() for p in module.scripts_in(tmp_path)]
    # Was: _old_api_stack/ skipped whole, so RLlib's six old-stack scripts never ran.
    assert found == ["_old_api_stack/old.py", "envs/custom.py", "offline_rl/no_harness.py"]


def test_rllib_examples_runs_each_script_with_the_flags_its_docstring_names(load_benchmark):
    """RLlib's examples document their command line ("How to run this script"); some refuse to
    run without it (the grouped two-step game asserts ``--num-agents=2``)."""
    module = load_benchmark("rllib_examples")
    doc = (
        "How to run this script\n----------------------\n"
        "`python [script file name].py --num-agents=2 --port 5555 [--use-lstm]?\n"
        "--env [env name e.g. 'ALE/Pong-v5'] --wandb-key=[your key] --wandb-project p\n"
        "--lr=0.01`\n\nFor debugging, use `python [script file name].py --no-tune`\n"
    )
    assert module.documented_flags(doc) == ["--num-agents=2", "--port", "5555", "--lr=0.01"]
    # A command that ends at a blank line instead of a backtick; none at all.
    assert module.documented_flags("`python [script file name].py --a=1\n\nText `x`") == ["--a=1"]
    assert module.documented_flags("`python other.py --a=1`") == []


def test_rllib_examples_gives_a_script_with_its_own_parser_only_its_flags(load_benchmark):
    """Was: RLlib's old-stack scripts (their own argparse, no --num-env-runners) exited at
    once with "unrecognized arguments" when the run's flags named one they do not define."""
    module = load_benchmark("rllib_examples")
    own = 'parser.add_argument("--stop-iters", type=int)\nparser.add_argument("--run")\n'
    flags = ["--stop-iters=2", "--num-env-runners", "2", "--run", "DQN", "--as-test"]
    assert module.own_flags(own, flags) == ["--stop-iters=2", "--run", "DQN"]
    harness = "parser = add_rllib_example_script_args()\n"
    assert module.own_flags(harness, flags) == flags


def test_rllib_examples_reports_a_failing_script_s_own_error(tmp_path, load_benchmark, capsys):
    """Was: a script with its own parser that failed was run again with every flag, and the
    second run's "unrecognized arguments" was reported instead of the script's error."""
    module = load_benchmark("rllib_examples")
    (tmp_path / "old_script.py").write_text(
        "import argparse\nparser = argparse.ArgumentParser()\n"
        'parser.add_argument("--stop-iters", type=int)\n'
        'if __name__ == "__main__":\n    parser.parse_args()\n'
        '    raise RuntimeError("the real failure")\n'
    )
    module.main([str(tmp_path), "--flags=--stop-iters=1 --verbose=0"])
    (entry,) = json.loads(capsys.readouterr().out)["scripts"]
    assert entry["flags"] == ["--stop-iters=1"] and "documented_flags_failed" not in entry
    assert entry["error"] == "RuntimeError: the real failure"


@pytest.mark.slow
def test_multi_agent_jax_env_benchmark_compares_fused_and_host_stepping(tmp_path, run_benchmark):
    out = run_benchmark(
        "multi_agent_jax_env.py",
        *("--env", "two_poles", "--num-envs", "2", "--fragment", "16", "--warmup", "1"),
        *("--iters", "1", "--out", str(tmp_path), "--population", "2"),
    )
    fused, host = out["results"]["fused"], out["results"]["host_runner"]
    population = out["population"]
    pop, seq = population["population"], population["sequential"]
    assert pop["trials"] == seq["trials"] == 2 and pop["num_compilations"] == 1
    assert len(pop["returns_last"]) == len(seq["returns_last"]) == 2
    # The same trials, seeds and settings: the same episodes, as separate runs give them.
    assert pop["returns_last"] == pytest.approx(seq["returns_last"], rel=1e-5, nan_ok=True)
    assert population["wall_ratio"] == pytest.approx(seq["wall_s"] / pop["wall_s"])
    assert fused["fused"] and not host["fused"]
    for side in (fused, host):
        # Two agents per env: agent steps are twice the env steps.
        assert side["agent_steps_per_s"] == pytest.approx(2 * side["env_steps_per_s"])
    assert out["fused_over_host"] == pytest.approx(
        fused["env_steps_per_s"] / host["env_steps_per_s"]
    )
    assert json.loads((tmp_path / "multi_agent_jax_env.json").read_text()) == out


@pytest.mark.slow
def test_learner_class_benchmark_times_ppo_with_and_without_learner_classes(
    tmp_path, run_benchmark
):
    out = run_benchmark("learner_class.py", "--quick", "--rounds", "1", "--out", str(tmp_path))
    rows = out["variants"]
    assert set(rows) == {"ppo", "ppo_learner", "weight_regularizer", "separate_vf_optimizer"}
    assert rows["ppo"]["ratio_to_ppo"] == 1.0
    for row in rows.values():
        assert row["env_steps_per_s_median"] > 0 and row["first_iteration_s"] > 0
        assert row["ratio_to_ppo"] == pytest.approx(
            row["env_steps_per_s_median"] / rows["ppo"]["env_steps_per_s_median"]
        )
    assert json.loads((tmp_path / "learner_class.json").read_text()) == out


@pytest.mark.slow  # a benchmark's own process, as the others here
def test_offline_bc_benchmark_short_run_reports_the_data_and_each_iteration(
    tmp_path, run_benchmark
):
    report = run_benchmark(
        "offline_bc.py", "--episodes=4", "--iterations=2", f"--data={tmp_path / 'data'}"
    )
    assert report["expert_return_mean"] == 500.0 and report["rows"] == 2000
    assert len(list((tmp_path / "data").glob("*.parquet"))) == 1
    rljax = report["rljax"]
    assert len(rljax["train_s"]) == len(rljax["evaluation_returns"]) == 2
    assert all(r is not None and 8 <= r <= 500 for r in rljax["evaluation_returns"])
    assert "rllib" not in report  # --compare not given


@pytest.mark.slow  # four algorithms built and compiled
def test_offline_pendulum_benchmark_quick_run_reports_each_variant(tmp_path, run_benchmark):
    report = run_benchmark("offline_pendulum.py", "--quick", "--out", str(tmp_path))
    assert report["rows"] == 400 and -1800 < report["data_return_mean"] < 0
    assert set(report["variants"]) == {"bc", "cql", "iql", "iql_paper", "iql_cloning"}
    for row in report["variants"].values():
        assert row["gradient_steps"] == [20, 40]
        assert len(row["evaluation_returns"]) == len(row["train_s"]) == 2
        assert all(-2000 < r <= 0 for r in row["evaluation_returns"])
    assert json.loads((tmp_path / "offline_pendulum.json").read_text()) == report
