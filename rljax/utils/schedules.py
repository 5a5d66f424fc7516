"""RLlib's piecewise-linear schedules: a setting given as ``[[env_step, value], ...]``.

``lr=[[0, 1e-3], [1_000_000, 1e-5]]`` starts at 1e-3 and falls linearly to 1e-5 at a million
lifetime env steps sampled, then stays there (RLlib's ``PiecewiseSchedule`` with the last value
outside). The value is computed inside the jitted update from the env-step count the learner
state carries, so a schedule and a constant compile to the same program and a changing value
recompiles nothing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rljax.utils.checks import Number, describe, is_real
from rljax.utils.errors import ConfigError

Schedule = tuple[tuple[int, float], ...]


def is_schedule(value: Any) -> bool:
    return isinstance(value, tuple)


def schedule_start(value: float | Schedule) -> float:
    """The value at env step 0."""
    if isinstance(value, tuple):
        return float(value[0][1])
    return float(value)


class SchedulePoints(NamedTuple):
    """A schedule as arrays (a pytree): a program reads any schedule of ``P`` points, so trials
    with different schedules (or numbers, one point) share one compiled program.

    Attributes:
      steps: The env steps of the points, float32 ``[..., P]``, increasing.
      values: The values at them, float32 ``[..., P]``.
    """

    steps: Any
    values: Any


def num_points(value: float | Schedule | None) -> int:
    """The points of ``value`` as ``SchedulePoints`` (a number, or None, is one)."""
    return len(value) if isinstance(value, tuple) else 1


def schedule_points(value: float | Schedule, points: int | None = None) -> SchedulePoints:
    """``value`` (a number or a schedule) as float32 ``SchedulePoints`` of ``points`` points
    (default: its own): the last point is repeated one env step later each time, which keeps
    the value (it stays at the last point's after the last point)."""
    pairs = list(value) if isinstance(value, tuple) else [(0, float(value))]
    points = len(pairs) if points is None else points
    if points < len(pairs):
        raise ValueError(f"a schedule of {len(pairs)} points does not fit in {points}")
    last_step, last_value = pairs[-1]
    pairs += [(last_step + i, last_value) for i in range(1, points - len(pairs) + 1)]
    return SchedulePoints(
        np.asarray([float(s) for s, _ in pairs], np.float32),
        np.asarray([float(v) for _, v in pairs], np.float32),
    )


def stack_settings(values: Sequence[float | Schedule], points: int = 1) -> Any:
    """One setting of K trials for a vmapped program: ``[K]`` float32 numbers when
    ``points`` is 1 (every value is a number), else ``SchedulePoints`` ``[K, points]``."""
    if points == 1:
        return jnp.asarray([schedule_start(v) for v in values], jnp.float32)
    each = [schedule_points(v, points) for v in values]
    return SchedulePoints(
        jnp.asarray(np.stack([p.steps for p in each])),
        jnp.asarray(np.stack([p.values for p in each])),
    )


def schedule_value(
    value: float | Schedule | SchedulePoints | jax.Array, env_steps: jax.Array
) -> jax.Array:
    """The value at ``env_steps`` (a traced count), float32: linear between the points, the
    last value after the last point."""
    if isinstance(value, SchedulePoints):
        if value.values.shape[-1] == 1:  # a number: nothing to interpolate
            return jnp.asarray(value.values[..., 0], jnp.float32)
        return jnp.interp(jnp.asarray(env_steps, jnp.float32), value.steps, value.values)
    if not isinstance(value, tuple):
        return jnp.asarray(value, jnp.float32)
    steps = jnp.asarray([float(s) for s, _ in value], jnp.float32)
    values = jnp.asarray([float(v) for _, v in value], jnp.float32)
    return jnp.interp(jnp.asarray(env_steps, jnp.float32), steps, values)


def schedule_at(value: float | Schedule, env_steps: jax.Array | None) -> float | jax.Array:
    """``value`` at ``env_steps`` (traced), or at step 0 (a number) when there is no count
    yet (a learner state being built, an update called without one)."""
    return schedule_start(value) if env_steps is None else schedule_value(value, env_steps)


@dataclasses.dataclass(frozen=True)
class NumberOrSchedule:
    """A setting's check: a number (``number``'s check) or RLlib's schedule of such numbers,
    ``[[0, v0], [t1, v1], ...]``: env steps that start at 0 and increase strictly.

    ``point``, where given, checks the schedule's values after the first instead of
    ``number``: a learning rate must be positive, but its schedule may end at 0 (as RLlib's
    does, e.g. ``[[0, 2.5e-4], [500000, 0.0]]`` to anneal linearly to 0).
    """

    number: Number
    point: Number | None = None

    @property
    def allowed(self) -> str:
        return (
            f"{self.number.allowed}, or a schedule [[0, value], [env_step, value], ...] of "
            "such numbers (env steps from 0, increasing)"
        )

    def __call__(self, name: str, value: Any) -> float | Schedule:
        if not isinstance(value, list | tuple):
            try:
                return self.number(name, value)  # type: ignore[return-value]
            except ConfigError as e:
                raise ConfigError(
                    f"{e}; or a schedule [[0, value], [env_step, value], ...]"
                ) from None
        points = []
        for i, point in enumerate(value):
            if not isinstance(point, list | tuple) or len(point) != 2:
                raise ConfigError(
                    f"{name}={describe(value)}: point {i} is {describe(point)}; a schedule is a "
                    "list of [env_step, value] pairs"
                )
            step, v = point
            whole = is_real(step) and math.isfinite(float(step)) and float(step) == int(step)
            if not (whole and int(step) >= 0):
                raise ConfigError(
                    f"{name}: point {i}'s env step {describe(step)} is not a whole number >= 0"
                )
            check = self.number if i == 0 or self.point is None else self.point
            points.append((int(step), float(check(f"{name}[{i}][1]", v))))  # type: ignore[arg-type]
        if not points:
            raise ConfigError(f"{name}=[]: a schedule needs at least one [env_step, value] point")
        if points[0][0] != 0:
            raise ConfigError(
                f"{name}: the schedule starts at env step {points[0][0]}; it must start at 0 "
                f"(e.g. [[0, {points[0][1]:g}], ...])"
            )
        for (a, _), (b, _) in zip(points, points[1:], strict=False):
            if b <= a:
                raise ConfigError(
                    f"{name}: env steps {a} then {b}; a schedule's env steps must increase"
                )
        return tuple(points)


__all__ = [
    "NumberOrSchedule",
    "Schedule",
    "SchedulePoints",
    "num_points",
    "schedule_points",
    "stack_settings",
    "is_schedule",
    "schedule_start",
    "schedule_value",
]
