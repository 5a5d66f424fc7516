"""RLlib connectors rljax does not build, under RLlib's names: constructing one says what to
use instead (a script that imports them fails at that line, plainly, not at an import)."""

from __future__ import annotations

from typing import Any, NoReturn

from rljax.utils.errors import ConfigError


def _refuse(name: str, instead: str) -> NoReturn:
    raise ConfigError(f"{name} is RLlib's; rljax has no such connector yet: {instead}")


class FrameStackingEnvToModule:
    """Not built: stack frames in the env instead."""

    def __init__(self, *args: Any, **kwargs: Any):
        _refuse(
            "FrameStackingEnvToModule",
            "EnvPool's Atari tasks stack 4 frames already (env_config stack_num=k); for "
            "gymnasium envs wrap the env in gymnasium.wrappers.FrameStackObservation",
        )


class PrevActionsPrevRewards:
    """Not built: the recurrent model reads the previous action and reward itself."""

    def __init__(self, *args: Any, **kwargs: Any):
        _refuse(
            "PrevActionsPrevRewards",
            "model_config={'use_lstm': True, 'lstm_use_prev_action': True, "
            "'lstm_use_prev_reward': True} feeds the previous action and reward to the LSTM",
        )
