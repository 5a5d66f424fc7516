"""Example multi-agent envs, importable as in RLlib:

``from ray.rllib.examples.envs.classes.multi_agent import MultiAgentCartPole`` becomes
``from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole`` (likewise
``RockPaperScissors`` and ``TicTacToe``).
"""

from rljax.env.multi_agent_env import make_multi_agent
from rljax.examples.envs.classes.multi_agent.rock_paper_scissors import RockPaperScissors
from rljax.examples.envs.classes.multi_agent.tic_tac_toe import TicTacToe

#: ``config["num_agents"]`` independent CartPole-v1 copies; agent ids ``0 .. num_agents - 1``.
MultiAgentCartPole = make_multi_agent("CartPole-v1")
# Importable by this name, so checkpoint configs name it and Algorithm.from_checkpoint finds it.
MultiAgentCartPole.__module__ = __name__
MultiAgentCartPole.__qualname__ = MultiAgentCartPole.__name__ = "MultiAgentCartPole"

__all__ = ["MultiAgentCartPole", "RockPaperScissors", "TicTacToe"]
