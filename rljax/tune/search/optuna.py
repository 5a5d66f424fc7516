"""``OptunaSearch``: trials' configs suggested by an Optuna sampler (Tune's
``ray.tune.search.optuna.OptunaSearch``).

Optuna is optional: ``pip install optuna`` (``cmaes`` too for ``CmaEsSampler``). This module
imports without it; making an ``OptunaSearch`` raises ``ImportError`` saying what to install.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rljax.tune._optuna import import_optuna, quiet_optuna
from rljax.tune.sample import Categorical, Domain, Float, Function, GridSearch, Integer, Normal
from rljax.tune.sample import as_domain as _as_domain
from rljax.tune.search.searcher import Searcher
from rljax.tune.stopper import flatten
from rljax.tune.variants import _copy_tree, _replace, find_search_spaces, key_path
from rljax.utils.errors import ConfigError

_PLAIN = (type(None), bool, int, float, str)


class _Param:
    """One searched value: its key path, Optuna name and distribution, and how Optuna's value
    becomes the config's (a category index back to the category)."""

    def __init__(
        self, path: tuple[Any, ...], distribution: Any, decode: Callable[[Any], Any] | None = None
    ):
        self.path = path
        self.name = "/".join(str(k) for k in path)
        self.distribution = distribution
        self.decode = decode

    def value(self, suggested: Any) -> Any:
        return _copy_tree(self.decode(suggested) if self.decode is not None else suggested)

    def encode(self, value: Any) -> Any:
        """A config value as Optuna's parameter value (for ``points_to_evaluate``)."""
        if self.decode is None:
            return value
        categories = [self.decode(i) for i in range(len(self.distribution.choices))]
        for i, category in enumerate(categories):
            if category is value or category == value:
                return i
        raise ValueError(f"{value!r} is none of the categories {categories!r}")


def to_distribution(domain: Domain, where: str = "search space") -> tuple[Any, Any]:
    """``domain`` as an Optuna distribution, and a function from Optuna's value to the config's
    value (None: the same value).

    - ``uniform(a, b)``: ``FloatDistribution(a, b)``; ``loguniform(a, b)``: ``log=True``;
      ``quniform(a, b, q)``: ``step=q`` (both ends included, as Tune's ``quniform``).
    - ``randint(a, b)``: ``IntDistribution(a, b - 1)`` (``b`` excluded, as Tune's);
      ``qrandint(a, b, q)``: ``IntDistribution`` over the multiples of ``q`` in ``[a, b]``.
    - ``choice(categories)``: ``CategoricalDistribution(categories)`` when every category is
      None, a bool, an int, a float or a str (what Optuna stores); otherwise the distribution is
      over the categories' indices and the config gets the category itself.

    Raises:
      ConfigError: naming ``where``: ``grid_search`` and ``sample_from`` (OptunaSearch samples
        each value from a distribution, as Tune refuses them too), ``randn`` (no bounds), a
        search space inside a ``choice``'s categories, or a domain that cannot be sampled.
    """
    optuna = import_optuna()
    dists = optuna.distributions
    if isinstance(domain, GridSearch):
        raise ConfigError(
            f"{where}: {domain!r}: OptunaSearch samples every value, it does not try a grid; use "
            f"tune.choice({domain.values!r}), or leave search_alg unset to try the grid"
        )
    if isinstance(domain, Function):
        raise ConfigError(
            f"{where}: {domain!r}: OptunaSearch cannot search a sample_from function (Optuna "
            "needs a distribution); use tune.uniform, loguniform, quniform, randint, qrandint or "
            "choice, or leave search_alg unset"
        )
    if isinstance(domain, Normal):
        raise ConfigError(
            f"{where}: {domain!r}: OptunaSearch needs bounded distributions; use tune.uniform "
            "(lower, upper) over the range you mean"
        )
    domain.check(where)
    if isinstance(domain, Float):
        if domain.log and domain.q is not None:
            raise ConfigError(
                f"{where}: {domain!r} with q={domain.q!r}: Optuna has no quantized log-uniform "
                "distribution; use loguniform without q or quniform"
            )
        step = None if domain.q is None else float(domain.q)
        dist = dists.FloatDistribution(
            float(domain.lower), float(domain.upper), log=bool(domain.log), step=step
        )
        return dist, None
    if isinstance(domain, Integer):
        if domain.log and domain.q is not None:
            raise ConfigError(
                f"{where}: {domain!r}: Optuna has no quantized log-uniform integer "
                "distribution; use lograndint without q or qrandint"
            )
        if domain.q is None:
            low, high = int(domain.lower), int(domain.upper) - 1
            return dists.IntDistribution(low, high, log=bool(domain.log)), None
        first, last = domain._multiples()
        q = int(domain.q)
        return dists.IntDistribution(first * q, last * q, step=q), None
    if isinstance(domain, Categorical):
        categories = list(domain.categories)
        for i, category in enumerate(categories):
            if find_search_spaces(category):
                raise ConfigError(
                    f"{where}: {domain!r}: category {i} holds a search space; OptunaSearch "
                    "searches a fixed set of values, not spaces inside categories"
                )
        if all(isinstance(c, _PLAIN) for c in categories):
            return dists.CategoricalDistribution(categories), None
        return dists.CategoricalDistribution(list(range(len(categories)))), categories.__getitem__
    raise ConfigError(f"{where}: {domain!r}: OptunaSearch cannot search a {type(domain).__name__}")


