"""§5: reports built from a job state are complete and valid for every event of §3 and every
kind; progress, fraction and eta_seconds follow §5.2 to §5.4; the client never builds what
the spec rejects."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime

import pytest

import trainrecord_spec
from tests.report.conftest import (
    lesion_epoch,
    lesion_state,
    lesion_validation,
    training_epoch,
    training_state,
    wordset_state,
)
from trainrecord.errors import RecordRefused
from trainrecord.report import (
    REPORT_SCHEMA_ID,
    JobState,
    build_report,
    check_report,
    config,
    consistency_problems,
    encode_report,
    epoch_entry,
    local_time,
    problems,
    validation_entry,
)
from trainrecord.report.payload import EVENT_STATUS
from trainrecord.schemas import problems as oracle_problems

STATES = {"training": training_state, "lesion": lesion_state, "wordset": wordset_state}


def _advance(state: JobState) -> None:
    """Bring a state to the middle of its second epoch (or 300 words)."""
    if state.kind == "training":
        state.initial_validation = validation_entry(
            "training",
            val_loss=6.9,
            val_loss_images=6.9,
            val_accuracy_images=0.1,
            duration_seconds=150.0,
        )
        state.history.append(training_epoch(0))
        state.phase, state.batch, state.batches = "training", 10, 100
    elif state.kind == "lesion":
        state.initial_validation = {"intact": lesion_validation(), "lesioned": lesion_validation()}
        state.history.append(lesion_epoch(80))
        state.phase, state.batch, state.batches = "validation", 5, 10
    else:
        state.words_done = 300


def _valid(report: dict) -> None:
    assert problems(report) == []
    assert oracle_problems(report, REPORT_SCHEMA_ID) == []
    trainrecord_spec.adapter(REPORT_SCHEMA_ID).validate_json(json.dumps(report))
    assert consistency_problems(report) == []
    check_report(report)


CASES = [
    (kind, event, status)
    for kind in STATES
    for event, statuses in EVENT_STATUS.items()
    for status in statuses
    if not (kind == "wordset" and event == "epoch_end")
]


@pytest.mark.parametrize(
    ("kind", "event", "status"), CASES, ids=[f"{k}-{e}-{s}" for k, e, s in CASES]
)
def test_every_event_of_every_kind_builds_a_valid_report(
    kind: str, event: str, status: str
) -> None:
    state = STATES[kind]()
    _advance(state)
    if status == "complete":
        state.finished_at = local_time()
    if status == "failed":
        state.error = {"type": "OutOfMemoryError", "message": "CUDA out of memory"}
    if event in ("complete", "interrupted", "failed", "snapshot"):
        state.running = False
    report = build_report(
        state, event=event, status=status, seq=1791252574351, sent_at=local_time()
    )
    _valid(report)
    assert (report["kind"], report["event"], report["status"]) == (kind, event, status)
    assert list(report) == list(
        trainrecord_spec.load_json("schemas", "reporting", "reporting.schema.json")["$defs"][
            f"{kind}_report"
        ]["properties"]
    )


def test_a_fresh_job_of_each_kind_builds_a_valid_started_report() -> None:
    for make in STATES.values():
        _valid(
            build_report(make(), event="started", status="in progress", seq=1, sent_at=local_time())
        )


def test_the_seed_example_numbers_fraction_and_eta() -> None:
    state = training_state()
    state.history = [training_epoch(i, 3000.0) for i in range(3)]
    state.phase, state.batch, state.batches = "training", 6400, 12812
    report = build_report(
        state, event="progress", status="in progress", seq=1, sent_at=local_time()
    )
    assert report["progress"] == {
        "epochs_first": 0,
        "epochs_total": 50,
        "epochs_completed": 3,
        "epoch": 3,
        "phase": "training",
        "batch": 6400,
        "batches": 12812,
        "fraction": 0.0695,
    }
    assert report["eta_seconds"] == 139576
    state.running = False
    state.error = {"type": "OutOfMemoryError", "message": "CUDA out of memory."}
    failed = build_report(state, event="failed", status="failed", seq=2, sent_at=local_time())
    assert failed["progress"] == {
        "epochs_first": 0,
        "epochs_total": 50,
        "epochs_completed": 3,
        "epoch": None,
        "phase": None,
        "batch": None,
        "batches": None,
        "fraction": 0.06,
    }
    assert failed["eta_seconds"] is None


@pytest.mark.parametrize(
    ("phase", "batch", "share"),
    [
        ("initial_validation", 50, 0.0),
        ("training", 0, 0.0),
        ("training", 50, 0.475),
        ("validation", 0, 0.95),
        ("validation", 50, 0.975),
    ],
)
def test_training_counts_95_and_validation_5_percent(phase: str, batch: int, share: float) -> None:
    state = training_state(epochs_total=10, phase=phase, batch=batch, batches=100)
    state.history = [training_epoch(0, 100.0)]
    report = build_report(
        state, event="progress", status="in progress", seq=1, sent_at=local_time()
    )
    assert report["progress"]["fraction"] == pytest.approx((1 + share) / 10, abs=1e-4)
    assert report["eta_seconds"] == round((10 - 1 - share) * 100.0)


@pytest.mark.parametrize(
    ("phase", "batch", "share"),
    [
        ("intact_validation", 5, 0.0),
        ("initial_selectivity", 5, 0.0),
        ("training", 5, 0.475),
        ("validation", 5, 0.97),
        ("selectivity", 5, 0.995),
    ],
)
def test_lesion_counts_95_4_and_1_percent(phase: str, batch: int, share: float) -> None:
    state = lesion_state(epochs_total=4, phase=phase, batch=batch, batches=10)
    report = build_report(
        state, event="progress", status="in progress", seq=1, sent_at=local_time()
    )
    assert report["progress"]["fraction"] == pytest.approx(share / 4, abs=1e-4)
    assert report["eta_seconds"] is None  # no epoch finished yet
    assert report["progress"]["epoch"] == 80


def test_wordset_fraction_and_eta_come_from_time_per_word() -> None:
    state = wordset_state(words_done=300, words_total=1000, work_started=time.monotonic() - 30.0)
    report = build_report(
        state,
        event="progress",
        status="in progress",
        seq=1,
        sent_at=local_time(),
        now=state.work_started + 30.0,
    )
    assert report["progress"] == {"words_done": 300, "words_total": 1000, "fraction": 0.3}
    assert report["eta_seconds"] == 70
    assert report["initial_validation"] is None and report["history"] is None


def _shown_share(report: dict) -> float:
    """The part of the current epoch a training or lesion report's own phase, batch and
    batches show (spec/README.md, "fraction"): 0 where it shows no phase."""
    progress = report["progress"]
    shares = {
        "training": {"training": (0.0, 0.95), "validation": (0.95, 0.05)},
        "lesion": {
            "training": (0.0, 0.95),
            "validation": (0.95, 0.04),
            "selectivity": (0.99, 0.01),
        },
    }[report["kind"]]
    start, weight = shares.get(progress["phase"], (0.0, 0.0))
    batch, batches = progress["batch"], progress["batches"]
    within = min(1.0, max(0.0, batch / batches)) if batch is not None and batches else 0.0
    return start + weight * within


def _shown_fraction(report: dict) -> float | None:
    """The fraction a reader recomputes from the report's own progress fields, unrounded."""
    progress = report["progress"]
    if not progress["epochs_total"]:
        return None
    done = progress["epochs_completed"] + _shown_share(report)
    return min(1.0, max(0.0, done / progress["epochs_total"]))


