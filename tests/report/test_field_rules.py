"""The consistency rules that tie a report's fields to its run's config (§5.2, §5.4), each
named by its rule id:

* ``report.consistency.no_words``: *_words is null for pre and illit (l.105);
* ``report.consistency.pre_name``: pre_name is null for pre (l.115);
* ``report.consistency.history_order``: one history entry per finished epoch, oldest first
  (l.144): each epoch greater than the one before (a gap is allowed);
* ``report.consistency.word_channel``: null for the unbiased model (l.183);
* ``report.consistency.mean_word_activation_lesioned``: null without lesioned units (l.169);
* ``report.consistency.word_selective_lesioned``: counts lesioned units, so at most their
  number (l.171).

check_report (the gate every send goes through) refuses a report that breaks one; a
Reporter mends what a job hands it as mended_entry mends a broken value (null with a
warning, or the entry left out when it cannot be mended: reporting never stops a run) and
refuses at start a config that breaks one; the receiver stores such a report (200), as it
does for every consistency rule. Every test here failed before the rules existed: a pre
run's Reporter sent train_loss_words 0.3 over HTTPS."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import requests

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
from trainrecord.errors import RecordRefused
from trainrecord.report import (
    JobState,
    Reporter,
    ReportServer,
    build_report,
    check_report,
    consistency_problems,
    encode_report,
    local_time,
    open_run,
    report_status,
    validation_entry,
)
from trainrecord.report.run_folder import HISTORY, METADATA

WORDS = {
    "train_loss_words": 0.3,
    "train_accuracy_words": 60.0,
    "val_loss_words": 0.4,
    "val_accuracy_words": 55.0,
}


def _report(state: JobState, event: str = "epoch_end") -> dict[str, Any]:
    return build_report(state, event=event, status="in progress", seq=1, sent_at=local_time())


def _rules(report: dict[str, Any]) -> list[str]:
    return [p.rule for p in consistency_problems(report)]


def _refused(report: dict[str, Any], rule: str) -> None:
    """The gate refuses ``report`` naming ``rule`` (check_report and encode_report)."""
    with pytest.raises(RecordRefused) as info:
        check_report(report)
    assert rule in info.value.rules
    with pytest.raises(RecordRefused) as info:
        encode_report(report)
    assert rule in info.value.rules


def _with_words(entry: dict[str, Any], **words: Any) -> dict[str, Any]:
    return {**entry, **(words or WORDS)}


def _mode(state: JobState, mode: str, **cfg: Any) -> JobState:
    state.config = {**state.config, "mode": mode, **cfg}
    return state


def _iv(**over: Any) -> dict[str, Any]:
    return validation_entry(
        "training", val_loss=6.9, val_loss_images=6.9, val_accuracy_images=0.1, **over
    )


# --------------------------------------------------------------------------- the gate


@pytest.mark.parametrize("mode", ["pre", "illit"])
def test_a_pre_or_illit_report_with_word_results_is_refused(mode: str) -> None:
    """report.consistency.no_words, in a history entry and in initial_validation; a
    literate run's report carries the same word results."""
    state = _mode(training_state(), mode)
    state.history = [training_epoch(0), _with_words(training_epoch(1))]
    report = _report(state)
    assert _rules(report) == ["report.consistency.no_words"] * 4
    assert next(p.field for p in consistency_problems(report)) == "history[1].train_loss_words"
    _refused(report, "report.consistency.no_words")
    state.history = [training_epoch(0)]
    state.initial_validation = _iv(val_accuracy_words=0.1)
    report = _report(state)
    assert [p.field for p in consistency_problems(report)] == [
        "initial_validation.val_accuracy_words"
    ]
    _refused(report, "report.consistency.no_words")
    for literate in ("lit_bias", "lit_no_bias"):
        state = _mode(training_state(), literate, pre_name="pre_s_49")
        state.history = [_with_words(training_epoch(0))]
        state.initial_validation = _iv(val_loss_words=6.9, val_accuracy_words=0.1)
        assert _rules(_report(state)) == []


