"""§3 and §4: a run's identity comes from its run folder (``open_run``).

run_id is a UUID stored in metadata.json, the same across resumes (each resume sends
``started`` again with it), new after the folder was deleted; processes starting one
folder at once agree on one run_id; seq keeps rising across processes even when their
clocks stand still or step back. Real files, real processes, real HTTPS on loopback.
"""

from __future__ import annotations

import functools
import itertools
import json
import multiprocessing
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.report.conftest import TOKEN, TLSFiles, serving_https, training_epoch
from trainrecord.errors import RecordRefused
from trainrecord.report import (
    Reporter,
    ReportServer,
    ReportSettings,
    ReportStore,
    build_report,
    check_report,
    config,
    open_run,
)
from trainrecord.report.run_folder import METADATA, is_run_id

SPAWN = multiprocessing.get_context("spawn")


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock"))


# -- one process -------------------------------------------------------------------------


def test_a_fresh_folder_gets_a_new_uuid4_run_id_in_metadata_json(tmp_path: Path) -> None:
    folder = tmp_path / "models" / "pre" / "pre_s_49"
    run = open_run(folder, {"mode": "pre", "seed": 7})
    assert run.created and not run.resumed
    assert is_run_id(run.run_id) and uuid.UUID(run.run_id).version == 4
    stored = json.loads((folder / METADATA).read_text(encoding="utf-8"))
    assert stored == {"run_id": run.run_id, "started_at": run.started_at, "mode": "pre", "seed": 7}
    assert (run.name, run.group) == ("pre_s_49", "pre")
    assert _files(folder) == [METADATA]  # no temporary file left behind
    assert open_run(tmp_path / "models" / "pre" / "other").run_id != run.run_id


def test_resume_keeps_the_run_id_started_at_and_every_field(tmp_path: Path) -> None:
    folder = tmp_path / "pre" / "pre_s_49"
    first = open_run(folder, {"mode": "pre", "epochs": 50})
    before = (folder / METADATA).read_bytes()
    again = open_run(folder, {"mode": "changed"})  # a resume keeps what is stored
    assert again.resumed and not again.created
    assert (again.run_id, again.started_at) == (first.run_id, first.started_at)
    assert again.metadata == first.metadata
    assert (folder / METADATA).read_bytes() == before


def test_a_deleted_folder_gets_a_new_run_id(tmp_path: Path) -> None:
    folder = tmp_path / "pre" / "pre_s_49"
    seen = set()
    run = open_run(folder)
    seen.add(run.run_id)
    run.discard()
    assert not folder.exists()
    run = open_run(folder)
    assert run.created and run.run_id not in seen
    seen.add(run.run_id)
    shutil.rmtree(folder)  # deleted by hand: the same
    run = open_run(folder)
    assert run.created and run.run_id not in seen


def test_metadata_the_job_wrote_first_gets_a_run_id_and_keeps_its_fields(tmp_path: Path) -> None:
    folder = tmp_path / "wordsets" / "english"
    folder.mkdir(parents=True)
    (folder / METADATA).write_text('{"wordlist": "english", "num_words": 1000}')
    run = open_run(folder)
    assert run.created and is_run_id(run.run_id) and run.group == "wordsets"
    stored = json.loads((folder / METADATA).read_text(encoding="utf-8"))
    assert stored == {
        "run_id": run.run_id,
        "started_at": run.started_at,
        "wordlist": "english",
        "num_words": 1000,
    }
    assert open_run(folder).run_id == run.run_id


@pytest.mark.parametrize(
    ("text", "rule", "field"),
    [
        ("not json", "report.metadata.json", "(top level)"),
        (
            '{"run_id": "8c7e1e0e-4a57-4a3c-9d36-1f7d7b2f1b3a", "loss": NaN}',
            "report.metadata.json",
            "(top level)",
        ),
        ('{"mode": "pre", "mode": "lit"}', "report.metadata.json", "(top level)"),
        ('["8c7e1e0e-4a57-4a3c-9d36-1f7d7b2f1b3a"]', "report.metadata.json", "(top level)"),
        ('{"run_id": "8C7E1E0E-4A57-4A3C-9D36-1F7D7B2F1B3A"}', "report.metadata.run_id", "run_id"),
        (
            '{"run_id": "{8c7e1e0e-4a57-4a3c-9d36-1f7d7b2f1b3a}"}',
            "report.metadata.run_id",
            "run_id",
        ),
        ('{"run_id": "8c7e1e0e4a574a3c9d361f7d7b2f1b3a"}', "report.metadata.run_id", "run_id"),
        (
            '{"run_id": "8c7e1e0e-4a57-4a3c-9d36-1f7d7b2f1b3a\\n"}',
            "report.metadata.run_id",
            "run_id",
        ),
        ('{"run_id": 42}', "report.metadata.run_id", "run_id"),
        ('{"run_id": null}', "report.metadata.run_id", "run_id"),
        ('{"run_id": ""}', "report.metadata.run_id", "run_id"),
    ],
)
def test_a_bad_metadata_json_is_refused_and_left_as_it_is(
    tmp_path: Path, text: str, rule: str, field: str
) -> None:
    folder = tmp_path / "pre" / "broken"
    folder.mkdir(parents=True)
    (folder / METADATA).write_text(text, encoding="utf-8")
    with pytest.raises(RecordRefused) as caught:
        open_run(folder)
    assert caught.value.rule == rule and caught.value.field == field
    assert rule in str(caught.value) and METADATA in str(caught.value)
    assert (folder / METADATA).read_text(encoding="utf-8") == text
    assert _files(folder) == [METADATA]


