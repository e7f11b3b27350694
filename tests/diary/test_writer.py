"""The diary writer: chain, schema checks before writing, non-finite values, order, locking,
resume and metrics. Every written line is checked with the seed's snippet, verbatim."""

from __future__ import annotations

import gc
import hashlib
import json
import math
import threading
import time
from pathlib import Path

import pytest

from tests.diary.helpers import BODIES, seed_check, seed_verify_file, write_run
from trainrecord.diary import EVENT_TYPES, DiaryWriter, MetricsWriter, verify
from trainrecord.errors import RecordRefused


def test_every_event_type_is_written_and_the_seed_snippet_verifies_every_line(tmp_path: Path):
    written = write_run(tmp_path, repeat=2)
    assert {line["event"] for line in written} == set(EVENT_TYPES)
    assert seed_verify_file(tmp_path / "diary.jsonl") == len(written)
    lines = [json.loads(raw) for raw in (tmp_path / "diary.jsonl").read_text().splitlines()]
    assert lines == written  # append returns exactly what is on disk
    for seq, line in enumerate(lines):
        seed_check(line)
        assert line["seq"] == seq
        assert line["prev"] == ("0" * 64 if seq == 0 else lines[seq - 1]["hash"])
    assert verify(tmp_path).ok


def test_time_is_unix_seconds_rounded_to_milliseconds(tmp_path: Path):
    before = time.time()
    with DiaryWriter(tmp_path) as w:
        line = w.append("run_start", BODIES["run_start"])
    after = time.time()
    assert round(line["time"], 3) == line["time"]
    assert before - 0.001 <= line["time"] <= after + 0.001


def test_each_line_is_the_canonical_json_of_the_whole_line(tmp_path: Path):
    write_run(tmp_path)
    for raw in (tmp_path / "diary.jsonl").read_text().splitlines():
        assert raw == json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize(
    ("event", "field", "value", "rule"),
    [
        ("alarm", "severity", "info", "diary.alarm.severity.fixed"),
        ("alarm", "grad_norm", -1.0, "diary.norm.negative"),
        ("repair", "bound", 0.5, "diary.repair.bound.fixed"),
        ("channels", "level", "half", "diary.channels.level.value"),
        ("run_end", "metrics_sha256", "abc", "diary.sha256.format"),
    ],
)
def test_an_invalid_event_is_refused_and_nothing_is_written(
    tmp_path: Path, event, field, value, rule
):
    with DiaryWriter(tmp_path, seal=False) as w:
        w.append("run_start", BODIES["run_start"])
        before = (tmp_path / "diary.jsonl").read_bytes()
        with pytest.raises(RecordRefused) as err:
            w.append(event, {**BODIES[event], field: value})
        assert rule in err.value.rules
        assert field in str(err.value)
        assert (tmp_path / "diary.jsonl").read_bytes() == before
        assert w.seq == 1
        w.append("alarm", BODIES["alarm"])  # the writer goes on after a refusal
    assert verify(tmp_path).ok


REPAIR_NORMS = {"delta_norm": 1.5, "weight_norm_before": 3.0, "weight_norm_after": 3.2}


@pytest.mark.parametrize(
    ("event", "fields", "rule", "field"),
    [
        ("run_end", {"steps": 3, "checks": 4}, "diary.run_end.checks", "checks"),
        (
            "repair",
            {**REPAIR_NORMS, "relative_change": 0.6},  # not 1.5 / 3.0
            "diary.repair.relative_change.value",
            "relative_change",
        ),
        (
            "repair",
            {**REPAIR_NORMS, "relative_change": None},  # null although the norm was not 0
            "diary.repair.relative_change.value",
            "relative_change",
        ),
        (
            "repair",  # a number although the norm before was 0
            {"delta_norm": 1.5, "weight_norm_before": 0.0, "relative_change": 1.0},
            "diary.repair.relative_change.value",
            "relative_change",
        ),
    ],
)
def test_a_line_the_verifier_would_fail_on_a_cross_field_rule_is_refused(
    tmp_path: Path, event, fields, rule, field
):
    """The writer refuses what its own verifier fails: run_end.checks <= steps, and a
    repair's relative_change is delta_norm / weight_norm_before (null when that is 0)."""
    with DiaryWriter(tmp_path, seal=False) as w:
        w.append("run_start", BODIES["run_start"])
        before = (tmp_path / "diary.jsonl").read_bytes()
        with pytest.raises(RecordRefused) as err:
            w.append(event, {**BODIES[event], **fields})
        assert err.value.rules == [rule]
        assert err.value.field == field
        assert (tmp_path / "diary.jsonl").read_bytes() == before
        assert w.seq == 1


