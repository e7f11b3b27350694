"""The background sender (§3 of the seed): keeps only the newest unsent report.

A job hands the sender a *build* callable (which produces the report body when its turn
comes, or None when there is nothing to send any more) with :meth:`Sender.submit`; that
replaces any report still waiting and returns at once, whatever the server does. One
daemon thread builds and POSTs, one report at a time, never retrying. On a failure it logs
one warning (logger ``trainrecord.report``), then stays quiet until a report gets through
again. :meth:`Sender.close` gives the waiting report a bounded time to go out; an
``atexit`` hook does the same, so the process never hangs at exit.

Public API: :class:`Sender` ``(settings, *, flush_timeout=5.0, session=None)`` with
``submit(build)``, ``close(timeout=None) -> bool``, and counters ``sent``, ``failed``,
``superseded``, ``refused``, ``last_outcome``.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable

import requests

from trainrecord.errors import RecordRefused
from trainrecord.report.privacy import Secrets, exception_said
from trainrecord.report.settings import ReportSettings
from trainrecord.report.transport import Outcome, new_session, post_report

log = logging.getLogger("trainrecord.report")

Build = Callable[[], bytes | None]
"""Produces one report body (called in the sender thread); None sends nothing."""


class Sender:
    """One background thread that POSTs the newest submitted report."""

    def __init__(
        self,
        settings: ReportSettings,
        *,
        flush_timeout: float = 5.0,
        session: requests.Session | None = None,
        name: str = "trainrecord-report",
    ) -> None:
        self.settings = settings
        self.flush_timeout = flush_timeout
        self._session = session or new_session()
        self._cond = threading.Condition()
        self._pending: Build | None = None
        self._closing = False
        self._closed = False
        self._failing = False
        self.submitted = 0  # reports handed to submit() while open
        self.sent = 0
        self.failed = 0
        self.refused = 0
        self.superseded = 0
        self.last_outcome: Outcome | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        atexit.register(self._at_exit)

    def submit(self, build: Build) -> None:
        """Queue a report, replacing one still waiting. Never blocks on the network."""
        with self._cond:
            if self._closing:
                return
            if self._pending is not None:
                self.superseded += 1
            self.submitted += 1
            self._pending = build
            self._cond.notify()

    @property
    def idle(self) -> bool:
        """True when nothing waits to be sent."""
        with self._cond:
            return self._pending is None

    def close(self, timeout: float | None = None) -> bool:
        """Stop taking reports and wait up to ``timeout`` (default ``flush_timeout``) for the
        waiting one to go out. Returns whether the thread finished in time."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join(self.flush_timeout if timeout is None else timeout)
        done = not self._thread.is_alive()
        if not self._closed:
            self._closed = True
            atexit.unregister(self._at_exit)
        if done:
            self._session.close()
        return done

    def _at_exit(self) -> None:
        if not self._closed:
            self.close()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closing:
                    self._cond.wait()
                if self._pending is None:
                    return
                build, self._pending = self._pending, None
            self._send(build)

    def _send(self, build: Build) -> None:
        try:
            body = build()
        except RecordRefused as exc:
            self._fail(f"a report was not sent because it breaks the spec: {exc}")
            self.refused += 1
            return
        except Exception as exc:  # a broken build must never kill the thread or the job
            said = exception_said(exc, Secrets(token=self.settings.token))
            self._fail(f"a report could not be built ({said})")
            self.refused += 1
            return
        if body is None:
            return
        outcome = post_report(self.settings, body, self._session)
        self.last_outcome = outcome
        # each count goes up once its report is fully handled (its log line written), so a
        # reader that sees the count also sees the line
        if outcome.ok:
            if self._failing:
                self._failing = False
                log.info("reports get through again")
            self.sent += 1
        else:
            self._fail(outcome.message)
            self.failed += 1

    def _fail(self, message: str) -> None:
        if not self._failing:
            self._failing = True
            log.warning(
                "trainrecord report: %s; staying quiet until a report gets through", message
            )
