"""A start the Reporter refuses (§1: a bad setting raises before any work starts) leaves
nothing that makes the next start a resume: the metadata.json this start wrote is removed
(or, when the job had written it without a run_id, restored byte for byte) and the folders
open_run made are removed when empty; nothing that existed before is touched. Real run
folders, real files, the next start's report over real loopback HTTPS. The tests that
expect a new run_id at the next start failed before the fix: it resumed the refused run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.report.conftest import TLSFiles, settings_for, training_epoch, training_state
from trainrecord.errors import RecordRefused
from trainrecord.report import JobState, Reporter, ReportServer, RunFolder, config, open_run
from trainrecord.report.run_folder import METADATA

GOOD = {"mode": "pre", "batch_size": 100, "lr": 0.01}
REFUSALS: dict[str, tuple[dict[str, Any], bool]] = {
    "negative lr": ({**GOOD, "lr": -1.0}, True),  # a schema refusal
    "absolute path": ({**GOOD, "device_name": "/opt/gpus/a100"}, True),  # §7 privacy
    "settings not loaded": (GOOD, False),  # a dict where ReportSettings belongs
}


def _state(run: RunFolder, cfg: dict[str, Any]) -> JobState:
    return run.job_state("training", config("training", **cfg), epochs_first=0, epochs_total=5)


def _refused(run: RunFolder, url: str, ca: str, why: str) -> None:
    cfg, settings_ok = REFUSALS[why]
    settings: Any = settings_for(url, ca=ca) if settings_ok else {"url": url}
    with pytest.raises((RecordRefused, TypeError)):
        Reporter(settings, _state(run, cfg), run=run)


def _next_start(folder: Path, server: ReportServer, ca: str) -> RunFolder:
    """The job started again with a good configuration; its started report arrives."""
    run = open_run(folder, {"mode": "pre"})
    state = _state(run, GOOD)
    with Reporter(settings_for(server.url, ca=ca), state, run=run) as reporter:
        reporter.epoch_end(training_epoch(0))
    latest = server.store.latest(run.run_id)
    assert latest is not None and latest["status"] == "complete"
    return run


@pytest.mark.parametrize("why", list(REFUSALS))
def test_a_refused_first_start_leaves_no_folder_and_the_next_is_a_new_run(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path, why: str
) -> None:
    folder = tmp_path / "models" / "pre" / "pre_s_49"
    run = open_run(folder, {"mode": "pre"})
    assert run.created and (folder / METADATA).exists()
    _refused(run, https_receiver.url, tls.ca, why)
    assert not (tmp_path / "models").exists()  # every folder open_run made, and only those
    again = _next_start(folder, https_receiver, tls.ca)
    assert again.created and not again.resumed and again.run_id != run.run_id
    assert https_receiver.store.latest(run.run_id) is None  # the refused run never reported


def test_a_folder_that_was_there_keeps_its_files(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path
) -> None:
    folder = tmp_path / "models" / "pre" / "kept"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("written before the start")
    run = open_run(folder, {"mode": "pre"})
    _refused(run, https_receiver.url, tls.ca, "negative lr")
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    assert (folder / "notes.txt").read_text() == "written before the start"
    again = _next_start(folder, https_receiver, tls.ca)
    assert again.created and again.run_id != run.run_id


def test_a_file_the_job_wrote_after_open_run_is_kept(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path
) -> None:
    folder = tmp_path / "models" / "pre" / "wrote"
    run = open_run(folder, {"mode": "pre"})
    (folder / "config.yaml").write_text("lr: -1\n")  # the job's own file, not the client's
    _refused(run, https_receiver.url, tls.ca, "negative lr")
    assert sorted(p.name for p in folder.iterdir()) == ["config.yaml"]
    assert open_run(folder).created


def test_metadata_the_job_wrote_first_is_restored_byte_for_byte(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path
) -> None:
    folder = tmp_path / "models" / "pre" / "job_wrote"
    folder.mkdir(parents=True)
    original = b'{"mode": "pre",   "seed": 7, "started_at": "the job\'s own"}\n'
    (folder / METADATA).write_bytes(original)
    run = open_run(folder)
    assert run.created and "run_id" in json.loads((folder / METADATA).read_text())
    _refused(run, https_receiver.url, tls.ca, "negative lr")
    assert (folder / METADATA).read_bytes() == original
    again = open_run(folder)
    assert again.created and again.run_id != run.run_id


def test_a_refused_resume_changes_nothing(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path
) -> None:
    folder = tmp_path / "models" / "pre" / "resumed"
    first = open_run(folder, {"mode": "pre"})
    before = (folder / METADATA).read_bytes()
    resumed = open_run(folder)
    assert resumed.resumed
    _refused(resumed, https_receiver.url, tls.ca, "negative lr")
    assert (folder / METADATA).read_bytes() == before
    assert open_run(folder).run_id == first.run_id


def test_a_run_a_reporter_took_is_never_undone(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path
) -> None:
    folder = tmp_path / "models" / "pre" / "taken"
    run = open_run(folder, {"mode": "pre"})
    settings = settings_for(https_receiver.url, ca=tls.ca)
    with Reporter(settings, _state(run, GOOD), run=run) as reporter:
        reporter.epoch_end(training_epoch(0))
    _refused(run, https_receiver.url, tls.ca, "negative lr")  # the same object, reused
    assert open_run(folder).run_id == run.run_id


def test_a_mixed_up_state_undoes_no_run(tmp_path: Path) -> None:
    run = open_run(tmp_path / "models" / "pre" / "mixed", {"mode": "pre"})
    other = training_state()  # another run's state
    with pytest.raises(ValueError, match="another run's folder"):
        Reporter(settings_for("http://127.0.0.1:9/r"), other, run=run)
    assert open_run(run.folder).run_id == run.run_id