@pytest.mark.parametrize(
    ("event", "fields"),
    [
        ("run_end", {"steps": 3, "checks": 3}),
        ("repair", {**REPAIR_NORMS, "relative_change": 0.5}),
        ("repair", {**REPAIR_NORMS, "relative_change": 0.5 * (1 + 1e-7)}),  # within 1e-6
        ("repair", {"delta_norm": 1.5, "weight_norm_before": 0.0, "relative_change": None}),
    ],
)
def test_a_line_that_keeps_the_cross_field_rules_is_written_and_verifies(
    tmp_path: Path, event, fields
):
    with DiaryWriter(tmp_path) as w, MetricsWriter(tmp_path) as m:
        w.append("run_start", BODIES["run_start"])
        for step in range(fields.get("checks", 0)):  # one metrics row per check
            m.append({"step": step, "loss": 1.0, "grad": {}, "stuck": {}})
        end = {**BODIES["run_end"], "metrics_sha256": m.sha256()}
        line = w.append(event, {**(end if event == "run_end" else BODIES[event]), **fields})
        assert {k: line[k] for k in fields} == fields
        if event != "run_end":
            w.append("run_end", end)
    assert verify(tmp_path).ok


def test_a_missing_field_is_refused_with_its_name(tmp_path: Path):
    with DiaryWriter(tmp_path, seal=False) as w:
        w.append("run_start", BODIES["run_start"])
        body = dict(BODIES["certificate"])
        del body["assumes"]
        with pytest.raises(RecordRefused) as err:
            w.append("certificate", body)
    assert err.value.rule == "diary.certificate.fields.missing"
    assert "assumes" in str(err.value)


def test_non_finite_floats_become_tokens_where_allowed_and_are_refused_elsewhere(tmp_path: Path):
    with DiaryWriter(tmp_path, seal=False) as w, MetricsWriter(tmp_path) as m:
        w.append("run_start", BODIES["run_start"])
        line = w.append(
            "nonfinite_loss", {"step": 1, "severity": "critical", "value": float("-inf")}
        )
        assert line["value"] == "-Infinity"
        row = m.append({"step": 1, "loss": float("nan"), "grad": {"a": math.inf}, "stuck": {}})
        assert row["loss"] == "NaN" and row["grad"]["a"] == "Infinity"
        with pytest.raises(RecordRefused) as err:
            w.append("alarm", {**BODIES["alarm"], "grad_norm": float("nan")})
        assert err.value.rule == "diary.norm.type"
    text = (tmp_path / "diary.jsonl").read_text() + (tmp_path / "metrics.jsonl").read_text()
    assert "NaN," not in text and "Infinity," not in text.replace('"-Infinity",', "")
    for raw in text.splitlines():
        json.loads(raw, parse_constant=lambda c: pytest.fail(f"non-strict token {c}"))
    assert verify(tmp_path).ok


def test_the_writer_sets_the_common_fields_itself(tmp_path: Path):
    with DiaryWriter(tmp_path, seal=False) as w, pytest.raises(RecordRefused) as err:
        w.append("run_start", {**BODIES["run_start"], "seq": 5})
    assert err.value.rule == "diary.writer.reserved"


PAIR_KEY = {"\ud83d\udc80": 1, "\uff41": 2}
"""The tamper probe's F3: a key of a lone high and a lone low surrogate (two code points in
Python) sorts at U+D83D but is written as ``"\\ud83d\\udc80"``, which every JSON parser
reads back as ONE character (U+1F480) sorting after U+FF41: the line failed its own hash,
close() refused to seal it and verify called the genuine record tampered."""


