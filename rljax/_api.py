"""rljax's public API, declared in one place.

``PUBLIC_MODULES`` are the modules whose ``__all__`` is the API: the import paths users write,
each name rendered in the site's API reference (``docs/reference/``). ``NOT_API`` names the
packages that declare an ``__all__`` for their own imports without being API, and why.
``tests/test_public_api.py`` checks both against the package: every package under ``rljax``
whose ``__init__.py`` defines ``__all__`` is in exactly one of them, every public name has a
docstring, and every public name is rendered by a ``::: path`` directive of the reference.
"""

PUBLIC_MODULES: tuple[str, ...] = (
    "rljax",
    "rljax.algorithms",
    "rljax.algorithms.ppo",
    "rljax.algorithms.impala",
    "rljax.algorithms.appo",
    "rljax.algorithms.dqn",
    "rljax.algorithms.sac",
    "rljax.algorithms.td3",
    "rljax.algorithms.tqc",
    "rljax.algorithms.marwil",
    "rljax.algorithms.cql",
    "rljax.algorithms.iql",
    "rljax.callbacks",
    "rljax.connectors.env_to_module",
    "rljax.connectors.learner",
    "rljax.core",
    "rljax.core.rl_module",
    "rljax.distributed",
    "rljax.env",
    "rljax.env.jax_env",
    "rljax.env.jax_multi_agent",
    "rljax.env.wrappers",
    "rljax.offline",
    "rljax.policy",
    "rljax.tune",
    "rljax.tune.ray_integration",
    "rljax.tune.ray_train",
    "rljax.tune.search",
    "rljax.utils.errors",
)

NOT_API: dict[str, str] = {
    # RLlib's import paths, so that a ported script's imports resolve: the porting guide
    # (docs/porting.md) says what each holds and what is refused.
    "rljax.agents": "RLlib 1.x's Trainer API at RLlib's paths (rljax.agents.ppo.PPOTrainer, ...); "
    "its own names are the trainer look-ups of rljax.tune's old API",
    "rljax.models": "RLlib's old-API ModelCatalog path, for ported scripts",
    "rljax.examples.multi_agent.utils": "RLlib's self-play example helpers at their path "
    "(ray.rllib.examples.multi_agent.utils), for ported scripts",
    "rljax.env.utils": "RLlib's ray.rllib.env.utils path, for ported scripts: the episodes' "
    "lookback buffer and the optional OpenSpiel imports",
    "rljax.utils.replay_buffers": "RLlib's replay-buffer module path, for ported scripts' "
    "replay_buffer_config (StorageUnit); rljax's buffers are rljax.replay",
    "rljax.algorithms.bc": "RLlib's BC path, for ported scripts: BC and BCConfig of "
    "rljax.algorithms.marwil",
    "rljax.core.learner.torch": "RLlib's TorchLearner path: a class built on it is refused "
    "where used (TorchClassError)",
    "rljax.core.rl_module.torch": "RLlib's TorchRLModule path: a class built on it is refused "
    "where used (TorchClassError)",
    "rljax.core.rl_module.apis": "RLlib's RLModule API mixins by name, for ported PyTorch "
    "modules; their methods raise NotImplementedError",
    "rljax.env.vector": "the vector envs' dispatch between EnvPool and gymnasium (its "
    "__all__ re-exports the backends' names for rljax's own modules); its submodule "
    "vector_multi_agent_env is RLlib's VectorMultiAgentEnv path, for ported scripts",
    "rljax.examples.envs.classes.multi_agent": "RLlib's example multi-agent envs at RLlib's "
    "paths (docs/multi-agent.md lists them)",
    "rljax.examples.rl_modules.classes": "RLlib's example RLModules at RLlib's paths",
    "rljax.utils.metrics": "RLlib's result-key constants by RLlib's names, for ported scripts",
    # The algorithms' building blocks: they change with the algorithms (docs/architecture.md).
    "rljax.algorithms.actor_critic": "what PPO, IMPALA and APPO share: the policy and the "
    "hyper-parameter split",
    "rljax.networks": "the Flax modules and action distributions the default models build",
    "rljax.ops": "the numerical ops the algorithms share (GAE)",
    "rljax.replay": "the jit-able replay buffers of DQN, SAC and TD3",
}
