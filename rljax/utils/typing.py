"""RLlib's type aliases at their path (``ray.rllib.utils.typing``), for scripts' annotations."""

from typing import Any

ResultDict = dict[str, Any]
EnvConfigDict = dict[str, Any]
AlgorithmConfigDict = dict[str, Any]
PolicyID = str
ModuleID = str
AgentID = Any
TensorType = Any

__all__ = [
    "AgentID",
    "AlgorithmConfigDict",
    "EnvConfigDict",
    "ModuleID",
    "PolicyID",
    "ResultDict",
    "TensorType",
]
