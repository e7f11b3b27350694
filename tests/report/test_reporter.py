"""The Reporter over real loopback HTTP and real run folders: what Ctrl+C sends and does to
the run folder (§3, §6: only a training run that was not resumed and finished no epoch is
discarded, and then its folder is really deleted; anything else is interrupted and kept),
sent_at from the clock (not from seq), and epoch_end clearing the phase's batch counts."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.report.conftest import (
    TLSFiles,
    lesion_state,
    settings_for,
    training_epoch,
    training_state,
    wordset_state,
)
from tests.report.servers import Behaviour, TestServer, wait_until
from trainrecord.report import (
    JobState,
    Reporter,
    ReportServer,
    RunFolder,
    SeqClock,
    epoch_entry,
    open_run,
    report_status,
    validation_entry,
)
from trainrecord.report.run_folder import METADATA

FAST = 1e-9
"""An every that makes each progress() call due (the Reporter has no way past every)."""


def _state(run: RunFolder, kind: str = "training", **over: object) -> JobState:
    """A job state of ``kind`` for the run in ``run`` (its run_id, name and group)."""
    make = {"training": training_state, "lesion": lesion_state, "wordset": wordset_state}[kind]
    return make(run_id=run.run_id, name=run.name, group=run.group, **over)


def _ctrl_c(receiver: ReportServer, state: JobState, **kw: object) -> dict:
    """Start the job, press Ctrl+C; the last report the receiver stored."""
    with pytest.raises(KeyboardInterrupt), Reporter(settings_for(receiver.url), state, **kw):
        raise KeyboardInterrupt
    latest = receiver.store.latest(state.run_id)
    assert latest is not None
    return latest


def _earlier_session(folder: Path) -> RunFolder:
    """A run started in an earlier session that saved a checkpoint; the new start resumes it."""
    first = open_run(folder, {"mode": "pre"})
    (folder / "epoch_0.pt").write_bytes(b"weights of epoch 0")
    again = open_run(folder)
    assert again.resumed and again.run_id == first.run_id
    return again


def test_ctrl_c_before_the_first_epoch_discards_a_new_training_run_and_its_folder(
    receiver: ReportServer, tmp_path: Path
) -> None:
    folder = tmp_path / "models" / "pre" / "pre_s_49"
    run = open_run(folder, {"mode": "pre"})
    latest = _ctrl_c(receiver, _state(run), run=run)
    assert (latest["event"], latest["status"]) == ("interrupted", "discarded")
    assert not folder.exists()  # really deleted: it can't be resumed
    again = open_run(folder)
    assert again.created and again.run_id != run.run_id  # its next start is a new run


def test_the_folder_is_deleted_at_once_even_while_the_server_hangs(
    hostile: Callable[..., TestServer], tmp_path: Path
) -> None:
    folder = tmp_path / "models" / "pre" / "pre_s_49"
    run = open_run(folder)
    server = hostile(Behaviour(mode="hang"))
    reporter = Reporter(settings_for(server.url, every=FAST), _state(run), run=run)
    reporter.started()
    assert server.arrived.wait(10)  # the server holds the first report
    reporter.progress(phase="training", batch=1, batches=10)  # waits behind it
    reporter.interrupted()
    assert not folder.exists()  # deleted now, not when the network allows
    server.behaviour = Behaviour()
    server.release.set()
    wait_until(lambda: len(server.requests) == 2 and reporter.sender.idle)
    assert reporter.close(10)
    sent = [json.loads(r.body) for r in server.requests]
    assert [(b["event"], b["status"]) for b in sent] == [
        ("started", "in progress"),
        ("interrupted", "discarded"),
    ]
    assert sent[0]["seq"] < sent[1]["seq"] and reporter.sender.refused == 0
    assert not folder.exists()  # nothing wrote into the deleted folder afterwards


@pytest.mark.parametrize("with_run", [True, False])
def test_ctrl_c_never_deletes_a_resumed_run(
    receiver: ReportServer, tmp_path: Path, with_run: bool
) -> None:
    """Epochs were done in an earlier session, but the job passed no history."""
    folder = tmp_path / "models" / "pre" / "pre_s_49"
    run = _earlier_session(folder)
    kw: dict[str, object] = {"run": run} if with_run else {"seq": run.seq_clock()}
    latest = _ctrl_c(receiver, _state(run), **kw)
    assert (latest["event"], latest["status"]) == ("interrupted", "interrupted")
    assert (folder / "epoch_0.pt").read_bytes() == b"weights of epoch 0"
    assert open_run(folder).run_id == run.run_id


def test_asking_to_discard_a_resumed_run_keeps_it_and_says_why(
    receiver: ReportServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "models" / "pre" / "pre_s_49"
    run = _earlier_session(folder)
    state = _state(run)
    reporter = Reporter(settings_for(receiver.url), state, run=run)
    reporter.started()
    with caplog.at_level(logging.WARNING, logger="trainrecord.report"):
        reporter.interrupted(discarded=True)
    assert reporter.close(10)
    assert receiver.store.latest(state.run_id)["status"] == "interrupted"
    assert (folder / METADATA).exists() and (folder / "epoch_0.pt").exists()
    assert any("resumed" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("kind", ["lesion", "wordset"])
def test_a_lesion_run_or_word_set_is_interrupted_not_discarded(
    receiver: ReportServer, tmp_path: Path, kind: str
) -> None:
    folder = tmp_path / ("wordsets" if kind == "wordset" else "english") / "run"
    run = open_run(folder)
    latest = _ctrl_c(receiver, _state(run, kind), run=run)
    assert (latest["event"], latest["status"]) == ("interrupted", "interrupted")
    assert (folder / METADATA).exists() and open_run(folder).run_id == run.run_id


def test_a_new_run_with_a_finished_epoch_is_interrupted_and_kept(
    receiver: ReportServer, tmp_path: Path
) -> None:
    folder = tmp_path / "models" / "pre" / "pre_s_49"
    run = open_run(folder)
    state = _state(run)
    with (
        pytest.raises(KeyboardInterrupt),
        Reporter(settings_for(receiver.url), state, run=run) as r,
    ):
        r.epoch_end(training_epoch(0))
        raise KeyboardInterrupt
    assert receiver.store.latest(state.run_id)["status"] == "interrupted"
    assert open_run(folder).run_id == run.run_id


def test_without_its_run_folder_a_run_is_never_reported_discarded(
    receiver: ReportServer,
) -> None:
    """The Reporter cannot delete a folder it was not given, so it never claims it did."""
    latest = _ctrl_c(receiver, training_state())
    assert (latest["event"], latest["status"]) == ("interrupted", "interrupted")


def _seconds_from_now(sent_at: str) -> float:
    return abs(datetime.fromisoformat(sent_at).timestamp() - time.time())


def test_sent_at_is_the_clock_time_even_when_the_stored_seq_is_ahead(
    receiver: ReportServer, tmp_path: Path
) -> None:
    ahead = time.time_ns() // 1_000_000 + 86_400_000  # an earlier process's clock ran a day ahead
    clock = SeqClock(tmp_path / "report_seq.json", last_seq=ahead)
    state = training_state()
    reporter = Reporter(settings_for(receiver.url), state, seq=clock)
    reporter.started()
    wait_until(lambda: reporter.sender.sent >= 1)
    started = receiver.store.latest(state.run_id)
    reporter.complete()
    assert reporter.close(10)
    latest = receiver.store.latest(state.run_id)
    assert started["seq"] > ahead and latest["seq"] > started["seq"]
    assert latest["status"] == "complete"
    for report in (started, latest):
        assert _seconds_from_now(report["sent_at"]) < 120, report["sent_at"]


def test_a_snapshot_sent_at_is_the_clock_time_even_when_the_stored_seq_is_ahead(
    receiver: ReportServer, tmp_path: Path
) -> None:
    ahead = time.time_ns() // 1_000_000 + 86_400_000
    clock = SeqClock(tmp_path / "report_seq.json", last_seq=ahead)
    state = training_state()
    seq = report_status(settings_for(receiver.url), state, "interrupted", seq=clock)
    latest = receiver.store.latest(state.run_id)
    assert seq > ahead and latest["seq"] == seq
    assert _seconds_from_now(latest["sent_at"]) < 120, latest["sent_at"]


def test_epoch_end_clears_the_phase_the_batch_and_the_number_of_batches(
    receiver: ReportServer,
) -> None:
    state = training_state()
    reporter = Reporter(settings_for(receiver.url, every=FAST), state)
    reporter.started()
    wait_until(lambda: reporter.sender.sent >= 1)
    reporter.progress(phase="training", batch=5, batches=100)
    wait_until(lambda: reporter.sender.sent >= 2)
    progress = receiver.store.latest(state.run_id)["progress"]
    assert (progress["phase"], progress["batch"], progress["batches"]) == ("training", 5, 100)
    reporter.epoch_end(training_epoch(0))
    wait_until(lambda: reporter.sender.sent >= 3)
    latest = receiver.store.latest(state.run_id)
    assert latest["event"] == "epoch_end"
    progress = latest["progress"]
    assert (progress["phase"], progress["batch"], progress["batches"]) == (None, None, None)
    assert progress["epoch"] == 1 and progress["epochs_completed"] == 1
    reporter.complete()
    assert reporter.close(10)


@pytest.mark.parametrize(
    ("status", "epoch"),
    [("in progress", 53), ("stopped", None), ("interrupted", None), ("complete", None)],
)
def test_a_snapshot_of_a_run_in_progress_carries_its_epoch(
    receiver: ReportServer, status: str, epoch: int | None
) -> None:
    """epoch = epochs_first + epochs_completed while the run is in progress (§5.2), also in a
    snapshot from another process; null when not running. phase and the batches stay null:
    only the training process knows them."""
    state = training_state(
        epochs_first=50, epochs_total=10, history=[training_epoch(e) for e in range(50, 53)]
    )
    state.phase, state.batch, state.batches = "training", 5, 100  # stale, from another process
    if status == "complete":
        state.finished_at = state.started_at
    report_status(settings_for(receiver.url), state, status)
    progress = receiver.store.latest(state.run_id)["progress"]
    assert progress["epoch"] == epoch and progress["epochs_completed"] == 3
    assert (progress["phase"], progress["batch"], progress["batches"]) == (None, None, None)


def test_a_snapshot_without_epochs_first_has_no_epoch(receiver: ReportServer) -> None:
    state = training_state(epochs_first=None)
    report_status(settings_for(receiver.url), state, "in progress")
    assert receiver.store.latest(state.run_id)["progress"]["epoch"] is None


def test_a_run_folder_of_another_run_is_refused(receiver: ReportServer, tmp_path: Path) -> None:
    run = open_run(tmp_path / "models" / "pre" / "pre_s_49")
    with pytest.raises(ValueError, match=r"run\.job_state"):
        Reporter(settings_for(receiver.url), training_state(), run=run)
    assert (run.folder / METADATA).exists()


@pytest.mark.parametrize("metadata_first", [False, True])
def test_ctrl_c_never_deletes_a_folder_that_existed_before_the_run(
    receiver: ReportServer, tmp_path: Path, metadata_first: bool
) -> None:
    """A legacy folder (files of an older tool, maybe a metadata.json without run_id)."""
    folder = tmp_path / "models" / "pre" / "pre_s_49"
    folder.mkdir(parents=True)
    (folder / "epoch_3.pt").write_bytes(b"weights of an older tool")
    if metadata_first:
        (folder / METADATA).write_text('{"mode": "pre"}\n', "utf-8")
    run = open_run(folder)
    assert run.created and not run.new_folder
    latest = _ctrl_c(receiver, _state(run), run=run)
    assert (latest["event"], latest["status"]) == ("interrupted", "interrupted")
    assert (folder / "epoch_3.pt").read_bytes() == b"weights of an older tool"
    assert open_run(folder).run_id == run.run_id


@pytest.mark.parametrize(
    ("field", "bad", "said"),
    [
        ("train_loss", float("nan"), "train_loss is nan"),  # a diverged epoch
        ("val_accuracy_images", 150.0, "val_accuracy_images"),  # out of range
    ],
)
def test_a_broken_entry_value_is_sent_as_null_and_the_run_still_completes(
    receiver: ReportServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    field: str,
    bad: float,
    said: str,
) -> None:
    run = open_run(tmp_path / "models" / "pre" / field, {"mode": "pre"})
    state = _state(run)
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord.report"),
        Reporter(settings_for(receiver.url), state, run=run) as reporter,
    ):
        reporter.epoch_end(epoch_entry("training", epoch=0, **{field: bad}))
        reporter.epoch_end(epoch_entry("training", epoch=1, **{field: 0.5}))
    latest = receiver.store.latest(state.run_id)
    assert latest is not None and (latest["event"], latest["status"]) == ("complete", "complete")
    assert [e[field] for e in latest["history"]] == [None, 0.5]
    assert any(said in r.getMessage() for r in caplog.records)


def test_a_non_finite_validation_value_is_null() -> None:
    assert validation_entry("training", val_loss=float("inf"))["val_loss"] is None


def test_the_history_is_kept_for_a_snapshot_and_a_resume(
    receiver: ReportServer, tmp_path: Path
) -> None:
    folder = tmp_path / "models" / "pre" / "kept"
    run = open_run(folder, {"mode": "pre"})
    with (
        pytest.raises(KeyboardInterrupt),
        Reporter(settings_for(receiver.url), _state(run), run=run) as reporter,
    ):
        for epoch in range(2):
            reporter.epoch_end(training_epoch(epoch))
        raise KeyboardInterrupt
    # another process takes a snapshot of the run, passing no history of its own
    other = open_run(folder, create=False)
    config = _state(other).config
    snapshot = other.job_state("training", config, epochs_first=0, epochs_total=80)
    report_status(settings_for(receiver.url), snapshot, "interrupted")
    latest = receiver.store.latest(run.run_id)
    assert latest is not None and latest["event"] == "snapshot"
    assert [e["epoch"] for e in latest["history"]] == [0, 1]  # not wiped by the snapshot
    assert latest["progress"]["epochs_completed"] == 2
    resumed = open_run(folder)  # the next start carries on with the same two epochs
    state = resumed.job_state("training", config, epochs_first=0, epochs_total=80)
    assert [e["epoch"] for e in state.history] == [0, 1]


@pytest.mark.parametrize(
    ("status", "words_done", "fraction"),
    [
        ("in progress", None, None),
        ("stopped", None, None),
        ("interrupted", None, None),
        ("failed", None, None),
        ("discarded", None, None),
        ("complete", 1000, 1.0),
    ],
)
def test_a_snapshot_of_an_unfinished_word_set_has_no_words_done(
    https_receiver: ReportServer, tls: TLSFiles, status: str, words_done: Any, fraction: Any
) -> None:
    """report.consistency.words_done: §5.3 words_done is "null in a snapshot of an
    unfinished set" (and so is fraction, its share of words_total); a snapshot of a complete
    set carries it. Before, every snapshot copied the job's words_done (300 of 1000)."""
    state = wordset_state(words_done=1000 if status == "complete" else 300)
    if status == "complete":
        state.finished_at = state.started_at
    if status == "failed":
        state.error = {"type": "OSError", "message": "font missing"}
    report_status(settings_for(https_receiver.url, ca=tls.ca), state, status)
    progress = https_receiver.store.latest(state.run_id)["progress"]
    assert progress == {"words_done": words_done, "words_total": 1000, "fraction": fraction}


