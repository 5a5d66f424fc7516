"""The old API's trainers (``PPOTrainer(config=dict)``): each is its new algorithm with RLlib's
old dict config, old result keys and old methods.

``XTrainer(config={...}, env=...)`` translates the dict through ``config_table`` into the new
config and builds the algorithm (the multi-agent class for a ``"multiagent"`` dict). On top of
the new algorithm's methods a trainer has RLlib 1.x's: ``train()`` results carry the old keys
beside the new ones, ``compute_action`` / ``compute_single_action``, ``get_policy()``,
``save(dir)`` returning the checkpoint's path, ``restore(path)``, ``evaluate()`` and ``stop()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rljax.agents.config_table import apply_translation, translate
from rljax.algorithms.algorithm import DEFAULT_POLICY
from rljax.policy.old_api import Policy, single_obs

# New result key (under env_runners) -> RLlib 1.x's top-level key.
_EPISODE_KEYS = {
    "episode_return_mean": "episode_reward_mean",
    "episode_return_max": "episode_reward_max",
    "episode_return_min": "episode_reward_min",
    "episode_len_mean": "episode_len_mean",
    "num_episodes": "episodes_this_iter",
}

# RLlib 1.x's result keys (stop criteria, metrics) and the new API's names for them.
OLD_RESULT_KEYS = {
    "episode_reward_mean": "env_runners/episode_return_mean",
    "episode_reward_max": "env_runners/episode_return_max",
    "episode_reward_min": "env_runners/episode_return_min",
    "episode_len_mean": "env_runners/episode_len_mean",
    "episodes_this_iter": "env_runners/num_episodes",
    "episodes_total": "env_runners/num_episodes_lifetime",
    "timesteps_total": "num_env_steps_sampled_lifetime",
    "timesteps_this_iter": "env_runners/num_env_steps_sampled",
    "agent_timesteps_total": "num_env_steps_sampled_lifetime",
}


def old_result_keys(result: dict[str, Any]) -> dict[str, Any]:
    """RLlib 1.x's keys for a new result: the episode figures at the top level,
    ``timesteps_total``, and ``info: {learner: {policy: {..., learner_stats: {...}}}}``."""
    runners = result.get("env_runners", {})
    out: dict[str, Any] = {
        old: runners[new] for new, old in _EPISODE_KEYS.items() if new in runners
    }
    out["episodes_total"] = runners.get("num_episodes_lifetime", 0)
    out["timesteps_total"] = result.get("num_env_steps_sampled_lifetime", 0)
    out["agent_timesteps_total"] = out["timesteps_total"]
    out["timesteps_this_iter"] = runners.get("num_env_steps_sampled", 0)
    learners = result.get("learners", {})
    learner = {
        pid: {**metrics, "learner_stats": dict(metrics)}
        for pid, metrics in learners.items()
        if pid != "__all_modules__" and isinstance(metrics, Mapping)
    }
    out["info"] = {
        "learner": learner,
        "num_steps_sampled": out["timesteps_total"],
        "num_steps_trained": result.get("num_env_steps_trained_lifetime", 0),
    }
    by_policy = runners.get("module_episode_returns_mean")
    if isinstance(by_policy, Mapping):
        out["policy_reward_mean"] = dict(by_policy)
    return out


class SavedPath(str):
    """An old trainer's ``save()``: the checkpoint's path (RLlib 1.x's) that also has RLlib
    2.x's ``checkpoint`` (its ``.path``) and ``metrics``."""

    checkpoint: Any
    metrics: dict[str, Any]

    def __new__(cls, checkpoint: Any, metrics: dict[str, Any]) -> SavedPath:
        saved = super().__new__(cls, str(checkpoint.path))
        saved.checkpoint = checkpoint
        saved.metrics = dict(metrics)
        return saved

    def __getnewargs__(self) -> tuple[Any, dict[str, Any]]:  # type: ignore[override]
        return (self.checkpoint, self.metrics)  # copy and pickle make it again so


def old_stack_config(algo: str, config: Any) -> Any:
    """A copy of the config object ``config`` as this trainer trains it: the old ``model``
    dict it was given (``.training(model={...})``, which the old stack reads) translated into
    its networks' settings as a dict config's is (``custom_model`` included), and the API
    stack switched back on (the trainer is that stack's algorithm with the old API on top)."""
    new = config.copy()
    old_model = new.__dict__.pop("_old_model", None)
    new.api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
    if old_model:
        apply_translation(new, translate(algo, {"model": old_model}, list(new.SETTINGS)))
    return new


class OldAPITrainer:
    """The old API on a new algorithm; a trainer class is ``(OldAPITrainer, Algo)``.

    Args:
      config: RLlib 1.x's dict config (old keys, new ones, ``"multiagent"``, ``"model":
        {"custom_model": name}``), or a new config object.
      env: The env (overrides the dict's ``"env"``), as RLlib's ``Trainer(env=...)``.
      logger_creator: Accepted and unused.
    """

    algo_name: ClassVar[str] = ""
    # The single-agent trainer class (whose multi_agent_class() is the multi-agent one).
    single_agent_trainer: ClassVar[type | None] = None

    def __new__(
        cls,
        config: Any = None,
        env: Any = None,
        logger_creator: Any = None,
        **kwargs: Any,
    ) -> Any:
        new_config = cls.to_config(config, env)
        target = new_config.checked_algo_class()
        obj = object.__new__(target)
        obj.__dict__["_old_api_config"] = new_config
        if not isinstance(obj, cls):  # the multi-agent trainer: Python does not call __init__
            obj.__init__(new_config, **kwargs)
        return obj

    def __init__(
        self,
        config: Any = None,
        env: Any = None,
        logger_creator: Any = None,
        **kwargs: Any,
    ) -> None:
        new_config = self.__dict__.pop("_old_api_config", None)
        if new_config is None:  # built already (by __new__)
            return
        super().__init__(new_config, **kwargs)  # type: ignore[call-arg]

    @classmethod
    def to_config(cls, config: Any = None, env: Any = None) -> Any:
        """The new config of an old dict ``config`` (and ``env``), not yet validated; a new
        config object is taken as it is."""
        from rljax.algorithms.algorithm_config import AlgorithmConfig

        single = cls.single_agent_trainer or cls
        if isinstance(config, AlgorithmConfig):
            new = old_stack_config(cls.algo_name, config)
            if not new.is_multi_agent and new.env is not None:
                # A config object (one a checkpoint stored, say) names the env itself: an old
                # gym-style one is adapted again, as from a dict.
                from rljax.agents.single_agent import old_gym_env

                new.environment(old_gym_env(new.env))
        else:
            from rljax.algorithms import registry

            new = registry.config_class(cls.algo_name)()
            t = translate(cls.algo_name, {} if config is None else config, list(new.SETTINGS))
            if t.multi_agent:
                from rljax.agents.multi_agent import old_env_creator

                t.settings["env"] = old_env_creator(
                    env if env is not None else t.settings.get("env")
                )
            else:
                from rljax.agents.single_agent import old_gym_env

                given = env if env is not None else t.settings.get("env")
                if given is not None:
                    t.settings["env"] = old_gym_env(given)
            apply_translation(new, t)
        if env is not None and isinstance(config, AlgorithmConfig):
            new.environment(env)
        new.algo_class = single
        return new

    @classmethod
    def multi_agent_class(cls) -> type | None:
        """The multi-agent trainer of this algorithm (PPO's), if it has one."""
        return None

    # ------------------------------------------------------------------ results
    def train(self) -> dict[str, Any]:
        """One iteration; the new result with RLlib 1.x's keys beside the new ones
        (``episode_reward_mean``, ``timesteps_total``, ``info/learner/default_policy``, ...)."""
        result: dict[str, Any] = super().train()  # type: ignore[misc]
        evaluation = result.get("evaluation")
        if isinstance(evaluation, dict):
            evaluation.pop("evaluation", None)
        result.update(old_result_keys(result))
        return result

    def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The new evaluation result with the old keys beside it, and RLlib 1.x's form
        ``{"evaluation": {"episode_reward_mean": ...}}``."""
        result: dict[str, Any] = super().evaluate(*args, **kwargs)  # type: ignore[misc]
        runners = result.get("env_runners", {})
        old = {o: runners[n] for n, o in _EPISODE_KEYS.items() if n in runners}
        return {**result, **old, "evaluation": {**result, **old}}

    # ------------------------------------------------------------------ acting
    def compute_single_action(
        self,
        observation: Any = None,
        explore: bool = False,
        policy_id: str | None = None,
        *,
        state: Any = None,
        prev_action: Any = None,
        prev_reward: Any = None,
        info: Any = None,
        full_fetch: bool = False,
        **kwargs: Any,
    ) -> Any:
        """The action for one observation (``explore=False``: the distribution's mode).
        RLlib 1.x's other arguments are accepted (a recurrent ``state`` is not kept here; with
        ``state`` or ``full_fetch`` the result is ``(action, [], {})``). gymnasium's
        ``(obs, info)`` tuple is refused, saying what to pass."""
        if observation is None:
            observation = kwargs.pop("obs", None)
        if kwargs:
            raise TypeError(f"compute_single_action() got unexpected arguments {sorted(kwargs)}")
        observation = single_obs(observation, "compute_single_action")
        pid = None if policy_id in (None, DEFAULT_POLICY) else policy_id
        action = super().compute_single_action(  # type: ignore[misc]
            observation, explore=explore, policy_id=pid
        )
        return (action, [], {}) if full_fetch or state is not None else action

    def compute_action(self, observation: Any = None, *args: Any, **kwargs: Any) -> Any:
        """RLlib 1.x's name of ``compute_single_action``."""
        return self.compute_single_action(observation, *args, **kwargs)

    def get_policy(self, policy_id: str = DEFAULT_POLICY) -> Policy:
        """The policy ``policy_id`` (RLlib 1.x's ``trainer.get_policy()``)."""
        self._check_policy_id(  # type: ignore[attr-defined]
            None if policy_id == DEFAULT_POLICY else policy_id
        )
        return Policy(self, policy_id)

    def export_policy_checkpoint(self, export_dir: Any, policy_id: str = DEFAULT_POLICY) -> str:
        """RLlib 1.x's policy checkpoint: here the trainer's whole checkpoint in
        ``export_dir`` (rljax keeps no policy-only checkpoints), from which
        ``RLModule.from_checkpoint(f"{export_dir}/learner_group/learner/rl_module/{policy_id}")``
        loads the policy's module. Returns the directory."""
        self.get_policy(policy_id)  # an unknown policy id is refused, naming the ids
        path: str = str(self.save_to_path(export_dir))  # type: ignore[attr-defined]
        return path

    # ------------------------------------------------------------------ checkpoints
    def save(self, checkpoint_dir: Any = None, **kwargs: Any) -> SavedPath:
        """Writes a checkpoint to ``checkpoint_dir`` (None: a new temporary directory) and
        returns its path, as RLlib 1.x's ``trainer.save`` (``restore`` takes it); the path
        also has RLlib 2.x's ``checkpoint.path`` and ``metrics``, as its old stack returns."""
        saved = super().save(checkpoint_dir, **kwargs)  # type: ignore[misc]
        return SavedPath(saved.checkpoint, saved.metrics)


def default_config(algo: str) -> dict[str, Any]:
    """RLlib 1.x's ``DEFAULT_CONFIG`` of ``algo``: rljax's defaults as a dict config (RLlib's
    old names where the setting has a plain rename), which the trainer takes back as it is."""
    from rljax.algorithms import registry

    cfg = registry.config_class(algo)()
    out = cfg.to_dict()
    out.pop("algo", None)
    renames = {
        "num_env_runners": "num_workers",
        "num_envs_per_env_runner": "num_envs_per_worker",
        "model_config": "model",
    }
    if algo == "PPO":
        renames.update(
            lambda_="lambda", minibatch_size="sgd_minibatch_size", num_epochs="num_sgd_iter"
        )
    elif algo in ("IMPALA", "APPO"):
        renames.update(lambda_="lambda")
    elif algo in ("DQN", "SAC", "TD3"):
        renames.update(num_steps_sampled_before_learning_starts="learning_starts")
    return {renames.get(k, k): v for k, v in out.items()}


__all__ = [
    "OLD_RESULT_KEYS",
    "OldAPITrainer",
    "Policy",
    "SavedPath",
    "default_config",
    "old_result_keys",
    "old_stack_config",
]
