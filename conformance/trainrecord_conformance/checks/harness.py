"""The harness protocol itself (``harness.*`` rules), for exec targets.

Every response of an exec target is already checked against the protocol schemas (a
broken one is reported as an error). These checks add what the schemas cannot say: a
run's seq comes back on its response, in order, whatever the numbers; an operation the
harness did not list is answered ``unsupported`` and the harness keeps going; ``stop`` is
answered and the process exits with status 0.
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


def _probe(ctx: Context) -> tuple[str, dict[str, Any]]:
    for op, data in PROBES.items():
        if op in ctx.target.operations:
            return op, data
    raise Failed("the harness supports none of config_hash, line_hash, validate")


def _exec(ctx: Context) -> ExecTarget:
    assert isinstance(ctx.target, ExecTarget)
    return ctx.target


def seq_echo(ctx: Context, seqs: list[int]) -> None:
    """Each run's response carries its seq, in order."""
    op, data = _probe(ctx)
    target = _exec(ctx)
    for seq in seqs:
        message = target.raw(protocol.run_request(seq, op, data))
        got = message.get("seq") if isinstance(message, dict) else None
        if got != seq:
            raise Failed(f"the run with seq {seq} was answered with seq {got!r}")


def unsupported(ctx: Context, name: str) -> None:
    """An unlisted operation is answered unsupported, and the harness keeps working."""
    target = _exec(ctx)
    message = target.raw(protocol.run_request(7, name, {}))
    if not isinstance(message, dict) or message.get("outcome") != "unsupported":
        raise Failed(f"the unlisted operation {name} was answered {message!r}")
    if message.get("seq") != 7:
        raise Failed(f"the unsupported answer carries seq {message.get('seq')!r}, not 7")
    op, data = _probe(ctx)
    after = target.raw(protocol.run_request(8, op, data))
    if not isinstance(after, dict) or after.get("outcome") != "ok":
        raise Failed(f"after an unsupported run, {op} was answered {after!r}")


def stop_exit(ctx: Context, _: None) -> None:
    """stop is answered {"stopped": true} and the harness exits with status 0."""
    message, code = _exec(ctx).stop()
    protocol.check(message, protocol.STOP_RESPONSE)
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