def test_a_pre_report_with_a_pre_name_is_refused() -> None:
    """report.consistency.pre_name: null for pre; an illit or literate run may name it."""
    report = _report(_mode(training_state(), "pre", pre_name="pre_s_49"), "started")
    assert _rules(report) == ["report.consistency.pre_name"]
    _refused(report, "report.consistency.pre_name")
    for mode in ("illit", "lit_bias", "lit_no_bias"):
        assert _rules(_report(_mode(training_state(), mode, pre_name="pre_s_49"))) == []
    assert _rules(_report(_mode(training_state(), "illit", pre_name=None))) == []


HISTORIES = [
    ("training", [1, 0], False),
    ("training", [0, 0], False),
    ("training", [0, 2, 1], False),
    ("training", [0, 2], True),  # an entry left out: a gap, still oldest first
    ("training", [0, 1, 2], True),
    ("lesion", [80, 80], False),
    ("lesion", [81, 80], False),
    ("lesion", [80, 81], True),
]


def test_a_history_not_oldest_first_is_refused() -> None:
    """report.consistency.history_order: each entry's epoch is greater than the one before;
    a gap (an entry left out) is allowed."""
    for kind, epochs, ok in HISTORIES:
        if kind == "training":
            state = training_state(history=[training_epoch(n) for n in epochs])
        else:
            state = lesion_state(history=[lesion_epoch(n) for n in epochs])
        report = _report(state)
        if ok:
            assert _rules(report) == [], epochs
            continue
        assert _rules(report) == ["report.consistency.history_order"], epochs
        assert consistency_problems(report)[0].field.endswith("].epoch")
        _refused(report, "report.consistency.history_order")


def test_an_unbiased_lesion_with_a_word_channel_is_refused() -> None:
    """report.consistency.word_channel: null for the unbiased model (source_mode lit_no_bias)."""
    state = lesion_state()
    state.config = {**state.config, "source_mode": "lit_no_bias"}
    report = _report(state, "started")
    assert _rules(report) == ["report.consistency.word_channel"]
    _refused(report, "report.consistency.word_channel")
    state.config = {**state.config, "word_channel": None}
    assert _rules(_report(state)) == []
    state.config = {**state.config, "source_mode": "lit_bias"}  # biased, channel unknown
    assert _rules(_report(state)) == []


def _no_units(entry: dict[str, Any], **over: Any) -> dict[str, Any]:
    return {**entry, "mean_word_activation_lesioned": None, "word_selective_lesioned": 0, **over}


def test_a_mean_over_no_lesioned_units_is_refused() -> None:
    """report.consistency.mean_word_activation_lesioned: null without lesioned units, in
    both initial validations and every history entry."""
    state = lesion_state(lesioned_units=[])
    state.config = {**state.config, "lesioned_units": []}
    intact = _no_units(lesion_validation())
    state.initial_validation = {"intact": intact, "lesioned": intact}
    state.history = [_no_units(lesion_epoch(80))]
    assert _rules(_report(state)) == []
    state.history = [_no_units(lesion_epoch(80), mean_word_activation_lesioned=0.9)]
    report = _report(state)
    assert [p.field for p in consistency_problems(report)] == [
        "history[0].mean_word_activation_lesioned"
    ]
    _refused(report, "report.consistency.mean_word_activation_lesioned")
    state.history = []
    state.initial_validation = {"intact": _no_units(intact, mean_word_activation_lesioned=1.0)}
    state.initial_validation["lesioned"] = None
    assert _rules(_report(state, "progress")) == [
        "report.consistency.mean_word_activation_lesioned"
    ]
    state.config = {**state.config, "lesioned_units": [3]}  # one unit: a mean of one
    assert _rules(_report(state, "progress")) == []