@pytest.mark.parametrize("kind", ["training", "lesion"])
@pytest.mark.parametrize("status", ["in progress", "stopped", "interrupted", "failed"])
def test_a_snapshot_s_fraction_counts_only_the_finished_epochs(kind: str, status: str) -> None:
    """report.consistency.fraction (the probe): a snapshot shows phase, batch and batches
    null, so its fraction is epochs_completed / epochs_total, even of a job whose state is
    7 batches of 100 into its training phase and still says it runs."""
    state = STATES[kind](phase="training", batch=7, batches=100)
    state.history = [training_epoch(0)] if kind == "training" else [lesion_epoch(80)]
    if status == "failed":
        state.error = {"type": "OutOfMemoryError", "message": "CUDA out of memory"}
    report = build_report(state, event="snapshot", status=status, seq=1, sent_at=local_time())
    progress = report["progress"]
    assert (progress["phase"], progress["batch"], progress["batches"]) == (None, None, None)
    total = state.epochs_total
    assert total is not None
    assert progress["fraction"] == round(1 / total, 4)  # 0.02 of 50 epochs, 0.1 of 10
    assert report["eta_seconds"] is None
    _valid(report)


PAIRS = [(event, status) for event, statuses in EVENT_STATUS.items() for status in statuses]
"""Every event with every status it is sent with."""
PROGRESS = [
    (kind, phase, batch, batches)
    for kind in ("training", "lesion")
    for phase, batch, batches in (
        ("training", 7, 100),
        ("validation", 3, 4),
        ("selectivity", 1, 2),
        ("training", 12, 10),
        ("training", 5, 0),
        ("validation", None, 100),
        (None, None, None),
    )
    if kind == "lesion" or phase != "selectivity"
]
"""Where in an epoch a job's state is: phases of each kind, past the last batch, no batch
count, no batch, no phase."""