def test_metadata_that_is_not_strict_json_writes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "pre" / "nan"
    with pytest.raises(RecordRefused) as caught:
        open_run(folder, {"lr": float("nan")})
    assert caught.value.rule == "report.metadata.json"
    assert not (tmp_path / "pre").exists()  # not even the folder: it is made to be written
    with pytest.raises(ValueError, match="run_id"):
        open_run(folder, {"run_id": str(uuid.uuid4())})


def test_create_false_only_reads_an_existing_run(tmp_path: Path) -> None:
    folder = tmp_path / "pre" / "gone"
    with pytest.raises(FileNotFoundError):
        open_run(folder, create=False)
    assert not folder.exists()  # a snapshot of a missing run never makes a new one
    run = open_run(folder)
    seen = open_run(folder, create=False)
    assert (seen.run_id, seen.created) == (run.run_id, False)
    (folder / METADATA).write_text('{"mode": "pre"}')
    with pytest.raises(RecordRefused) as caught:
        open_run(folder, create=False)
    assert caught.value.rule == "report.metadata.run_id"
    assert (folder / METADATA).read_text() == '{"mode": "pre"}'


def test_update_keeps_the_run_id_and_refuses_another(tmp_path: Path) -> None:
    folder = tmp_path / "pre" / "pre_s_49"
    run = open_run(folder, {"mode": "pre"})
    merged = run.update(epochs_done=3)
    assert merged == {**run.metadata, "epochs_done": 3}
    assert json.loads((folder / METADATA).read_text(encoding="utf-8")) == merged
    with pytest.raises(RecordRefused) as caught:
        run.update(run_id=str(uuid.uuid4()))
    assert caught.value.rule == "report.run_id.stable"
    run.discard()
    open_run(folder)  # the folder was started again: another run now
    with pytest.raises(RecordRefused) as caught:
        run.update(epochs_done=4)
    assert caught.value.rule == "report.run_id.stable"


def test_the_job_state_comes_from_the_folder_and_builds_a_valid_report(tmp_path: Path) -> None:
    run = open_run(tmp_path / "english" / "lit_bias_z_79")
    state = run.job_state(
        "training", config("training", mode="lit_bias"), epochs_first=50, epochs_total=30
    )
    assert (state.run_id, state.name, state.group) == (run.run_id, "lit_bias_z_79", "english")
    assert state.started_at == run.started_at
    resumed = open_run(tmp_path / "english" / "lit_bias_z_79").job_state(
        "training", config("training", mode="lit_bias")
    )
    assert (resumed.run_id, resumed.started_at) == (run.run_id, run.started_at)
    report = build_report(
        resumed, event="started", status="in progress", seq=1, sent_at=run.started_at or ""
    )
    check_report(report)
    with pytest.raises(ValueError, match="run_id"):
        run.job_state("training", config("training", mode="pre"), run_id=str(uuid.uuid4()))


# -- processes racing for one folder ---------------------------------------------------------


def _start(folders: list[str], barrier: Any, out: Any) -> None:
    for folder in folders:
        barrier.wait(60)
        run = open_run(folder, {"mode": "pre"})
        out.put((folder, run.run_id, run.created))


