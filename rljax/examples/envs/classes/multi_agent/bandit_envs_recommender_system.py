"""RLlib's ``ParametricRecSys``
(``ray.rllib.examples.envs.classes.multi_agent.bandit_envs_recommender_system``): a
recommender simulation in RecSim's observation and action form (a single-agent env, at
RLlib's path; RecSim itself is not needed)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x))
    return e / e.sum()


class ParametricRecSys(gym.Env):
    """Each step the agent is shown ``num_docs_to_select_from`` documents and recommends a
    slate of ``slate_size`` of them (``MultiDiscrete``) to the current user.

    Users and documents are embeddings in [-1, 1]^``embedding_size`` (drawn from fixed
    databases of ``num_users_in_db`` / ``num_docs_in_db`` when given, else fresh each time).
    The user's scores of the shown documents are the softmax of the dot products; the user
    clicks slate entry ``i`` with probability ``softmax([score of each recommended doc, 0])[i]``
    (the last entry: no click). A click pays ``(1 - (best score - clicked score)) * 100`` and
    costs the user 1 of ``user_time_budget``; the episode ends (terminated and truncated, as
    RLlib's) when the budget is spent.

    The observation is ``{"user": [E], "doc": {"0": [E], ...}, "response": ({"click": 0/1,
    "engagement": reward}, ...) per slate entry}`` (at reset the response is a sample of its
    space, as RLlib's).
    """

    def __init__(
        self,
        embedding_size: int = 20,
        num_docs_to_select_from: int = 10,
        slate_size: int = 1,
        num_docs_in_db: int | None = None,
        num_users_in_db: int | None = None,
        user_time_budget: float = 60.0,
    ):
        self.embedding_size = int(embedding_size)
        self.num_docs_to_select_from = int(num_docs_to_select_from)
        self.slate_size = int(slate_size)
        self.num_docs_in_db = num_docs_in_db
        self.num_users_in_db = num_users_in_db
        if num_docs_in_db is not None and num_docs_in_db < self.num_docs_to_select_from:
            raise ValueError(
                f"num_docs_in_db={num_docs_in_db} is fewer than num_docs_to_select_from="
                f"{self.num_docs_to_select_from}"
            )
        self.docs_db: list[np.ndarray] | None = None
        self.users_db: list[np.ndarray] | None = None
        self.user_time_budget = float(user_time_budget)
        self.current_user_budget = self.user_time_budget
        e = self.embedding_size
        self.observation_space = gym.spaces.Dict(
            {
                "doc": gym.spaces.Dict(
                    {
                        str(i): gym.spaces.Box(-1.0, 1.0, shape=(e,), dtype=np.float32)
                        for i in range(self.num_docs_to_select_from)
                    }
                ),
                "user": gym.spaces.Box(-1.0, 1.0, shape=(e,), dtype=np.float32),
                "response": gym.spaces.Tuple(
                    [
                        gym.spaces.Dict(
                            {
                                "click": gym.spaces.Discrete(2),
                                "engagement": gym.spaces.Box(0.0, 100.0, (), np.float32),
                            }
                        )
                        for _ in range(self.slate_size)
                    ]
                ),
            }
        )
        self.action_space = gym.spaces.MultiDiscrete(
            [self.num_docs_to_select_from] * self.slate_size
        )
        self.current_user = np.zeros(e, np.float32)
        self.currently_suggested_docs: list[np.ndarray] = []

    def _embedding(self) -> np.ndarray:
        return self.np_random.uniform(-1, 1, size=(self.embedding_size,)).astype(np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        self.current_user_budget = self.user_time_budget
        if self.num_users_in_db is not None:
            if self.users_db is None:
                self.users_db = [self._embedding() for _ in range(self.num_users_in_db)]
            self.current_user = self.users_db[int(self.np_random.integers(self.num_users_in_db))]
        else:
            self.current_user = self._embedding()
        return self._obs(), {}

    def click_probabilities(self, action: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(scores of the shown docs, click probabilities of the slate entries and of no
        click)`` for recommending ``action``."""
        scores = _softmax(np.array([self.current_user @ d for d in self.currently_suggested_docs]))
        overlaps = np.array([scores[int(a)] for a in np.asarray(action).reshape(-1)] + [0.0])
        return scores, _softmax(overlaps)

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        scores, probabilities = self.click_probabilities(action)
        slate = [int(a) for a in np.asarray(action).reshape(-1)]
        clicked = int(self.np_random.choice(self.slate_size + 1, p=probabilities))
        reward = 0.0
        if clicked < self.slate_size:
            regret = float(scores.max() - scores[slate[clicked]])
            reward = (1.0 - regret) * 100.0
            self.current_user_budget -= 1.0
        done = self.current_user_budget <= 0.0
        response = tuple(
            {
                "click": int(i == clicked),
                "engagement": np.float32(reward if i == clicked else 0.0),
            }
            for i in range(self.slate_size)
        )
        return self._obs(response), reward, done, done, {}

    def _obs(self, response: Any = None) -> dict[str, Any]:
        n = self.num_docs_to_select_from
        if self.num_docs_in_db is not None:
            if self.docs_db is None:
                self.docs_db = [self._embedding() for _ in range(self.num_docs_in_db)]
            picks = self.np_random.choice(self.num_docs_in_db, size=(n,), replace=False)
            self.currently_suggested_docs = [self.docs_db[int(i)] for i in picks]
        else:
            self.currently_suggested_docs = [self._embedding() for _ in range(n)]
        if response is None:
            space = self.observation_space
            assert isinstance(space, gym.spaces.Dict)
            response = space["response"].sample()
        return {
            "user": self.current_user,
            "doc": {str(i): d for i, d in enumerate(self.currently_suggested_docs)},
            "response": response,
        }


__all__ = ["ParametricRecSys"]
