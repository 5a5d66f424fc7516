"""The runner threads' fused EnvPool rollout (Sebulba's actor): a whole fragment in one jitted
call, the same transitions as stepping the same EnvPool from Python."""

import jax
import numpy as np
import pytest

from rljax.algorithms.appo import APPOConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.env.state import EnvStateError
from rljax.runners.fused import FusedRunner
from rljax.runners.host import HostRunner


@pytest.mark.parametrize(
    ("config_class", "mode"),
    [(APPOConfig, "SYNC"), (APPOConfig, "ASYNC"), (PPOConfig, "SYNC"), (PPOConfig, "ASYNC")],
)
def test_fused_runner_matches_the_python_stepped_runner(config_class, mode):
    # APPO's runners run free; PPO's in lock step.
    config = (
        config_class()
        .environment("CartPole-v1")
        .env_runners(
            num_env_runners=1,
            num_envs_per_env_runner=4,
            rollout_fragment_length=8,
            gym_env_vectorize_mode=mode,
        )
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=3)
    )
    if config_class is PPOConfig:
        config.training(train_batch_size_per_learner=32, minibatch_size=16)
    algo = config.build_algo()
    try:
        fused = algo._runners.runners[0]
        assert isinstance(fused, FusedRunner)  # EnvPool runners are fused
        params = algo._runner_params()
        spec = fused.spec
        twin = FusedRunner(spec, params, algo.parts.to_env_action)
        host = HostRunner(spec, params)
        try:
            assert fused.spec.same_step  # on-policy runners reset in the step that ended
            for _ in range(3):  # fragments carry their episodes across
                a = jax.device_get(twin.sample(params, 8))
                b = jax.device_get(host.sample(params, 8))
                if mode == "SYNC":  # ASYNC: which sub-envs come first depends on timing
                    for name in ("obs", "action", "reward", "terminated", "truncated", "env_id"):
                        np.testing.assert_allclose(
                            getattr(a, name), getattr(b, name), rtol=1e-6, err_msg=name
                        )
                assert a.reward.shape == b.reward.shape
                assert twin.last_num_steps == twin.last_num_rows == 8 and twin.error is None
            empty = twin.empty_fragment(8)
            assert empty.reward.shape == a.reward.shape and not np.asarray(empty.valid).any()
            with pytest.raises(EnvStateError, match="EnvPool"):
                twin.get_state()
        finally:
            twin.close()
            host.close()
    finally:
        algo.stop()


def test_building_the_fused_path_compiles_a_handful_of_programs_not_one_per_operation():
    """Building PPO on the fused EnvPool path compiles the parameters' initialisation, the first
    act step (same-step runners act once on the reset, ``acting.prime``) and a few key
    derivations as whole programs. Acting eagerly and making the actor state with ``jnp.zeros``
    compiled one program per operation and shape: 74 in a fresh process (measured), 18 now.
    Sizes no other test uses (7 envs, 5 hidden units) keep earlier tests' programs out of it."""
    lowered = []
    listening = [True]

    def listen(name, secs, **kwargs):
        if listening[0] and name == "/jax/core/compile/jaxpr_to_mlir_module_duration":
            lowered.append(name)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        algo = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_envs_per_env_runner=7)
            .training(train_batch_size_per_learner=70, minibatch_size=35, num_epochs=1)
            .rl_module(model_config={"fcnet_hiddens": [5]})
            .build_algo()
        )
    finally:
        listening[0] = False
    try:
        assert algo.fused
        assert 2 <= len(lowered) <= 20, len(lowered)
        assert algo.train()["num_env_steps_sampled_lifetime"] == 70
    finally:
        algo.stop()


def test_spaces_holding_float64_anywhere_keep_envs_out_of_32_bit_jit():
    import gymnasium as gym

    from rljax.runners.build import needs_x64

    f32 = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    f64 = gym.spaces.Box(-1.0, 1.0, (2,), np.float64)
    assert not needs_x64(f32, gym.spaces.Discrete(3))
    assert needs_x64(f32, f64)
    assert needs_x64(gym.spaces.Dict({"obs": f32, "extra": gym.spaces.Tuple((f32, f64))}))
    assert not needs_x64(gym.spaces.Dict({"obs": f32, "mask": gym.spaces.MultiBinary(3)}))


def test_a_python_stepped_runner_compiles_its_env_step_once():
    """A host runner's first fragment and its later ones run one compiled step: its first key
    and actor state are committed to its device, as the step's outputs are (JAX compiles a call
    again when an argument's commitment differs: the step was compiled twice per runner)."""
    from rljax.examples.envs.classes.stateless_cartpole import StatelessCartPole

    config = (
        PPOConfig()
        .environment(StatelessCartPole)
        .env_runners(num_env_runners=1, num_envs_per_env_runner=3)
        .training(train_batch_size_per_learner=24, minibatch_size=12, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [6]})
    )
    with config.build_algo() as algo:
        runner = algo._runners.runners[0]
        assert isinstance(runner, HostRunner)
        for _ in range(3):
            algo.train()
        assert runner._step._cache_size() == 1
