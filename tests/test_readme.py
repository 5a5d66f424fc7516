"""The README and the guides stay true to the code: their examples run as written and give what
the text says. (tests/test_docs.py runs every other block.)"""

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# The first two commands, exactly as they stand at the top of the README.
INSTALL_AND_TRAIN = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && rljax train "
    "--config rljax/tuned_examples/ppo_cartpole.yaml --stop-reward 450"
)
TEST_COMMAND = (
    'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && '
    "python -m pytest -q"
)


def _python_block(after_heading: str, page: str) -> str:
    text = (ROOT / page).read_text()
    section = text[text.index(after_heading) :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_is_a_front_page_that_starts_with_the_two_commands():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    commands = re.findall(r"```bash\n(.*?)\n```", text, re.S)
    assert commands[:2] == [INSTALL_AND_TRAIN, TEST_COMMAND]
    # Nothing but the title and prose comes before them.
    assert text.index(INSTALL_AND_TRAIN) < text.index("```python")
    for page in re.findall(r"\]\((docs/[\w/.-]+\.md)", text):
        assert (ROOT / page).is_file(), page


@pytest.mark.slow
def test_porting_example_runs(tmp_path, capsys):
    code = _python_block("## The first training run", "docs/getting-started.md")
    code = code.replace('"/tmp/ppo_cartpole"', repr(str(tmp_path / "ckpt")))
    namespace: dict = {}
    capsys.readouterr()
    exec(compile(code, "README.md", "exec"), namespace)
    algo = namespace["algo"]
    try:
        # The block prints each iteration's return mean: the run learns (a peak past 450) and
        # stays learned. The last iteration alone is no measure: the curve swings by +-100
        # between iterations (a seed-0 run on one host ended at 299 after peaking at 487).
        returns = [float(line.split()[0]) for line in capsys.readouterr().out.splitlines()]
        assert len(returns) == 30
        assert max(returns) >= 450
        assert np.mean(returns[-10:]) >= 300
        assert namespace["action"] in (0, 1)
        assert (tmp_path / "ckpt" / "LATEST").is_file()
    finally:
        algo.stop()


@pytest.mark.slow
def test_old_api_example_runs(tmp_path):
    code = _python_block("## RLlib's old API (the tutorial's code)", "docs/porting.md")
    code = code.replace('"/tmp/ppo_cartpole_old_api"', repr(str(tmp_path / "old")))
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    trainer = namespace["trainer"]
    try:
        result = namespace["result"]
        assert result["timesteps_total"] == 2000
        assert result["episode_reward_mean"] == result["env_runners"]["episode_return_mean"]
        assert trainer.config.num_env_runners == 2 and trainer.config.minibatch_size == 64
        assert (tmp_path / "old" / "LATEST").is_file()
    finally:
        trainer.stop()


@pytest.mark.slow
def test_off_policy_example_builds_and_trains():
    namespace: dict = {}
    exec(
        compile(
            _python_block("# DQN, SAC, TQC and TD3", "docs/algorithms-off-policy.md"),
            "README.md",
            "exec",
        ),
        namespace,
    )
    for name in ("dqn", "sac", "td3"):
        algo = namespace[name]
        try:
            assert algo.fused
            result = algo.train()
            assert result["num_env_steps_sampled_lifetime"] > 0
            assert "qf_loss" in result["learners"]["default_policy"]
        finally:
            algo.stop()
    assert namespace["dqn"].buffer.prioritized and namespace["dqn"].schedule.n_step == (3, 3)


@pytest.mark.slow
def test_multi_agent_example_builds_and_trains():
    namespace: dict = {}
    exec(
        compile(
            _python_block(
                "# Multi-agent (PPO, IMPALA, APPO, DQN, SAC, TD3)", "docs/multi-agent.md"
            ),
            "README.md",
            "exec",
        ),
        namespace,
    )
    # The block ran as written; its config then trains one iteration on a smaller batch than the
    # block's 4,000 x 6 epochs (what is checked is its multi-agent setup, not learning).
    config = namespace["config"].training(train_batch_size_per_learner=512, num_epochs=1)
    algo = config.build_algo()
    try:
        result = algo.train()
        assert set(result["env_runners"]["module_episode_returns_mean"]) == {"p0", "p1"}
        assert len(algo.groups) == 2  # p1's own learning rate puts it in its own group
        assert algo.config.module_config("p1").lr == 5e-4
    finally:
        algo.stop()


def test_callback_example_reports_its_metric():
    from rljax.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
    )
    namespace: dict = {"config": config}
    code = _python_block("# Callbacks, logging, videos and serving", "docs/callbacks.md")
    exec(compile(code, "README.md", "exec"), namespace)
    with config.build_algo() as algo:
        result = algo.train()
    angle = result["env_runners"]["max_pole_angle"]
    # CartPole ends once the angle passes 0.2095 rad, and the last observation is one 0.02 s
    # step past it: 0.2750 at most over 20,000 random-play episodes of gymnasium's CartPole
    # (1.9% of them past 0.25, which an earlier bound of 0.25 here failed on once).
    assert 0 < angle < 0.3 and result["my_note"] == 1


def test_export_loader_is_the_modules():
    """The guide serves exported policies through rljax's loader, and names its module as the
    code to copy where rljax is not installed."""
    readme = _python_block("policy as StableHLO", "docs/callbacks.md")
    assert "from rljax.policy import load_exported" in readme
    assert "rljax/policy/loader.py" in (DOCS / "callbacks.md").read_text()
