"""RLlib's example ``SelfPlayCallback``
(``ray.rllib.examples.multi_agent.utils.self_play_callback``): self-play with a growing league.

``main`` first plays a ``random`` module. Each episode logs whether ``main`` won
(``win_rate``: the mean of its last 100 games). Whenever the win rate passes
``win_rate_threshold``, a frozen copy of ``main`` joins the league (``main_v1``,
``main_v2``, ... through ``Algorithm.add_module``, its weights ``main``'s), and from then on
``main`` plays a copy drawn uniformly for each episode. ``result["league_size"]`` counts the
modules (``main``, ``random`` and the copies).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from rljax.callbacks.callbacks import RLlibCallback
from rljax.core.rl_module.spec import RLModuleSpec


class SelfPlayCallback(RLlibCallback):
    """Adds a frozen copy of ``main`` whenever its win rate passes ``win_rate_threshold``."""

    def __init__(self, win_rate_threshold: float):
        super().__init__()
        self.current_opponent = 0
        self.win_rate_threshold = win_rate_threshold
        self._matching_stats: defaultdict[tuple[str, str], int] = defaultdict(int)

    def on_episode_end(  # type: ignore[override]  # RLlib's example names what it reads
        self, *, episode: Any, metrics_logger: Any, **kwargs: Any
    ) -> None:
        main_agent = 0 if episode.module_for(0) == "main" else 1
        rewards = episode.get_rewards()
        if main_agent in rewards and len(rewards[main_agent]):
            won = float(rewards[main_agent][-1] == 1.0)
            metrics_logger.log_value("win_rate", won, reduce="mean", window=100)

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        win_rate = result["env_runners"].get("win_rate", float("nan"))
        print(f"Iter={algorithm.iteration} win-rate={win_rate} -> ", end="")
        if win_rate > self.win_rate_threshold:
            self.current_opponent += 1
            new_module_id = f"main_v{self.current_opponent}"
            print(f"adding new opponent to the mix ({new_module_id}).")
            newest = self.current_opponent

            def agent_to_module_mapping_fn(agent_id: Any, episode: Any, **kw: Any) -> str:
                opponent = f"main_v{np.random.choice(list(range(1, newest + 1)))}"
                if hash(episode.id_) % 2 == agent_id:
                    self._matching_stats[("main", opponent)] += 1
                    return "main"
                return opponent

            main_module = algorithm.get_module("main")
            algorithm.add_module(
                module_id=new_module_id,
                module_spec=RLModuleSpec.from_module(main_module),
                new_agent_to_module_mapping_fn=agent_to_module_mapping_fn,
            )
            algorithm.set_state(
                {
                    "learner_group": {
                        "learner": {"rl_module": {new_module_id: main_module.get_state()}}
                    }
                }
            )
        else:
            print("not good enough; will keep learning ...")
        result["league_size"] = self.current_opponent + 2


__all__ = ["SelfPlayCallback"]
