"""Example multi-agent envs, importable as in RLlib:

``from ray.rllib.examples.envs.classes.multi_agent import MultiAgentCartPole`` becomes
``from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole`` (likewise
``MultiAgentPendulum``, ``MultiAgentMountainCar``, ``MultiAgentStatelessCartPole``,
``MultiAgentCartPoleWithDictObservationSpace``, ``MultiAgentNestedSpaceRepeatAfterMeEnv``,
``GuessTheNumberGame``, ``TwoStepGame``, ``TwoStepGameWithGroupedAgents``, ``RockPaperScissors``
and ``TicTacToe``).
"""

from rljax.env.multi_agent_env import make_multi_agent
from rljax.examples.envs.classes.cartpole_with_dict_observation_space import (
    CartPoleWithDictObservationSpace,
)
from rljax.examples.envs.classes.multi_agent.guess_the_number_game import GuessTheNumberGame
from rljax.examples.envs.classes.multi_agent.rock_paper_scissors import RockPaperScissors
from rljax.examples.envs.classes.multi_agent.tic_tac_toe import TicTacToe
from rljax.examples.envs.classes.multi_agent.two_step_game import (
    TwoStepGame,
    TwoStepGameWithGroupedAgents,
)
from rljax.examples.envs.classes.nested_space_repeat_after_me_env import (
    NestedSpaceRepeatAfterMeEnv,
)
from rljax.examples.envs.classes.stateless_cartpole import StatelessCartPole


def _named(cls: type, name: str) -> type:
    """Importable by ``name``, so checkpoint configs name it and Algorithm.from_checkpoint
    finds it."""
    cls.__module__ = __name__
    cls.__qualname__ = cls.__name__ = name
    return cls


def _stateless_cartpole(config: dict) -> StatelessCartPole:
    return StatelessCartPole(config)


def _cartpole_with_dict_observation_space(config: dict) -> CartPoleWithDictObservationSpace:
    return CartPoleWithDictObservationSpace(config)


def _nested_space_repeat_after_me_env(config: dict) -> NestedSpaceRepeatAfterMeEnv:
    return NestedSpaceRepeatAfterMeEnv(config)


#: ``config["num_agents"]`` independent copies of an env; agent ids ``0 .. num_agents - 1``.
MultiAgentCartPole = _named(make_multi_agent("CartPole-v1"), "MultiAgentCartPole")
MultiAgentPendulum = _named(make_multi_agent("Pendulum-v1"), "MultiAgentPendulum")
MultiAgentMountainCar = _named(
    make_multi_agent("MountainCarContinuous-v0"), "MultiAgentMountainCar"
)
MultiAgentStatelessCartPole = _named(
    make_multi_agent(_stateless_cartpole), "MultiAgentStatelessCartPole"
)
MultiAgentCartPoleWithDictObservationSpace = _named(
    make_multi_agent(_cartpole_with_dict_observation_space),
    "MultiAgentCartPoleWithDictObservationSpace",
)
MultiAgentNestedSpaceRepeatAfterMeEnv = _named(
    make_multi_agent(_nested_space_repeat_after_me_env), "MultiAgentNestedSpaceRepeatAfterMeEnv"
)

__all__ = [
    "GuessTheNumberGame",
    "MultiAgentCartPole",
    "MultiAgentCartPoleWithDictObservationSpace",
    "MultiAgentMountainCar",
    "MultiAgentNestedSpaceRepeatAfterMeEnv",
    "MultiAgentPendulum",
    "MultiAgentStatelessCartPole",
    "RockPaperScissors",
    "TicTacToe",
    "TwoStepGame",
    "TwoStepGameWithGroupedAgents",
]
