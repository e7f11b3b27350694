"""The harness protocol itself (``harness.*`` rules), for exec targets.

Every response of an exec target to a run of the other checks is already checked against
the protocol schemas (a broken one is reported as an error). These checks add what the
schemas cannot say, and check their own responses against the schemas too (a broken one
fails the rule checked): a run's seq comes back on its response, in order, whatever the
numbers; an operation the harness did not list is answered ``unsupported`` and the
harness keeps going; ``stop`` is answered and the process exits with status 0. A harness
that lists no operation at all (a skeleton) is checked with operations it does not list:
their ``unsupported`` answers carry the seq too.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance import protocol
from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.targets import ExecTarget

EXEC = frozenset({"@exec"})
PROBES: dict[str, dict[str, Any]] = {
    "config_hash": {"config": {}},
    "line_hash": {"prev": "0" * 64, "body": {}},
    "validate": {
        "schema": "https://trainrecord.dev/schemas/foundry/metrics.schema.json",
        "instance": [],
    },
}
"""Cheap runs with known answers, one per operation a harness may support."""


UNLISTED = "probe_unlisted_operation"
"""An operation no harness lists: answered ``unsupported``, the seq echoed."""


def _probe(ctx: Context) -> tuple[str, dict[str, Any], str]:
    """A cheap run the harness answers, and the outcome it must have: a known operation
    (``ok``), or, for a harness that lists none, an unlisted one (``unsupported``)."""
    for op, data in PROBES.items():
        if op in ctx.target.operations:
            return op, data, "ok"
    return UNLISTED, {}, "unsupported"


def _answer(target: ExecTarget, seq: int, op: str, data: dict[str, Any]) -> dict[str, Any]:
    """The response to one run, checked against the protocol schema (a broken one fails)."""
    message = target.raw(protocol.run_request(seq, op, data))
    try:
        protocol.check(message, protocol.RUN_RESPONSE)
    except protocol.ProtocolError as exc:
        raise Failed(f"the run with seq {seq} of {op}: {exc}") from None
    return message


def _exec(ctx: Context) -> ExecTarget:
    assert isinstance(ctx.target, ExecTarget)
    return ctx.target


def seq_echo(ctx: Context, seqs: list[int]) -> None:
    """Each run's response carries its seq, in order."""
    op, data, _ = _probe(ctx)
    target = _exec(ctx)
    for seq in seqs:
        got = _answer(target, seq, op, data).get("seq")
        if got != seq:
            raise Failed(f"the run with seq {seq} was answered with seq {got!r}")


def unsupported(ctx: Context, name: str) -> None:
    """An unlisted operation is answered unsupported, and the harness keeps working."""
    target = _exec(ctx)
    message = _answer(target, 7, name, {})
    if message.get("outcome") != "unsupported":
        raise Failed(f"the unlisted operation {name} was answered {message!r}")
    if message.get("seq") != 7:
        raise Failed(f"the unsupported answer carries seq {message.get('seq')!r}, not 7")
    op, data, outcome = _probe(ctx)
    after = _answer(target, 8, op, data)
    if after.get("outcome") != outcome:
        raise Failed(f"after an unsupported run, {op} was answered {after!r}")


def stop_exit(ctx: Context, _: None) -> None:
    """stop is answered {"stopped": true} and the harness exits with status 0."""
    message, code = _exec(ctx).stop()
    try:
        protocol.check(message, protocol.STOP_RESPONSE)
    except protocol.ProtocolError as exc:  # (it crashed the check: "a bug of the suite")
        raise Failed(f"stop was answered {message!r}: {exc}") from None
    if code != 0:
        raise Failed(f"after stop the harness exited with status {code}")


def checks() -> list[Check]:
    """The protocol checks."""
    return [
        Check(
            "harness.run.seq.echo",
            "each response carries its run's seq",
            EXEC,
            lambda t: st.lists(st.integers(0, 2**53), min_size=1, max_size=5),
            seq_echo,
        ),
        Check(
            "harness.run.unsupported",
            "an unlisted operation is answered unsupported",
            EXEC,
            lambda t: st.sampled_from(["probe_unknown_operation", "fly", "write_everything"]),
            unsupported,
            scale="io",
        ),
        Check(
            "harness.stop.exit",
            "stop is answered and the harness exits 0",
            EXEC,
            lambda t: st.none(),
            stop_exit,
            scale="io",
        ),
    ]