def test_more_word_selective_lesioned_units_than_lesioned_units_is_refused() -> None:
    """report.consistency.word_selective_lesioned: at most the number of lesioned units."""
    state = lesion_state()
    state.config = {**state.config, "lesioned_units": [3, 17]}
    state.history = [{**lesion_epoch(80), "word_selective_lesioned": 2}]
    assert _rules(_report(state)) == []
    state.history = [{**lesion_epoch(80), "word_selective_lesioned": 3}]
    report = _report(state)
    assert [p.field for p in consistency_problems(report)] == ["history[0].word_selective_lesioned"]
    _refused(report, "report.consistency.word_selective_lesioned")
    state.history = []
    state.initial_validation = {
        "intact": {**lesion_validation(), "word_selective_lesioned": 40},
        "lesioned": None,
    }
    assert _rules(_report(state, "progress")) == ["report.consistency.word_selective_lesioned"]


def test_report_status_refuses_a_pre_run_with_word_results_and_sends_nothing(
    hostile: Any,
) -> None:
    server = hostile()
    state = training_state(history=[_with_words(training_epoch(0))])
    with pytest.raises(RecordRefused) as info:
        report_status(settings_for(server.url), state, "stopped")
    assert "report.consistency.no_words" in info.value.rules
    assert server.requests == []


def test_the_receiver_stores_what_the_client_refuses(receiver: ReportServer) -> None:
    """The receiver does not judge consistency (spec/README "Consistency"): it answers 200
    and stores, as for the other report.consistency rules; the client never sends it."""
    state = training_state(history=[_with_words(training_epoch(0))])
    report = _report(state)
    _refused(report, "report.consistency.no_words")
    resp = requests.post(
        receiver.url + "/api/runs",
        data=json.dumps(report).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        timeout=10,
    )
    assert resp.status_code == 200
    stored = receiver.store.latest(state.run_id)
    assert stored is not None and stored["history"][0]["train_loss_words"] == 0.3


# --------------------------------------------------------------------------- the Reporter


def _https(server: ReportServer) -> str:
    return server.url + "/api/runs"


