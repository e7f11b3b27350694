"""SIGTERM as an exception, so the entry point's ``finally`` block writes the witness.

Slurm (``scancel``, preemption, the time limit), ``docker stop`` and Kubernetes stop a job
with SIGTERM, whose default action kills the process at once: no ``finally`` block runs, and
the attempt that most needs a witness gets none. Within :func:`exit_on_sigterm`, SIGTERM
raises ``SystemExit(143)`` in the main thread instead (143 = 128 + 15, the status a shell
shows for a process killed by SIGTERM), so ``finally`` blocks run (``write_witness``
there) and the process then exits with status 143.

It cooperates with :mod:`trainrecord.sigterm` (a Monitor's or a Reporter's handler): a
handler found installed is called first, the way PyTorch Lightning chains one; for
trainrecord's own that means the Monitor's ``run_end`` comes from the code that closes it,
with this ``SystemExit`` as its error. ``SIG_IGN`` found installed is left alone (SIGTERM
stays ignored). A second SIGTERM while the first one's ``finally`` blocks run is ignored,
so it cannot interrupt ``write_witness``; the scheduler's SIGKILL still ends a process that
takes too long. The handler found is restored on leaving, if this one is still installed.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

SIGTERM_STATUS = 128 + int(signal.SIGTERM)
"""The exit status of a process ended by SIGTERM as a shell reports it (143)."""


@contextmanager
def exit_on_sigterm() -> Iterator[None]:
    """Within the block, SIGTERM raises ``SystemExit(143)`` in the main thread, so the
    ``finally`` blocks run (see the module's doc). Outside the main thread (where Python
    cannot set a signal handler) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    found: Any = signal.getsignal(signal.SIGTERM)
    if found is signal.SIG_IGN:
        yield
        return
    stopping = False

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if stopping:
            return  # the first one's finally blocks are running: let them finish
        stopping = True
        if callable(found):
            chained: Callable[[int, FrameType | None], Any] = found
            chained(signum, frame)
        raise SystemExit(SIGTERM_STATUS)

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is on_sigterm:
            signal.signal(signal.SIGTERM, found if found is not None else signal.SIG_DFL)
