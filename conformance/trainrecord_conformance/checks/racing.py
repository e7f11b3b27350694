"""Racing harness processes: several processes of the target's own command sent the same
request at the same moment (the witness and the run folder must each have one winner)."""

from __future__ import annotations

import threading
from typing import Any

from trainrecord_conformance.checks.base import Context
from trainrecord_conformance.targets import TargetError

RACERS = 4


def racers(ctx: Context) -> Any:
    """``RACERS`` extra harness processes of the target's own command (none for a target
    that is not a process), started once per run and closed with it."""
    from trainrecord_conformance.targets import ExecTarget, PythonTarget, harness_command

    class Group(list):
        def close(self) -> None:
            for racer in self:
                racer.close()

    def make() -> Any:
        target = ctx.target
        if isinstance(target, ExecTarget):
            command = target.command
        elif isinstance(target, PythonTarget):
            command = harness_command()
        else:
            return Group()
        return Group(ExecTarget(command, name=f"racer{i}") for i in range(RACERS))

    return ctx.service("witness-racers", make)


def race_all(group: Any, operation: str, data: dict[str, Any]) -> list[Any]:
    """Send ``operation`` with ``data`` to every racer at once (released by one barrier);
    their results in racer order. A racer that does not answer, or answers ``error``, is
    the target's error (reported as an error, not a rule failure)."""
    results: list[Any] = [None] * len(group)
    barrier = threading.Barrier(len(group))

    def go(i: int) -> None:
        barrier.wait()
        results[i] = group[i].run(operation, data)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(group))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if any(r is None for r in results):
        raise TargetError("a racing harness did not answer")
    for i, result in enumerate(results):
        if result.outcome == "error":
            raise TargetError(
                f"racer {i}: {operation} answered error (the implementation failed): "
                f"{result.message[-1200:]}"
            )
    return results