def test_a_pre_run_s_word_results_are_sent_as_null_with_a_warning(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The audit's case: a pre run's Reporter sent train_loss_words 0.3 over HTTPS."""
    run = open_run(tmp_path / "models" / "pre" / "pre_words", {"mode": "pre"})
    state = training_state(run_id=run.run_id, name=run.name, group=run.group)
    settings = settings_for(_https(https_receiver), ca=tls.ca)
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord.report"),
        Reporter(settings, state, run=run) as reporter,
    ):
        reporter.initial_validation(_iv(val_loss_words=6.9))
        reporter.epoch_end(_with_words(training_epoch(0)))
        reporter.epoch_end(training_epoch(1))
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None and latest["status"] == "complete"
    assert [e["epoch"] for e in latest["history"]] == [0, 1]
    assert all(e[k] is None for e in latest["history"] for k in WORDS)
    assert latest["history"][0]["train_loss"] == 5.9  # the rest of the entry is kept
    assert latest["initial_validation"]["val_loss_words"] is None
    said = [
        r.getMessage() for r in caplog.records if "report.consistency.no_words" in r.getMessage()
    ]
    assert len(said) == 2 and "train_loss_words" in said[1] and "reported as null" in said[1]
    kept = json.loads((run.folder / METADATA).read_text(encoding="utf-8"))[HISTORY]
    assert kept[0]["train_loss_words"] is None


def test_an_epoch_not_after_the_last_is_left_out_and_complete_arrives(
    https_receiver: ReportServer, tls: TLSFiles, caplog: pytest.LogCaptureFixture
) -> None:
    state = training_state()
    settings = settings_for(_https(https_receiver), ca=tls.ca)
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord.report"),
        Reporter(settings, state) as reporter,
    ):
        for epoch in (0, 2, 1, 2, 3):
            reporter.epoch_end(training_epoch(epoch))
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None and latest["status"] == "complete"
    assert [e["epoch"] for e in latest["history"]] == [0, 2, 3]
    assert latest["progress"]["epochs_completed"] == 3
    said = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert len(said) == 2 and all("report.consistency.history_order" in m for m in said)


def test_a_lesion_without_units_sends_no_mean_and_leaves_out_an_impossible_count(
    https_receiver: ReportServer, tls: TLSFiles, caplog: pytest.LogCaptureFixture
) -> None:
    state = lesion_state()
    state.config = {**state.config, "lesioned_units": []}
    settings = settings_for(_https(https_receiver), ca=tls.ca)
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord.report"),
        Reporter(settings, state) as reporter,
    ):
        reporter.initial_validation(_no_units(lesion_validation()), "intact")
        reporter.initial_validation(
            _no_units(lesion_validation(), mean_word_activation_lesioned=0.5), "lesioned"
        )
        reporter.epoch_end(_no_units(lesion_epoch(80), mean_word_activation_lesioned=0.85))
        reporter.epoch_end(_no_units(lesion_epoch(81), word_selective_lesioned=2))
        reporter.epoch_end(_no_units(lesion_epoch(82)))
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None and latest["status"] == "complete"
    assert [e["epoch"] for e in latest["history"]] == [80, 82]
    assert latest["history"][0]["mean_word_activation_lesioned"] is None
    assert latest["history"][0]["mean_word_activation_other"] == 0.43  # kept
    assert latest["initial_validation"]["lesioned"]["mean_word_activation_lesioned"] is None
    text = caplog.text
    assert "report.consistency.mean_word_activation_lesioned" in text
    assert "report.consistency.word_selective_lesioned" in text and "left out" in text


@pytest.mark.parametrize(
    ("cfg", "rule"),
    [
        ({"pre_name": "pre_s_49"}, "report.consistency.pre_name"),
        ({"source_mode": "lit_no_bias"}, "report.consistency.word_channel"),
    ],
)
def test_a_config_that_breaks_a_rule_is_refused_before_work_starts(
    hostile: Any, cfg: dict[str, Any], rule: str
) -> None:
    """The config is given once, at the start: as for a negative lr, the Reporter raises
    there, before any work, and nothing is sent."""
    server = hostile()
    state = lesion_state() if "source_mode" in cfg else training_state()
    state.config = {**state.config, **cfg}
    with pytest.raises(RecordRefused) as info:
        Reporter(settings_for(server.url), state)
    assert rule in info.value.rules
    assert server.requests == []


def test_a_kept_history_is_fitted_to_the_config_on_resume(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A history kept in metadata.json by an older version (or edited) that a pre run's
    reports cannot carry: word results null, an epoch out of order left out, with a
    warning; the resumed run starts and its reports go out."""
    folder = tmp_path / "models" / "pre" / "pre_kept"
    first = open_run(folder, {"mode": "pre"})
    kept = [_with_words(training_epoch(0)), training_epoch(2), training_epoch(1)]
    first.update(**{HISTORY: kept})
    run = open_run(folder)
    assert run.resumed
    with caplog.at_level(logging.WARNING, logger="trainrecord.report"):
        state = run.job_state("training", training_state().config, epochs_total=50)
    assert [e["epoch"] for e in state.history] == [0, 2]
    assert all(state.history[0][k] is None for k in WORDS)
    assert "report.consistency.no_words" in caplog.text
    assert "report.consistency.history_order" in caplog.text
    settings = settings_for(_https(https_receiver), ca=tls.ca)
    with Reporter(settings, state, run=run) as reporter:
        reporter.epoch_end(training_epoch(3))
    latest = https_receiver.store.latest(state.run_id)
    assert latest is not None and latest["status"] == "complete"
    assert [e["epoch"] for e in latest["history"]] == [0, 2, 3]