def test_the_word_set_s_own_reports_carry_words_done(
    https_receiver: ReportServer, tls: TLSFiles
) -> None:
    """report.consistency.words_done: only a snapshot leaves words_done out; the generating
    process's own reports (here an interrupted one) carry it."""
    state = wordset_state(words_done=300)
    settings = settings_for(https_receiver.url, ca=tls.ca, every=FAST)
    with Reporter(settings, state, seq=SeqClock()) as reporter:
        reporter.progress(words_done=300)
        reporter.interrupted()
    progress = https_receiver.store.latest(state.run_id)["progress"]
    assert progress == {"words_done": 300, "words_total": 1000, "fraction": 0.3}


class _NoStr(Exception):
    def __str__(self) -> str:
        raise ValueError("no str")


def test_an_exception_whose_str_fails_is_still_reported_failed(
    receiver: ReportServer, tmp_path: Path
) -> None:
    """Operator probe F2: the reporter's own ValueError replaced the job's exception and no
    failed report was sent (the receiver stayed on "in progress")."""
    run = open_run(tmp_path / "models" / "pre" / "s20", {"mode": "pre"})
    state = _state(run)
    with pytest.raises(_NoStr), Reporter(settings_for(receiver.url), state, run=run):
        raise _NoStr
    latest = receiver.store.latest(state.run_id)
    assert latest is not None and (latest["event"], latest["status"]) == ("failed", "failed")
    assert latest["error"] == {
        "type": "_NoStr",
        "message": "<str() of the exception failed: ValueError>",
    }


