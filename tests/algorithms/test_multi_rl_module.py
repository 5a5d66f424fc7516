"""MultiRLModuleSpec: per-policy modules, modules that only act (heuristics, RandomRLModule),
frozen policies, and a learned policy against a heuristic opponent."""

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.core.columns import Columns
from rljax.core.rl_module.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from rljax.core.rl_module.rl_module import RLModule, RLModuleSpec
from rljax.env.multi_agent_env import MultiAgentEnv
from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole, RockPaperScissors
from rljax.examples.rl_modules.classes import (
    AlwaysSameHeuristicRLM,
    BeatLastHeuristicRLM,
    RandomRLModule,
)
from rljax.utils.errors import ConfigError


class PushTowardsPole(RLModule):
    """CartPole heuristic: push right when the cart is right of center (action = x > 0)."""

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTIONS: (batch[Columns.OBS][:, 0] > 0).astype(jnp.int32)}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward_inference(batch, **kwargs)


def _cartpole_config(specs: dict[str, RLModuleSpec], policies: list[str], **multi: Any):
    return (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": len(policies)})
        .env_runners(num_envs_per_env_runner=2)
        .multi_agent(
            policies=policies,
            policy_mapping_fn=lambda aid, *a, **k: policies[aid],
            **multi,
        )
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        .rl_module(
            model_config={"fcnet_hiddens": [16]},
            rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs),
        )
        .debugging(seed=0)
    )


@pytest.mark.slow
def test_heuristic_acts_exactly_as_its_forward_and_frozen_policies_keep_their_params():
    specs = {
        "learned": RLModuleSpec(),
        "frozen_wide": RLModuleSpec(model_config={"fcnet_hiddens": [24]}),  # a group of its own
        "heuristic": RLModuleSpec(module_class=PushTowardsPole),
    }
    policies = ["learned", "frozen_wide", "heuristic"]
    algo = _cartpole_config(specs, policies, policies_to_train=["learned"]).build_algo()
    try:
        assert len(algo.groups) == 2 and algo.forward_only == ["heuristic"]
        kernels = {
            pid: w["default_policy"]["params"]["pi"]["kernel"].shape
            for pid, w in algo.get_weights(["learned", "frozen_wide"]).items()
        }
        assert kernels == {"learned": (16, 2), "frozen_wide": (24, 2)}
        before = algo.get_weights()
        result = algo.train()
        after = algo.get_weights()
        # The heuristic's slots (agent 2 of each env copy) act exactly as its forward says.
        traj = jax.device_get(algo._runners.sample().traj)
        policy, obs = traj.obs["policy"], traj.obs["obs"]
        rows = traj.valid & (policy == policies.index("heuristic"))
        assert rows.sum() > 50
        np.testing.assert_array_equal(traj.action[rows], (obs[rows][:, 0] > 0).astype(np.int32))
        # ... and the learned policy's are not all that (it samples).
        learned = traj.valid & (policy == 0)
        assert (traj.action[learned] != (obs[learned][:, 0] > 0)).any()
    finally:
        algo.stop()
    assert before["heuristic"] == {} and after["heuristic"] == {}
    for b, a in zip(
        jax.tree.leaves(before["frozen_wide"]), jax.tree.leaves(after["frozen_wide"]), strict=True
    ):
        np.testing.assert_array_equal(b, a)  # bit for bit
    assert any(
        not np.array_equal(b, a)
        for b, a in zip(
            jax.tree.leaves(before["learned"]), jax.tree.leaves(after["learned"]), strict=True
        )
    )
    # Only the trained module has learner metrics, as RLlib's.
    assert set(result["learners"]) == {"learned", "__all_modules__"}
    assert result["learners"]["learned"]["num_module_steps_trained"] > 0
    assert set(result["env_runners"]["module_episode_returns_mean"]) == set(policies)


