"""Tuning with Ray Tune's API: search spaces, variants, the ``Tuner``, search algorithms,
schedulers, population-based training, and trials trained as one population, on one host; for
a Ray cluster, ``ray_trainable`` makes rljax algorithms trainables of Ray Tune itself.

What it has: the search spaces (``grid_search``, ``choice``, ``uniform``, ``quniform``,
``loguniform``, ``qloguniform``, ``randint``, ``qrandint``, ``lograndint``, ``qlograndint``,
``randn``, ``qrandn``, ``sample_from``) with Tune's semantics,
``generate_variants(param_space, num_samples, seed)``, and search spaces inside a config's setters
(``PPOConfig().training(lr=tune.grid_search([1e-3, 1e-4]))``; ``config.search_space()``,
``config.copy().update_from_dict(variant)``); ``Tuner(trainable, param_space, tune_config,
run_config).fit()``, where trials of an algorithm that differ only in values its update reads train
together as one population in one vmapped program (``rljax.execution.population``), the others one
by one, and batches run at once in worker processes when ``max_concurrent_trials`` leaves room
(``rljax.tune.worker``); ``tune.report``, stop criteria (``RunConfig(stop=...)``, ``Stopper``),
``ResultGrid`` / ``Result``, Tune's output files, the older ``tune.run``; ``Tuner.restore`` /
``Tuner.can_restore`` (``experiment_state.json``), ``tune.get_checkpoint`` and the live table of
trials (``rljax.tune.progress``); search algorithms (``tune.search.optuna.OptunaSearch``,
``tune.search.ConcurrencyLimiter``) and trial schedulers (``tune.schedulers.ASHAScheduler``,
``AsyncHyperBandScheduler``, ``HyperBandScheduler``, ``MedianStoppingRule``, ``FIFOScheduler``)
backed by Optuna (optional: ``pip install optuna``); ``tune.schedulers.PopulationBasedTraining``
inside a population; ``tune.ray_trainable(name)`` for Ray Tune itself; ``tune.Callback`` and
``tune.logger.TBXLoggerCallback`` (TensorBoard event files) as ``RunConfig(callbacks=[...])``;
``tune.CLIReporter`` (the table's columns) as ``RunConfig(progress_reporter=...)``,
``tune.search.BasicVariantGenerator`` (the default generator, by name); ``tune.with_resources`` and
``tune.PlacementGroupFactory`` (recorded; on one host a trial uses what its config sets);
``tune.Trainable`` (the class API), ``tune.FailureConfig`` (retries, fail-fast),
``register_trainable``, ``with_parameters``,
``get_context``, ``create_scheduler`` and ``create_searcher``; ``tune.Experiment`` and
``tune.run_experiments`` (Tune's oldest entry point).

Example:
    ```python
    from rljax import tune

    variants = tune.generate_variants(
        {"lr": tune.grid_search([1e-3, 1e-4]), "gamma": tune.uniform(0.95, 0.999)},
        num_samples=2,
        seed=0,
    )  # 4 dicts
    ```
"""

from rljax.env.registry import register_env
from rljax.tune import logger, registry, schedulers, search, stopper
from rljax.tune.callback import Callback
from rljax.tune.class_trainable import Trainable
from rljax.tune.experiments import Experiment, run_experiments
from rljax.tune.functions import (
    TuneContext,
    create_scheduler,
    create_searcher,
    get_context,
    register_trainable,
    with_parameters,
)
from rljax.tune.progress import CLIReporter, JupyterNotebookReporter
from rljax.tune.ray_integration import ray_trainable
from rljax.tune.resources import PlacementGroupFactory, with_resources
from rljax.tune.result_grid import Checkpoint, Result, ResultGrid
from rljax.tune.sample import (
    Categorical,
    ConfigView,
    Domain,
    Float,
    Function,
    GridSearch,
    Integer,
    Normal,
    choice,
    grid_search,
    lograndint,
    loguniform,
    qlograndint,
    qloguniform,
    qrandint,
    qrandn,
    quniform,
    randint,
    randn,
    sample_from,
    uniform,
)
from rljax.tune.stopper import MaximumIterationStopper, Stopper
from rljax.tune.tune_config import (
    CheckpointConfig,
    FailureConfig,
    ResumeConfig,
    RunConfig,
    SyncConfig,
    TuneConfig,
)
from rljax.tune.tuner import ExperimentAnalysis, TuneError, Tuner, get_checkpoint, report, run
from rljax.tune.variants import check_search_spaces, find_search_spaces, generate_variants

__all__ = [
    "Experiment",
    "run_experiments",
    "Trainable",
    "TuneContext",
    "create_scheduler",
    "create_searcher",
    "get_context",
    "register_trainable",
    "with_parameters",
    "register_env",
    "registry",
    "Callback",
    "logger",
    "Categorical",
    "Checkpoint",
    "CheckpointConfig",
    "FailureConfig",
    "JupyterNotebookReporter",
    "ResumeConfig",
    "SyncConfig",
    "ConfigView",
    "Domain",
    "ExperimentAnalysis",
    "Float",
    "Function",
    "GridSearch",
    "Integer",
    "MaximumIterationStopper",
    "Normal",
    "Result",
    "ResultGrid",
    "RunConfig",
    "Stopper",
    "TuneConfig",
    "TuneError",
    "Tuner",
    "check_search_spaces",
    "choice",
    "find_search_spaces",
    "generate_variants",
    "get_checkpoint",
    "grid_search",
    "lograndint",
    "loguniform",
    "qlograndint",
    "qloguniform",
    "qrandint",
    "qrandn",
    "quniform",
    "randint",
    "randn",
    "ray_trainable",
    "report",
    "run",
    "sample_from",
    "schedulers",
    "search",
    "stopper",
    "uniform",
    # Ray Tune's reporter and resource names (rljax.tune.progress, rljax.tune.resources).
    "CLIReporter",
    "PlacementGroupFactory",
    "with_resources",
]