@pytest.mark.parametrize("written_first", [False, True], ids=["fresh", "metadata-without-run-id"])
def test_processes_starting_one_folder_at_once_agree_on_one_run_id(
    tmp_path: Path, written_first: bool
) -> None:
    folders = [tmp_path / "pre" / f"run{i}" for i in range(5)]
    if written_first:
        for folder in folders:
            folder.mkdir(parents=True)
            (folder / METADATA).write_text('{"mode": "pre", "batch_size": 100}')
    racers = 6
    barrier = SPAWN.Barrier(racers)
    out = SPAWN.Queue()
    procs = [
        SPAWN.Process(target=_start, args=([str(f) for f in folders], barrier, out))
        for _ in range(racers)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in range(racers * len(folders))]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    for folder in folders:
        mine = [(run_id, created) for f, run_id, created in results if f == str(folder)]
        ids = {run_id for run_id, _ in mine}
        assert len(mine) == racers and len(ids) == 1, mine
        assert sum(created for _, created in mine) == 1, mine
        stored = json.loads((folder / METADATA).read_text(encoding="utf-8"))
        assert stored["run_id"] == ids.pop() and stored["mode"] == "pre"
        assert _files(folder) == [METADATA]


# -- seq across processes -----------------------------------------------------------------


def _fixed_ms(value: int) -> int:
    return value


def _take_seqs(folder: str, clock_ms: int, n: int, out: Any) -> None:
    run = open_run(folder)
    clock = run.seq_clock(clock=functools.partial(_fixed_ms, clock_ms))
    out.put((run.run_id, [clock.next() for _ in range(n)]))


def test_seq_rises_across_resumes_when_the_clock_stands_still_or_steps_back(
    tmp_path: Path,
) -> None:
    folder = str(tmp_path / "pre" / "pre_s_49")
    now = time.time_ns() // 1_000_000
    out = SPAWN.Queue()
    taken: list[int] = []
    ids = set()
    for clock_ms in (now, now, now - 3_600_000):  # equal, then an hour earlier
        proc = SPAWN.Process(target=_take_seqs, args=(folder, clock_ms, 5, out))
        proc.start()
        run_id, seqs = out.get(timeout=120)
        proc.join(60)
        ids.add(run_id)
        taken += seqs
    assert len(ids) == 1
    assert taken[0] == now and all(b > a for a, b in itertools.pairwise(taken))


# -- resumes reported over HTTPS ----------------------------------------------------------


