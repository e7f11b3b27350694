"""A broken epoch entry never makes the rest of a run unsendable (§3: reporting never stops
or slows a run). Every report carries the whole history, so an entry that cannot be mended
(``epoch`` a string, 3.5 or None; a lesion count None; not an object) is left out of the
history with a warning naming the rule, the field and what to do; the final report (complete,
failed, interrupted) still arrives over real loopback HTTPS and the receiver stores it.
Each test failed before the fix: the one bad entry stayed in the history and every later
report, the final one included, was refused before sending."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.report.conftest import (
    TOKEN,
    TLSFiles,
    lesion_epoch,
    lesion_state,
    lesion_validation,
    settings_for,
    training_epoch,
    training_state,
)
from trainrecord.report import (
    JobState,
    Reporter,
    ReportServer,
    RunFolder,
    epoch_entry,
    open_run,
)
from trainrecord.report.run_folder import HISTORY, METADATA


def _https(server: ReportServer) -> str:
    return server.url + "/api/runs"


def _training(run: RunFolder) -> JobState:
    return training_state(run_id=run.run_id, name=run.name, group=run.group)


def _bad_epoch(value: Any) -> dict[str, Any]:
    entry = dict(training_epoch(0))
    if value is _MISSING:
        del entry["epoch"]
    else:
        entry["epoch"] = value
    return entry


_MISSING = object()


def _ends(how: str) -> None:
    """End the job inside the Reporter's with block, the way ``how`` says."""
    if how == "failed":
        raise RuntimeError("CUDA out of memory")
    if how == "interrupted":
        raise KeyboardInterrupt


ENDINGS: dict[str, tuple[type[BaseException] | None, str, str]] = {
    "complete": (None, "complete", "complete"),
    "failed": (RuntimeError, "failed", "failed"),
    "interrupted": (KeyboardInterrupt, "interrupted", "interrupted"),
}


@pytest.mark.parametrize("how", list(ENDINGS))
@pytest.mark.parametrize("bad", ["3", 3.5, None, _MISSING], ids=["str", "3.5", "None", "missing"])
def test_a_bad_epoch_is_left_out_and_the_final_report_arrives(
    https_receiver: ReportServer,
    tls: TLSFiles,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    bad: Any,
    how: str,
) -> None:
    raised, event, status = ENDINGS[how]
    run = open_run(tmp_path / "models" / "pre" / "bad_epoch", {"mode": "pre"})
    state = _training(run)
    settings = settings_for(_https(https_receiver), ca=tls.ca)

    def job() -> None:
        with Reporter(settings, state, run=run) as reporter:
            reporter.epoch_end(training_epoch(0))
            reporter.epoch_end(_bad_epoch(bad))  # returns: the run goes on
            reporter.epoch_end(training_epoch(2))
            _ends(how)

    with caplog.at_level(logging.WARNING, logger="trainrecord.report"):
        if raised is None:
            job()
        else:
            with pytest.raises(raised):
                job()
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None, "the final report never arrived"
    assert (latest["event"], latest["status"]) == (event, status)
    assert [e["epoch"] for e in latest["history"]] == [0, 2]
    assert latest["progress"]["epochs_completed"] == 2
    said = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert len(said) == 1, said
    field = "history_entry.fields.missing] epoch" if bad is _MISSING else "epoch.type] epoch"
    assert field in said[0] and "epoch_entry(" in said[0]
    assert not any("breaks the spec; staying quiet" in r.getMessage() for r in caplog.records)
    # the run folder keeps only the entries every report can carry (a resume starts from it)
    kept = json.loads((run.folder / METADATA).read_text(encoding="utf-8"))[HISTORY]
    assert [e["epoch"] for e in kept] == [0, 2]


def test_a_bad_lesion_count_is_left_out_and_complete_arrives(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run = open_run(tmp_path / "models" / "english" / "lesion_x", {"mode": "lit_bias"})
    state = lesion_state(run_id=run.run_id, name=run.name, group=run.group)
    broken = {**lesion_epoch(81), "word_selective_other": None}  # an integer, never null
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord.report"),
        Reporter(settings_for(_https(https_receiver), ca=tls.ca), state, run=run) as reporter,
    ):
        reporter.epoch_end(lesion_epoch(80))
        reporter.epoch_end(broken)
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None and latest["status"] == "complete"
    assert [e["epoch"] for e in latest["history"]] == [80]
    assert any("word_selective_other" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("entry", [[1, 2], None, "epoch 3"], ids=["list", "None", "str"])
def test_an_entry_that_is_no_object_does_not_raise(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path, entry: Any
) -> None:
    state = training_state()
    with Reporter(settings_for(_https(https_receiver), ca=tls.ca), state) as reporter:
        reporter.epoch_end(entry)
        reporter.epoch_end(training_epoch(0))
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None and latest["status"] == "complete"
    assert [e["epoch"] for e in latest["history"]] == [0]


def test_the_warning_never_shows_the_token(
    https_receiver: ReportServer, tls: TLSFiles, caplog: pytest.LogCaptureFixture
) -> None:
    state = training_state()
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord.report"),
        Reporter(settings_for(_https(https_receiver), ca=tls.ca), state) as reporter,
    ):
        reporter.epoch_end(_bad_epoch(f"epoch {TOKEN}"))
    assert any("left out" in r.getMessage() for r in caplog.records)
    assert not any(TOKEN in r.getMessage() for r in caplog.records)
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None and latest["status"] == "complete"


