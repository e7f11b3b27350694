"""Run checks against a target with Hypothesis and collect per-rule outcomes.

Each check is a Hypothesis property: its strategy draws inputs, its body runs the target.
Outcomes per check:

* ``pass``: every drawn example held;
* ``fail``: the rule broke; the counterexample is the one Hypothesis shrank to (the last
  example run, which Hypothesis replays after shrinking);
* ``skipped``: the target does not support an operation the check needs (it did not list
  it, or ``validate`` answered ``unsupported`` for the schema of every example);
* ``error``: the implementation crashed, hung, answered ``error`` or broke the protocol
  (or the suite's own strategy or check crashed, which the message says): reported as
  such, never as a rule failure.

A rule's outcome joins its checks': fail beats error beats pass beats skipped.
"""

from __future__ import annotations

import fnmatch
import os
import random
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import FailedHealthCheck, Unsatisfiable

from trainrecord_conformance.checks import Check, Context, Failed, all_checks
from trainrecord_conformance.checks.base import Unsupported
from trainrecord_conformance.coverage import NOT_COVERED
from trainrecord_conformance.registry import rules
from trainrecord_conformance.strategies import Broken, StrategyDrift
from trainrecord_conformance.targets import Target, TargetError

PROFILES: dict[str, dict[str, int]] = {
    "ci": {"behaviour": 25, "io": 6, "schema": 4},
    "dev": {"behaviour": 60, "io": 20, "schema": 12},
    "thorough": {"behaviour": 1000, "io": 200, "schema": 200},
}
"""Examples per check in each Hypothesis profile (HYPOTHESIS_PROFILE). Schema checks (one
per schema rule, hundreds of them) and io checks (whole run folders, HTTP exchanges) draw
fewer; ``--examples N`` sets all."""
ORDER = {"fail": 0, "error": 1, "pass": 2, "skipped": 3, "not covered": 4}


@dataclass
class CheckOutcome:
    """The outcome of one check."""

    name: str
    status: str
    message: str = ""
    counterexample: Any = None
    examples: int = 0
    requests: list[Any] = field(default_factory=list)
    """The harness requests of the failing example, as run lines (:mod:`.kept`)."""
    kept: str = ""
    """Where the files those requests name are kept (or why they are not)."""


@dataclass
class RuleOutcome:
    """The outcome of one rule: its checks joined."""

    rule: str
    kind: str
    status: str
    checks: list[CheckOutcome] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "rule": self.rule,
            "kind": self.kind,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "checks": [
                {
                    "name": c.name,
                    "status": c.status,
                    "message": c.message,
                    "counterexample": _jsonable(c.counterexample),
                    "examples": c.examples,
                    "requests": _jsonable(c.requests),
                    "kept": c.kept,
                }
                for c in self.checks
            ],
        }


def plain(value: Any) -> Any:
    """A counterexample as JSON values: a breaking instance (:class:`Broken`) as
    ``{"schema", "site", "instance"}``, tuples as arrays, anything JSON cannot hold (bytes,
    a set, an object: only the in-process target gets such inputs) as its repr."""
    if isinstance(value, Broken):
        return {"schema": value.schema_id, "site": value.site, "instance": plain(value.instance)}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float)):
        return value
    return repr(value)


def _jsonable(value: Any) -> Any:
    return plain(value)


def profile_examples(profile: str | None = None) -> dict[str, int]:
    """Examples per check kind for a profile (default: HYPOTHESIS_PROFILE, else dev)."""
    name = profile or os.environ.get("HYPOTHESIS_PROFILE", "dev")
    return PROFILES.get(name, PROFILES["dev"])


def _settings(examples: int, derandomize: bool, shrink: bool = True) -> settings:
    phases = list(Phase) if shrink else [p for p in Phase if p not in (Phase.shrink, Phase.explain)]
    return settings(
        max_examples=examples,
        derandomize=derandomize,
        database=None,
        deadline=None,
        print_blob=False,
        report_multiple_bugs=False,
        phases=phases,
        suppress_health_check=list(HealthCheck),
    )


def supports(target: Target, check: Check) -> bool:
    """Whether the target offers every operation the check needs."""
    have = set(target.operations) | set(target.capabilities)
    return check.ops <= have


