import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.utils import xla_options
from rljax.utils.errors import ConfigError


def mlp_params(hidden: int, obs: int = 4) -> dict[str, jax.Array]:
    return {
        "w0": jnp.zeros((obs, hidden)),
        "w1": jnp.zeros((hidden, hidden)),
        "pi": jnp.zeros((hidden, 2)),
        "vf": jnp.zeros((hidden, 1)),
    }


@pytest.fixture
def large_options_help(monkeypatch):
    """The machine's calibration found LARGE_OPTIONS faster (as on the AMD EPYC machines)."""
    monkeypatch.setattr(xla_options, "calibrate_large", lambda: dict(xla_options.LARGE_OPTIONS))


def test_auto_picks_the_options_by_the_size_of_the_network(large_options_help):
    large = xla_options.resolve("auto", mlp_params(256), backend="cpu", xla_flags="")
    small = xla_options.resolve("auto", mlp_params(64), backend="cpu", xla_flags="")
    assert set(large) == set(small) == set(xla_options.KINDS)
    for kind in xla_options.KINDS:
        assert large[kind] == xla_options.LARGE_OPTIONS
        assert small[kind] == (xla_options.SMALL_OPTIONS or None)
    assert xla_options.param_count(mlp_params(256)) >= xla_options.LARGE_PROGRAM_PARAMS
    assert xla_options.param_count(mlp_params(64)) < xla_options.LARGE_PROGRAM_PARAMS


def test_auto_gives_stacked_programs_none_but_a_dict_still_applies(large_options_help):
    large = [mlp_params(256), mlp_params(256)]  # two policies' (or trials') networks
    assert xla_options.resolve("auto", large, backend="cpu", xla_flags="", stacked=True) == (
        dict.fromkeys(xla_options.KINDS)
    )
    unstacked = xla_options.resolve("auto", large, backend="cpu", xla_flags="")
    assert unstacked["update"] == xla_options.LARGE_OPTIONS
    given = {"xla_cpu_use_xnnpack": False}
    chosen = xla_options.resolve(given, large, backend="cpu", xla_flags="", stacked=True)
    assert all(v == given for v in chosen.values())


def test_off_switch_other_backends_and_a_dict_of_options():
    params = mlp_params(256)
    assert xla_options.resolve(None, params, backend="cpu") == dict.fromkeys(xla_options.KINDS)
    assert xla_options.resolve("auto", params, backend="gpu") == dict.fromkeys(xla_options.KINDS)
    given = {"xla_cpu_use_xnnpack": False}
    chosen = xla_options.resolve(given, params, backend="cpu", xla_flags="")
    assert all(v == given for v in chosen.values())
    with pytest.raises(ConfigError, match="xla_cpu_options"):
        xla_options.check_setting("xla_cpu_options", "fast")
    with pytest.raises(ConfigError):
        xla_options.check_setting("xla_cpu_options", {"xla_cpu_use_xnnpack": [1]})


def test_flags_the_user_set_in_xla_flags_are_never_overridden(monkeypatch):
    params = mlp_params(256)
    flags = "--xla_cpu_use_fusion_emitters=true --xla_cpu_multi_thread_eigen"
    chosen = xla_options.resolve(
        {"xla_cpu_use_fusion_emitters": False, "xla_cpu_use_xnnpack": False},
        params,
        backend="cpu",
        xla_flags=flags,
    )
    assert chosen["update"] == {"xla_cpu_use_xnnpack": False}
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    assert xla_options.resolve("auto", params, backend="cpu")["update"] is None
    assert xla_options.user_flags("--noxla_cpu_use_xnnpack") >= {"xla_cpu_use_xnnpack"}
    # One reading of XLA_FLAGS for both helpers: whitespace-separated flags, the name before "=".
    assert xla_options.user_flags("  --a=1\t-b --c=x=y  d ") == {"a", "b", "c"}


def test_no_calibration_where_xla_flags_set_every_large_option(monkeypatch):
    """The calibration's choice would be left out, so its two seconds are not spent; without
    the flag a large program still calibrates."""
    calls = []

    def calibrate():
        calls.append(1)
        return dict(xla_options.LARGE_OPTIONS)

    monkeypatch.setattr(xla_options, "calibrate_large", calibrate)
    params = mlp_params(256)
    flags = "--xla_cpu_use_fusion_emitters=false"
    assert xla_options.resolve("auto", params, backend="cpu", xla_flags=flags)["update"] is None
    assert calls == []
    chosen = xla_options.resolve("auto", params, backend="cpu", xla_flags="--xla_cpu_use_xnnpack")
    assert chosen["update"] == xla_options.LARGE_OPTIONS
    assert calls == [1]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="CPU options")
