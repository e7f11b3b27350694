"""Show a run's outcomes: a progress line on a terminal, a summary table, JSON.

Failures come with the shrunk counterexample and the message of the check that failed.
The summary holds text the implementation under test wrote (its name and language, its
answers and stderr quoted in a check's message, names of files it made): each of its
lines is shown :func:`~trainrecord.errors.escaped`, so an implementation answering with
ESC [2J or U+202E can neither clear nor turn round the user's terminal, nor a lone
surrogate stop the report. ``--json`` needs none of it (JSON escapes them).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any, TextIO

from trainrecord.errors import escaped, json_escaped
from trainrecord_conformance.runner import RuleOutcome, plain
from trainrecord_conformance.strategies import Broken

MARK = {
    "pass": "PASS",
    "fail": "FAIL",
    "error": "ERROR",
    "skipped": "SKIP",
    "not covered": "NOT COVERED",
}


class Progress:
    """One self-rewriting status line on a terminal; silent elsewhere."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self.counts: Counter[str] = Counter()

    def __call__(self, done: int, total: int, outcome: RuleOutcome) -> None:
        self.counts[outcome.status] += 1
        if not self.live:
            return
        tally = " ".join(f"{k}={v}" for k, v in sorted(self.counts.items()))
        line = f"\r[{done}/{total}] {outcome.rule[:48]:<48} {tally}"
        self.stream.write(line[:160])
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


LIMIT = 4000
"""Characters of one counterexample value shown in the summary (``--json`` has it whole)."""