def run_check(
    check: Check,
    ctx: Context,
    examples: int,
    derandomize: bool,
    shrink: bool = True,
    seed: int | None = None,
) -> CheckOutcome:
    """Run one check as a Hypothesis property: its edge cases first (explicit examples, on
    every run), then ``examples`` random draws (from ``seed`` when given)."""
    if not supports(ctx.target, check):
        missing = sorted(check.ops - set(ctx.target.operations))
        return CheckOutcome(check.name, "skipped", f"not supported: {', '.join(missing)}")
    state: dict[str, Any] = {"last": None, "error": None, "count": 0, "unsupported": []}
    try:
        strategy = check.strategy(ctx.target)
        edges = list(check.edges(ctx.target)) if check.edges is not None else []
    except Exception as exc:
        return CheckOutcome(check.name, "error", f"the suite cannot build its strategy: {exc}")

    @_settings(examples, derandomize, shrink)
    @given(strategy)
    def prop(value: Any) -> None:
        if state["error"] is not None:
            return
        state["last"] = value
        state["count"] += 1
        ctx.sent.clear()
        try:
            check.body(ctx, value)
        except TargetError as exc:
            state["error"] = exc
        except Unsupported as exc:
            state["count"] -= 1
            if str(exc) not in state["unsupported"]:
                state["unsupported"].append(str(exc))

    for value in reversed(edges):  # the last one applied runs first
        prop = example(value)(prop)
    if seed is None and not derandomize:
        # a seed of our own, as random as Hypothesis's: with none given, Hypothesis prints
        # "You can reproduce this failure by adding @seed(...) to this test" when Ctrl+C
        # lands in a check, on stdout (a --json reader's), about a test the user never wrote
        seed = random.SystemRandom().getrandbits(64)
    if seed is not None:
        prop = hypothesis_seed(seed)(prop)
    try:
        prop()
    except Failed as exc:
        return _failed(check, ctx, str(exc), state)
    except (StrategyDrift, Unsatisfiable, FailedHealthCheck) as exc:
        return CheckOutcome(check.name, "error", f"suite strategy: {exc}"[:800])
    except Exception as exc:
        failed = _failed_inside(exc)
        if failed is not None:
            note = " (it did not fail on every replay: a race or other nondeterminism)"
            return _failed(check, ctx, str(failed) + note, state)
        tail = "".join(traceback.format_exception(exc))[-800:]
        return CheckOutcome(
            check.name,
            "error",
            "the suite's own check crashed (a bug of the suite, not a verdict on the "
            f"implementation; please report it): {tail}",
            state["last"],
        )
    if state["error"] is not None:
        return CheckOutcome(check.name, "error", str(state["error"]), state["last"], state["count"])
    skipped = "; ".join(state["unsupported"])
    if skipped and not state["count"]:
        return CheckOutcome(check.name, "skipped", f"not supported: {skipped}")
    note = f"examples not run: {skipped}" if skipped else ""
    return CheckOutcome(check.name, "pass", note, examples=state["count"])


def _failed(check: Check, ctx: Context, message: str, state: dict[str, Any]) -> CheckOutcome:
    """A failed check's outcome, with the requests of its failing example and the files
    they name kept (:func:`.kept.keep`)."""
    from trainrecord_conformance.kept import keep

    try:
        requests, kept = keep(ctx.root, ctx.sent, check.name)
    except OSError as exc:  # the verdict stands without them
        requests, kept = [], f"the files of the failing example could not be kept: {exc}"
    return CheckOutcome(
        check.name, "fail", message, state["last"], state["count"], requests=requests, kept=kept
    )


def _failed_inside(exc: BaseException) -> Failed | None:
    """The Failed inside an exception group (Hypothesis's FlakyFailure), if any."""
    if isinstance(exc, Failed):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _failed_inside(inner)
            if found is not None:
                return found
    return None


def select(patterns: Iterable[str] | None) -> list[str]:
    """Rule ids of the registry (plus checked ids outside it) matching any pattern."""
    known = list(rules()) + sorted(set(all_checks()) - set(rules()))
    pats = list(patterns or [])
    if not pats:
        return known
    return [r for r in known if any(fnmatch.fnmatchcase(r, p) or r == p for p in pats)]


def run_rules(
    target: Target,
    rule_ids: list[str],
    *,
    examples: int | None = None,
    profile: str | None = None,
    progress: Callable[[int, int, RuleOutcome], None] | None = None,
    shrink: bool = True,
    seed: int | None = None,
) -> list[RuleOutcome]:
    """Run every check of the given rules against ``target``.

    ``shrink=False`` reports the first failing example as it was drawn (faster; the command
    line always shrinks). ``seed`` fixes the random draws of a profile that is not
    derandomized (the edge cases run first whatever the seed).
    """
    counts = profile_examples(profile)
    if examples is not None:
        counts = {"behaviour": examples, "io": examples, "schema": examples}
    derandomize = (profile or os.environ.get("HYPOTHESIS_PROFILE", "dev")) == "ci"
    registry = rules()
    checks = all_checks()
    ctx = Context(target)
    out: list[RuleOutcome] = []
    try:
        for i, rule in enumerate(rule_ids):
            kind = registry[rule].kind if rule in registry else "guarantee"
            start = time.monotonic()
            found = checks.get(rule, ())
            if not found:
                reason = NOT_COVERED.get(rule, "no check: the suite does not test this rule")
                outcome = RuleOutcome(
                    rule, kind, "not covered", [CheckOutcome("-", "not covered", reason)]
                )
            else:
                results = [
                    run_check(c, ctx, counts[c.scale], derandomize, shrink, seed) for c in found
                ]
                status = min((r.status for r in results), key=ORDER.__getitem__)
                outcome = RuleOutcome(rule, kind, status, results)
            outcome.seconds = time.monotonic() - start
            out.append(outcome)
            if progress is not None:
                progress(i + 1, len(rule_ids), outcome)
    finally:
        ctx.close()
    return out
