"""Error types and the helpers that make their messages useful."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ConfigError(ValueError):
    """A configuration value or combination that cannot work; raised before anything is built."""


class CheckpointError(ValueError):
    """A path that is not a readable rljax checkpoint."""


class CheckpointBusyError(CheckpointError):
    """A checkpoint directory another save holds (its lock) for longer than a save waits."""


class CallbackError(RuntimeError):
    """A user callback raised; the message names the hook and the callback class."""


class AlgorithmStoppedError(RuntimeError):
    """An algorithm used for training after ``stop()`` closed its env runners and envs."""


class AlgorithmBusyError(RuntimeError):
    """An algorithm asked to train (or save) while another thread is running its ``train()``."""


class EnvAPIError(TypeError):
    """An env whose ``reset`` or ``step`` results do not follow gymnasium's API."""


def best_match(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``name`` most likely misspells, or None.

    Similarity (difflib's ratio) with a bonus for a shared start, since settings are usually
    mistyped at the end (``lr_rate`` means ``lr``, not ``kl_target``); case is ignored.
    """
    cands = list(dict.fromkeys(candidates))
    low = name.lower()
    best, best_score = None, 0.0
    matcher = difflib.SequenceMatcher(None)
    matcher.set_seq2(low)  # difflib caches details of the second sequence
    for c in cands:
        cl = c.lower()
        if cl == low:
            return c
        prefix = 0
        for a, b in zip(low, cl, strict=False):
            if a != b:
                break
            prefix += 1
        bonus = 0.6 * prefix / max(len(low), 1)
        matcher.set_seq1(cl)
        # Cheap upper bounds first: thousands of env ids are compared for one unknown name.
        if matcher.real_quick_ratio() + bonus <= max(best_score, 0.55):
            continue
        if matcher.quick_ratio() + bonus <= max(best_score, 0.55):
            continue
        ratio = matcher.ratio()
        score = ratio + bonus
        if (ratio >= 0.5 or prefix >= 2) and score > best_score:
            best, best_score = c, score
    return best if best_score >= 0.55 else None


def closest(name: str, candidates: Iterable[str]) -> str:
    """Returns ``"; did you mean 'x'?"`` for the closest candidate, or an empty string."""
    match = best_match(name, candidates)
    return f"; did you mean {match!r}?" if match else ""


__all__ = [
    "AlgorithmBusyError",
    "AlgorithmStoppedError",
    "CallbackError",
    "CheckpointBusyError",
    "CheckpointError",
    "ConfigError",
    "EnvAPIError",
]
