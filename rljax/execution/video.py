"""Evaluation you can watch: episodes played by a policy on a rendering copy of its env, one
MP4 per episode (H.264 through imageio-ffmpeg's ffmpeg, every frame kept).

A gymnasium env is built as training built it, asked to render ``rgb_array`` frames (a
gymnasium id gets ``render_mode="rgb_array"``; an env class or creator must render them itself,
e.g. through its ``env_config``). An EnvPool-trained policy plays the matching gymnasium env:
EnvPool's classic-control and MuJoCo tasks have the same observations and dynamics as
gymnasium's envs of the same id, and its Atari games are replayed on ale-py with EnvPool's
preprocessing reproduced frame for frame (``rljax.env.atari.EnvPoolAtari``; the video shows the
game's RGB screen). A video holds ``len(episode) + 1`` frames: the reset's, then
one per step.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import jax
import numpy as np

from rljax.env.env_context import EnvContext
from rljax.env.jax_env import JAX_BACKEND
from rljax.env.vector import EnvSpec, envpool_kwargs, is_envpool_atari
from rljax.execution.episode_stats import episode_summary
from rljax.utils.errors import ConfigError

VIDEO_PREFIX = "episode"


def rendering_env(spec: EnvSpec) -> gym.Env:
    """One env of ``spec`` that renders ``rgb_array`` frames; a clear error when none can."""
    if spec.backend == "envpool" and is_envpool_atari(spec.name):
        from rljax.env.atari import EnvPoolAtari

        # EnvPool's preprocessing of the training env, frame for frame; whole games scored
        # with the game's own rewards (the observations do not depend on reward clipping).
        kwargs = {**envpool_kwargs(spec), "reward_clip": False}
        return EnvPoolAtari(spec.name, kwargs, render_mode="rgb_array")
    if spec.backend == "envpool":
        if spec.name not in gym.registry:
            raise ConfigError(
                f"recording video: {spec.name!r} runs on EnvPool, and gymnasium has no env of that "
                "id to render it (recording covers EnvPool's classic-control and MuJoCo tasks)"
            )
        env = gym.make(spec.name, render_mode="rgb_array")
    elif spec.name in gym.registry and "render_mode" not in spec.env_config:
        env = gym.make(spec.name, render_mode="rgb_array", **spec.env_config)
    else:
        env = spec.gymnasium_creator()(EnvContext(spec.env_config))
    if getattr(env, "render_mode", None) != "rgb_array":
        mode = getattr(env, "render_mode", None)
        env.close()
        if spec.backend == JAX_BACKEND:
            raise ConfigError(
                f"recording video: the JAX env {spec.name!r} does not draw itself; a JAX env "
                "records when it defines render(state) returning an [H, W, 3] uint8 picture "
                "(rljax's own envs do)"
            )
        raise ConfigError(
            f"recording video needs an env that renders rgb_array frames; {spec.name!r} has "
            f"render_mode={mode!r}: have it take render_mode='rgb_array' (through its env_config)"
        )
    return env


def check_video_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a directory to write videos into (made if missing)."""
    out = Path(path).expanduser()
    if out.exists() and not out.is_dir():
        raise ConfigError(f"record_video={os.fspath(path)!r}: a file is there; name a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"record_video={os.fspath(path)!r}: {e.strerror or e}") from None
    return out


def _write_mp4(path: Path, frames: list[Any], fps: int) -> None:
    import imageio_ffmpeg

    height, width = frames[0].shape[:2]
    writer = imageio_ffmpeg.write_frames(
        str(path),
        (width, height),
        fps=fps,
        codec="libx264",
        pix_fmt_out="yuv420p",
        macro_block_size=2,  # even sizes only (yuv420p); no silent resize to 16s
        ffmpeg_log_level="error",
    )
    writer.send(None)
    for frame in frames:
        writer.send(np.ascontiguousarray(frame[..., :3], dtype=np.uint8))
    writer.close()


def record_episodes(
    env: gym.Env,
    act: Callable[[np.ndarray], Any],
    video_dir: Path,
    seed: int,
    num_episodes: int | None = None,
    min_steps: int | None = None,
) -> dict[str, Any]:
    """Plays ``num_episodes`` episodes (or whole episodes until ``min_steps`` env steps) with
    ``act(obs [1, ...]) -> env actions [1, ...]`` and records each into
    ``video_dir/episode-<i>.mp4``; returns the episodes' returns, lengths and video files."""
    try:
        import imageio_ffmpeg  # noqa: F401  (fail before playing)
    except ImportError:
        env.close()
        raise ConfigError(
            "recording video needs imageio-ffmpeg: pip install imageio-ffmpeg (or rljax[video])"
        ) from None
    fps = int(env.metadata.get("render_fps") or 30)
    returns: list[float] = []
    lengths: list[int] = []
    videos: list[str] = []
    try:
        while (num_episodes is not None and len(lengths) < num_episodes) or (
            min_steps is not None and sum(lengths) < min_steps
        ):
            obs, _ = env.reset(seed=seed + len(lengths))
            frames: list[Any] = [env.render()]
            ret, n, done = 0.0, 0, False
            while not done:
                action = act(jax.tree.map(lambda o: np.asarray(o)[None], obs))[0]
                if isinstance(env.action_space, gym.spaces.Discrete):
                    action = int(action)
                obs, reward, terminated, truncated, _ = env.step(action)
                frames.append(env.render())
                ret += float(reward)
                n += 1
                done = bool(terminated or truncated)
            path = video_dir / f"{VIDEO_PREFIX}-{len(lengths)}.mp4"
            _write_mp4(path, frames, fps)
            videos.append(str(path))
            returns.append(ret)
            lengths.append(n)
    finally:
        env.close()
    summary = episode_summary(returns, lengths, int(sum(lengths)))
    return {
        "env_runners": {**summary, "episode_returns": returns, "episode_lens": lengths},
        "videos": videos,
    }


__all__ = ["check_video_dir", "record_episodes", "rendering_env"]