def as_json(value: Any, limit: int = LIMIT) -> str:
    """One value of a counterexample as JSON text to paste into a harness request: strict
    JSON (RFC 8259), or, for NaN and infinities (only the in-process target gets them),
    Python's tokens with a note; cut at ``limit`` characters, saying so. Text outside ASCII
    is written as it is, but for what :func:`~trainrecord.errors.escaped` escapes (a C1
    control, a bidirectional formatting character, a lone surrogate: drawn examples hold
    them), written as a ``\\uXXXX`` escape (:func:`~trainrecord.errors.json_escaped`): the
    same JSON value, safe to print."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        note = ""
    except ValueError:
        text = json.dumps(value, ensure_ascii=False)
        note = " (holds NaN or Infinity: not strict JSON, only the in-process target gets it)"
    if len(text) > limit:
        note = f" ... (cut at {limit} of {len(text)} characters; --json has it whole){note}"
        text = text[:limit]
    return json_escaped(text) + note


def counterexample_lines(value: Any) -> list[str]:
    """The counterexample, one part a line: a breaking instance with its schema and site,
    the valid instance of the same check, other inputs as JSON."""
    parts = plain(value)
    brokens = isinstance(value, (tuple, list)) and any(isinstance(v, Broken) for v in value)
    if isinstance(value, Broken):
        value, parts, brokens = (value,), [parts], True
    if not brokens:
        return [f"counterexample (shrunk): {as_json(parts)}"]
    lines = ["counterexample (shrunk):"]
    pair = len(value) == 2 and isinstance(value[1], Broken) and not isinstance(value[0], Broken)
    for item, shown in zip(value, parts, strict=True):
        if isinstance(item, Broken):
            lines.append(f"  schema: {item.schema_id}")
            lines.append(f"  site: {item.site}")
            lines.append(f"  instance: {as_json(shown['instance'])}")
        else:
            lines.append(f"  {'valid instance' if pair else 'with'}: {as_json(shown)}")
    return lines


SHOWN_REQUESTS = 5
"""Requests of a failing example shown in the summary, the last ones (``--json``: all)."""


def request_lines(requests: list[Any], kept: str) -> list[str]:
    """The harness requests of the failing example, one run line each, to send to the
    harness by hand; where the files they name are kept."""
    if not requests:
        return [kept] if kept else []
    lines = [
        f"requests of the failing example, as your harness got them{'; ' if kept else ''}{kept}:"
    ]
    if len(requests) > SHOWN_REQUESTS:
        lines.append(f"  ({len(requests) - SHOWN_REQUESTS} earlier requests: see --json)")
    lines += [f"  {as_json(r)}" for r in requests[-SHOWN_REQUESTS:]]
    return lines


def message_lines(message: str) -> list[str]:
    """A check's message, one summary line per line of it: the first indented under its
    check, the rest (a traceback, the stderr an implementation wrote) two columns further,
    so that no line of the message reads as a line of the summary. (:func:`summary`
    escapes each line: a carriage return or ESC in it is shown, never acted on.)"""
    first, *rest = message.rstrip("\n").split("\n")
    return [f"    {first}"] + [f"      {line}" for line in rest]


def summary(outcomes: list[RuleOutcome], target: str, implementation: dict[str, Any]) -> str:
    """The human report: failures and errors in detail, then a table per format; each line
    :func:`~trainrecord.errors.escaped` (the implementation's name, its answers, ...)."""
    lines = [
        f"trainrecord conformance: target {target} "
        f"({implementation.get('name', '?')}, {implementation.get('language', '?')})",
        "",
    ]
    for o in outcomes:
        if o.status not in ("fail", "error"):
            continue
        lines.append(f"{MARK[o.status]} {o.rule}")
        for c in o.checks:
            if c.status in ("fail", "error"):
                lines.append(f"    check: {c.name}")
                lines += message_lines(c.message)
                if c.counterexample is not None:
                    lines += [f"    {line}" for line in counterexample_lines(c.counterexample)]
                lines += [f"    {line}" for line in request_lines(c.requests, c.kept)]
        lines.append("")
    per_format: dict[str, Counter[str]] = {}
    for o in outcomes:
        fmt = o.rule.split(".", 1)[0]
        per_format.setdefault(fmt, Counter())[o.status] += 1
    cols = ["pass", "fail", "error", "skipped", "not covered"]
    lines.append(f"{'format':<16}" + "".join(f"{c:>13}" for c in cols))
    for fmt, counts in per_format.items():
        lines.append(f"{fmt:<16}" + "".join(f"{counts[c]:>13}" for c in cols))
    total = Counter(o.status for o in outcomes)
    lines.append(f"{'total':<16}" + "".join(f"{total[c]:>13}" for c in cols))
    not_covered = [o for o in outcomes if o.status == "not covered"]
    if not_covered:
        lines.append("")
        lines.append(f"{len(not_covered)} rules are not covered by the suite (see --json for why).")
    skipped = [o for o in outcomes if o.status == "skipped"]
    if skipped:
        missing = sorted(
            {
                op.strip()
                for o in skipped
                for c in o.checks
                if c.message.startswith("not supported: ")
                for op in c.message.removeprefix("not supported: ").split(",")
                if op.strip() and " " not in op.strip()
            }
        )
        because = f": the target does not offer {', '.join(missing)}" if missing else ""
        lines.append(f"{len(skipped)} rules were skipped{because} (see --json for each rule).")
    seconds = sum(o.seconds for o in outcomes)
    verdict = "FAILED" if total["fail"] or total["error"] else "OK"
    lines.append(f"{verdict}: {len(outcomes)} rules in {seconds:.1f} s")
    return "\n".join(escaped(line) for line in lines)


def to_json(outcomes: list[RuleOutcome], target: str, implementation: dict[str, Any]) -> str:
    """The machine report."""
    total = Counter(o.status for o in outcomes)
    return json.dumps(
        {
            "target": target,
            "implementation": implementation,
            "totals": dict(total),
            "rules": [o.to_json() for o in outcomes],
        },
        indent=1,
        default=repr,
    )


def exit_status(outcomes: list[RuleOutcome]) -> int:
    """1 on any failure or error, else 0."""
    return 1 if any(o.status in ("fail", "error") for o in outcomes) else 0
