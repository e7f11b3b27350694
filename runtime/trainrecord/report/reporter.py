"""The job-facing client: report one run from start to end, or send one snapshot now.

Typical use in a training loop::

    from trainrecord.report import Reporter, config, epoch_entry, load_settings, open_run

    run = open_run("models/pre/pre_s_49")  # run_id from metadata.json (new, or the resumed)
    state = run.job_state("training", config("training", mode="pre", batch_size=100, lr=0.01),
                          epochs_first=0, epochs_total=50)
    with Reporter(load_settings("paths.toml"), state, run=run) as r:
        for epoch in range(50):
            for i, batch in enumerate(loader):
                step(batch)
                r.progress(phase="training", batch=i, batches=len(loader))  # ~1 us
            r.epoch_end(epoch_entry("training", epoch=epoch, ...))
    # leaving the block sends complete; Ctrl+C sends interrupted (or discarded, see below),
    # SIGTERM sends interrupted (never discarded) and the process still dies of SIGTERM,
    # an exception sends failed with its scrubbed message, then re-raises.

Ctrl+C and ``discarded`` (§3, §6). A run is discarded only when all of these hold: the
Reporter was given its run folder (``run=``, the :class:`~trainrecord.report.RunFolder`
from :func:`~trainrecord.report.open_run`), the job is a training run (``state.kind``;
never a lesion run or a word set), the run was not resumed (``run.created``: this start
wrote its run_id), ``open_run`` made the folder itself (``run.new_folder``: a folder that
was there before may hold other files) and it finished no epoch (``state.history`` is
empty). Then the Reporter
deletes the run folder (:meth:`RunFolder.discard`) and sends ``interrupted`` with status
``discarded``; the next ``open_run`` of the folder is a new run with a new run_id. In every
other case Ctrl+C sends status ``interrupted`` and the folder is left as it is: a resumed
run's folder is never deleted, whatever the job passes, and without ``run=`` nothing is
ever deleted, so ``discarded`` is never sent.

SIGTERM (Slurm scancel or preemption, docker stop, Kubernetes): while the Reporter is
active in the main thread (``started()`` to ``close()``, i.e. the ``with`` block) and
SIGTERM's handler is the default, it sends ``interrupted`` (never ``discarded``; the folder
is kept, since a preempted job is usually requeued and resumed) within ``flush_timeout``,
then the process is killed by SIGTERM exactly as without reporting. A SIGTERM handler the
user or a framework installed is never replaced. See :mod:`trainrecord.sigterm`.

Public API:

* :class:`Reporter` ``(settings, state, *, run=None, seq=None, seq_path=None,
  flush_timeout=5.0)``: checks the settings and a first report at once (raises before any
  work starts; given ``run=``, a new run's start is then undone, :meth:`RunFolder.undo_start`,
  so the next start is a new run, not a resume), then ``started()``, ``progress(...)`` (at most once every
  ``settings.every`` seconds), ``initial_validation(result, which=None)``,
  ``epoch_end(entry)``, ``complete()``, ``interrupted(discarded=None)``, ``failed(exc)``,
  ``close()``; a context manager. ``run``: the run's folder (its seq clock is the default
  ``seq``; it must hold ``state.run_id``). Every call only updates the state and hands a
  copy to the background :class:`~trainrecord.report.sender.Sender`; none waits for the
  network. ``sent_at`` is the clock time when a report is built (seq may run ahead of the
  clock, §4).
* :func:`report_status` ``(settings, state, status, *, seq=None, seq_path=None)``: one
  synchronous ``snapshot`` report; raises
  :class:`~trainrecord.report.transport.ReportNotDelivered` (status code and first 300
  characters of the body) when it does not get through.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterator
from types import TracebackType
from typing import IO, Any

from trainrecord import sigterm
from trainrecord.arguments import ArgumentRefused, refuse
from trainrecord.errors import RecordRefused, RecordWriteError
from trainrecord.report.payload import (
    JobState,
    build_report,
    check_report,
    consistent_entry,
    encode_report,
    error_info,
    local_time,
    mended_entry,
)
from trainrecord.report.privacy import Secrets, exception_said
from trainrecord.report.run_folder import (
    HISTORY,
    METADATA,
    RunFolder,
    alone,
    hold,
    release,
    stored_run_id,
)
from trainrecord.report.sender import Sender
from trainrecord.report.seq import SeqClock, unwritable
from trainrecord.report.settings import ReportSettings
from trainrecord.report.transport import ReportNotDelivered, post_report

FINAL_STATUSES = ("complete", "interrupted", "discarded", "failed")
log = logging.getLogger("trainrecord.report")


def _seq_clock(seq: SeqClock | None, seq_path: str | os.PathLike[str] | None) -> SeqClock:
    return seq if seq is not None else SeqClock(seq_path)


class Reporter:
    """Reports one job (training, lesion or word set) from start to end, in the background.

    A context manager: entering calls :meth:`started`; leaving sends ``complete``, or
    ``interrupted``/``discarded`` on Ctrl+C, or ``failed`` on an exception, then
    :meth:`close` gives the final report ``flush_timeout`` seconds (a warning says when it
    was not delivered). ``close()`` returns whether the last report went out. No call
    waits for the network: each updates the state and hands a copy to a background thread.

    Args:
        settings: the :class:`~trainrecord.report.ReportSettings` (see
            :func:`~trainrecord.report.load_settings`); anything else raises ``TypeError``.
        state: the job's :class:`~trainrecord.report.JobState` (``run.job_state(...)``);
            anything else raises ``TypeError``. A first report built from it that the spec
            refuses (a negative lr, say) raises :class:`~trainrecord.errors.RecordRefused`
            before any work starts.
        run: the run's folder from :func:`~trainrecord.report.open_run` (default None).
            Given, its seq clock is the default one, the history of reported epochs is
            kept in its metadata.json for a resume, a new training run stopped by Ctrl+C
            before its first epoch is discarded (folder deleted), and a refused start is
            undone (the next start is a new run). Its run_id must be ``state.run_id``
            (else ``ValueError``), and its folder must still hold it (a discarded run's
            is refused: call ``open_run`` again).

    A Reporter started for a run another open Reporter of this process reports (a notebook
    cell run again) replaces it: the earlier one reports nothing more.
        seq: the :class:`~trainrecord.report.SeqClock` to number reports with (default
            None: ``seq_path``'s, else the run's, else one kept in memory only).
        seq_path: a file to keep the last seq in across processes (used when ``seq`` is
            None; default None).
        flush_timeout: seconds the final report gets at :meth:`close`, and on SIGTERM
            (default 5.0).

    Example (from README.md)::

        settings = load_settings("paths.toml")  # raises at once on a missing or unsafe setting
        run = open_run("models/pre/pre_s_49", {"mode": "pre", "batch_size": 100})
        state = run.job_state("training", config("training", mode="pre", batch_size=100,
                              lr=0.01), epochs_first=0, epochs_total=50)
        with Reporter(settings, state, run=run) as report:
            for epoch in range(len(state.history), 50):  # a resume skips the finished epochs
                for i, batch in enumerate(loader):
                    train_step(batch)
                    report.progress(phase="training", batch=i, batches=len(loader))
                report.epoch_end(epoch_entry("training", epoch=epoch, train_loss=train_loss,
                                             val_loss=val_loss))
    """

    def __init__(
        self,
        settings: ReportSettings,
        state: JobState,
        *,
        run: RunFolder | None = None,
        seq: SeqClock | None = None,
        seq_path: str | os.PathLike[str] | None = None,
        flush_timeout: float = 5.0,
    ) -> None:
        if run is not None and isinstance(state, JobState) and run.run_id != state.run_id:
            # A mix-up of two runs, not a refused start: neither run is undone.
            raise ArgumentRefused(
                "Reporter",
                "run",
                "run is another run's folder: state.run_id must be run.run_id "
                "(build the state with run.job_state)",
            )
        if run is not None and isinstance(state, JobState):
            _check_run_there(run)
        try:
            self._check(settings, state, run, seq, seq_path)
        except BaseException:
            # A refused start did no work: what open_run made for it (a new run's
            # metadata.json, its folder) is undone, so the next start is a new run and not
            # a resume of this one. Never a resumed run, nor anything that existed before.
            if run is not None:
                token = getattr(settings, "token", None)
                run.undo_start(Secrets(token=token if isinstance(token, str) else None))
            raise
        self.sender = Sender(settings, flush_timeout=flush_timeout)
        self._active: IO[bytes] | None = None
        self._closed = False
        self._superseded = False  # a newer Reporter of this process reports the run
        self._said_superseded = False
        _supersede_earlier(self)
        _OPEN.add(self)
        if run is not None:
            run.spend()  # accepted: from now on, the run's folder is never undone
            self._active, others = hold(run.folder)
            if others:
                log.warning(
                    "trainrecord report: another process is reporting run %s/%s now (the "
                    "same run_id): the receiver keeps whichever report comes last, so its "
                    "status will go back and forth; start one process per run folder",
                    run.group,
                    run.name,
                )

    def _check(
        self,
        settings: ReportSettings,
        state: JobState,
        run: RunFolder | None,
        seq: SeqClock | None,
        seq_path: str | os.PathLike[str] | None,
    ) -> None:
        """Check the job at once (raise before any work starts) and set the Reporter up."""
        _check_arguments("Reporter", settings, state)
        self.settings = settings
        self.state = state
        self.run = run
        if seq is None and seq_path is None and run is not None:
            seq = run.seq_clock()
        self.seq = _seq_clock(seq, seq_path)
        self.secrets = Secrets(token=settings.token)
        # Reentrant: the SIGTERM handler runs in the main thread, maybe inside _seal_final.
        self._lock = threading.RLock()
        self._build_lock = threading.Lock()
        self._sealed = False  # the last report is built: no other may take a seq after it
        self._last_queued = float("-inf")
        self._final = False
        self._finishing = False  # the job's thread builds the final report: SIGTERM waits
        # Refuse a job whose reports could never be sent, before any work starts.
        check_report(
            build_report(
                state.snapshot(),
                event="started",
                status="in progress",
                seq=max(1, self.seq.last + 1),
                sent_at=local_time(),
            ),
            self.secrets,
        )

    # -- the queue -------------------------------------------------------------------
    def _encode(self, snap: JobState, event: str, status: str, seq: int) -> bytes:
        report = build_report(snap, event=event, status=status, seq=seq, sent_at=local_time())
        return encode_report(report, self.secrets)

    def _queue(self, event: str, status: str) -> None:
        snap = self.state.snapshot()
        self._last_queued = time.monotonic()

        def build() -> bytes | None:
            with self._build_lock:
                if self._sealed:
                    return None  # the final report took its seq: nothing follows it
                seq = self.seq.next()
            return self._encode(snap, event, status, seq)

        self.sender.submit(build)

    # -- events ----------------------------------------------------------------------
    def started(self) -> None:
        """The job starts (or resumes with the same run_id). From now until :meth:`close`,
        SIGTERM sends ``interrupted`` (main thread, default SIGTERM handler only)."""
        self.state.running = True
        sigterm.activate(
            self,
            sigterm.Stop(
                self._sigterm_begin,
                self._sigterm_end,
                self.sender.flush_timeout,
                busy=lambda: self._finishing,
            ),
        )
        self._queue("started", "in progress")

    def progress(
        self,
        *,
        phase: str | None = None,
        batch: int | None = None,
        batches: int | None = None,
        words_done: int | None = None,
    ) -> bool:
        """Record where the job is; queue a progress report at most once every ``every``
        seconds (§3), whatever the caller: there is no way past it (a job that wants more
        progress reports sets a smaller ``every``).

        Costs about a microsecond when no report is due. Returns whether one was queued.
        """
        if self._final:
            if self._superseded:
                self._say_superseded()
            return False  # the final report is queued; nothing may supersede it
        state = self.state
        if phase is not None:
            state.phase = phase
        state.batch = batch
        if batches is not None:
            state.batches = batches
        if words_done is not None:
            state.words_done = words_done
        if time.monotonic() - self._last_queued < self.settings.every:
            return False
        self._queue("progress", "in progress")
        return True

    def initial_validation(self, result: dict[str, Any], which: str | None = None) -> None:
        """Store the initial validation (lesion: ``which`` is ``intact`` or ``lesioned``).

        No report is sent for it (§3): the next progress report carries it. Never raises
        for a broken result: every later report carries it, so a result the spec refuses is
        mended as an epoch entry is (a NaN loss is null, with a warning), or, when it cannot
        be (not a dict), reported as null with a warning.
        """
        kept = consistent_entry(
            self.state.kind,
            self.state.config,
            mended_entry(
                self.state.kind, result, self.secrets, "initial_validation", validation=True
            ),
            self.secrets,
            "initial_validation",
            validation=True,
        )
        if self.state.kind == "lesion":
            if which not in ("intact", "lesioned"):
                raise refuse(
                    "Reporter.initial_validation",
                    "which",
                    "'intact' or 'lesioned' (a lesion run's validation is of one of the two)",
                    which,
                )
            current = dict(self.state.initial_validation or {"intact": None, "lesioned": None})
            current[which] = kept
            if current["intact"] is None:
                # the report has no place for a lesioned result without the intact one
                # (initial_validation is null until the intact model is validated, §5.4)
                if current["lesioned"] is not None:
                    log.warning(
                        "trainrecord report: initial_validation: the lesioned model's result "
                        "is not reported, since the report carries it only beside the intact "
                        "model's, and there is none (not given yet, or reported as null); "
                        "call initial_validation(result, 'intact') first. The run and its "
                        "reports go on"
                    )
                self.state.initial_validation = None
            else:
                self.state.initial_validation = current
        else:
            self.state.initial_validation = kept

    def epoch_end(self, entry: dict[str, Any]) -> None:
        """An epoch finished training and validation and its checkpoint is saved.

        Never raises for a broken entry: every later report carries the whole history, so
        an entry the spec refuses is mended (values nulled with a warning: also a word
        result of a pre or illit run, a mean over no lesioned units) or, when it cannot be
        (``epoch`` not an integer or not after the last entry's, more word-selective
        lesioned units than lesioned units), left out of the history with a warning naming
        the rule, the field and what to do; the event is still reported."""
        if self._final:
            if self._superseded:
                self._say_superseded()
            return
        last = self.state.history[-1].get("epoch") if self.state.history else None
        kept = consistent_entry(
            self.state.kind,
            self.state.config,
            mended_entry(self.state.kind, entry, self.secrets),
            self.secrets,
            previous_epoch=last if isinstance(last, int) else None,
        )
        if kept is not None:  # else left out, with a warning: it would poison every report
            self.state.history.append(kept)
            self._keep_history()
        self.state.phase = None
        self.state.batch = None
        self.state.batches = None  # batches counts the batches of a phase; there is none
        self._queue("epoch_end", "in progress")

    def _keep_history(self) -> None:
        """Keep the history in the run folder's metadata.json (``run=`` given), for a resume
        or a snapshot from another process; a failure is a warning, never an exception. A
        folder that cannot be written (a read-only mount, a full disk) is said once, not at
        every epoch (:func:`~trainrecord.report.seq.unwritable`)."""
        if self.run is None:
            return
        try:
            self.run.update(**{HISTORY: [dict(e) for e in self.state.history]})
        except RecordWriteError as exc:
            unwritable(exc)
        except Exception as exc:  # reporting never stops a run
            log.warning(
                "trainrecord report: the history was not kept in metadata.json: %s",
                exception_said(exc, self.secrets),
            )

    def _finish(self, event: str, status: str) -> None:
        """Build the final report now, in the job's thread, and send it: its seq is taken
        when the job ends, not when the sender gets to it. Reports queued before and not
        yet built are dropped (the final one holds the whole state). Taken later, a job's
        final report still queued behind a slow request after close() gave up took a seq
        above that of the next attempt's ``started`` (a retry in the same process), and
        the receiver showed the old attempt's ``failed`` while the new one trained."""
        with self._final_report():
            if not self._seal_final():
                return
            snap = self.state.snapshot()
            with self._build_lock:
                self._sealed = True
                try:
                    seq = self.seq.next()
                except Exception as exc:  # reporting never stops the job
                    log.warning(
                        "trainrecord report: no seq for the final report (%s)",
                        exception_said(exc, self.secrets),
                    )
                    return
            self._send_final(snap, event, status, seq)

    @contextlib.contextmanager
    def _final_report(self) -> Iterator[None]:
        """The job's thread builds and queues the final report: a SIGTERM meanwhile waits
        for it (``busy``; it found the report marked final and sent nothing, so the
        receiver stayed on in progress), and one raised here (Ctrl+C while the seq file
        is read) leaves no report marked final that was never queued."""
        self._finishing = True
        submitted = self.sender.submitted
        try:
            yield
        except BaseException:
            if self.sender.submitted == submitted:  # nothing went out: a later final may
                with self._lock:
                    self._final = self._sealed = False
            raise
        finally:
            self._finishing = False
            sigterm.settle()

    def _send_final(self, snap: JobState, event: str, status: str, seq: int) -> None:
        try:
            body = self._encode(snap, event, status, seq)
        except Exception as exc:  # reporting never stops the job
            log.warning(
                "trainrecord report: the final report could not be built (%s)",
                exception_said(exc, self.secrets),
            )
            return
        self.sender.submit(lambda: body)

    def _seal_final(self) -> bool:
        """Mark the final report as queued; False when one already was."""
        with self._lock:
            if self._final:
                return False
            self._final = True
        self.state.running = False
        return True

    def complete(self) -> None:
        """The job finished."""
        self.state.finished_at = local_time()
        self._finish("complete", "complete")

    def _why_not_discarded(self) -> str | None:
        """Why Ctrl+C now would not discard the run (None: it would; see the module doc)."""
        if self.run is None:
            return "the Reporter was not given the run folder (run=)"
        if self.state.kind != "training":
            return f"a {self.state.kind} run is never discarded, only a training run"
        if self.run.resumed:
            return "the run was resumed (its folder holds an earlier session's work)"
        if not self.run.new_folder:
            return "the run folder existed before this start (it may hold other files)"
        if self.state.history:
            return "the run finished an epoch"
        return None

    def interrupted(self, discarded: bool | None = None) -> None:
        """Ctrl+C: ``interrupted``, or ``discarded`` with the run folder deleted.

        ``discarded=None`` (the default) discards exactly when the run may be discarded (see
        the module docstring); ``False`` never discards; ``True`` asks to, and is refused
        with a warning (status ``interrupted``, folder kept) when the run may not be.
        """
        why_not = self._why_not_discarded()
        if why_not is None and discarded is not False and not alone(self._active):
            why_not = "another process is reporting the run from its folder now"
            if not discarded:  # asked or not: a folder in use is never deleted
                log.warning(
                    "trainrecord report: the run was not discarded (its folder is kept and "
                    "reported interrupted): %s",
                    why_not,
                )
        if discarded and why_not:
            log.warning(
                "trainrecord report: the run was not discarded (its folder is kept and "
                "reported interrupted): %s",
                why_not,
            )
        if discarded is False or why_not:
            self._finish("interrupted", "interrupted")
            return
        with self._final_report():
            if self._seal_final():
                self._discard()

    def _discard(self) -> None:
        """Take the final seq, delete the run folder, and send ``discarded`` (or
        ``interrupted`` when the folder could not be deleted). Runs in the job's thread so
        the folder is gone however the network behaves; the seq file goes with it, so the
        report is built here and no later build may take a seq (the sender skips them)."""
        run = self.run
        assert run is not None
        snap = self.state.snapshot()
        seq: int | None = None
        with self._build_lock:
            self._sealed = True
            try:
                seq = self.seq.next()
            except Exception as exc:  # the report is lost, the discard still happens
                log.warning(
                    "trainrecord report: no seq for the final report (%s)",
                    exception_said(exc, self.secrets),
                )
            try:
                run.discard()
            except OSError as exc:
                log.warning(
                    "trainrecord report: the run folder could not be deleted (%s); "
                    "the run is reported interrupted",
                    exception_said(exc, self.secrets),
                )
        if seq is None:
            return
        status = "interrupted" if run.metadata_path.exists() else "discarded"
        self._send_final(snap, "interrupted", status, seq)

    def failed(self, exc: BaseException) -> None:
        """An exception ended the job; its class and scrubbed message go in error."""
        self.state.error = error_info(exc, self.secrets)
        self._finish("failed", "failed")

    def _sigterm_begin(self) -> None:
        self.interrupted(discarded=False)  # resumable: never discarded, never deleted

    def _sigterm_end(self, deadline: float) -> None:
        if not self.close(max(0.0, deadline - time.monotonic())):
            log.warning(
                "trainrecord report: SIGTERM: the interrupted report was not delivered "
                "within %g s; the receiver keeps the last report it got",
                self.sender.flush_timeout,
            )

    def close(self, timeout: float | None = None) -> bool:
        """Give the last report a bounded time to go out; returns whether it did. SIGTERM's
        handler is restored (see :meth:`started`)."""
        self._closed = True
        _OPEN.discard(self)
        sigterm.deactivate(self)
        try:
            return self.sender.close(timeout)
        finally:
            release(self._active)  # the run is no longer reported from here
            self._active = None

    def _supersede(self, by: Reporter) -> None:
        """A newer Reporter of this process reports the same run (a notebook cell that
        made it run again): this one sends nothing more, and no longer holds the run or
        answers SIGTERM. Before, it did both for as long as the process lived: the newer
        one was warned that "another process" reported the run, and a SIGTERM after the
        newer one had sent ``complete`` (a kernel stopped by Slurm or docker) made this
        one send ``interrupted``, which the receiver kept as the run's last word."""
        with self._lock:
            self._final = True  # no report of this one's is queued from now on
        with self._build_lock:
            self._sealed = True  # nor is one queued before built
        self._superseded = True
        self.state.running = False
        self.close(0.0)
        run = f"{self.run.group}/{self.run.name}" if self.run is not None else self.state.run_id
        log.warning(
            "trainrecord report: an earlier Reporter of this process was still reporting run "
            "%s (not closed: a notebook cell run again?); it reports nothing more, and the "
            "new one reports the run. Close a Reporter when its job ends (or use it in a "
            "with block)",
            run,
        )

    def _say_superseded(self) -> None:
        """Say once that this Reporter's calls report nothing (see :meth:`_supersede`)."""
        if not self._said_superseded:
            self._said_superseded = True
            log.warning(
                "trainrecord report: this Reporter was replaced by a newer one reporting the "
                "same run in this process: its calls report nothing; call the new one's"
            )

    def __repr__(self) -> str:
        """The run reported and how far the Reporter is (a notebook shows it); no secret."""
        state = getattr(self, "state", None)
        run = getattr(self, "run", None)
        where = (
            f"{run.group}/{run.name}"
            if run is not None
            else (f"{state.group}/{state.name}" if state is not None else "?")
        )
        if getattr(self, "_superseded", False):
            now = "replaced by a newer Reporter of the run"
        elif getattr(self, "_closed", False):
            now = "closed"
        elif getattr(self, "_final", False):
            now = "final report queued"
        else:
            now = "reporting"
        run_id = state.run_id if state is not None else "?"
        return f"<Reporter {where} (run_id {run_id}): {now}>"

    def __enter__(self) -> Reporter:
        self.started()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None or (isinstance(exc, SystemExit) and exc.code in (0, None)):
            self.complete()
        elif isinstance(exc, KeyboardInterrupt):
            self.interrupted()
        else:
            self.failed(exc)
        if not self.close():
            log.warning(
                "trainrecord report: the final report was not delivered within %g s of "
                "the job's end (the server did not answer in time); it is still sent while "
                "this process lives, and until it gets through the receiver keeps the last "
                "report it got",
                self.sender.flush_timeout,
            )