def test_calibration_takes_the_large_options_only_where_they_are_faster():
    """On the real machine: the choice follows the margin rule on what was measured, and a
    large program under "auto" gets what the calibration chose (measured once per process)."""
    chosen = xla_options.calibrate_large()
    seen = xla_options.last_calibration
    assert seen is not None and seen["defaults_s"] > 0 and seen["large_options_s"] > 0
    faster = seen["large_options_s"] < (1 - xla_options.CALIBRATION_MARGIN) * seen["defaults_s"]
    assert seen["chosen"] == ("large_options" if faster else "defaults")
    assert chosen == (xla_options.LARGE_OPTIONS if faster else {})
    large = xla_options.resolve("auto", mlp_params(256), backend="cpu", xla_flags="")
    assert large["update"] == (chosen or None)
    assert xla_options.calibrate_large() is chosen  # cached: not measured again


def test_current_is_the_options_of_the_block():
    assert xla_options.current("update") is None
    options: dict[str, xla_options.Options | None] = {
        "update": {"xla_cpu_use_fusion_emitters": False},
        "act": None,
    }
    with xla_options.applied(options):
        assert xla_options.current("update") == {"xla_cpu_use_fusion_emitters": False}
        assert xla_options.current("act") is None
    assert xla_options.current("update") is None
    with pytest.raises(ValueError, match="kind"):
        xla_options.current("everything")


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="CPU options")
@pytest.mark.slow  # moved out of the fast tier's 4 minutes (9 s alone)
def test_ppo_builds_its_programs_with_the_options_and_its_update_keeps_its_numbers(
    monkeypatch, large_options_help
):
    from rljax.algorithms.ppo import PPOConfig
    from rljax.algorithms.ppo.losses import PPOBatch

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    seen: list[object] = []
    real_jit = jax.jit

    def spy(fn, *args, **kwargs):
        seen.append(kwargs.get("compiler_options"))
        return real_jit(fn, *args, **kwargs)

    monkeypatch.setattr(jax, "jit", spy)
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2)
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .debugging(seed=0, xla_cpu_options={"xla_cpu_use_xnnpack": False})
    )
    algo = config.build_algo()
    try:
        assert {"xla_cpu_use_xnnpack": False} in seen  # the fused training step
        assert algo._xla_options["train_step"] == {"xla_cpu_use_xnnpack": False}
        monkeypatch.setattr(jax, "jit", real_jit)
        # PPO's update (RLlib's 256x256 network) gives the same numbers with "auto"'s options
        # for it as with XLA's defaults.
        options = xla_options.resolve("auto", algo.parts.acting_params(algo.state), xla_flags="")
        assert options["update"] == xla_options.LARGE_OPTIONS
        n = algo.hp.shard_size
        keys = jax.random.split(jax.random.key(0), 5)
        logits = jax.random.normal(keys[2], (1, n, 2))
        batch = PPOBatch(
            obs=jax.random.normal(keys[0], (1, n, 4)),
            action=jax.random.randint(keys[1], (1, n), 0, 2),
            action_logp=jax.nn.log_softmax(logits)[..., 0],
            action_dist_inputs=logits,
            vf_preds=jax.random.normal(keys[3], (1, n)),
            advantages=jax.random.normal(keys[4], (1, n)),
            value_targets=jnp.ones((1, n)),
            mask=jnp.ones((1, n)),
        )
        plain = jax.jit(algo._update)(algo.state, batch)
        tuned = jax.jit(algo._update, compiler_options=options["update"])(algo.state, batch)
        leaves = jax.tree.leaves(plain)
        assert len(leaves) > 10
        for a, b in zip(leaves, jax.tree.leaves(tuned), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)
    finally:
        algo.stop()


GIVEN = {"xla_cpu_use_xnnpack": False}


def compiled_with(fn) -> dict[str, object]:
    """The compiler options a ``jax.jit`` function was made with (JAX's record of them)."""
    return dict(fn._jit_info.compiler_options_kvs)


def act_steps(algo) -> list[dict[str, object]]:
    """The compiler options of the runner threads' jitted act steps (one per device)."""
    steps = algo._act_step.__dict__.get("_rljax_jitted_steps", {})
    assert steps, "the runners built no act step"
    return [compiled_with(fn) for fn in steps.values()]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="CPU options")