@pytest.mark.parametrize(("event", "status"), PAIRS)
@pytest.mark.parametrize(("kind", "phase", "batch", "batches"), PROGRESS)
def test_fraction_is_what_the_report_s_own_progress_fields_give(
    event: str, status: str, kind: str, phase: str | None, batch: int | None, batches: int | None
) -> None:
    """report.consistency.fraction: whatever the job's state (here one that still says it
    runs), the report's fraction is (epochs_completed + the share its phase, batch and
    batches show) / epochs_total to 4 decimals, and its ETA counts the same share."""
    state = STATES[kind](phase=phase, batch=batch, batches=batches, epochs_total=4)
    state.history = [training_epoch(0, 100.0)] if kind == "training" else [lesion_epoch(80)]
    if status == "complete":
        state.finished_at = local_time()
    if status == "failed":
        state.error = {"type": "OutOfMemoryError", "message": "CUDA out of memory"}
    report = build_report(state, event=event, status=status, seq=1, sent_at=local_time())
    wanted = _shown_fraction(report)
    assert wanted is not None
    assert report["progress"]["fraction"] == round(wanted, 4), report["progress"]
    if report["eta_seconds"] is not None:
        duration = state.history[0]["duration_seconds"]
        assert isinstance(duration, float)
        assert report["eta_seconds"] == round((4 - 1 - _shown_share(report)) * duration)
    _valid(report)


@pytest.mark.parametrize("kind", ["training", "lesion"])
def test_fraction_is_at_most_1_when_more_epochs_finished_than_epochs_total(kind: str) -> None:
    """report.consistency.fraction: (epochs_completed + share) / epochs_total kept within 0
    and 1; a run that finished more epochs than epochs_total says (3 of 2, in the
    validation of a fourth) reports 1, and the report is valid (a fraction over 1 would
    be refused by the schema and the report lost)."""
    state = STATES[kind](phase="validation", batch=5, batches=10, epochs_total=2)
    first = 0 if kind == "training" else 80
    entry = training_epoch if kind == "training" else lesion_epoch
    state.history = [entry(first + n) for n in range(3)]
    state.running = True
    report = build_report(
        state, event="progress", status="in progress", seq=1, sent_at=local_time()
    )
    assert report["progress"]["fraction"] == 1.0
    assert report["eta_seconds"] == 0
    _valid(report)


