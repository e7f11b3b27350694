"""Relations between fields of one diary line that a schema cannot state.

A JSON Schema checks each field on its own; the seed also ties some fields together:
``relative_change`` is ``delta_norm / weight_norm_before`` ("null when ‖W‖ was 0") in a
repair, and a run_end's ``checks`` are checks run at its session's ``steps``. The verifier
(:mod:`trainrecord.diary.chain`) asks :func:`relation_problem` about every run_end and
repair line whose hash holds; the answer names the rule (spec/rules/diary.json) and says
what is wrong and what the value should be. The writer (:mod:`trainrecord.diary.writer`)
asks :func:`relation_refusal`, the same check as a :class:`~trainrecord.errors.Problem`
naming the field, before it appends a line: it never writes a line its verifier fails.
"""

from __future__ import annotations

import math
from typing import Any

from trainrecord.errors import Problem, safe_value

RELATIVE_TOLERANCE = 1e-6
"""How far ``relative_change`` may be from ``delta_norm / weight_norm_before``, relative to
the larger of the two: the Monitor writes the quotient of the two doubles it writes (so
exactly), another writer may divide norms it rounded or summed in another order."""

REPAIR_RULE = "diary.repair.relative_change.value"
CHECKS_RULE = "diary.run_end.checks"


def _number(value: Any) -> float:
    """A JSON number as a double; one beyond a double's range is infinite (as in JS)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def close_enough(given: float, expected: float) -> bool:
    """``given`` equals a finite ``expected`` within :data:`RELATIVE_TOLERANCE`."""
    if not math.isfinite(expected) or not math.isfinite(given):
        return False
    return abs(given - expected) <= RELATIVE_TOLERANCE * max(abs(given), abs(expected))


def repair_problem(line: dict[str, Any]) -> str | None:
    """What is wrong with a repair's relative_change against its norms (the field unnamed), or
    None."""
    before = _number(line["weight_norm_before"])
    given = line["relative_change"]
    if before == 0:
        if given is None:
            return None
        return (
            f"{given!r} where weight_norm_before is 0; it is null when "
            "the weight norm before the repair was 0 (there is no relative change of nothing)"
        )
    expected = _number(line["delta_norm"]) / before
    if given is None:
        return (
            f"null, but weight_norm_before is {line['weight_norm_before']!r}, "
            f"not 0; it is delta_norm / weight_norm_before = {expected!r}"
        )
    if close_enough(_number(given), expected):
        return None
    return (
        f"{given!r} is not delta_norm / weight_norm_before = {expected!r} "
        f"(within a relative {RELATIVE_TOLERANCE:g})"
    )


def run_end_problem(line: dict[str, Any]) -> str | None:
    """What is wrong with a run_end's checks against its steps (the field unnamed), or None."""
    checks, steps = line["checks"], line["steps"]
    if checks <= steps:
        return None
    return (
        f"{checks} checks in {steps} steps; a check runs at a step of its session, "
        "at most one per step, so checks is at most steps"
    )


_FIELDS = {"repair": (REPAIR_RULE, "relative_change"), "run_end": (CHECKS_RULE, "checks")}
"""The rule and the field each related event's check is about."""


def _broken(event: Any, line: dict[str, Any]) -> tuple[str, str, str] | None:
    """(rule, field, what is wrong) of the first broken relation of a schema-valid line."""
    if event == "repair":
        found = repair_problem(line)
    elif event == "run_end":
        found = run_end_problem(line)
    else:
        return None
    return None if found is None else (*_FIELDS[event], found)


def relation_problem(event: Any, line: dict[str, Any]) -> tuple[str, str] | None:
    """(rule, message) of the first broken relation of a schema-valid line, or None."""
    broken = _broken(event, line)
    return None if broken is None else (broken[0], f"{broken[1]}: {broken[2]}")


def relation_refusal(event: Any, line: dict[str, Any]) -> Problem | None:
    """The first broken relation of a schema-valid line as a writer's refusal, or None."""
    broken = _broken(event, line)
    if broken is None:
        return None
    rule, name, message = broken
    return Problem(rule, (name,), message, safe_value(line[name]))