def test_example_heuristics_by_hand():
    space = gym.spaces.Discrete(3)
    obs_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    beat = BeatLastHeuristicRLM(observation_space=obs_space, action_space=space)
    one_hot = np.eye(3, dtype=np.float32)  # the opponent played rock, paper, scissors
    out = beat.forward_inference({"obs": one_hot})
    np.testing.assert_array_equal(out["actions"], [1, 2, 0])  # paper, scissors, rock
    # RLlib's Discrete(4) observations (3: no move yet) read the same.
    ints = beat.forward_inference({"obs": np.array([0, 1, 2])})["actions"]
    np.testing.assert_array_equal(ints, [1, 2, 0])
    first = beat.forward_exploration({"obs": np.zeros((200, 3), np.float32)})["actions"]
    assert set(np.unique(first)) == {0, 1, 2}  # random before the opponent has moved
    same = AlwaysSameHeuristicRLM(action_space=space, model_config={"action": 2})
    np.testing.assert_array_equal(same.forward_inference({"obs": one_hot})["actions"], [2, 2, 2])
    with pytest.raises(ValueError, match=r"model_config\['action'\]=5; allowed: 0, 1, 2"):
        AlwaysSameHeuristicRLM(action_space=space, model_config={"action": 5})
    rand = RandomRLModule(action_space=gym.spaces.Box(-2.0, -1.0, (2,), np.float32))
    acts = rand.forward_exploration({"obs": np.zeros((100, 4), np.float32)})["actions"]
    assert acts.shape == (100, 2) and (acts >= -2.0).all() and (acts <= -1.0).all()
    assert acts.std() > 0.2
    # RLlib's action-masking observations: only allowed actions, each about equally often; a
    # row that allows none draws from all.
    rand = RandomRLModule(action_space=gym.spaces.Discrete(4, start=1))
    mask = np.tile(np.array([[0, 1, 0, 1], [0, 0, 0, 0]], np.float32), (500, 1))
    obs = {"action_mask": mask, "observations": np.zeros((1000, 3), np.float32)}
    acts = np.asarray(rand.forward_exploration({"obs": obs})["actions"])
    assert set(acts[0::2].tolist()) == {2, 4}  # actions 1 + index 1 and 3
    assert abs(np.mean(acts[0::2] == 2) - 0.5) < 0.1
    assert set(acts[1::2].tolist()) == {1, 2, 3, 4}
    bools = {
        "action_mask": np.array([[False, False, True, False]]),
        "observations": obs["observations"][:1],
    }
    assert rand.forward_exploration({"obs": bools})["actions"].tolist() == [3]
    wide = {"action_mask": np.ones((2, 5), np.float32), "observations": obs["observations"][:2]}
    with pytest.raises(ConfigError, match="action_mask has 5 entries per row"):
        rand.forward_exploration({"obs": wide})
    multi = MultiRLModule({"beat": beat, "same": same})
    outs = multi.forward_inference({"same": {"obs": one_hot[:1]}})
    assert list(outs) == ["same"] and outs["same"]["actions"].tolist() == [2]
    with pytest.raises(KeyError, match="no module 'x'"):
        multi["x"]


def test_bad_multi_rl_module_specs_fail_before_anything_compiles():
    bad: Any = {"a": RLModuleSpec(), "b": 1}
    with pytest.raises(
        ConfigError, match=r"rl_module_specs\['b'\] must be an RLModuleSpec; got int"
    ):
        MultiRLModuleSpec(rl_module_specs=bad)
    with pytest.raises(ConfigError, match=r"must be a dict \{policy_id: RLModuleSpec\}; got list"):
        MultiRLModuleSpec(rl_module_specs=[RLModuleSpec()])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="module_class must be None, a flax.linen.Module"):
        RLModuleSpec(module_class=dict)
    heuristic = {"h": RLModuleSpec(module_class=PushTowardsPole), "p": RLModuleSpec()}
    with pytest.raises(ConfigError, match=r"names \['h'\], whose modules only act"):
        _cartpole_config(heuristic, ["h", "p"], policies_to_train=["h", "p"]).validate()
    with pytest.raises(ConfigError, match=r"rl_module_specs names \['q'\], which are not in"):
        _cartpole_config({"q": RLModuleSpec()}, ["h", "p"]).validate()
    with pytest.raises(ConfigError, match="at least one policy must learn"):
        _cartpole_config({"h": heuristic["h"]}, ["h"]).validate()
    single = PPOConfig().environment("CartPole-v1")
    with pytest.raises(
        ConfigError,
        match=r"MultiRLModuleSpec \(policies \['h', 'p'\]\) but the config is single-agent",
    ):
        single.rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=heuristic)).validate()
    with pytest.raises(ConfigError, match="an RLModule with a forward pass only acts"):
        single.rl_module(rl_module_spec=heuristic["h"]).validate()
    wrong = {
        "h": RLModuleSpec(module_class=PushTowardsPole, observation_space=gym.spaces.Discrete(4)),
        "p": RLModuleSpec(),
    }
    with pytest.raises(ConfigError, match=r"rl_module_specs\['h'\] gives observation_space="):
        _cartpole_config(wrong, ["h", "p"]).build_algo()