def test_eta_is_null_until_the_first_epoch_and_when_not_running() -> None:
    state = training_state(phase="training", batch=1, batches=10)
    assert (
        build_report(state, event="progress", status="in progress", seq=1, sent_at=local_time())[
            "eta_seconds"
        ]
        is None
    )
    state.history.append(training_epoch(0))
    assert (
        build_report(state, event="progress", status="in progress", seq=2, sent_at=local_time())[
            "eta_seconds"
        ]
        is not None
    )
    assert (
        build_report(state, event="snapshot", status="stopped", seq=3, sent_at=local_time())[
            "eta_seconds"
        ]
        is None
    )
    # a snapshot of a run still in progress (report_status() from another process) has none
    # either: only the training process knows the time per epoch
    snapshot = build_report(
        state, event="snapshot", status="in progress", seq=4, sent_at=local_time()
    )
    assert snapshot["eta_seconds"] is None
    assert consistency_problems({**snapshot, "eta_seconds": 60})[0].rule == "report.consistency.eta"


def test_lesion_initial_validation_goes_null_then_intact_then_both() -> None:
    state = lesion_state()
    stages = [
        None,
        {"intact": lesion_validation(), "lesioned": None},
        {"intact": lesion_validation(), "lesioned": lesion_validation()},
    ]
    for stage in stages:
        state.initial_validation = stage
        report = build_report(
            state, event="progress", status="in progress", seq=1, sent_at=local_time()
        )
        _valid(report)
        assert report["initial_validation"] == stage


@pytest.mark.parametrize("kind", ["training", "lesion"])
def test_an_80_epoch_history_stays_under_70_kb(kind: str) -> None:
    state = STATES[kind]()
    state.epochs_total = 80
    state.initial_validation = (
        {"intact": lesion_validation(), "lesioned": lesion_validation()}
        if kind == "lesion"
        else validation_entry("training", val_loss=6.9)
    )
    make = lesion_epoch if kind == "lesion" else training_epoch
    for i in range(80):  # full-precision floats: the worst case for size
        entry = make(i)
        for key, value in entry.items():
            if isinstance(value, float):
                entry[key] = value + 1 / 3
        state.history.append(entry)
    state.running = False
    state.finished_at = local_time()
    body = encode_report(
        build_report(
            state, event="complete", status="complete", seq=1791252574351, sent_at=local_time()
        )
    )
    assert len(body) < 70 * 1024, len(body)


def test_local_time_has_the_machines_offset_to_the_second() -> None:
    text = local_time(1791252574.9)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", text)
    parsed = datetime.fromisoformat(text)
    assert parsed.timestamp() == 1791252574
    assert parsed.utcoffset() == datetime.fromtimestamp(1791252574).astimezone().utcoffset()


def test_fill_helpers_give_every_field_and_refuse_unknown_ones() -> None:
    entry = epoch_entry("training", epoch=3)
    assert entry["epoch"] == 3 and entry["val_loss"] is None and len(entry) == 14
    assert len(epoch_entry("lesion", epoch=3)) == 18
    with pytest.raises(RecordRefused) as info:
        config("training", mode="pre", seed=1234)
    assert info.value.rule == "report.config.fields.extra"
    with pytest.raises(RecordRefused) as info:
        validation_entry("training", per_class_accuracy=[1.0])
    assert info.value.rule == "report.initial_validation.fields.extra"
    with pytest.raises(RecordRefused) as info:
        epoch_entry("lesion", epoch=1, unit_values=[0.1, 0.2])
    assert info.value.rule == "report.history_entry.fields.extra"


def _report(**over: object) -> dict:
    state = training_state()
    report = build_report(
        state, event="progress", status="in progress", seq=1, sent_at=local_time()
    )
    report.update(over)
    return report