def _merge(base: Any, over: Any) -> Any:
    """``over`` laid on ``base``: dicts merged key by key, anything else replaced."""
    if isinstance(base, Mapping) and isinstance(over, Mapping) and _as_domain(over) is None:
        out = dict(base)
        for key, value in over.items():
            out[key] = _merge(base[key], value) if key in base else value
        return out
    return over


class OptunaSearch(Searcher):
    """Suggests trials' configs with an Optuna sampler (Tune's ``OptunaSearch``).

    Args:
      space: The search space: a dict (nested dicts allowed) of rljax search spaces
        (``tune.uniform``, ``loguniform``, ``quniform``, ``randint``, ``qrandint``, ``choice``),
        Optuna distributions, and constants. None: the ``Tuner``'s ``param_space`` (a dict or a
        config's search spaces) is searched. Giving both a ``space`` and a ``param_space`` with
        search spaces is refused; a ``param_space`` of constants is merged under ``space``.
      metric: The result key to optimize (``/`` for nested keys); default ``TuneConfig.metric``.
      mode: ``"min"`` or ``"max"``; default ``TuneConfig.mode``.
      points_to_evaluate: Configs to try first, in order (nested as the space, or keyed by
        Optuna's parameter names: the key paths joined by ``/``); keys left out are sampled.
      sampler: An ``optuna.samplers.BaseSampler`` (``TPESampler``, ``CmaEsSampler``,
        ``RandomSampler``, ``GridSampler`` over the parameter names above ...). Default: a
        ``TPESampler(seed=seed)``.
      seed: The default ``TPESampler``'s seed (the same seed and the same results give the same
        suggestions). A sampler passed in is seeded by whoever made it; giving both is refused.

    Each trial is an Optuna trial of one in-memory study: ``suggest`` asks it, intermediate
    results are reported at their ``training_iteration``, and the last result's metric is told
    when the trial completes (a trial stopped early by a scheduler is told its last value, as
    Tune does; a trial that raised or reported nothing is told as failed). ``grid_search``,
    ``sample_from`` and ``randn`` are refused with the key named (see ``to_distribution``).
    Define-by-run search spaces (a function of an Optuna trial) are not supported.
    """

    def __init__(
        self,
        space: Mapping[str, Any] | None = None,
        metric: str | None = None,
        mode: str | None = None,
        points_to_evaluate: Sequence[Mapping[str, Any]] | None = None,
        sampler: Any = None,
        seed: int | None = None,
    ):
        super().__init__(metric, mode)
        optuna = import_optuna()
        if space is not None and not isinstance(space, Mapping):
            raise ConfigError(
                f"OptunaSearch(space={space!r}): use a dict of search spaces (tune.uniform, "
                "tune.choice, ...) or Optuna distributions; define-by-run functions are not "
                "supported"
            )
        if sampler is not None and not isinstance(sampler, optuna.samplers.BaseSampler):
            raise ConfigError(
                f"OptunaSearch(sampler={sampler!r}): use an optuna.samplers sampler "
                "(TPESampler(), CmaEsSampler(), RandomSampler(), GridSampler(...))"
            )
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ConfigError(f"OptunaSearch(seed={seed!r}): use None or an int >= 0")
        if sampler is not None and seed is not None:
            raise ConfigError(
                f"OptunaSearch(sampler={sampler!r}, seed={seed!r}): seed seeds the default "
                "TPESampler; seed the sampler you pass instead"
            )
        if points_to_evaluate is not None and (
            isinstance(points_to_evaluate, (str, Mapping))
            or not all(isinstance(p, Mapping) for p in points_to_evaluate)
        ):
            raise ConfigError(
                f"OptunaSearch(points_to_evaluate={points_to_evaluate!r}): use a list of dicts"
            )
        self._space = dict(space) if space is not None else None
        self._points = [dict(p) for p in points_to_evaluate or []]
        self._sampler = sampler
        self._seed = seed
        self._tree: dict[str, Any] | None = None
        self._params: list[_Param] = []
        self._study: Any = None
        self._trials: dict[str, Any] = {}
        self._last_step: dict[str, int] = {}
        self._finished = False
        if self._space is not None:  # a bad space fails here, before any Tuner
            self._params = self._convert(self._space, "OptunaSearch(space)")

    # ------------------------------------------------------------------ the space
    @staticmethod
    def _convert(tree: Mapping[str, Any], root: str) -> list[_Param]:
        optuna = import_optuna()
        params: list[_Param] = []

        def walk(value: Any, path: tuple[Any, ...]) -> None:
            domain = _as_domain(value)
            if domain is not None:
                params.append(_Param(path, *to_distribution(domain, key_path(path, root))))
            elif isinstance(value, optuna.distributions.BaseDistribution):
                params.append(_Param(path, value))
            elif isinstance(value, dict):
                for key, child in value.items():
                    walk(child, (*path, key))
            elif isinstance(value, list) or type(value) is tuple:
                for i, child in enumerate(value):
                    walk(child, (*path, i))

        walk(dict(tree), ())
        names = [p.name for p in params]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ConfigError(
                f"{root}: the key paths {twice} give the same Optuna parameter name (keys joined "
                "by '/'); rename the keys"
            )
        return params

    @property
    def searched_paths(self) -> list[tuple[Any, ...]]:
        return [p.path for p in self._params]

    @property
    def param_names(self) -> list[str]:
        """Optuna's parameter names: the searched key paths joined by ``/``."""
        return [p.name for p in self._params]

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: Mapping[str, Any], **spec: Any
    ) -> bool:
        """Takes ``TuneConfig``'s metric and mode and the ``Tuner``'s ``param_space``
        (``config``; ``spec["root"]`` names it in errors).

        Raises:
          ConfigError: metric or mode missing or conflicting; a ``grid_search``, ``sample_from``
            or ``randn`` in the space (naming the key); a ``space`` given to ``OptunaSearch``
            while the ``param_space`` searches too; nothing to search.
        """
        root = str(spec.get("root", "param_space"))
        if self._study is not None:
            raise ConfigError(
                "this OptunaSearch already ran trials; make a new one for another Tuner"
            )
        config = dict(config or {})
        if self._space is not None:
            searched = find_search_spaces(config)
            if searched:
                keys = ", ".join(key_path(p, root) for p, _ in searched)
                raise ConfigError(
                    f"OptunaSearch was given a space and {root} searches too ({keys}); give the "
                    "search spaces in one place"
                )
            self._tree = _merge(config, self._space)
        else:
            self._params = self._convert(config, root)
            if not self._params:
                raise ConfigError(
                    f"OptunaSearch: {root} has no search space to search; give "
                    "tune.uniform/loguniform/quniform/randint/qrandint/choice values"
                )
            self._tree = config
        self._take_metric_mode(metric, mode)
        self._require_metric_mode()
        self._encode_points()
        return True

    def _encode_points(self) -> list[dict[str, Any]]:
        encoded: list[dict[str, Any]] = []
        by_name = {p.name: p for p in self._params}
        for n, point in enumerate(self._points):
            flat = flatten(point)
            out: dict[str, Any] = {}
            for name, value in flat.items():
                param = by_name.get(name)
                if param is None:
                    raise ConfigError(
                        f"OptunaSearch(points_to_evaluate) point {n}: {name!r} is not searched; "
                        f"the searched keys are {sorted(by_name)}"
                    )
                try:
                    internal = param.encode(value)
                    ok = param.distribution._contains(param.distribution.to_internal_repr(internal))
                except (ValueError, TypeError) as e:
                    ok, internal = False, str(e)
                if not ok:
                    raise ConfigError(
                        f"OptunaSearch(points_to_evaluate) point {n}: {name}={value!r} is outside "
                        f"{param.distribution!r}"
                    )
                out[name] = internal
            encoded.append(out)
        return encoded

    def _ensure_study(self) -> Any:
        if self._study is not None:
            return self._study
        if self._tree is None:
            if self._space is None:
                raise ConfigError(
                    "OptunaSearch has no search space: give OptunaSearch(space=...) or use it "
                    "through tune.Tuner(param_space=..., tune_config=tune.TuneConfig("
                    "search_alg=...))"
                )
            self._tree = dict(self._space)
        _, mode = self._require_metric_mode()
        with quiet_optuna() as optuna:
            sampler = self._sampler or optuna.samplers.TPESampler(seed=self._seed)
            self._study = optuna.create_study(
                sampler=sampler, direction="maximize" if mode == "max" else "minimize"
            )
            for params in self._encode_points():
                self._study.enqueue_trial(params)
        return self._study

    @property
    def study(self) -> Any:
        """The in-memory ``optuna.Study`` (made on the first suggestion)."""
        return self._ensure_study()

    # ------------------------------------------------------------------ Tuner's calls
    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        """Asks Optuna for a trial: the space's constants with every searched key set. None
        once the sampler stopped the study (a ``GridSampler`` that tried every point)."""
        study = self._ensure_study()
        if self._finished:
            return None
        if trial_id in self._trials:
            raise ConfigError(f"OptunaSearch: trial {trial_id!r} was already suggested")
        with quiet_optuna():
            trial = study.ask({p.name: p.distribution for p in self._params})
        self._trials[trial_id] = trial
        assert self._tree is not None
        config = _copy_tree(self._tree)
        for param in self._params:
            config = _replace(config, param.path, param.value(trial.params[param.name]))
        return dict(config)

    def _trial(self, trial_id: str) -> Any:
        try:
            return self._trials[trial_id]
        except KeyError:
            raise ConfigError(
                f"OptunaSearch: trial {trial_id!r} was not suggested by this searcher"
            ) from None

    def on_trial_result(self, trial_id: str, result: Mapping[str, Any]) -> None:
        """Reports the metric to Optuna at the result's ``training_iteration``."""
        trial = self._trial(trial_id)
        metric, _ = self._require_metric_mode()
        value = self._read(trial_id, result, metric)
        flat = flatten(result)
        last = self._last_step.get(trial_id, 0)
        step = int(flat.get("training_iteration", last + 1))
        if step <= last:  # Optuna keeps the first value of a step
            return
        self._last_step[trial_id] = step
        trial.report(value, step)

    def on_trial_complete(
        self, trial_id: str, result: Mapping[str, Any] | None = None, error: bool = False
    ) -> None:
        """Tells Optuna the last result's metric (or that the trial failed)."""
        trial = self._trials.pop(trial_id, None)
        self._last_step.pop(trial_id, None)
        if trial is None:
            return
        with quiet_optuna() as optuna:
            failed = optuna.trial.TrialState.FAIL
            if error or not result:
                self._study.tell(trial, state=failed)
                return
            metric, _ = self._require_metric_mode()
            try:
                value = self._read(trial_id, result, metric)
            except ConfigError:
                self._study.tell(trial, state=failed)
                raise
            try:
                self._study.tell(trial, value)
            except RuntimeError as e:
                # A sampler that is done (GridSampler, every point tried) stops the study, which
                # Optuna allows inside study.optimize() only; the trial was stored before.
                if "Study.stop" not in str(e):
                    raise
                self._finished = True


__all__ = ["OptunaSearch", "to_distribution"]