def test_multi_rl_module_spec_round_trips_through_the_config_dict():
    specs = {
        "learned": RLModuleSpec(model_config={"fcnet_hiddens": [8]}),
        "random": RLModuleSpec(module_class=RandomRLModule),
    }
    config = _cartpole_config(specs, ["learned", "random"])
    data = config.to_dict()
    assert data["rl_module_spec"]["rl_module_specs"]["random"]["module_class"] == (
        "rljax.examples.rl_modules.classes.random_rlm:RandomRLModule"
    )
    back = PPOConfig.from_dict(
        data,
        allow_imports=["rljax.examples"],
        env=MultiAgentCartPole,
        policy_mapping_fn=config.policy_mapping_fn,
    )
    spec = back.rl_module_spec
    assert isinstance(spec, MultiRLModuleSpec)
    random_back = spec.spec_of("random")
    assert random_back is not None and random_back.module_class is RandomRLModule
    assert back.module_config("learned").model_config.fcnet_hiddens == (8,)
    # One spec for every policy (RLlib's other form) round-trips too.
    every = config.rl_module(
        rl_module_spec=MultiRLModuleSpec(
            rl_module_specs=RLModuleSpec(model_config={"fcnet_hiddens": [4]})
        )
    )
    again = PPOConfig.from_dict(
        every.to_dict(), env=MultiAgentCartPole, policy_mapping_fn=config.policy_mapping_fn
    )
    assert again.module_config("random").model_config.fcnet_hiddens == (4,)
    random_spec = back.module_config("random").rl_module_spec
    assert isinstance(random_spec, RLModuleSpec) and random_spec.module_class is RandomRLModule


@pytest.mark.slow
def test_learned_policy_beats_a_heuristic_opponent():
    config = (
        PPOConfig()
        .environment(RockPaperScissors)
        .env_runners(num_envs_per_env_runner=8)
        .multi_agent(
            policies=["learned", "always_rock"],
            policy_mapping_fn=lambda aid, *a, **k: "learned" if aid == "player1" else "always_rock",
            policies_to_train=["learned"],
        )
        .training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=4, lr=3e-3)
        .rl_module(
            model_config={"fcnet_hiddens": [32]},
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "learned": RLModuleSpec(),
                    "always_rock": RLModuleSpec(
                        module_class=AlwaysSameHeuristicRLM, model_config={"action": 0}
                    ),
                }
            ),
        )
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        returns = [
            algo.train()["env_runners"]["module_episode_returns_mean"]["learned"] for _ in range(8)
        ]
    finally:
        algo.stop()
    # Random play scores 0 on average over 10 moves; paper every move scores 10.
    assert abs(returns[0]) < 3.0
    assert returns[-1] > 7.0, returns


class TwoShapesCartPole(MultiAgentEnv):
    """Two CartPoles: agent "a" observes the 4 state values, agent "b" 6 (the state, then its
    first two values again); both push left or right."""

    def __init__(self, config: dict | None = None):
        super().__init__()
        self.possible_agents = ["a", "b"]
        self.agents = list(self.possible_agents)
        self.envs = {a: gym.make("CartPole-v1") for a in self.possible_agents}
        high4, high6 = np.full(4, np.inf, np.float32), np.full(6, np.inf, np.float32)
        self.observation_spaces = {
            "a": gym.spaces.Box(-high4, high4),
            "b": gym.spaces.Box(-high6, high6),
        }
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.possible_agents}
        self.done: set[str] = set()

    def _obs(self, agent: Any, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, np.float32)
        return obs if agent == "a" else np.concatenate([obs, obs[:2]])

    def reset(self, *, seed=None, options=None):
        self.done = set()
        obs = {}
        for k, (agent, env) in enumerate(self.envs.items()):
            o, _ = env.reset(seed=None if seed is None else seed + k)
            obs[agent] = self._obs(agent, o)
        return obs, {}

    def step(self, actions):
        obs, rew, term, trunc = {}, {}, {}, {}
        for agent, action in actions.items():
            o, r, te, tr, _ = self.envs[agent].step(int(action))
            obs[agent], rew[agent], term[agent], trunc[agent] = self._obs(agent, o), r, te, tr
            if te or tr:
                self.done.add(agent)
        term["__all__"] = len(self.done) == len(self.possible_agents)
        trunc["__all__"] = False
        return obs, rew, term, trunc, {}


def _two_shapes_config(policies: list[str], mapping: Any, specs: dict | None = None):
    config = (
        PPOConfig()
        .environment(TwoShapesCartPole)
        .env_runners(num_envs_per_env_runner=2)
        .multi_agent(policies=policies, policy_mapping_fn=mapping)
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )
    if specs is not None:
        config = config.rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
    return config