_OPEN: weakref.WeakSet[Reporter] = weakref.WeakSet()
"""The Reporters of this process not closed yet."""


def _supersede_earlier(reporter: Reporter) -> None:
    """Let the open Reporters of this process that report ``reporter``'s run (its run_id)
    go: the newest Reporter of a run is the one that reports it (see
    :meth:`Reporter._supersede`)."""
    for other in list(_OPEN):
        if other is not reporter and other.state.run_id == reporter.state.run_id:
            other._supersede(reporter)


def _check_run_there(run: RunFolder) -> None:
    """Refuse a run whose folder no longer holds it: a discarded run (Ctrl+C before its
    first epoch ended deleted its folder), one whose folder was removed, or started again
    since by ``open_run`` (another run_id). A Reporter given it sent nothing that got
    through (every seq and metadata.json write failed: the folder is gone) while the job
    trained on, with a warning at every epoch, and the receiver kept ``discarded``."""
    stored = stored_run_id(run.folder)
    if stored == run.run_id:
        return
    where = f"{run.group}/{run.name}"
    if stored is None:
        why = (
            f"the run {where} (run_id {run.run_id}) is no longer in its folder ({METADATA} "
            "is gone): a Ctrl+C before its first epoch ended discarded it (the folder was "
            "deleted, the receiver told 'discarded'), or the folder was removed"
        )
    else:
        why = (
            f"the folder of run {where} holds another run now (run_id {stored}, not "
            f"{run.run_id}): it was started again by open_run"
        )
    raise ArgumentRefused(
        "Reporter",
        "run",
        f"{why}. Start the run again: run = open_run(folder, metadata), state = "
        "run.job_state(...), then a new Reporter(settings, state, run=run) (a notebook: "
        "run the cell that calls open_run again)",
    )


