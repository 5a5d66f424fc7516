"""Memory estimates of a config, before anything is built: the terms ``build_algo()`` weighs
against the host's memory (``rljax.utils.memory``), each named by the setting that asks for it.

``AlgorithmConfig.memory_terms`` / ``inference_memory_terms`` / ``network_params`` call these;
a subclass's override adds its own terms (networks, replay buffers) to them.
"""

from __future__ import annotations

from typing import Any

from rljax.networks.model_config import filters_list
from rljax.utils import memory


def memory_terms(config: Any, observation_space: Any, action_space: Any) -> list[tuple[str, int]]:
    """``config.memory_terms(...)``: the large allocations an ``AlgorithmConfig`` asks for, as
    ``(setting, bytes)`` estimates (``rljax.utils.memory``); subclasses add their networks and
    buffers to these."""
    obs = memory.space_bytes(observation_space)
    runners = config.num_runners
    envs = config.total_num_envs
    sampled = config.sampled_batch_size
    mc = config.model_config
    terms = [
        (
            f"num_envs_per_env_runner={config.num_envs_per_env_runner} x {runners} runner(s)",
            envs * (memory.PER_ENV_BYTES + 2 * obs),
        ),
        (
            f"the sampled batch of {sampled:,} env steps (rollout_fragment_length x envs)",
            sampled * (obs + 64) * 4,
        ),
        networks_term(config, observation_space, action_space),
    ]
    encoders = config._conv_encoders()
    if memory.is_image(observation_space) and encoders:
        # Every layer's output, in float32, for each row an update passes through each conv
        # stack, kept for the backward pass, and its gradient (x 2); acting passes one
        # observation per env of a step. Learners on the CPU (no GPU per learner) also keep
        # each layer's slices (the CPU form of a convolution, models.patch_conv).
        on_cpu = not config.num_gpus_per_learner
        _, _, floats = memory.conv_encoder(observation_space, mc.conv_filters, patches=on_cpu)
        rows = config._update_rows()
        terms.append(
            (
                f"the conv activations of {rows:,} rows (model_config.conv_filters="
                f"{filters_shown(mc.conv_filters)})",
                (2 * rows + config.envs_per_step) * encoders * floats * 4,
            )
        )
    # Evaluation's env copies (SYNC, in the driver) live beside training's while it runs.
    per_runner = (config.evaluation_config or {}).get("num_envs_per_env_runner")
    setting = (
        f"evaluation_num_env_runners={config.evaluation_num_env_runners} x "
        f"num_envs_per_env_runner={per_runner or config.num_envs_per_env_runner}"
        if config.evaluation_num_env_runners
        else f"evaluation_config num_envs_per_env_runner={per_runner}"
        if per_runner is not None
        else "evaluation_duration"
    )
    terms.append(
        (
            f"{setting}: {config.evaluation_num_envs:,} evaluation env copies",
            config.evaluation_num_envs * (memory.PER_ENV_BYTES + 2 * obs),
        )
    )
    if config.num_env_runners:
        terms.append(
            (
                f"num_env_runners={config.num_env_runners} runner threads",
                config.num_env_runners * memory.RUNNER_THREAD_BYTES,
            )
        )
    if config.gym_env_vectorize_mode == "ASYNC" and not config._uses_envpool():
        terms.append(
            (
                f"gym_env_vectorize_mode='ASYNC': {envs:,} env processes "
                f"(num_envs_per_env_runner={config.num_envs_per_env_runner} x {runners} "
                "runner(s))",
                envs * memory.ASYNC_PROCESS_BYTES,
            )
        )
    return terms


def networks_term(config: Any, observation_space: Any, action_space: Any) -> tuple[str, int]:
    """The networks' parameters with their gradients, optimizer moments and copies."""
    mc = config.model_config
    networks = f"model_config.fcnet_hiddens={list(mc.fcnet_hiddens)}"
    if memory.is_image(observation_space):
        networks = f"model_config.conv_filters={filters_shown(mc.conv_filters)}"
    if mc.head_fcnet_hiddens:
        networks += f", head_fcnet_hiddens={list(mc.head_fcnet_hiddens)}"
    return (
        f"the networks ({networks})",
        config.network_params(observation_space, action_space)
        * 4
        * memory.PARAM_COPIES
        * max(1, len(config.policies or ())),
    )


def default_network_params(config: Any, observation_space: Any, action_space: Any) -> int:
    """``config.network_params(...)``: about how many parameters the default networks have (a
    policy and, unless the encoder is shared, a value network).

    Images as ``rljax.networks.models.ActorCritic`` builds them: the conv stack (one, or two
    unshared), then a policy and a value head of ``head_fcnet_hiddens`` (``memory.image_head``
    when empty) on its output.
    """
    n = getattr(action_space, "n", None)
    out = int(n) if n is not None else 2 * memory.flat_size(action_space)
    mc = config.model_config
    nets = 1 if mc.vf_share_layers else 2
    if memory.is_image(observation_space):
        conv, features, _ = memory.conv_encoder(observation_space, mc.conv_filters)
        head = memory.image_head(observation_space, mc.head_fcnet_hiddens)
        return (
            nets * conv
            + memory.mlp_params(features, head, out)
            + memory.mlp_params(features, head, 1)
        )
    hiddens = [*mc.fcnet_hiddens, *mc.head_fcnet_hiddens]
    return nets * memory.mlp_params(memory.flat_size(observation_space), hiddens, out)


def filters_shown(filters: Any) -> str:
    """``conv_filters`` as a config file writes them (the defaults when None)."""
    if filters is None:
        return "None (the defaults: the Nature CNN's, MinAtar's below 36x36)"
    return str(filters_list(filters))


__all__ = ["default_network_params", "filters_shown", "memory_terms", "networks_term"]