@pytest.mark.slow
def test_agents_with_different_observation_spaces_get_a_group_each():
    algo = _two_shapes_config(["pa", "pb"], lambda aid, *a, **k: "p" + aid).build_algo()
    try:
        assert len(algo.groups) == 2
        assert {pid: sp.shape for pid, sp in algo.policy_observation_spaces.items()} == {
            "pa": (4,),
            "pb": (6,),
        }
        before = algo.get_weights()
        result = algo.train()
        after = algo.get_weights()
        traj = jax.device_get(algo._runners.sample().traj)
    finally:
        algo.stop()
    # Every input layer reads its own policy's observation size.
    in_sizes = {
        pid: sorted({leaf.shape[0] for leaf in jax.tree.leaves(w) if leaf.ndim == 2})
        for pid, w in before.items()
    }
    assert 4 in in_sizes["pa"] and 6 not in in_sizes["pa"]
    assert 6 in in_sizes["pb"] and 4 not in in_sizes["pb"]
    for pid in ("pa", "pb"):
        assert any(
            not np.array_equal(b, a)
            for b, a in zip(jax.tree.leaves(before[pid]), jax.tree.leaves(after[pid]), strict=True)
        )
        assert result["learners"][pid]["num_module_steps_trained"] > 0
    # Slot rows: agent b's 6 values; agent a's 4, then zeros.
    obs, policy = traj.obs["obs"], traj.obs["policy"]
    assert obs.shape[-1] == 6
    a_rows, b_rows = traj.valid & (policy == 0), traj.valid & (policy == 1)
    np.testing.assert_array_equal(obs[a_rows][:, 4:], 0.0)
    np.testing.assert_array_equal(obs[b_rows][:, 4:], obs[b_rows][:, :2])


def test_a_policy_mapped_to_agents_of_different_spaces_is_refused():
    with pytest.raises(ConfigError, match="policy 'p' is mapped to agents with different ones"):
        _two_shapes_config(["p"], lambda aid, *a, **k: "p").build_algo()
    wrong = {"pa": RLModuleSpec(observation_space=gym.spaces.Box(-1.0, 1.0, (5,), np.float32))}
    with pytest.raises(ConfigError, match=r"policy 'pa' has observation_space Box.*which no agent"):
        _two_shapes_config(["pa", "pb"], lambda aid, *a, **k: "p" + aid, wrong).build_algo()


@pytest.mark.slow
def test_a_checkpoint_of_two_space_groups_restores_with_its_env(tmp_path):
    config = _two_shapes_config(["pa", "pb"], lambda aid, *a, **k: "p" + aid)
    algo = config.build_algo()
    try:
        algo.train()
        weights = algo.get_weights()
        path = algo.save_to_path(str(tmp_path / "ckpt"))
    finally:
        algo.stop()
    restored = config.build_algo()
    try:
        restored.restore_from_path(path)
        for pid in ("pa", "pb"):
            for a, b in zip(
                jax.tree.leaves(weights[pid]),
                jax.tree.leaves(restored.get_weights()[pid]),
                strict=True,
            ):
                np.testing.assert_array_equal(a, b)
        out = restored.get_module("pb").forward_inference({"obs": np.ones((3, 6), np.float32)})
        assert out["actions"].shape == (3,)
    finally:
        restored.stop()


class MultiSpaces(MultiAgentEnv):
    """RLlib's ``BasicMultiAgentMultiSpaces``: agent0 observes Box(10,) and acts in
    Discrete(2), agent1 Box(20,) and Discrete(3); agent1 is rewarded for action 2."""

    def __init__(self, config: dict | None = None):
        super().__init__()
        self.possible_agents = ["agent0", "agent1"]
        self.agents = list(self.possible_agents)
        self.observation_spaces = {
            "agent0": gym.spaces.Box(-1.0, 1.0, (10,), np.float32),
            "agent1": gym.spaces.Box(-1.0, 1.0, (20,), np.float32),
        }
        self.action_spaces = {"agent0": gym.spaces.Discrete(2), "agent1": gym.spaces.Discrete(3)}
        self.t = 0

    def _obs(self) -> dict[Any, np.ndarray]:
        return {"agent0": np.full(10, 0.5, np.float32), "agent1": np.full(20, 0.5, np.float32)}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {}

    def step(self, actions):
        self.t += 1
        assert set(actions) == set(self.possible_agents)
        assert int(actions["agent0"]) in (0, 1) and int(actions["agent1"]) in (0, 1, 2)
        rewards = {"agent0": float(actions["agent0"] == 1), "agent1": float(actions["agent1"] == 2)}
        done = self.t >= 10
        return self._obs(), rewards, {"__all__": done}, {"__all__": False}, {}


