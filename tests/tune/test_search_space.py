"""Search spaces and variant generation against Ray Tune's semantics, checked by hand; their
errors; search spaces in configs. Nothing here builds an algorithm or compiles anything."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import rljax
from rljax import tune
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.utils.errors import ConfigError

N = 4000  # draws per distribution check


def draws(domain: tune.Domain, n: int = N, seed: int = 0) -> list:
    return [v["x"] for v in tune.generate_variants({"x": domain}, num_samples=n, seed=seed)]


# ------------------------------------------------------------------------------ grid and order


def test_rljax_tune_is_the_package():
    assert rljax.tune is tune
    assert tune.grid_search([1]).values == [1]


def test_grid_cross_product_repeated_num_samples_times_in_tunes_order():
    space = {"b": tune.grid_search(["x", "y"]), "a": tune.grid_search([1, 2, 3]), "c": 7}
    variants = tune.generate_variants(space, num_samples=2, seed=0)
    assert len(variants) == 3 * 2 * 2
    # Grid paths sorted ("a" before "b"), the first changing fastest; the grid once per sample.
    one_sample = [(a, b) for b in "xy" for a in (1, 2, 3)]
    assert [(v["a"], v["b"]) for v in variants] == one_sample * 2
    assert all(v["c"] == 7 for v in variants)
    assert list(variants[0]) == ["b", "a", "c"]  # the space's key order is kept


def test_nested_grids_are_ordered_by_their_key_paths():
    space = {"z": tune.grid_search([0, 1]), "m": {"b": tune.grid_search(["p", "q"])}}
    got = [(v["m"]["b"], v["z"]) for v in tune.generate_variants(space)]
    assert got == [("p", 0), ("q", 0), ("p", 1), ("q", 1)]  # ("m", "b") sorts before ("z",)


def test_no_search_space_gives_num_samples_copies():
    space = {"a": 1, "b": {"c": [1, 2]}}
    variants = tune.generate_variants(space, num_samples=3)
    assert variants == [space] * 3
    variants[0]["b"]["c"].append(3)  # variants share no container with the space or each other
    assert space["b"]["c"] == [1, 2] and variants[1]["b"]["c"] == [1, 2]


def test_random_domains_are_drawn_anew_for_each_grid_point_and_sample():
    space = {"g": tune.grid_search([1, 2, 3]), "u": tune.uniform(0, 1)}
    us = [v["u"] for v in tune.generate_variants(space, num_samples=4, seed=3)]
    assert len(us) == 12 and len(set(us)) == 12


def test_tunes_plain_dict_grid_form():
    variants = tune.generate_variants({"a": {"grid_search": [1, 2]}, "b": {"c": 3}})
    assert variants == [{"a": 1, "b": {"c": 3}}, {"a": 2, "b": {"c": 3}}]


def test_search_spaces_inside_grid_values_lists_and_tuples_are_resolved():
    space = {
        "a": tune.grid_search([{"x": tune.grid_search([1, 2])}, 3]),
        "l": [tune.choice([5]), 6, (tune.randint(0, 1), "t")],
    }
    variants = tune.generate_variants(space)
    assert [v["a"] for v in variants] == [{"x": 1}, {"x": 2}, 3]
    assert all(v["l"] == [5, 6, (0, "t")] for v in variants)


# ------------------------------------------------------------------------------ distributions


def test_uniform_range_and_mean():
    xs = np.array(draws(tune.uniform(-2.0, 3.0)))
    assert all(isinstance(x, float) for x in xs)
    assert xs.min() >= -2.0 and xs.max() < 3.0
    assert abs(xs.mean() - 0.5) < 0.1  # sd of the mean: 5 / sqrt(12 N) ~ 0.023
    assert xs.min() < -1.9 and xs.max() > 2.9


def test_quniform_multiples_of_q_upper_included():
    xs = draws(tune.quniform(0.0, 1.0, 0.25))
    assert all(isinstance(x, float) for x in xs)
    assert set(xs) == {0.0, 0.25, 0.5, 0.75, 1.0}  # rounding reaches the upper bound


def test_quniform_with_q_1_rounds_to_integers():
    xs = draws(tune.quniform(0, 3, 1), n=500)
    assert set(xs) == {0.0, 1.0, 2.0, 3.0}


def test_loguniform_is_uniform_in_log_space():
    xs = np.array(draws(tune.loguniform(1e-4, 1e-1)))
    assert xs.min() >= 1e-4 and xs.max() < 1e-1
    decades = np.histogram(np.log10(xs), bins=[-4, -3, -2, -1])[0] / len(xs)
    assert np.allclose(decades, 1 / 3, atol=0.04)  # a uniform draw would put 90% in the last
    assert abs(np.median(xs) - 10**-2.5) / 10**-2.5 < 0.15  # the geometric middle
    # The base does not change a log-uniform draw.
    assert draws(tune.loguniform(1e-4, 1e-1, base=2), n=50) == draws(
        tune.loguniform(1e-4, 1e-1), n=50
    )


def test_qloguniform_rounds_a_log_uniform_draw_to_multiples_of_q():
    xs = np.array(draws(tune.qloguniform(0.1, 10.0, 0.1)))
    assert xs.min() >= 0.1 - 1e-9 and xs.max() <= 10.0 + 1e-9
    assert np.allclose(xs / 0.1, np.round(xs / 0.1))  # multiples of q
    # log-uniform on [0.1, 10]: half the draws below 1 (a uniform draw would put 9% there)
    assert abs(np.mean(xs < 0.95) - 0.5) < 0.05
    assert repr(tune.qloguniform(0.1, 10.0, 0.1)) == "qloguniform(0.1, 10.0, 0.1)"


def test_lograndint_floors_a_log_uniform_draw_upper_excluded():
    xs = np.array(draws(tune.lograndint(1, 100)))
    assert all(type(x) is int for x in xs.tolist())
    assert xs.min() == 1 and xs.max() == 99
    # P(x < 10) = log(10) / log(100) = 0.5; each of 1..9 holds log((k+1)/k) / log(100)
    assert abs(np.mean(xs < 10) - 0.5) < 0.04
    assert abs(np.mean(xs == 1) - np.log(2) / np.log(100)) < 0.03
    with pytest.raises(ConfigError, match=r"lograndint\(0, 5\) needs lower >= 1"):
        draws(tune.lograndint(0, 5), n=1)


def test_qlograndint_multiples_of_q_log_uniform_over_their_indices():
    xs = np.array(draws(tune.qlograndint(2, 64, 2)))
    assert set(xs.tolist()) == set(range(2, 65, 2))  # upper included, as qrandint
    # indices 1..32 drawn as floor(exp(U(log 1, log 33))): P(index 1) = log 2 / log 33
    assert abs(np.mean(xs == 2) - np.log(2) / np.log(33)) < 0.03
    assert repr(tune.qlograndint(2, 64, 2)) == "qlograndint(2, 64, 2)"


def test_qrandn_rounds_a_normal_draw():
    xs = np.array(draws(tune.qrandn(1.0, 2.0, 0.5)))
    assert np.allclose(xs / 0.5, np.round(xs / 0.5))
    assert abs(xs.mean() - 1.0) < 0.15 and abs(xs.std() - 2.0) < 0.15
    with pytest.raises(ConfigError, match=r"qrandn\(0, 1, 0\) needs a positive quantization"):
        draws(tune.qrandn(0, 1, 0), n=1)


def test_randint_excludes_upper():
    xs = draws(tune.randint(-2, 3))
    assert all(type(x) is int for x in xs)
    assert set(xs) == {-2, -1, 0, 1, 2}
    assert draws(tune.randint(4, 5), n=20) == [4] * 20


def test_qrandint_includes_upper_and_steps_by_q():
    xs = draws(tune.qrandint(0, 20, 5))
    assert all(type(x) is int for x in xs)
    assert set(xs) == {0, 5, 10, 15, 20}
    counts = np.bincount(np.array(xs) // 5) / len(xs)
    assert np.allclose(counts, 0.2, atol=0.03)  # each multiple equally likely
    assert set(draws(tune.qrandint(1, 10))) == set(range(1, 11))  # q=1: upper included too
    assert set(draws(tune.qrandint(-7, 7, 3))) == {-6, -3, 0, 3, 6}  # multiples inside the range


def test_randn_mean_and_sd():
    xs = np.array(draws(tune.randn(2.0, 0.5)))
    assert all(isinstance(x, float) for x in xs)
    assert abs(xs.mean() - 2.0) < 0.05 and abs(xs.std() - 0.5) < 0.05
    assert abs(np.mean(draws(tune.randn()))) < 0.1


def test_choice_returns_categories_as_given_each_equally_likely():
    cat = {"fcnet_hiddens": [64]}
    xs = draws(tune.choice([1, "a", cat, None]))
    assert {repr(x) for x in xs} == {"1", "'a'", repr(cat), "None"}
    assert sum(x == 1 and type(x) is int for x in xs) / len(xs) == pytest.approx(0.25, abs=0.03)
    dicts = [x for x in xs if isinstance(x, dict)]
    assert dicts[0] == cat and dicts[0] is not cat and dicts[0] is not dicts[1]  # copies


def test_domain_sample_directly():
    rng = np.random.default_rng(0)
    assert 1 <= tune.uniform(1, 2).sample(rng) < 2
    with pytest.raises(ConfigError, match="not sampled"):
        tune.grid_search([1]).sample(rng)


# ------------------------------------------------------------------------------ seeds


SPACE = {
    "g": tune.grid_search([1, 2]),
    "u": tune.uniform(0, 1),
    "l": tune.loguniform(1e-5, 1e-2),
    "r": tune.randint(0, 1000),
    "q": tune.qrandint(0, 1000, 10),
    "n": tune.randn(),
    "c": tune.choice(list(range(100))),
    "nested": {"qu": tune.quniform(0, 100, 0.5)},
}


def test_a_seed_reproduces_the_variants_and_seeds_differ():
    a = tune.generate_variants(SPACE, num_samples=3, seed=7)
    assert a == tune.generate_variants(SPACE, num_samples=3, seed=7)
    assert a == tune.generate_variants(SPACE, num_samples=3, seed=np.random.default_rng(7))
    b = tune.generate_variants(SPACE, num_samples=3, seed=8)
    assert [v["g"] for v in a] == [v["g"] for v in b]
    for key in ("u", "l", "n"):
        assert [v[key] for v in a] != [v[key] for v in b]


# ------------------------------------------------------------------------------ sample_from


def test_sample_from_sees_resolved_values():
    space = {
        # Listed first: called after the values it reads are resolved.
        "sum": tune.sample_from(lambda spec: spec.config.a + spec.config["m"]["b"]),
        "a": tune.grid_search([1, 2]),
        "m": {"b": tune.choice([10])},
        "twice": tune.sample_from(lambda spec: 2 * spec.config.sum),  # reads another function
        "direct": tune.sample_from(lambda config: config["a"] * 100),  # newer Tune's form
        "nothing": tune.sample_from(lambda: "no args"),
    }
    variants = tune.generate_variants(space)
    assert [(v["sum"], v["twice"], v["direct"]) for v in variants] == [
        (11, 22, 100),
        (12, 24, 200),
    ]
    assert all(v["nothing"] == "no args" for v in variants)


def test_sample_from_spec_forms_and_returned_parts_of_the_variant():
    space = {
        "a": tune.choice([3]),
        "m": {"b": tune.grid_search([1])},
        "old": tune.sample_from(lambda spec: spec["config"]["a"]),  # Tune's older dict form
        "part": tune.sample_from(lambda spec: spec.config.m),  # a nested part of the variant
    }
    (variant,) = tune.generate_variants(space)
    assert variant["old"] == 3
    assert variant["part"] == {"b": 1} and type(variant["part"]) is dict
    assert variant["part"] is not variant["m"]


def test_sample_from_circular_dependency_names_the_keys():
    space = {
        "a": tune.sample_from(lambda spec: spec.config.b),
        "b": tune.sample_from(lambda spec: spec.config.a),
    }
    with pytest.raises(ConfigError) as e:
        tune.generate_variants(space)
    msg = str(e.value)
    assert "circular" in msg
    assert "param_space['a'] reads param_space['b']" in msg
    assert "param_space['b'] reads param_space['a']" in msg


def test_sample_from_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"param_space\['m'\]\['f'\]: sample_from.*KeyError"):
        tune.generate_variants({"m": {"f": tune.sample_from(lambda spec: spec.config["nope"])}})


# ------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        (tune.grid_search([]), r"grid_search\(\[\]\) has no values; give at least one"),
        (tune.grid_search("ab"), r"grid_search\('ab'\) needs a list of values; got 'ab' \(str\)"),
        (tune.choice([]), r"choice\(\[\]\) has no categories; give at least one"),
        (tune.loguniform(0, 1e-2), r"loguniform\(0, 0.01\) needs positive bounds.*lower=0"),
        (tune.loguniform(-1, 1), r"loguniform\(-1, 1\) needs positive bounds.*lower=-1"),
        (tune.loguniform(1e-3, -1), r"needs positive bounds.*upper=-1"),
        (tune.loguniform(1e-3, 1, base=1), r"needs a positive base other than 1; base=1"),
        (tune.uniform(1, 1), r"uniform\(1, 1\) is empty: lower=1 must be below upper=1"),
        (tune.uniform(2, 1), r"uniform\(2, 1\) is empty: lower=2 must be below upper=1"),
        (tune.uniform("0", 1), r"needs finite numbers as bounds; lower='0' \(str\)"),
        (tune.uniform(0, math.inf), r"needs finite numbers as bounds; upper=inf \(float\)"),
        (tune.loguniform(1, 1e-3), r"is empty: lower=1 must be below upper=0.001"),
        (tune.randint(3, 3), r"randint\(3, 3\) is empty: lower=3 must be below upper=3"),
        (tune.randint(0, 2.5), r"needs integers as bounds; upper=2.5 \(float\)"),
        (tune.qrandint(5, 2, 1), r"qrandint\(5, 2, 1\) is empty: lower=5 must be below upper=2"),
        (tune.quniform(0, 1, 0), r"quniform\(0, 1, 0\) needs a positive quantization step; q=0"),
        (tune.quniform(0, 1, -0.5), r"needs a positive quantization step; q=-0.5"),
        (tune.quniform(0.1, 1, 0.25), r"needs bounds that are multiples of q=0.25.*lower=0.1"),
        (tune.qrandint(0, 10, 0), r"qrandint\(0, 10, 0\) needs a positive integer step; q=0"),
        (tune.qrandint(0, 10, -2), r"needs a positive integer step; q=-2"),
        (tune.qrandint(1, 3, 5), r"is empty: no multiple of q=5 lies in \[1, 3\]"),
        (tune.randn(0, 0), r"randn\(0, 0\) needs a positive standard deviation; sd=0"),
        (tune.sample_from(3), r"sample_from\(3\) needs a callable fn\(spec\) -> value; got 3"),
        (tune.sample_from(lambda a, b: 0), r"needs a function of one argument \(the spec\)"),
    ],
)
def test_each_bad_search_space_fails_naming_key_given_and_allowed(domain, expected):
    with pytest.raises(ConfigError, match=r"^param_space\['model'\]\['k'\]: .*" + expected) as e:
        tune.generate_variants({"model": {"k": domain}, "ok": tune.uniform(0, 1)})
    assert f"['k']: {domain!r} " in str(e.value)  # the search space as given


def test_bad_search_space_inside_a_grid_value_is_found_before_sampling():
    space = {"a": tune.grid_search([1, {"b": tune.randint(2, 1)}])}
    with pytest.raises(ConfigError, match=r"param_space\['a'\]\[grid_search value 1\]\['b'\]"):
        tune.generate_variants(space)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"num_samples": 0}, r"num_samples=0: use 1 or more"),
        ({"num_samples": -1}, r"num_samples=-1: use 1 or more"),
        ({"num_samples": 1.5}, r"num_samples=1.5: use an int, 1 or more"),
        ({"num_samples": True}, r"num_samples=True: use an int, 1 or more"),
        ({"seed": -1}, r"seed=-1: use None, an int >= 0 or a numpy Generator"),
        ({"seed": "0"}, r"seed='0': use None"),
    ],
)
def test_bad_num_samples_and_seed(kwargs, expected):
    with pytest.raises(ConfigError, match=expected):
        tune.generate_variants({"a": 1}, **kwargs)


def test_param_space_must_be_a_dict():
    with pytest.raises(ConfigError, match="param_space must be a dict.*got a list"):
        tune.generate_variants([tune.uniform(0, 1)])


# ------------------------------------------------------------------------------ configs


def searched_config() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(lr=tune.grid_search([1e-3, 1e-4]), entropy_coeff=tune.uniform(0.0, 0.01))
        .rl_module(model_config=tune.choice([{"fcnet_hiddens": [32]}, {"fcnet_hiddens": [64]}]))
    )


def test_setters_keep_search_spaces_and_search_space_lists_them():
    config = searched_config()
    space = config.search_space()
    assert list(space) == ["lr", "entropy_coeff", "model_config"]  # the settings' order
    assert isinstance(space["lr"], tune.GridSearch) and space["lr"].values == [1e-3, 1e-4]
    assert isinstance(space["model_config"], tune.Categorical)  # not made a DefaultModelConfig
    assert PPOConfig().search_space() == {}
    assert "lr" in repr(config) and "grid_search([0.001, 0.0001])" in repr(config)


def test_a_config_with_search_spaces_is_refused_naming_the_keys():
    config = searched_config()
    with pytest.raises(ConfigError) as e:
        config.validate()
    msg = str(e.value)
    assert msg.startswith("PPOConfig searches lr, entropy_coeff, model_config (lr=grid_search(")
    assert "tune.Tuner" in msg and "update_from_dict(variant)" in msg
    with pytest.raises(ConfigError, match="PPOConfig searches lr"):
        config.build_algo()  # refused before anything is built


def test_each_variant_gives_a_resolved_config_that_validates():
    config = searched_config()
    variants = tune.generate_variants(config.search_space(), num_samples=2, seed=0)
    assert len(variants) == 4
    for variant in variants:
        trial = config.copy().update_from_dict(variant)
        assert trial.search_space() == {}
        trial.validate()
        assert trial.lr == variant["lr"] and 0 <= trial.entropy_coeff < 0.01
        assert isinstance(trial.model_config, DefaultModelConfig)  # checked as the setter does
        assert list(trial.model_config.fcnet_hiddens) == variant["model_config"]["fcnet_hiddens"]
    assert [v["lr"] for v in variants] == [1e-3, 1e-4, 1e-3, 1e-4]
    assert set(config.search_space()) == {"lr", "entropy_coeff", "model_config"}  # untouched


def test_a_searched_key_that_is_not_a_setting_fails_at_set_time():
    with pytest.raises(ConfigError, match="unknown keyword 'lr_rate'.*did you mean"):
        PPOConfig().training(lr_rate=tune.grid_search([1e-3]))
    with pytest.raises(ConfigError, match="update_from_dict\\(\\) got unknown key 'lrr'"):
        PPOConfig().update_from_dict({"lrr": tune.grid_search([1e-3])})
    with pytest.raises(ConfigError, match="got unknown key 'num_sgd_iterr'.*num_sgd_iter"):
        PPOConfig().update_from_dict({"num_sgd_iterr": 2})


def test_rllibs_special_dict_keys_name_their_settings():
    """As RLlib's ``update_from_dict`` (``_translate_special_keys``) and ``from_dict``: was a
    ConfigError ("unknown key 'lambda'"), so RLlib-style dict param spaces failed."""
    config = PPOConfig().update_from_dict(
        {
            "lambda": tune.uniform(0.9, 1.0),
            "num_workers": 2,
            "input": "sampler",
            "framework": "torch",  # a one-time note: JAX always
            "callbacks": None,
            "custom_eval_function": None,
        }
    )
    assert config.num_env_runners == 2 and config.input_ == "sampler"
    assert set(config.search_space()) == {"lambda_"}
    assert PPOConfig.from_dict({"lambda": 0.8, "input": "sampler"}).lambda_ == 0.8
    # A dict param space as RLlib users write one.
    variants = tune.generate_variants(
        {"env": "CartPole-v1", "lambda": tune.grid_search([0.9, 0.95])}
    )
    assert [PPOConfig().update_from_dict(v).lambda_ for v in variants] == [0.9, 0.95]


def test_a_bad_search_space_fails_at_set_time_naming_the_setting():
    with pytest.raises(ConfigError, match=r"^PPOConfig.lr: loguniform\(0, 1\) needs positive"):
        PPOConfig().training(lr=tune.loguniform(0, 1))
    with pytest.raises(ConfigError, match=r"^PPOConfig.gamma: grid_search\(\[\]\) has no values"):
        PPOConfig().update_from_dict({"gamma": tune.grid_search([])})


def test_any_setting_may_be_searched():
    config = (
        DQNConfig()
        .environment(tune.grid_search(["CartPole-v1", "Acrobot-v1"]))
        .training(replay_buffer_config=tune.choice([{"capacity": 1000}]))  # a merged setting
        .debugging(seed=tune.randint(0, 100))
        .training(gamma={"grid_search": [0.9, 0.99]})  # Tune's plain-dict grid
    )
    assert set(config.search_space()) == {"env", "replay_buffer_config", "seed", "gamma"}
    for variant in tune.generate_variants(config.search_space(), seed=0):
        trial = config.copy().update_from_dict(variant)
        assert trial.replay_buffer_config["capacity"] == 1000
        assert len(trial.replay_buffer_config) > 1  # merged over the defaults, as the setter does
        trial.validate()


def test_a_search_space_inside_a_settings_value_is_refused_by_validate_naming_it():
    config = PPOConfig().environment("CartPole-v1", env_config={"x": tune.choice([1, 2])})
    with pytest.raises(ConfigError, match=r"^PPOConfig searches env_config \(env_config=\{'x'"):
        config.validate()


def test_from_dict_refuses_search_spaces():
    # from_dict() may read an untrusted file, whose checks a search space's values would skip.
    with pytest.raises(ConfigError, match=r"^lr=grid_search\(\[0.001\]\): from_dict\(\) reads"):
        PPOConfig.from_dict({"env": "CartPole-v1", "lr": {"grid_search": [1e-3]}})
    with pytest.raises(ConfigError, match=r"^env_config=choice\(\[\{\}\]\): from_dict"):
        PPOConfig.from_dict({"env": "CartPole-v1", "env_config": tune.choice([{}])})


def test_the_readme_example_runs_as_written():
    readme = (Path(__file__).parents[2] / "docs" / "tuning.md").read_text()  # the Tuning guide
    section = readme[readme.index("# Tuning") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    trials = namespace["trials"]
    assert [t.lr for t in trials] == [1e-3, 1e-4, 1e-3, 1e-4]
    with pytest.raises(ConfigError, match="searches lr, entropy_coeff"):
        namespace["config"].validate()


def test_the_variant_count_is_the_number_generate_variants_makes():
    from rljax.tune.variants import check_variant_count, count_variants, generate_variants

    inner = {"b": tune.grid_search([1, 2, 3]), "c": tune.uniform(0, 1)}
    space = {
        "a": tune.grid_search([0, inner, [tune.grid_search(["x", "y"])]]),
        "d": {"grid_search": [5, 6]},
        "e": tune.choice([1, 2]),
    }
    assert count_variants(space) == (1 + 3 + 2) * 2 == 12
    assert len(generate_variants(space, num_samples=3, seed=0)) == 36
    assert check_variant_count(space, 3) == 36
    with pytest.raises(ConfigError, match=r"36 trials: 12 per sample .* at most 35 trials"):
        check_variant_count(space, 3, cap=35)
    # A choice counts its largest category (an upper bound): here the one drawn is that one.
    chosen = {"a": tune.choice([{"b": tune.grid_search([1, 2, 3])}])}
    assert count_variants(chosen) == 3 == len(generate_variants(chosen, seed=0))


def test_a_search_space_inside_a_dict_setting_searches_that_setting(tmp_path):
    """Was: env_config={"size": grid_search([3, 6])} on a config object ran one trial, which
    failed ("a search space inside a setting's value is not resolved")."""
    config = PPOConfig().environment(
        "CartPole-v1", env_config={"size": tune.grid_search([3, 6]), "keep": 1}
    )
    assert list(config.search_space()) == ["env_config"]

    def fn(config):
        tune.report({"size": config.env_config["size"], "keep": config.env_config["keep"]})

    grid = tune.Tuner(
        fn, param_space=config, run_config=tune.RunConfig(storage_path=str(tmp_path), verbose=0)
    ).fit()
    assert sorted((r.metrics["size"], r.metrics["keep"]) for r in grid) == [(3, 1), (6, 1)]
    # model_config is checked when set: a space inside it names the form that works.
    with pytest.raises(ConfigError, match=r"search the whole model_config instead"):
        PPOConfig().rl_module(model_config={"fcnet_hiddens": tune.choice([[16], [8]])})