@pytest.mark.parametrize(
    ("where", "fields", "path"),
    [
        ("config", {"config": PAIR_KEY}, "config.\\ud83d\\udc80"),
        ("model", {"model": "Net-\ud800"}, "model"),  # F6: show then died on it
        ("a deeper value", {"config": {"a": [1, {"b": "x\udfffy"}]}}, "config.a[1].b"),
        ("a deeper key", {"config": {"a": [{"\udc80": 1}]}}, "config.a[0].\\udc80"),
        ("a low before a high", {"name": "\udc80\ud83d"}, "name"),
    ],
)
@pytest.mark.parametrize("validate", [True, False])
def test_text_with_a_surrogate_code_point_is_refused_and_nothing_is_written(
    tmp_path: Path, where: str, fields: dict, path: str, validate: bool
) -> None:
    """diary.text.surrogate: a string holding a surrogate code point is no Unicode text;
    the writer refuses it (key or value, at any depth), naming the field, before writing."""
    with DiaryWriter(tmp_path, validate=validate) as w, pytest.raises(RecordRefused) as err:
        w.append("run_start", {**BODIES["run_start"], **fields})
    assert err.value.rule == "diary.text.surrogate", where
    assert err.value.field == path
    assert "surrogate code point U+D" in str(err.value) and "valid Unicode text" in str(err.value)
    assert not (tmp_path / "diary.jsonl").exists()  # the refused first line left no file
    with DiaryWriter(tmp_path) as w:  # a later line too: the lines before stay, and seal
        w.append("run_start", BODIES["run_start"])
        with pytest.raises(RecordRefused, match=r"diary\.text\.surrogate"):
            w.append("sink_error", {"sink": "x", "error": "e", "x_extra": fields})
    result = verify(tmp_path)
    assert result.ok and result.sealed and result.lines == 1, result.summary()


def test_text_beyond_the_bmp_is_text_and_verifies(tmp_path: Path) -> None:
    """A character beyond U+FFFF (one code point in Python; a surrogate pair only in the
    JSON text) and the code points around the surrogates are written and verify."""
    text = "\U0001f480 \ud7ff\ue000 \uffff"
    with DiaryWriter(tmp_path) as w:
        w.append("run_start", {**BODIES["run_start"], "model": text, "config": {text: [text]}})
    assert verify(tmp_path).ok and seed_verify_file(tmp_path / "diary.jsonl") == 1


def test_the_first_line_must_be_run_start_and_only_run_start_follows_run_end(tmp_path: Path):
    with DiaryWriter(tmp_path, seal=False) as w:
        with pytest.raises(RecordRefused) as err:
            w.append("alarm", BODIES["alarm"])
        assert err.value.rule == "diary.order.run_start"
        w.append("run_start", BODIES["run_start"])
        w.append("run_end", {**BODIES["run_end"], "metrics_sha256": hashlib.sha256().hexdigest()})
        with pytest.raises(RecordRefused) as err:
            w.append("alarm", BODIES["alarm"])
        assert err.value.rule == "diary.order.run_end"
        w.append("run_start", BODIES["run_start"])  # a resumed session may start
    assert not (tmp_path / "diary.jsonl").read_text().count('"event":"alarm"')


def test_unknown_events_and_extra_fields_are_written(tmp_path: Path):
    with DiaryWriter(tmp_path) as w:
        w.append("run_start", {**BODIES["run_start"], "x_note": "extra"})
        w.append("lr_changed", {"step": 3, "lr": 0.01})
    assert verify(tmp_path).ok
    seed_verify_file(tmp_path / "diary.jsonl")


def test_a_second_writer_on_the_same_diary_is_refused(tmp_path: Path):
    with DiaryWriter(tmp_path, seal=False) as w:
        w.append("run_start", BODIES["run_start"])
        with pytest.raises(RecordRefused) as err:
            DiaryWriter(tmp_path)
        assert err.value.rule == "diary.writer.locked"
        assert "an earlier Monitor or writer in this one" in str(err.value)  # what to do
        assert "close()" in str(err.value)
        with MetricsWriter(tmp_path), pytest.raises(RecordRefused) as err2:
            MetricsWriter(tmp_path)
        assert err2.value.rule == "diary_metrics.writer.locked"