@pytest.mark.slow
def test_agents_with_different_discrete_action_spaces_learn_in_their_own_groups():
    config = (
        PPOConfig()
        .environment(MultiSpaces)
        .env_runners(num_envs_per_env_runner=4)
        .multi_agent(policies=["p0", "p1"], policy_mapping_fn=lambda aid, *a, **k: "p" + aid[-1])
        .training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=4, lr=3e-3)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        assert {p: sp.n for p, sp in algo.policy_action_spaces.items()} == {"p0": 2, "p1": 3}
        assert [g.dist.num_outputs for g in algo.groups] == [2, 3]
        returns = [algo.train()["env_runners"]["module_episode_returns_mean"] for _ in range(5)]
        traj = jax.device_get(algo._runners.sample().traj)
    finally:
        algo.stop()
    # Random play: 10 * 1/2 and 10 * 1/3; the best is 10 each.
    assert returns[0]["p0"] < 8.0 and returns[0]["p1"] < 6.0
    assert returns[-1]["p0"] > 8.0 and returns[-1]["p1"] > 7.0, returns
    inputs, policy = traj.extras["action_dist_inputs"], traj.obs["policy"]
    assert inputs.shape[-1] == 3
    np.testing.assert_array_equal(inputs[traj.valid & (policy == 0)][:, 2], 0.0)  # padding


@pytest.mark.slow  # integration: three builds, two of them trained
def test_a_module_starts_from_a_pretrained_checkpoints_weights(tmp_path):
    """RLModuleSpec(load_state_path=...): RLlib's pre-train-then-fine-tune. A single-agent
    PPO's policy, saved, becomes policy p0 of a two-policy config (RLlib's module path inside
    the checkpoint, as RLlib's example writes it); p1 keeps its own initial weights."""
    from rljax.utils.errors import CheckpointError

    single = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=5)
    )
    with single.build_algo() as algo:
        algo.train()
        saved = jax.device_get(algo.get_weights()["default_policy"])
        checkpoint = algo.save(str(tmp_path / "pretrained")).checkpoint.path
    module_path = tmp_path / "pretrained" / "learner_group" / "learner" / "rl_module"
    assert (module_path / "default_policy").is_dir()  # RLlib's scripts check it exists
    specs = {"p0": RLModuleSpec(load_state_path=module_path / "default_policy")}
    with _cartpole_config(specs, ["p0", "p1"]).build_algo() as algo:
        weights = jax.device_get(algo.get_weights())
        jax.tree.map(np.testing.assert_array_equal, weights["p0"], saved)
        # p1 (the same shapes) keeps its own initial weights.
        assert not any(jax.tree.leaves(jax.tree.map(np.array_equal, weights["p1"], saved)))
        algo.train()  # and trains on from them
        trained = jax.device_get(algo.get_weights()["p0"])
        assert not all(jax.tree.leaves(jax.tree.map(np.array_equal, trained, saved)))
    # The checkpoint directory itself names its one policy too.
    with (
        single.copy()
        .rl_module(rl_module_spec=RLModuleSpec(load_state_path=checkpoint))
        .build_algo() as algo
    ):
        jax.tree.map(np.testing.assert_array_equal, algo.get_weights()["default_policy"], saved)
    # So does the rl_module directory (RLlib's train_w_bc_finetune_w_ppo.py loads it), which
    # RLModule.from_checkpoint reads as every policy's modules, as RLlib's does.
    modules = RLModule.from_checkpoint(module_path)
    assert isinstance(modules, MultiRLModule) and list(modules) == ["default_policy"]
    out = modules["default_policy"].forward_inference({"obs": np.ones((2, 4), np.float32)})
    assert out["actions"].shape == (2,)
    with (
        single.copy()
        .rl_module(rl_module_spec=RLModuleSpec(load_state_path=module_path))
        .build_algo() as algo
    ):
        jax.tree.map(np.testing.assert_array_equal, algo.get_weights()["default_policy"], saved)
    with pytest.raises(CheckpointError, match="no such file or directory"):
        _cartpole_config(
            {"p0": RLModuleSpec(load_state_path=tmp_path / "nothing")}, ["p0", "p1"]
        ).build_algo()
    with pytest.raises(ConfigError, match="load_state_path must be None or a path"):
        RLModuleSpec(load_state_path=3)
