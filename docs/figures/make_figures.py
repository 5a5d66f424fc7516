"""Draws the benchmark pages' charts from the figures measured and written in docs/benchmarks.md.

The numbers below are copied from that page (2-core x86 CPU, no GPU); rerun the benchmark
scripts to measure them again. Run: ``python docs/figures/make_figures.py``.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

HERE = Path(__file__).parent
RLJAX, OTHER = "#3f51b5", "#9e9e9e"


def bars(ax, labels, values, colors, title, xlabel, fmt="{:,.0f}"):
    y = range(len(labels))
    ax.barh(list(y), values, color=colors)
    ax.set_yticks(list(y), labels)
    ax.invert_yaxis()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    for i, v in enumerate(values):
        ax.text(v, i, " " + fmt.format(v), va="center")
    ax.set_xlim(0, max(values) * 1.25)
    ax.xaxis.set_major_locator(MaxNLocator(5))
    if max(values) >= 10_000:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:.0f}k"))


def save(fig, name):
    fig.tight_layout()
    fig.savefig(HERE / name, dpi=110)
    plt.close(fig)


def main() -> None:
    labels = ["rljax, fused EnvPool", "rljax, runner thread", "Stable-Baselines3", "RLlib"]
    colors = [RLJAX, RLJAX, OTHER, OTHER]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.2))
    bars(a, labels, [69_000, 34_000, 6_800, 3_400], colors, "PPO, CartPole-v1", "env steps/s")
    bars(b, labels, [7.3, 10.7, 29, 34], colors, "time to a return of 450", "s", "{:.1f} s")
    save(fig, "ppo_cartpole.png")

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 2.6))
    bars(
        a,
        ["rljax DQN", "RLlib DQN"],
        [10.6, 237],
        [RLJAX, OTHER],
        "DQN, CartPole-v1 to 450",
        "s",
        "{:.0f} s",
    )
    bars(
        b,
        ["rljax SAC", "RLlib SAC"],
        [32, 287],
        [RLJAX, OTHER],
        "SAC, Pendulum-v1 to -250",
        "s",
        "{:.0f} s",
    )
    save(fig, "off_policy.png")

    fig, ax = plt.subplots(figsize=(7, 2.8))
    bars(
        ax,
        ["one trial alone", "16 as one population", "16 one after another", "Ray Tune + RLlib"],
        [5.8, 20.9, 45.3, 125.2],
        [RLJAX, RLJAX, RLJAX, OTHER],
        "16 PPO CartPole trials to 450",
        "s",
        "{:.1f} s",
    )
    save(fig, "tune_population.png")

    fig, ax = plt.subplots(figsize=(7, 2.6))
    bars(
        ax,
        ["APPO, no straggler", "APPO, one straggler", "PPO, no straggler", "PPO, one straggler"],
        [2_862, 2_307, 2_898, 365],
        [RLJAX, RLJAX, OTHER, OTHER],
        "4 runner threads, runner 4 ten times slower",
        "env steps/s",
    )
    save(fig, "appo_stragglers.png")

    fig, ax = plt.subplots(figsize=(7, 2.6))
    bars(
        ax,
        ["SYNC (ideal 200)", "ASYNC (ideal 1,200)", "RLlib SYNC", "RLlib ASYNC"],
        [181, 932, 152, 772],
        [RLJAX, RLJAX, OTHER, OTHER],
        "CartPole at 5 ms per observation, 6 sub-envs",
        "env steps/s",
    )
    save(fig, "sync_vs_async.png")


if __name__ == "__main__":
    main()