def test_resume_continues_seq_and_chain_and_reseals(tmp_path: Path):
    first = write_run(tmp_path)
    assert verify(tmp_path).sealed
    with DiaryWriter(tmp_path) as w:
        assert w.seq == len(first) and w.head == first[-1]["hash"]
        assert not (tmp_path / "record.json").exists()  # the old seal pinned the old head
        line = w.append("run_start", BODIES["run_start"])
    assert line["seq"] == len(first) and line["prev"] == first[-1]["hash"]
    result = verify(tmp_path)
    assert result.ok and result.sealed and result.lines == len(first) + 1
    assert seed_verify_file(tmp_path / "diary.jsonl") == len(first) + 1


def test_resume_refuses_a_diary_that_fails_verification(tmp_path: Path):
    write_run(tmp_path, seal=False)
    path = tmp_path / "diary.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace('"step":', '"step":9', 1)
    path.write_text("".join(lines))
    before = path.read_bytes()
    with pytest.raises(RecordRefused) as err:
        DiaryWriter(tmp_path)
    assert err.value.rule == "diary.writer.resume"
    assert "line 4" in str(err.value)
    assert path.read_bytes() == before


def test_resume_after_a_torn_tail_needs_consent_and_then_cuts_only_the_torn_line(tmp_path):
    written = write_run(tmp_path, seal=False)
    path = tmp_path / "diary.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"event":"alarm","seq":')
    with pytest.raises(RecordRefused) as err:
        DiaryWriter(tmp_path)
    assert "torn" in str(err.value)
    with DiaryWriter(tmp_path, drop_torn_tail=True) as w:
        assert w.seq == len(written)
        w.append("run_start", BODIES["run_start"])
    assert verify(tmp_path).ok


def test_a_resumed_session_starts_with_run_start(tmp_path):
    with DiaryWriter(tmp_path, seal=False) as w:  # a session that crashed: no run_end
        w.append("run_start", BODIES["run_start"])
    before = (tmp_path / "diary.jsonl").read_bytes()
    with DiaryWriter(tmp_path) as w:
        with pytest.raises(RecordRefused) as err:
            w.append("sink_error", {"sink": "x", "error": "y"})
        assert err.value.rule == "diary.writer.resume"
        assert (tmp_path / "diary.jsonl").read_bytes() == before  # nothing written
        w.append("run_start", BODIES["run_start"])
        w.append("sink_error", {"sink": "x", "error": "y"})
    assert verify(tmp_path).ok


def test_a_diary_torn_in_its_first_line_is_torn_and_can_be_resumed(tmp_path):
    path = tmp_path / "diary.jsonl"
    path.write_bytes(b'{"seq":0,"time":1.5,"ev')  # killed while writing the first line
    result = verify(tmp_path)
    assert (result.status, result.lines, result.torn_bytes) == ("torn", 0, path.stat().st_size)
    assert result.failure is None
    with pytest.raises(RecordRefused, match="drop_torn_tail"):
        DiaryWriter(tmp_path)
    with DiaryWriter(tmp_path, drop_torn_tail=True) as w:
        assert (w.seq, w.head) == (0, "0" * 64)
        w.append("run_start", BODIES["run_start"])
    assert verify(tmp_path).ok and verify(tmp_path).lines == 1


def test_metrics_sha256_is_the_sha256_of_the_file_as_it_stands(tmp_path: Path):
    with MetricsWriter(tmp_path) as m:
        assert m.sha256() == hashlib.sha256(b"").hexdigest()
        m.append({"step": 0, "loss": 2.0, "grad": {}, "stuck": {}})
        assert m.sha256() == hashlib.sha256((tmp_path / "metrics.jsonl").read_bytes()).hexdigest()
    with MetricsWriter(tmp_path) as m:  # reopened: the running hash covers the old rows
        m.append({"step": 1, "loss": 1.0, "grad": {}, "stuck": {}})
        assert m.sha256() == hashlib.sha256((tmp_path / "metrics.jsonl").read_bytes()).hexdigest()
        assert m.rows == 2


def test_metrics_rows_are_checked(tmp_path: Path):
    with MetricsWriter(tmp_path) as m, pytest.raises(RecordRefused) as err:
        m.append({"step": 0, "loss": 2.0, "grad": {}, "stuck": {"c": [1, 2, 3]}})
    assert err.value.rule == "diary_metrics.stuck.shape"
    assert (tmp_path / "metrics.jsonl").read_bytes() == b""