def test_numpy_scalars_are_the_numbers_they_hold(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path
) -> None:
    np = pytest.importorskip("numpy")
    run = open_run(tmp_path / "models" / "pre" / "numpy", {"mode": "pre"})
    state = _training(run)
    with Reporter(settings_for(_https(https_receiver), ca=tls.ca), state, run=run) as reporter:
        for epoch in np.arange(2):  # numpy int64, as a loop over np.arange gives
            reporter.epoch_end(
                epoch_entry(
                    "training",
                    epoch=epoch,
                    train_loss=np.float32(1.5),
                    val_accuracy_images=np.float64(40.0),
                    duration_seconds=np.array(60.0),  # a 0-d array
                )
            )
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None and latest["status"] == "complete"
    assert [(e["epoch"], e["train_loss"]) for e in latest["history"]] == [(0, 1.5), (1, 1.5)]
    assert latest["history"][0]["duration_seconds"] == 60.0
    kept = json.loads((run.folder / METADATA).read_text(encoding="utf-8"))[HISTORY]
    assert [e["epoch"] for e in kept] == [0, 1]


def test_a_bad_entry_kept_in_metadata_is_left_out_at_resume(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "models" / "pre" / "kept_bad"
    first = open_run(folder, {"mode": "pre"})
    # an older version kept the bad entry in the run folder
    first.update(**{HISTORY: [training_epoch(0), _bad_epoch(3.5)]})
    resumed = open_run(folder)
    assert resumed.resumed
    config = _training(resumed).config
    with caplog.at_level(logging.WARNING, logger="trainrecord.report"):
        state = resumed.job_state("training", config, epochs_first=0, epochs_total=5)
    assert [e["epoch"] for e in state.history] == [0]
    assert any(f"{METADATA} {HISTORY}" in r.getMessage() for r in caplog.records)
    with Reporter(settings_for(_https(https_receiver), ca=tls.ca), state, run=resumed) as reporter:
        reporter.epoch_end(training_epoch(1))
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None and latest["status"] == "complete"
    assert [e["epoch"] for e in latest["history"]] == [0, 1]


@pytest.mark.parametrize(
    ("result", "sent"),
    [
        ({"val_loss": float("nan"), "val_accuracy_images": 12.5}, "mended"),
        ({"val_loss": 5.8, "val_accuracy_images": 250.0}, "mended"),  # beyond 100 %
        ("val 5.8", "null"),  # no object at all
    ],
    ids=["nan", "out-of-range", "not-a-dict"],
)
def test_a_broken_initial_validation_never_stops_the_reports(
    https_receiver: ReportServer,
    tls: TLSFiles,
    caplog: pytest.LogCaptureFixture,
    result: Any,
    sent: str,
) -> None:
    """The initial validation goes into every later report: stored as given, one NaN in it
    made every report of the run unsendable, the final one included."""
    state = training_state()
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord.report"),
        Reporter(settings_for(_https(https_receiver), ca=tls.ca), state) as reporter,
    ):
        reporter.initial_validation(result)  # returns: the run goes on
        reporter.epoch_end(training_epoch(0))
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None, "the final report never arrived"
    assert latest["status"] == "complete" and [e["epoch"] for e in latest["history"]] == [0]
    initial = latest["initial_validation"]
    if sent == "null":
        assert initial is None
        assert any("validation_entry(" in r.getMessage() for r in caplog.records)
    else:
        assert initial is not None and set(initial) >= {"val_loss", "val_accuracy_images"}
        assert None in (initial["val_loss"], initial["val_accuracy_images"])
        assert any("breaks the spec" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("intact", ["not-a-dict", "missing"])
def test_a_lesioned_result_without_an_intact_one_keeps_the_reports_sendable(
    https_receiver: ReportServer,
    tls: TLSFiles,
    caplog: pytest.LogCaptureFixture,
    intact: str,
) -> None:
    """§5.4: initial_validation is null until the intact model is validated; an object has a
    non-null intact. An intact result left out as unmendable (or never given), then the
    lesioned one, made {"intact": null, "lesioned": {...}}: every later report broke the
    schema and none was sent, the final one included."""
    state = lesion_state()
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord.report"),
        Reporter(settings_for(_https(https_receiver), ca=tls.ca), state) as reporter,
    ):
        if intact == "not-a-dict":
            reporter.initial_validation("broken", "intact")  # type: ignore[arg-type]
        reporter.initial_validation(lesion_validation(), "lesioned")
        reporter.epoch_end(lesion_epoch(0))
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None, "the final report never arrived"
    assert latest["status"] == "complete" and latest["initial_validation"] is None
    assert any("lesioned model's result is not reported" in r.getMessage() for r in caplog.records)