_OTHER_PROCESS = """
import sys
from trainrecord.report import Reporter, ReportSettings, open_run
from tests.report.conftest import TOKEN, training_state
url, folder = sys.argv[1], sys.argv[2]
run = open_run(folder)
state = training_state(run_id=run.run_id, name=run.name, group=run.group)
with Reporter(ReportSettings(url=url, every=60.0, token=TOKEN), state, run=run):
    print("ready", flush=True)
    sys.stdin.readline()
print("done", flush=True)
"""


def test_ctrl_c_never_deletes_a_folder_another_process_is_reporting_from(
    receiver: ReportServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Operator probe F1: two jobs started on one folder; Ctrl+C on the one that made it,
    before its first epoch, deleted the folder under the other (still training) and the
    receiver ended on "discarded" for a run that then finished."""
    folder = tmp_path / "models" / "pre" / "s11e"
    run = open_run(folder, {"mode": "pre"})
    assert run.created and run.new_folder
    other = subprocess.Popen(
        [sys.executable, "-c", _OTHER_PROCESS, receiver.url, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert other.stdout is not None and other.stdout.readline() == "ready\n"
        with caplog.at_level(logging.WARNING, logger="trainrecord.report"):
            latest = _ctrl_c(receiver, _state(run), run=run)
        assert (latest["event"], latest["status"]) == ("interrupted", "interrupted")
        assert (folder / METADATA).is_file()  # kept: the other process reports from it
        assert "another process is reporting run pre/s11e now" in caplog.text
        assert "not discarded" in caplog.text and "another process is reporting the run" in (
            caplog.text
        )
        out, _ = other.communicate("go\n", timeout=60)
    finally:
        if other.poll() is None:
            other.kill()
    assert other.returncode == 0 and out == "done\n"
    final = receiver.store.latest(run.run_id)
    assert final is not None and final["status"] == "complete"


def test_a_final_report_takes_its_seq_when_the_job_ends_not_when_it_is_sent(
    hostile: Callable[..., TestServer], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Operator probe F3: an attempt failed while its started report hung at a slow
    server; close() gave up, the script retried in the same process, and the first
    attempt's failed report, built when its sender got to it, took a seq above the retry's
    started: the receiver showed "failed" while the retry trained."""
    server = hostile(Behaviour(mode="hang"))
    run = open_run(tmp_path / "models" / "pre" / "s18", {"mode": "pre"})
    settings = settings_for(server.url, timeout=5.0)
    first = Reporter(settings, _state(run), run=run, flush_timeout=0.5)
    with pytest.raises(RuntimeError), first:
        wait_until(lambda: len(server.requests) == 1)  # started: hanging
        raise RuntimeError("NCCL timeout (flaky node)")
    retry = open_run(run.folder)
    second = Reporter(settings, _state(retry), run=retry)
    second.started()
    wait_until(lambda: len(server.requests) == 2)
    server.release.set()  # the slow server gets through: the old failed report is sent
    wait_until(lambda: len(server.requests) == 3)
    second.close(0.1)
    sent = [json.loads(r.body) for r in server.requests]
    seq = {(r["event"], r["status"]): r["seq"] for r in sent}
    assert set(seq) == {("started", "in progress"), ("failed", "failed")} and len(sent) == 3
    first_started, retry_started = sorted(r["seq"] for r in sent if r["event"] == "started")
    assert first_started < seq[("failed", "failed")] < retry_started
    assert "not delivered within 0.5 s of the job's end" in caplog.text  # (said "0 s")
    assert "it is still sent while this process lives" in caplog.text
