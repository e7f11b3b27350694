"""Checks for every rule a schema expresses, through the ``validate`` operation.

For each rule with a site in the shipped schemas (:func:`~..strategies.schema_rules`): a
valid instance of the same schema must be valid, and an instance that breaks exactly that
rule must be invalid, naming the rule. The Foundry writer and reader rules get a second
check through ``write_metrics`` and ``read_witness`` (:mod:`.foundry`).
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
        )
        for rule in sorted(S.schema_rules())
    ]
