"""Checks for every rule a schema expresses, through the ``validate`` operation.

For each rule with a site in the shipped schemas (:func:`~..strategies.schema_rules`): a
valid instance of the same schema must be valid, and an instance that breaks exactly that
rule must be invalid, naming the rule. The Foundry writer and reader rules get a second
check through ``write_metrics`` and ``read_witness`` (:mod:`.foundry`).

Five schema sites the strategy engine cannot reach yet (an ``anyOf`` inside
``additionalProperties``, a ``type`` under a nested ``oneOf`` branch, two ``type`` in an
``if``/``then`` that meet the property's own (alarm baseline and grad_norm), an ``enum`` of an event that meets the
common one: a channels event's severity) get hand-written
breaking strategies (:data:`HAND_BROKEN`), held to the same standard: the oracle must
report exactly that rule for every drawn instance.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.targets import Target


def pairs(rule: str) -> Any:
    """A strategy factory: (valid instance, breaking instance) of one schema for ``rule``."""

    def build(target: Target) -> st.SearchStrategy[tuple[Any, S.Broken]]:
        broken = S.breaking_instances(rule, nonfinite=target.nonfinite)
        return broken.flatmap(lambda b: st.tuples(S.valid_instances(b.schema_id), st.just(b)))

    return build


ROW = "https://trainrecord.dev/schemas/diary/metrics-row.schema.json"
REPORT = "https://trainrecord.dev/schemas/reporting/reporting.schema.json"
NOT_GRAD = st.one_of(
    st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=False),
    st.integers(max_value=-1),
    st.sampled_from(["nan", "inf", "NaN ", "", "-Infinity ", "1.0", True, False, [], {}]),
)


def _exact(rule: str, broken: S.Broken) -> S.Broken:
    """The drawn instance, once the oracle confirms it breaks ``rule`` and nothing else."""
    found = S.oracle_rules(broken.instance, broken.schema_id)
    if found != {rule}:
        raise S.StrategyDrift(f"a hand-written breaking instance for {rule} gave {found}")
    return broken


def _grad_value(rule: str) -> st.SearchStrategy[S.Broken]:
    layer = st.from_regex(r"[a-z][a-z0-9_.]{0,10}", fullmatch=True)
    return st.tuples(S.valid_instances(ROW), layer, NOT_GRAD).map(
        lambda t: _exact(
            rule,
            S.Broken(ROW, {**t[0], "grad": {**t[0]["grad"], t[1]: t[2]}}, f"{rule} grad.{t[1]}"),
        )
    )


def _intact_null(rule: str) -> st.SearchStrategy[S.Broken]:
    from trainrecord_conformance.checks.reporting import _vector_reports

    lesion = [r for r in _vector_reports() if r["kind"] == "lesion"]

    def broken(report: dict[str, Any]) -> S.Broken:
        initial = report.get("initial_validation") or {}
        value = {"intact": None, "lesioned": initial.get("lesioned")}
        instance = {**report, "initial_validation": value}
        return _exact(rule, S.Broken(REPORT, instance, f"{rule} initial_validation.intact"))

    return st.sampled_from(lesion).map(broken)


ALARM = "https://trainrecord.dev/schemas/diary/events/alarm.schema.json"


def _alarm_null(field: str, other: str) -> Any:
    """A strategy factory: a valid alarm made vanishing or exploding with ``field`` null (an
    ``if``/``then`` whose ``type`` meets the property's own ``type``: no site of one rule).
    ``other``, the if/then's other nullable field, is made a number when the valid alarm (a
    no_gradient one) has it null, so the instance breaks the one rule."""

    def strategy(rule: str) -> st.SearchStrategy[S.Broken]:
        diagnosis = st.sampled_from(["vanishing", "exploding"])
        number = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)

        def broken(t: tuple[dict[str, Any], str, float]) -> S.Broken:
            valid, chosen, value = t
            kept = valid.get(other)
            instance = {
                **valid,
                "diagnosis": chosen,
                field: None,
                other: value if kept is None else kept,
            }
            return _exact(rule, S.Broken(ALARM, instance, f"{rule} {field}"))

        return st.tuples(S.valid_instances(ALARM), diagnosis, number).map(broken)

    return strategy


CHANNELS = tuple(
    f"https://trainrecord.dev/schemas/diary/events/{e}.schema.json"
    for e in ("channels", "channels_cleared")
)


def _channels_severity(rule: str) -> st.SearchStrategy[S.Broken]:
    """A valid channels or channels_cleared line whose severity is another event's (action,
    proof, critical): one of the five every line takes, so the two ``enum`` keywords that
    meet on it (the common one and the event's) leave no site of one rule."""
    other = st.sampled_from(["action", "proof", "critical"])
    return st.tuples(st.sampled_from(CHANNELS), other).flatmap(
        lambda t: S.valid_instances(t[0]).map(
            lambda valid: _exact(
                rule, S.Broken(t[0], {**valid, "severity": t[1]}, f"{rule} severity")
            )
        )
    )


HAND_BROKEN = {
    "diary_metrics.grad.value": _grad_value,
    "report.lesion.initial_validation.intact.null": _intact_null,
    "diary.alarm.baseline.null": _alarm_null("baseline", "grad_norm"),
    "diary.alarm.grad_norm.null": _alarm_null("grad_norm", "baseline"),
    "diary.channels.severity.value": _channels_severity,
}
"""Schema rules whose breaking instances are written by hand, by rule id."""


def edge_pairs(rule: str) -> Any:
    """The rule's edge cases, (valid instance, breaking instance), in the shape of pairs."""

    def build(target: Target) -> tuple[tuple[Any, S.Broken], ...]:
        return S.edge_cases(rule, nonfinite=target.nonfinite)

    return build


def hand_pairs(rule: str) -> Any:
    """(valid instance, breaking instance) from a hand-written strategy."""

    def build(target: Target) -> st.SearchStrategy[tuple[Any, S.Broken]]:
        return HAND_BROKEN[rule](rule).flatmap(
            lambda b: st.tuples(S.valid_instances(b.schema_id), st.just(b))
        )

    return build


def validate_body(rule: str) -> Any:
    """The check: the valid one validates, the broken one does not and names ``rule``."""

    def body(ctx: Context, case: tuple[Any, S.Broken]) -> None:
        valid, broken = case
        out = ctx.ok("validate", {"schema": broken.schema_id, "instance": valid})
        if not out["valid"]:
            raise Failed(f"a valid instance of {broken.schema_id} was refused: {out['rules']}")
        out = ctx.ok("validate", {"schema": broken.schema_id, "instance": broken.instance})
        if out["valid"]:
            raise Failed(f"an instance breaking {rule} at {broken.site} was accepted")
        if rule not in out["rules"]:
            raise Failed(
                f"an instance breaking {rule} at {broken.site} was refused with "
                f"{out['rules']}, not {rule}"
            )

    return body


def checks() -> list[Check]:
    """One validate check per schema rule."""
    return [
        Check(
            rule,
            "validate refuses it, naming the rule",
            frozenset({"validate"}),
            pairs(rule),
            validate_body(rule),
            scale="schema",
            edges=edge_pairs(rule),
        )
        for rule in sorted(S.schema_rules())
    ] + [
        Check(
            rule,
            "validate refuses it, naming the rule (hand-written breaking instances)",
            frozenset({"validate"}),
            hand_pairs(rule),
            validate_body(rule),
            scale="schema",
        )
        for rule in sorted(HAND_BROKEN)
        if rule not in S.schema_rules()
    ]