class RecordingStore(ReportStore):
    """The reference store, also keeping every report that arrived (in arrival order)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.arrived: list[dict[str, Any]] = []

    def put(self, report: dict[str, Any], received_at: float | None = None) -> bool:
        self.arrived.append(report)
        return super().put(report, received_at)


@pytest.fixture
def recording(tmp_path: Path, tls: TLSFiles) -> Iterator[ReportServer]:
    with serving_https(RecordingStore(tmp_path / "r.sqlite"), tls) as server:
        yield server


def _wait_sent(reporter: Reporter, count: int) -> None:
    deadline = time.monotonic() + 30
    while reporter.sender.sent < count and time.monotonic() < deadline:
        time.sleep(0.01)


def _job(folder: str, url: str, ca: str, done: int, clock_ms: int, out: Any) -> None:
    """One start of a training job: started, an epoch (while fewer than 2 are done), Ctrl+C."""
    run = open_run(folder, {"mode": "pre", "batch_size": 100})
    settings = ReportSettings(url=url, every=60, token=TOKEN, ca_bundle=ca)
    state = run.job_state(
        "training",
        config("training", mode="pre", batch_size=100),
        epochs_first=0,
        epochs_total=5,
        history=[training_epoch(e) for e in range(done)],
    )
    reporter = Reporter(
        settings, state, seq=run.seq_clock(clock=functools.partial(_fixed_ms, clock_ms))
    )
    reporter.started()
    _wait_sent(reporter, 1)  # each event arrives, none is superseded
    if done < 2:
        reporter.epoch_end(training_epoch(done))
        _wait_sent(reporter, 2)
    reporter.interrupted()
    reporter.close(10)
    out.put((run.run_id, run.created, reporter.sender.sent))


def _start_job(
    folder: Path, server: ReportServer, ca: str, done: int, clock_ms: int
) -> tuple[str, bool, int]:
    out = SPAWN.Queue()
    proc = SPAWN.Process(
        target=_job, args=(str(folder), server.url + "/api/runs", ca, done, clock_ms, out)
    )
    proc.start()
    result = out.get(timeout=120)
    proc.join(60)
    assert proc.exitcode == 0
    return result


def test_a_resumed_run_sends_started_again_with_the_same_run_id(
    tmp_path: Path, recording: ReportServer, tls: TLSFiles
) -> None:
    folder = tmp_path / "models" / "pre" / "pre_s_49"
    now = time.time_ns() // 1_000_000
    first = _start_job(folder, recording, tls.ca, 0, now)
    second = _start_job(folder, recording, tls.ca, 1, now)  # same clock: seq must still rise
    third = _start_job(folder, recording, tls.ca, 2, now - 60_000)  # clock stepped back
    assert first[1] and not second[1] and not third[1]
    run_id = first[0]
    assert second[0] == third[0] == run_id
    arrived = recording.store.arrived  # type: ignore[attr-defined]
    assert [r["run_id"] for r in arrived] == [run_id] * len(arrived)
    events = [(r["event"], r["status"]) for r in arrived]
    assert events == [
        ("started", "in progress"),
        ("epoch_end", "in progress"),
        ("interrupted", "interrupted"),
        ("started", "in progress"),
        ("epoch_end", "in progress"),
        ("interrupted", "interrupted"),
        ("started", "in progress"),
        ("interrupted", "interrupted"),
    ]
    started = [r for r in arrived if r["event"] == "started"]
    assert {r["started_at"] for r in started} == {open_run(folder).started_at}
    assert {(r["name"], r["group"]) for r in arrived} == {("pre_s_49", "pre")}
    seqs = [r["seq"] for r in arrived]
    assert seqs[0] == now and all(b > a for a, b in itertools.pairwise(seqs))
    assert recording.store.latest(run_id)["seq"] == seqs[-1]


def test_a_discarded_run_starts_again_as_a_new_run(
    tmp_path: Path, recording: ReportServer, tls: TLSFiles
) -> None:
    folder = tmp_path / "models" / "pre" / "pre_s_49"
    now = time.time_ns() // 1_000_000
    out = SPAWN.Queue()
    proc = SPAWN.Process(
        target=_job_discarded, args=(str(folder), recording.url + "/api/runs", tls.ca, now, out)
    )
    proc.start()
    discarded_id = out.get(timeout=120)
    proc.join(60)
    assert not folder.exists()
    again = _start_job(folder, recording, tls.ca, 0, now)
    assert again[1] and again[0] != discarded_id
    arrived = recording.store.arrived  # type: ignore[attr-defined]
    assert [(r["run_id"], r["event"], r["status"]) for r in arrived] == [
        (discarded_id, "started", "in progress"),
        (discarded_id, "interrupted", "discarded"),
        (again[0], "started", "in progress"),
        (again[0], "epoch_end", "in progress"),
        (again[0], "interrupted", "interrupted"),
    ]
    assert recording.store.latest(discarded_id)["status"] == "discarded"


def _job_discarded(folder: str, url: str, ca: str, clock_ms: int, out: Any) -> None:
    """A job stopped by Ctrl+C before its first epoch: discarded, its folder deleted."""
    run = open_run(folder)
    settings = ReportSettings(url=url, every=60, token=TOKEN, ca_bundle=ca)
    state = run.job_state(
        "training", config("training", mode="pre"), epochs_first=0, epochs_total=5
    )
    reporter = Reporter(
        settings, state, run=run, seq=run.seq_clock(clock=functools.partial(_fixed_ms, clock_ms))
    )
    reporter.started()
    _wait_sent(reporter, 1)
    reporter.interrupted()  # a new training run, no epoch finished: discarded, folder deleted
    reporter.close(10)
    out.put(run.run_id)


def test_a_run_folder_is_resumed_and_a_fifo_metadata_is_refused_unread(tmp_path: Path) -> None:
    # A Foundry change made the shared JSON reader look up a size limit for "report" (the
    # kind of report.metadata.json) that it did not have: every resume raised KeyError. A
    # metadata.json that is no regular file is refused, never read (a FIFO would block).
    import os

    from trainrecord.errors import RecordRefused
    from trainrecord.report import open_run

    first = open_run(tmp_path / "run")
    assert open_run(tmp_path / "run").run_id == first.run_id
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "metadata.json")
    with pytest.raises(RecordRefused) as caught:
        open_run(tmp_path / "fifo")
    assert caught.value.problems[0].rule == "report.metadata.json"
    assert "FIFO" in str(caught.value)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_does_not_keep_the_run_held(tmp_path: Path) -> None:
    """Review: a DataLoader worker forked while a Reporter held the run kept its lock after
    Reporter.close(); a retry in the same process was told another process reports the run,
    and its Ctrl+C would not discard a fresh run."""
    from trainrecord.report.run_folder import alone, hold, release

    first, others = hold(tmp_path)
    assert not others
    pid = os.fork()
    if pid == 0:  # the worker: lives on past the Reporter
        time.sleep(3)
        os._exit(0)
    try:
        time.sleep(0.3)  # the child has run its fork hooks
        release(first)
        second, others = hold(tmp_path)
        assert not others
        assert alone(second)
        release(second)
    finally:
        os.waitpid(pid, 0)