@pytest.mark.slow  # builds four algorithms (4 s warm, more on a busy machine)
@pytest.mark.parametrize("setting", [GIVEN, None])
def test_off_policy_programs_take_the_options(setting, monkeypatch):
    from rljax.algorithms.dqn import DQNConfig
    from rljax.algorithms.sac import SACConfig
    from rljax.algorithms.td3 import TD3Config

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    expected = setting or {}
    cases = [
        (DQNConfig, "CartPole-v1", 0),  # the fused iteration ("train_step")
        (SACConfig, "Pendulum-v1", 0),
        (DQNConfig, "CartPole-v1", 1),  # runner threads' act step ("act"), the cycle ("update")
        (TD3Config, "Pendulum-v1", 1),
    ]
    for config_class, env, runners in cases:
        algo = (
            config_class()
            .environment(env)
            .env_runners(num_env_runners=runners, num_envs_per_env_runner=2)
            .training(replay_buffer_config={"capacity": 1000})
            .rl_module(model_config={"fcnet_hiddens": [8]})
            .debugging(seed=0, xla_cpu_options=setting)
            .build_algo()
        )
        try:
            assert algo.fused == (runners == 0)
            assert algo._xla_options["update"] == setting
            if runners == 0:
                assert compiled_with(algo._iteration) == expected
            else:
                assert compiled_with(algo._jit_cycle) == expected
                assert act_steps(algo) == [expected]
        finally:
            algo.stop()


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="CPU options")
@pytest.mark.slow  # builds four algorithms and a population (4 s warm, more when busy)
@pytest.mark.parametrize("setting", [GIVEN, None])
def test_impala_appo_multi_agent_and_population_programs_take_the_options(setting, monkeypatch):
    from rljax.algorithms.appo import APPOConfig
    from rljax.algorithms.impala import IMPALAConfig
    from rljax.algorithms.ppo import PPOConfig
    from rljax.env import make_multi_agent
    from rljax.execution.population import Population

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    expected = setting or {}
    small = {"fcnet_hiddens": [8]}
    for config_class, runners in [(IMPALAConfig, 0), (APPOConfig, 0), (APPOConfig, 1)]:
        algo = (
            config_class()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=runners, num_envs_per_env_runner=2)
            .rl_module(model_config=small)
            .debugging(seed=0, xla_cpu_options=setting)
            .build_algo()
        )
        try:
            if runners == 0:
                assert compiled_with(algo._train_step) == expected
            else:  # EnvPool runners' fused rollouts ("rollout") and the jitted update
                assert compiled_with(algo._loop.update) == expected
                assert [r._compiler_options or {} for r in algo._runners.runners] == [expected]
        finally:
            algo.stop()

    algo = (
        PPOConfig()
        .environment(make_multi_agent("CartPole-v1"), env_config={"num_agents": 2})
        .env_runners(num_envs_per_env_runner=2)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda a, e, **kw: f"p{a}")
        .rl_module(model_config=small)
        .debugging(seed=0, xla_cpu_options=setting)
        .build_algo()
    )
    try:
        assert compiled_with(algo._update_fn(0, 64)) == expected  # the stacked update
        assert act_steps(algo) == [expected]
    finally:
        algo.stop()

    trial = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config=small)
    )
    population = Population(
        [trial.copy().debugging(seed=s, xla_cpu_options=setting) for s in (0, 1)]
    )
    try:
        assert population.loop.xla_options["update"] == setting
        assert compiled_with(population.loop.sample) == expected
        assert compiled_with(population.loop.learn) == expected
    finally:
        population.stop()


def test_with_host_devices_replaces_the_count_and_keeps_the_other_flags(monkeypatch):
    flags = "--xla_force_host_platform_device_count=2 --xla_dump_to=/tmp/x"
    assert xla_options.with_host_devices(4, flags) == (
        "--xla_dump_to=/tmp/x --xla_force_host_platform_device_count=4"
    )
    assert xla_options.with_host_devices(1, "") == "--xla_force_host_platform_device_count=1"
    # Only that flag goes: a flag whose name merely starts with it stays.
    longer = "--xla_force_host_platform_device_count_x=1"
    assert xla_options.with_host_devices(2, longer) == (
        f"{longer} --xla_force_host_platform_device_count=2"
    )
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert xla_options.with_host_devices(3) == (
        "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=3"
    )
    monkeypatch.delenv("XLA_FLAGS")
    assert xla_options.with_host_devices(2) == "--xla_force_host_platform_device_count=2"
    for bad in (0, -1, 2.0, True, "2"):
        with pytest.raises(ValueError, match=r"devices=.*use an int of at least 1"):
            xla_options.with_host_devices(bad)


def test_one_shot_programs_compile_cheaply_but_leave_xla_flags_options_to_the_user(monkeypatch):
    from rljax.utils import jit

    seen: list[dict] = []
    compile_ = jax.stages.Lowered.compile

    def recording(self, compiler_options=None, **kw):
        seen.append(dict(compiler_options or {}))
        return compile_(self, compiler_options=compiler_options, **kw)

    monkeypatch.setattr(jax.stages.Lowered, "compile", recording)
    x = jnp.arange(3.0)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    np.testing.assert_array_equal(jit.compile_cheap(lambda a: a * 2 + 1, x)(x), [1.0, 3.0, 5.0])
    assert seen[-1] == {
        "xla_backend_optimization_level": "0",
        "xla_llvm_disable_expensive_passes": True,
        "xla_cpu_use_fusion_emitters": False,
    }
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    np.testing.assert_array_equal(jit.compile_cheap(lambda a: a - 1, x)(x), [-1.0, 0.0, 1.0])
    assert "xla_cpu_use_fusion_emitters" not in seen[-1]
    assert seen[-1]["xla_backend_optimization_level"] == "0"
