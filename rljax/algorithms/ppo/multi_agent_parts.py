"""Multi-agent PPO's policy groups and their acting parts: what ``MultiAgentPPO``
(``rljax.algorithms.ppo.multi_agent``) stacks and acts with; multi-agent IMPALA and APPO share
them."""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.ppo.learner import POLICY_ID, PPOTrainState
from rljax.core.columns import Columns
from rljax.core.rl_module.forward_module import forward_module_outputs
from rljax.execution.parts import (
    InferenceFn,
    PolicyParts,
    distribution_inference,
    space_env_actions,
)
from rljax.networks.distributions import make_distribution
from rljax.utils.errors import ConfigError


def _bucket(n: int, minimum: int) -> int:
    """The smallest power of two >= max(n, minimum)."""
    n = max(n, minimum, 1)
    return 1 << (n - 1).bit_length()


@dataclasses.dataclass
class _Group:
    """Policies with the same settings: one module, optimizer and stacked update."""

    members: list[int]  # the policies' indices in policy_ids
    module: Any
    dist: Any
    optimizer: Any
    hp: Any  # PPOHyperparams (multi-agent IMPALA's: its own record)
    train_mask: np.ndarray  # [P_g] bool
    # The policies' observation space; with padded slot rows, their first values reshaped.
    observation_space: gym.Space | None = None
    padded: bool = False
    # The population settings the group's policies override (their values): a population's
    # trial keeps these, whatever its own values (``multi_agent_fused.valued_group``).
    fixed: dict[str, Any] = dataclasses.field(default_factory=dict)

    def obs(self, slot_obs: Any, lead: int = 1) -> Any:
        """The group's observations from slot rows (``lead`` leading batch axes)."""
        return unpad_observations(slot_obs, self.observation_space, self.padded, lead)


def unpad_observations(slot_obs: Any, space: gym.Space | None, padded: bool, lead: int = 1) -> Any:
    """Observations of ``space`` from slot rows: the rows themselves, or with ``padded`` (the
    agents' spaces differ) each row's first values reshaped to the space's shape."""
    if not padded:
        return slot_obs
    assert space is not None and space.shape is not None
    flat = slot_obs[..., : int(np.prod(space.shape))]
    # A space's 64-bit dtype as JAX holds it (int32 / float32 unless x64 is on): asking
    # for int64 warns on every trace and gives int32 anyway.
    dtype = jax.dtypes.canonicalize_dtype(space.dtype)
    return flat.reshape(*flat.shape[:lead], *space.shape).astype(dtype)