@pytest.mark.parametrize(
    ("over", "rule"),
    [
        (
            {"event": "progress", "status": "complete", "finished_at": "2026-10-05T21:48:05-04:00"},
            "report.consistency.event_status",
        ),
        ({"event": "complete", "status": "stopped"}, "report.consistency.event_status"),
        (
            {"event": "interrupted", "status": "failed", "error": {"type": "E", "message": ""}},
            "report.consistency.event_status",
        ),
        ({"event": "failed", "status": "failed"}, "report.consistency.error"),
        ({"error": {"type": "E", "message": "m"}}, "report.consistency.error"),
        ({"finished_at": "2026-10-05T21:48:05-04:00"}, "report.consistency.finished_at"),
        ({"history": [training_epoch(0)]}, "report.consistency.epochs_completed"),
        ({"eta_seconds": 10}, "report.consistency.eta"),
        (
            {"event": "snapshot", "eta_seconds": 10, "history": [training_epoch(0)]},
            "report.consistency.eta",
        ),
    ],
)
def test_inconsistent_reports_are_refused_with_their_rule(over: dict, rule: str) -> None:
    report = _report(**over)
    assert rule in {p.rule for p in consistency_problems(report)}
    with pytest.raises(RecordRefused) as info:
        encode_report(report)
    assert rule in info.value.rules


def test_lesioned_units_must_ascend_and_the_word_channel_must_be_ordered() -> None:
    for cfg in (
        {"lesioned_units": [5, 3]},
        {"lesioned_units": [3, 3]},
        {"word_channel": {"first": 511, "last": 463}},
    ):
        state = lesion_state()
        state.config = {**state.config, **cfg}
        report = build_report(
            state, event="started", status="in progress", seq=1, sent_at=local_time()
        )
        assert [p.rule for p in consistency_problems(report)] == [
            "report.consistency.lesioned_units"
        ]


def test_config_gives_lesioned_units_ascending_without_repeats() -> None:
    cfg = config("lesion", source_name="lit_bias_z_79", lesioned_units=[463, 3, 17, 3])
    assert cfg["lesioned_units"] == [3, 17, 463]
    assert config("lesion", lesioned_units=[2, "x"])["lesioned_units"] == [2, "x"]  # schema's job


def test_encode_refuses_what_the_schema_refuses_naming_the_rule_and_field() -> None:
    with pytest.raises(RecordRefused) as info:
        encode_report(_report(seq=-5))
    assert info.value.rule == "report.seq.range" and info.value.field == "seq"
    with pytest.raises(RecordRefused) as info:
        encode_report(_report(pid=4242))
    assert info.value.rule == "report.fields.extra" and info.value.field == "pid"


def test_encode_refuses_non_finite_numbers() -> None:
    report = _report()
    report["config"] = {**report["config"], "lr": float("nan")}
    with pytest.raises(RecordRefused) as info:
        encode_report(report)
    assert info.value.rule == "report.transport.body"


@pytest.mark.parametrize(
    ("path", "value", "rule"),
    [
        (("seq",), 3.0, "report.seq.type"),
        (("seq",), True, "report.seq.type"),
        (("progress", "epochs_total"), 50.0, "report.progress.epochs_total.type"),
        (("config", "lr"), True, "report.config.lr.type"),
    ],
)
def test_integer_means_an_integer_token_and_number_never_a_boolean(
    path: tuple, value: object, rule: str
) -> None:
    report = _report()
    node = report
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert [p.rule for p in problems(report)] == [rule]


def test_problems_report_only_the_kind_selected() -> None:
    report = _report(seq="1")
    found = problems(report)
    assert [p.rule for p in found] == ["report.seq.type"]
    assert problems({**report, "kind": "nope"})  # unknown kind: judged against all branches


def test_encoded_body_is_compact_utf8_json_that_round_trips() -> None:
    state = training_state(host="labör-01")
    report = build_report(state, event="started", status="in progress", seq=1, sent_at=local_time())
    body = encode_report(report)
    assert json.loads(body.decode("utf-8")) == report
    assert "labör-01".encode() in body
