"""No function that rljax jits reads ``self`` (or ``cls``) when traced: hyper-parameters and
other settings are captured once, when a factory builds the function (DESIGN.md).

Checked on the source: every ``jax.jit(f, ...)`` in ``rljax/`` where ``f`` is a method of a
class (``self.method``), or a lambda or function whose body (nested functions included) names
``self`` or ``cls``.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rljax"
BOUND = {"self", "cls"}


def _is_jit(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr == "jit") or (
        isinstance(f, ast.Name) and f.id == "jit"
    )


def _reads_bound(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id in BOUND for n in ast.walk(node))


def _functions_by_scope(tree: ast.AST) -> dict[ast.AST, dict[str, ast.AST]]:
    """For every scope (module or function), the functions defined directly in it by name."""
    scopes: dict[ast.AST, dict[str, ast.AST]] = {}
    for scope in ast.walk(tree):
        if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            defs: dict[str, ast.AST] = {}
            for stmt in _direct_statements(scope):
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    defs[stmt.name] = stmt
                elif (
                    isinstance(stmt, ast.Assign)
                    and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Lambda)
                ):
                    defs[stmt.targets[0].id] = stmt.value
            scopes[scope] = defs
    return scopes


def _direct_statements(scope: ast.AST) -> list[ast.stmt]:
    """The statements of ``scope`` outside nested functions and classes (in ifs, loops, ...)."""
    out: list[ast.stmt] = []
    todo = list(getattr(scope, "body", []))
    while todo:
        stmt = todo.pop()
        out.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            todo.extend(getattr(stmt, field, []) or [])
    return out


def violations(source: str, filename: str = "<source>") -> list[str]:
    """``file:line: why`` for every jitted bound method or function that reads self/cls."""
    tree = ast.parse(source)
    methods = {
        item.name
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef)
        for item in cls.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    scopes = _functions_by_scope(tree)
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    found = []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and _is_jit(call) and call.args):
            continue
        fn = call.args[0]
        where = f"{filename}:{call.lineno}"
        if (
            isinstance(fn, ast.Attribute)
            and isinstance(fn.value, ast.Name)
            and fn.value.id in BOUND
            and fn.attr in methods
        ):
            found.append(f"{where}: jits the bound method {fn.value.id}.{fn.attr}")
        elif isinstance(fn, ast.Lambda) and _reads_bound(fn.body):
            found.append(f"{where}: jits a lambda that reads self")
        elif isinstance(fn, ast.Name):
            # The innermost enclosing scope that defines the name.
            node: ast.AST | None = call
            while node is not None:
                node = parents.get(node)
                if node in scopes and fn.id in scopes[node]:
                    target = scopes[node][fn.id]
                    body = target.body if isinstance(target, ast.Lambda) else target
                    if _reads_bound(body):
                        found.append(f"{where}: jits {fn.id}, which reads self")
                    break
    return found


def test_the_checker_finds_what_it_looks_for():
    bad = textwrap.dedent(
        """
        import jax

        class A:
            def _learn(self, x):
                return x * self.config.lr

            def setup(self):
                self.a = jax.jit(self._learn)
                self.b = jax.jit(lambda x: x + self.scale)

                def cycle(s):
                    return self._learn(s)

                self.c = jax.jit(cycle, donate_argnums=(0,))
                update = make_update(self.config.lr)
                self.d = jax.jit(update)
                self.e = jax.jit(self.update_fn)
        """
    )
    found = violations(bad)
    assert len(found) == 3, found
    assert "bound method self._learn" in found[0]
    assert "lambda" in found[1]
    assert "cycle" in found[2]


def test_no_jitted_function_reads_self():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += violations(path.read_text(), str(path.relative_to(PACKAGE.parent)))
    assert not found, "\n".join(found)


def _captures(fn: object, kind: type, seen: set[int]) -> list[str]:
    """Paths to the ``kind`` instances that ``fn`` reaches through closures, bound methods,
    ``functools.partial`` and dataclass fields."""
    if id(fn) in seen:
        return []
    seen.add(id(fn))
    if isinstance(fn, kind):
        return [type(fn).__name__]
    children: list[tuple[str, object]] = []
    if inspect.ismethod(fn):
        children.append((f"{fn.__name__}.__self__", fn.__self__))
    elif inspect.isfunction(fn):
        names = fn.__code__.co_freevars
        children += [
            (f"{fn.__name__}.{n}", c.cell_contents)
            for n, c in zip(names, fn.__closure__ or (), strict=True)
        ]
    elif dataclasses.is_dataclass(fn) and not isinstance(fn, type):
        children += [(f.name, getattr(fn, f.name)) for f in dataclasses.fields(fn)]
    elif isinstance(fn, (list, tuple)):
        children += [(str(i), x) for i, x in enumerate(fn)]
    elif isinstance(fn, dict):
        children += [(str(k), x) for k, x in fn.items()]
    found = []
    for name, child in children:
        found += [f"{name} -> {path}" for path in _captures(child, kind, seen)]
    return found


def test_the_capture_finder_sees_bound_methods_and_closures():
    class Holder:
        def method(self) -> None: ...

    holder = Holder()

    def closure() -> None:
        holder.method()

    assert _captures(holder.method, Holder, set()) == ["method.__self__ -> Holder"]
    assert _captures([closure], Holder, set()) == ["0 -> closure.holder -> Holder"]
    assert not _captures([lambda x: x + 1], Holder, set())


@pytest.mark.parametrize("algo_name", ["PPO", "DQN"])
def test_the_parts_an_algorithm_hands_over_hold_no_algorithm(algo_name):
    """The functions the execution layer jits (act, acting params, inference, the learner's
    learn and target update) close over networks and frozen settings, never the algorithm."""
    from rljax.algorithms.algorithm import Algorithm
    from rljax.algorithms.dqn import DQNConfig
    from rljax.algorithms.ppo import PPOConfig

    config = PPOConfig() if algo_name == "PPO" else DQNConfig()
    config = (
        config.environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=8)
        .training(train_batch_size_per_learner=16)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    if algo_name == "PPO":
        config = config.training(minibatch_size=8, num_epochs=1)
    algo = config.build_algo()
    try:
        parts = [algo.parts, getattr(algo, "replay_learner", None)]
        for explore in (False, True):
            parts.append(algo.parts.inference(None, explore))
        assert not _captures(parts, Algorithm, set())
    finally:
        algo.stop()


def test_the_capture_finder_sees_a_config_in_a_closure():
    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.algorithms.ppo import PPOConfig

    cfg = PPOConfig()

    def optimizer_at(rate):  # the closure over the mutable config an update must not hold
        return rate * cfg.grad_clip

    assert _captures({"opt": (optimizer_at,)}, AlgorithmConfig, set()) == [
        "opt -> 0 -> optimizer_at.cfg -> PPOConfig"
    ]


@pytest.mark.parametrize("algo_name", ["PPO", "PPO-lstm", "IMPALA", "APPO"])
def test_the_update_and_postprocess_hold_no_config(algo_name):
    """Static settings are frozen when the algorithm is built and dynamic ones (rates,
    entropy weights, schedules) reach the update as values: the jitted learner functions,
    their optimizer included, close over no config (a later change to the mutable config
    could not reach a compiled program, and rebuilding one in the trace reads none)."""
    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.algorithms.appo import APPOConfig
    from rljax.algorithms.impala import IMPALAConfig
    from rljax.algorithms.ppo import PPOConfig

    config_class = {"IMPALA": IMPALAConfig, "APPO": APPOConfig}.get(algo_name, PPOConfig)
    config = (
        config_class()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=8)
        .training(train_batch_size_per_learner=16, lr=[[0, 1e-3], [64, 1e-4]])
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    if algo_name.startswith("PPO"):
        config = config.training(minibatch_size=8, num_epochs=1)
    if algo_name == "IMPALA":
        config = config.training(opt_type="rmsprop")
    if algo_name == "PPO-lstm":
        config = config.rl_module(
            model_config={"fcnet_hiddens": [8], "use_lstm": True, "lstm_cell_size": 4}
        )
    algo = config.build_algo()
    try:
        found = _captures([algo._update, algo._postprocess], AlgorithmConfig, set())
        assert not found, found
    finally:
        algo.stop()


@pytest.mark.parametrize("algo_name", ["DQN", "SAC", "TD3"])
def test_the_off_policy_learners_hold_no_config(algo_name):
    """DQN's, SAC's and TD3's learner functions (learn, target update) and policy parts close
    over no config: the settings are frozen at build, the rates (schedules here) are dynamic
    settings evaluated in the update and written into optimizers built once, whose states
    hold them (``optax.inject_hyperparams``)."""
    import optax

    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.algorithms.dqn import DQNConfig
    from rljax.algorithms.sac import SACConfig
    from rljax.algorithms.td3 import TD3Config

    schedule = [[0, 1e-3], [64, 1e-4]]
    if algo_name == "DQN":
        config = DQNConfig().environment("CartPole-v1").training(lr=schedule)
        opt_fields = ["opt_state"]
    elif algo_name == "SAC":
        config = SACConfig().environment("Pendulum-v1").training(critic_lr=schedule)
        opt_fields = ["actor_opt", "critic_opt", "alpha_opt"]
    else:
        config = TD3Config().environment("Pendulum-v1").training(actor_lr=schedule)
        opt_fields = ["actor_opt", "critic_opt"]
    config = (
        config.env_runners(num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=16)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        found = _captures([algo.replay_learner, algo.parts], AlgorithmConfig, set())
        assert not found, found
        learner = algo.state.learner
        for name in opt_fields:
            opt_state = getattr(learner, name)
            assert isinstance(opt_state, optax.InjectStatefulHyperparamsState), name
        # The schedule's first value is the rate the state starts at.
        scheduled = {"DQN": "opt_state", "SAC": "critic_opt", "TD3": "actor_opt"}[algo_name]
        rate = getattr(learner, scheduled).hyperparams["learning_rate"]
        assert float(rate) == pytest.approx(1e-3)
    finally:
        algo.stop()


def test_a_population_trial_hands_over_learner_functions_without_itself():
    """A population jits each trial's ``learner_functions(values)``: the factory a trial
    hands over (``population_parts()``) closes over its frozen parts, not the algorithm or
    its mutable config, which the trace would otherwise read."""
    from rljax.algorithms.algorithm import Algorithm
    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=8)
        .training(train_batch_size_per_learner=16, minibatch_size=8, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    trial = config.checked_algo_class()(config.copy(), population_member=True)
    try:
        factory = trial.population_parts().learner_functions
        assert not _captures([factory], Algorithm, set())
        assert not _captures([factory], AlgorithmConfig, set())
        postprocess, update = factory(trial.population_values())
        assert not _captures([postprocess, update], Algorithm, set())
    finally:
        trial.stop()
