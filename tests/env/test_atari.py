"""EnvPoolAtari replays EnvPool's Atari preprocessing on ale-py frame for frame (no-ops, FIRE,
frame skip with max-pooling, INTER_AREA resize, stacking, episodic-life resets, reward
clipping), so an EnvPool-trained policy can be watched; and a video of one."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")
envpool = pytest.importorskip("envpool")

from rljax.env.atari import EnvPoolAtari  # noqa: E402


@pytest.mark.parametrize(
    "task, episodic_life", [("Pong-v5", False), ("Breakout-v5", True)], ids=["pong", "breakout"]
)
def test_observations_and_rewards_equal_envpools_frame_for_frame(task, episodic_life):
    # noop_max=1: no random no-ops (their RNG is EnvPool's own), FIRE still pressed at reset.
    kwargs = dict(noop_max=1, episodic_life=episodic_life, reward_clip=True)
    reference = envpool.make_gymnasium(task, num_envs=1, seed=5, **kwargs)
    env = EnvPoolAtari(task, kwargs, seed=5)
    obs_ref, _ = reference.reset()
    obs, _ = env.reset()
    # EnvPool stacks frames first; rljax's Atari envs stack them last, as RLlib does.
    np.testing.assert_array_equal(obs, np.moveaxis(obs_ref[0], 0, -1))
    rng = np.random.default_rng(0)
    lives_lost = rewarded = 0
    for _ in range(400):
        action = int(rng.integers(env.action_space.n))
        obs_ref, r_ref, term_ref, trunc_ref, _ = reference.step(np.array([action]))
        obs, reward, terminated, truncated, info = env.step(action)
        np.testing.assert_array_equal(obs, np.moveaxis(obs_ref[0], 0, -1))
        assert reward == r_ref[0] and abs(reward) <= 1 and reward == np.sign(info["reward"])
        rewarded += reward != 0
        if terminated or truncated:
            assert term_ref[0] or trunc_ref[0]
            break
        lives_lost += bool(term_ref[0])  # EnvPool ends an episode at a lost life
    assert rewarded > 0
    if episodic_life:
        assert lives_lost >= 2 and terminated  # Breakout's five lives lost to random play
    reference.close()


@pytest.mark.slow
def test_an_envpool_trained_atari_policy_is_recorded(tmp_path):
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    from rljax.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("Breakout-v5")
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=16)
        .training(train_batch_size_per_learner=32, minibatch_size=16, num_epochs=1)
        .evaluation(evaluation_duration=1)
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        result = algo.evaluate(record_video=tmp_path)
    (path,) = result["videos"]
    (n,) = result["env_runners"]["episode_lens"]
    frames, _ = imageio_ffmpeg.count_frames_and_secs(path)
    assert frames == n + 1 and n > 10


def _wrapped(game, **kwargs):
    import gymnasium as gym

    from rljax.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

    raw = gym.make(f"ale_py:ALE/{game}", frameskip=1, repeat_action_probability=0.0)
    return wrap_atari_for_new_api_stack(raw, **kwargs)


def test_rllib_atari_wrapper_skips_stacks_and_ends_episodes_at_lost_lives():
    from rljax.env.wrappers.atari_wrappers import EpisodicLifeEnv, get_wrapper_by_cls, is_atari

    env = _wrapped("Breakout-v5", framestack=4)
    assert is_atari(env) and is_atari("ale_py:ALE/Pong-v5") and not is_atari("CartPole-v1")
    obs, _ = env.reset(seed=0)
    # RLlib's layout: dim x dim grey frames stacked last, pixels in [-1, 1].
    assert env.observation_space.shape == obs.shape == (64, 64, 4) and obs.dtype == np.float32
    assert obs.min() >= -1.0 and obs.max() <= 1.0 and np.all(obs[..., 0] == obs[..., 3])
    frames = env.unwrapped.ale.getEpisodeFrameNumber()
    env.step(0)
    assert env.unwrapped.ale.getEpisodeFrameNumber() - frames == 4  # frameskip=4
    rng = np.random.default_rng(0)
    episodes, lives = 0, []
    for _ in range(5000):
        _, _, terminated, truncated, _ = env.step(int(rng.integers(4)))
        if terminated or truncated:
            episodes += 1
            lives.append(env.unwrapped.ale.lives())
            if get_wrapper_by_cls(env, EpisodicLifeEnv).was_real_done:
                break
            env.reset()
    # Breakout's five lives: each lost one ends an episode; the game goes on until the last.
    assert episodes == 5 and lives == [4, 3, 2, 1, 0]


@pytest.mark.slow
def test_an_rllib_style_registered_atari_creator_trains():
    import gymnasium as gym

    import rljax
    from rljax.algorithms.ppo import PPOConfig
    from rljax.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

    rljax.register_env(
        "wrapped_pong",
        lambda cfg: wrap_atari_for_new_api_stack(
            gym.make("ale_py:ALE/Pong-v5", **cfg), framestack=4
        ),
    )
    config = (
        PPOConfig()
        .environment("wrapped_pong", env_config={"frameskip": 1, "repeat_action_probability": 0.0})
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=16)
        .training(train_batch_size_per_learner=32, minibatch_size=16, num_epochs=1)
    )
    with config.build_algo() as algo:
        assert algo.observation_space.shape == (64, 64, 4)
        assert algo.train()["env_runners"]["num_env_steps_sampled"] == 32