def make_multi_agent_policy_parts(
    groups: list[_Group],
    policy_ids: list[str],
    group_of: np.ndarray,
    local_of: np.ndarray,
    action_space: gym.Space,
    clip_actions: bool,
    forward_modules: list[Any] | None = None,
) -> PolicyParts[list[PPOTrainState]]:
    """The policies of multi-agent PPO for the execution layer.

    The state is the list of each group's stacked ``PPOTrainState``; acting parameters the list
    of their stacked parameters. Observations of agent slots are ``{"obs": [S, ...], "policy":
    [S]}``: each slot acts with its own policy's parameters (gathered, then vmapped over the
    slots, once per group). Inference runs one policy's module (one compilation per group).

    Args:
      groups: The policy groups (their modules and distributions).
      policy_ids: Every policy's id, in order.
      group_of, local_of: Each policy's group, and its index in the group's stack, [P].
      action_space: The agents' action space (actions cast to it, and clipped to a Box's bounds
        with ``clip_actions``).
      forward_modules: The modules that act by a forward pass of their own (no parameters):
        group ``len(groups) + j`` is ``forward_modules[j]``.
    """
    group_of_j, local_of_j = jnp.asarray(group_of), jnp.asarray(local_of)
    forward_modules = list(forward_modules or [])
    # Groups' distribution inputs differ in width where agents' Discrete action spaces do:
    # every row is zero-padded to the widest (each group reads back its own first columns).
    num_outputs = max(g.dist.num_outputs for g in groups)

    def pad_inputs(inputs: jax.Array) -> jax.Array:
        return jnp.pad(inputs, ((0, 0), (0, num_outputs - inputs.shape[-1])))

    def forward_outputs(
        j: int, obs: Any, key: jax.Array | None
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """A forward-only module's (dist inputs, value 0, action) for every slot."""
        module = forward_modules[j]
        explore = key is not None
        # Greedy passes (no key) of a module that draws still get a fixed key.
        key = jax.random.fold_in(jax.random.PRNGKey(0) if key is None else key, 1 + j)
        module_obs = unpad_observations(obs["obs"], module.observation_space, groups[0].padded)
        out = forward_module_outputs(module, module_obs, key, explore=explore)
        action = out[Columns.ACTIONS]
        slots = jax.tree.leaves(obs["obs"])[0].shape[0]
        width = make_distribution(module.action_space).num_outputs
        inputs = out.get(Columns.ACTION_DIST_INPUTS)
        if inputs is None:
            inputs = jnp.zeros((slots, width), jnp.float32)
        if action.shape[:1] != (slots,) or inputs.shape != (slots, width):
            raise ConfigError(
                f"{type(module).__name__}'s forward pass over {slots} observations returned "
                f"actions of shape {action.shape} and action_dist_inputs of shape "
                f"{inputs.shape}; expected [{slots}, ...] and [{slots}, {width}]"
            )
        return pad_inputs(inputs.astype(jnp.float32)), jnp.zeros((slots,), jnp.float32), action

    def group_outputs(
        g: int, params: Any, obs: Any, key: jax.Array | None
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Group ``g``'s (dist inputs, value, action) for every slot; ``key=None``: greedy."""
        group = groups[g]
        local = local_of_j[obs["policy"]]
        per_slot = jax.tree.map(lambda p: p[local], params[g][POLICY_ID])
        dist_inputs, value = jax.vmap(
            lambda p, o: group.module.apply(p, jax.tree.map(lambda x: x[None], o))
        )(per_slot, group.obs(obs["obs"]))
        dist_inputs, value = dist_inputs[:, 0], value[:, 0]
        if key is None:
            action = group.dist.mode(dist_inputs)
        else:
            action = group.dist.sample(key, dist_inputs)
        return pad_inputs(dist_inputs), value, action

    def slot_outputs(
        params: Any, obs: Any, key: jax.Array | None
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """(dist inputs, value, action) of every slot from its policy's group."""
        outs = [group_outputs(g, params, obs, key) for g in range(len(groups))]
        outs += [forward_outputs(j, obs, key) for j in range(len(forward_modules))]
        if len(outs) == 1:
            return outs[0]
        ref = outs[0][2]
        for k, out in enumerate(outs[len(groups) :]):
            if out[2].shape != ref.shape:
                raise ConfigError(
                    f"{type(forward_modules[k]).__name__}'s forward pass returned actions of "
                    f"shape {out[2].shape}; the agents' action space needs {ref.shape}"
                )
        outs = [(i, v, a.astype(ref.dtype)) for i, v, a in outs]
        # Each slot takes the row of its policy's group (every group runs on every slot).
        group = group_of_j[obs["policy"]]
        rows = jnp.arange(group.shape[0])
        dist_inputs, value, action = (
            jnp.stack(parts)[group, rows] for parts in zip(*outs, strict=True)
        )
        return dist_inputs, value, action

    def act(params: Any, obs: Any, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
        """Each slot acts with its own policy's parameters."""
        dist_inputs, value, action = slot_outputs(params, obs, key)
        group = group_of_j[obs["policy"]]
        logps = [
            grp.dist.log_prob(dist_inputs[:, : grp.dist.num_outputs], action) for grp in groups
        ]
        logps += [jnp.zeros_like(logps[0]) for _ in forward_modules]  # never trained
        logp = logps[0] if len(logps) == 1 else jnp.stack(logps)[group, jnp.arange(len(group))]
        extras = {"action_logp": logp, "vf_preds": value, "action_dist_inputs": dist_inputs}
        return action, extras

    def acting_params(state: list[PPOTrainState]) -> list[Any]:
        return [s.params for s in state]

    def index(policy_id: str | None) -> int:
        return 0 if policy_id is None else policy_ids.index(policy_id)

    def inference_params(state: list[PPOTrainState], policy_id: str | None) -> Any:
        i = index(policy_id)
        if group_of[i] >= len(groups):
            return {}  # a forward-only module has no parameters
        params = state[group_of[i]].params[POLICY_ID]
        return {POLICY_ID: jax.tree.map(lambda p: p[local_of[i]], params)}

    def module_outputs(group: _Group) -> Any:
        return lambda params, obs: group.module.apply(params[POLICY_ID], group.obs(obs))[0]

    per_group = [distribution_inference(module_outputs(g), g.dist) for g in groups]

    def forward_inference(j: int, explore: bool) -> InferenceFn:
        def infer(params: Any, obs: Any, key: jax.Array) -> tuple[jax.Array, jax.Array]:
            inputs, _, action = forward_outputs(j, {"obs": obs}, key if explore else None)
            return inputs, action

        return infer

    per_forward = [
        {explore: forward_inference(j, explore) for explore in (False, True)}
        for j in range(len(forward_modules))
    ]

    def inference(policy_id: str | None, explore: bool) -> InferenceFn:
        g = int(group_of[index(policy_id)])
        if g >= len(groups):
            return per_forward[g - len(groups)][explore]
        return per_group[g](None, explore)

    to_env, to_env_host = space_env_actions(action_space, clip_actions)
    return PolicyParts(
        act=act,
        acting_params=acting_params,
        bootstrap_keys=("vf_preds",),
        inference=inference,
        inference_params=inference_params,
        to_env_action=to_env,
        to_env_action_host=to_env_host,
        greedy_slots=lambda params, obs: slot_outputs(params, obs, None)[2],
    )


__all__ = ["make_multi_agent_policy_parts", "unpad_observations"]
