"""Racing harness processes: several processes of the target's own command sent the same
request at the same moment (the witness and the run folder must each have one winner)."""

from __future__ import annotations

import threading
import time
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


STAGGERS = (None, 25e-6, 100e-6, 200e-6)
"""How the racers of successive rounds are started (:func:`race_all`): released by one
barrier, then every request prepared and written to racer i at i times 25, 100 or 200 µs.
Whether two processes overlap in a check-then-act window of a few microseconds depends on
how long each takes to reach it, which varies with the machine's load; no one start finds
it every time (measured on 2 shared cores with two such writers, 100 rounds each: between
3 % and 41 % of rounds per start, a different start best for each writer), the mix of them
over many rounds does."""


def race_all(
    group: Any, operation: str, data: dict[str, Any], stagger: float | None = None
) -> list[Any]:
    """Send ``operation`` with ``data`` to every racer at once; their results in racer
    order. ``stagger`` None: one thread per racer, released by one barrier; a number: the
    requests prepared first, then written to racer i at ``i * stagger`` seconds (a busy
    wait, for microseconds). A racer that does not answer, or answers ``error``, is the
    target's error (reported as an error, not a rule failure)."""
    results: list[Any] = [None] * len(group)
    if stagger is None:
        barrier = threading.Barrier(len(group))

        def go(i: int) -> None:
            barrier.wait()
            results[i] = group[i].run(operation, data)

        threads = [threading.Thread(target=go, args=(i,)) for i in range(len(group))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    else:
        prepared = [racer.prepare_run(operation, data) for racer in group]
        start = time.perf_counter()
        for i, (racer, (_, line)) in enumerate(zip(group, prepared, strict=True)):
            while time.perf_counter() - start < i * stagger:
                pass
            racer.send_line(line)
        for i, (racer, (seq, _)) in enumerate(zip(group, prepared, strict=True)):
            results[i] = racer.finish_run(seq, operation)
    if any(r is None for r in results):
        raise TargetError("a racing harness did not answer")
    for i, result in enumerate(results):
        if result.outcome == "error":
            raise TargetError(
                f"racer {i}: {operation} answered error (the implementation failed): "
                f"{result.message[-1200:]}"
            )
    return results