def _check_arguments(call: str, settings: object, state: object) -> None:
    """A TypeError naming the argument and what to pass, for a wrong ``settings`` or
    ``state`` (``Reporter(settings, None)`` raised "'NoneType' object has no attribute
    'snapshot'" from deep inside)."""
    if not isinstance(settings, ReportSettings):
        raise ArgumentRefused(
            call,
            "settings",
            f"settings must be a ReportSettings (see load_settings), got {type(settings).__name__}",
        )
    if not isinstance(state, JobState):
        raise ArgumentRefused(
            call,
            "state",
            "state must be the JobState of the job being reported (run.job_state(kind, "
            "config, ...) for a run folder from open_run, or JobState(kind=..., run_id=..., "
            f"name=..., config=...)), got {type(state).__name__}",
        )


def report_status(
    settings: ReportSettings,
    state: JobState,
    status: str,
    *,
    seq: SeqClock | None = None,
    seq_path: str | os.PathLike[str] | None = None,
) -> int:
    """Send one ``snapshot`` report now; return its seq or raise :class:`ReportNotDelivered`.

    ``status`` is any status of §6 (``stopped``: recorded as running but its process is
    gone). A snapshot is made outside the training process, so phase, batch, batches and
    eta_seconds are null; epoch is ``epochs_first + epochs_completed`` when ``status`` is
    ``in progress`` (and epochs_first is known), else null. sent_at is the clock time now,
    whatever seq is.

    Args:
        settings: the :class:`~trainrecord.report.ReportSettings`; anything else raises
            ``TypeError``.
        state: the job's :class:`~trainrecord.report.JobState` (its ``running`` is sent as
            false); anything else raises ``TypeError``.
        status: the report's status, one of §6 (``in progress``, ``complete``,
            ``interrupted``, ``discarded``, ``failed``, ``stopped``); a report the spec
            refuses raises :class:`~trainrecord.errors.RecordRefused` and is not sent.
        seq: the :class:`~trainrecord.report.SeqClock` to take the seq from (default None:
            ``seq_path``'s, else one kept in memory only); pass ``run.seq_clock()`` so the
            snapshot is newer than the job's own reports.
        seq_path: a file keeping the last seq across processes (used when ``seq`` is None).

    Raises :class:`~trainrecord.report.transport.ReportNotDelivered` (status code and the
    first 300 characters of the body) when the report does not get through::

        run = open_run("models/pre/pre_s_49", create=False)  # never starts a new run
        state = run.job_state("training", config("training", mode="pre", batch_size=100,
                              lr=0.01), epochs_first=0, epochs_total=50)
        report_status(load_settings("paths.toml"), state, "stopped", seq=run.seq_clock())
    """
    _check_arguments("report_status", settings, state)
    clock = _seq_clock(seq, seq_path)
    snap = state.snapshot()
    snap.running = False
    number = clock.next()
    report = build_report(snap, event="snapshot", status=status, seq=number, sent_at=local_time())
    try:
        body = encode_report(report, Secrets(token=settings.token))
    except RecordRefused:
        raise
    outcome = post_report(settings, body)
    if not outcome.ok:
        raise ReportNotDelivered(outcome)
    return number