def test_the_seed_metrics_row_is_written_as_one_line(tmp_path: Path):
    row = json.loads(
        (
            Path(__file__).parent.parent.parent / "spec" / "vectors" / "diary" / "metrics.json"
        ).read_text()
    )[0]["tests"][0]["data"]
    with MetricsWriter(tmp_path) as m:
        m.append(row)
    text = (tmp_path / "metrics.jsonl").read_text()
    assert text.count("\n") == 1 and json.loads(text) == row


def test_an_unknown_fsync_policy_is_refused(tmp_path: Path):
    with pytest.raises(RecordRefused) as err:
        DiaryWriter(tmp_path, fsync_policy="sometimes")  # type: ignore[arg-type]
    assert err.value.rule == "diary.writer.fsync_policy"


@pytest.mark.parametrize("policy", ["always", "interval", "critical"])
def test_every_fsync_policy_writes_every_line(tmp_path: Path, policy: str):
    with DiaryWriter(tmp_path, fsync_policy=policy, fsync_interval=0.0) as w:
        w.append("run_start", BODIES["run_start"])
        for _ in range(5):
            w.append("alarm", BODIES["alarm"])
            # flushed at once: another reader sees the line before close
            assert (tmp_path / "diary.jsonl").read_bytes().count(b"\n") == w.seq
    assert verify(tmp_path).lines == 6


def test_fsync_happens_at_run_start_critical_events_and_close(tmp_path: Path, monkeypatch):
    import trainrecord.diary.durability as durability

    calls: list[int] = []
    real = durability.os.fsync
    me = threading.get_ident()  # the background fsync thread may serve another test's file

    def fsync(fd: int) -> None:
        if threading.get_ident() == me:
            calls.append(fd)
        real(fd)

    monkeypatch.setattr(durability.os, "fsync", fsync)
    w = DiaryWriter(tmp_path, fsync_policy="critical", seal=False)
    calls.clear()
    w.append("run_start", BODIES["run_start"])
    assert len(calls) == 1
    w.append("alarm", BODIES["alarm"])
    assert len(calls) == 1  # a warning is not synced under "critical"
    w.append("nonfinite_loss", BODIES["nonfinite_loss"])
    assert len(calls) == 2
    w.close()
    assert len(calls) == 3


def test_non_string_keys_are_refused_rather_than_silently_converted(tmp_path: Path):
    with DiaryWriter(tmp_path, seal=False) as w:
        w.append("run_start", BODIES["run_start"])
        with pytest.raises(RecordRefused) as err:
            w.append("structure", {**BODIES["structure"], "pairs": {1: "bn"}})
    assert err.value.rule == "diary.file.json"
    assert verify(tmp_path).lines == 1


def test_tuples_and_float_subclasses_are_written_as_json_has_them(tmp_path: Path):
    class Norm(float):
        pass

    with DiaryWriter(tmp_path, seal=False) as w:
        w.append("run_start", BODIES["run_start"])
        line = w.append(
            "nonfinite_gradient", {"step": 1, "severity": "critical", "layers": ("a", "b")}
        )
        alarm = w.append("alarm", {**BODIES["alarm"], "grad_norm": Norm(0.5)})
    assert line["layers"] == ["a", "b"] and type(alarm["grad_norm"]) is float
    assert seed_verify_file(tmp_path / "diary.jsonl") == 3


def test_writers_dropped_without_close_give_their_files_back(tmp_path):
    diary = DiaryWriter(tmp_path, fsync_policy="interval", fsync_interval=60.0, seal=False)
    metrics = MetricsWriter(tmp_path, fsync_interval=60.0)
    for _ in range(3):  # within the interval: background fsyncs are scheduled, not done
        diary.append("run_start", BODIES["run_start"])
        metrics.append({"step": 0, "loss": 1.0, "grad": {}, "stuck": {}})
    del diary, metrics  # an exception left them unreachable, never closed
    gc.collect()
    with DiaryWriter(tmp_path) as again, MetricsWriter(tmp_path) as rows:  # not locked out
        again.append("run_start", BODIES["run_start"])
        assert rows.rows == 3
    assert verify(tmp_path).lines == 4
