"""Resuming a record that no seal vouches for (tamper probe F1: resuming signs tampered
history). An attacker without the key edits a signed record, recomputes the chain and
deletes record.json and record.sig; the owner resumes with the key; the writer's
verification said "not sealed" and that was dropped, and close() signed the forged history:
``verify --key`` then said "signature valid".

The writer cannot tell a forged unsealed diary from a crashed one, but it says what it found
(at the resume and at close), checks a signature by its own key, and ``require_seal=True``
refuses such a resume."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.diary.helpers import BODIES, rechain, write_run
from trainrecord.diary import DiaryWriter, MetricsWriter, generate_keypair, verify, write_seal
from trainrecord.errors import RecordRefused

ENDED = "no seal (record.json) although its last session ended (run_end)"
CRASHED = "no seal (record.json) and no run_end at its end"
UNSIGNED = "an unsigned seal (record.json without record.sig)"


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Any, Path, str]:
    return generate_keypair(tmp_path / "signer")


def _forge(run: Path) -> None:
    """The attack: change the loss_spike value, recompute the chain, remove the seal."""

    def lower(_: int, line: dict[str, Any]) -> None:
        if line["event"] == "loss_spike":
            line["value"] = 0.001

    rechain(run, lower)
    for name in ("record.json", "record.sig"):
        (run / name).unlink(missing_ok=True)


def _session(run: Path, **options: Any) -> DiaryWriter:
    with DiaryWriter(run, **options) as w, MetricsWriter(run) as m:
        w.append("run_start", BODIES["run_start"])
        w.append("run_end", {**BODIES["run_end"], "metrics_sha256": m.sha256()})
    return w


def _said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "trainrecord.diary"]


def test_resuming_an_ended_record_whose_seal_is_gone_says_so_at_resume_and_close(
    tmp_path: Path, keys: tuple[Any, Path, str], caplog: pytest.LogCaptureFixture
) -> None:
    priv, pub, print_ = keys
    run = tmp_path / "run"
    write_run(run, signing_key=priv)
    _forge(run)
    assert verify(run).ok  # the chain alone cannot tell
    with caplog.at_level(logging.WARNING, logger="trainrecord.diary"):
        w = _session(run, signing_key=priv)
    assert w.unvouched == ENDED
    resumed, closed = _said(caplog)
    assert f"resuming {run}: the record has {ENDED}" in resumed
    assert "a seal that is gone can mean the history was edited" in resumed
    assert "The seal and signature this writer makes at close will cover the " in resumed
    assert "require_seal=True" in resumed
    assert f"{run} is sealed and signed (key {print_[:16]}...) now" in closed
    assert ENDED in closed and "check them before trusting this seal" in closed
    assert verify(run, public_key=pub).signed  # by default it is signed, as both say


def test_require_seal_refuses_it_and_changes_nothing(
    tmp_path: Path, keys: tuple[Any, Path, str]
) -> None:
    priv, _, _ = keys
    run = tmp_path / "run"
    write_run(run, signing_key=priv)
    _forge(run)
    before = (run / "diary.jsonl").read_bytes()
    with pytest.raises(RecordRefused) as err:
        DiaryWriter(run, signing_key=priv, require_seal=True)
    assert err.value.rule == "diary.writer.resume" and err.value.field == "record.json"
    message = str(err.value)
    assert f"require_seal=True, and the record has {ENDED}" in message
    assert f"`trainrecord seal {run} --key <your private key>`" in message
    assert (run / "diary.jsonl").read_bytes() == before
    assert not (run / "record.json").exists()


def test_an_unsigned_reseal_resumed_with_a_key_is_said_and_refused_under_require_seal(
    tmp_path: Path, keys: tuple[Any, Path, str], caplog: pytest.LogCaptureFixture
) -> None:
    # The probe's A03/A05: edit, rechain, `trainrecord seal --replace` (no key needed)
    priv, _, _ = keys
    run = tmp_path / "run"
    write_run(run, signing_key=priv)
    _forge(run)
    write_seal(run)
    assert verify(run).ok and verify(run).sealed
    with pytest.raises(RecordRefused, match="an unsigned seal"):
        DiaryWriter(run, signing_key=priv, require_seal=True)
    with caplog.at_level(logging.WARNING, logger="trainrecord.diary"):
        w = _session(run, signing_key=priv)
    assert w.unvouched == UNSIGNED
    resumed, closed = _said(caplog)
    assert UNSIGNED in resumed and "anyone can write one" in resumed and UNSIGNED in closed


def test_a_forged_signature_naming_the_writers_own_key_is_refused(
    tmp_path: Path, keys: tuple[Any, Path, str]
) -> None:
    # record.json names the owner's key but record.sig does not sign it: verify without a
    # key says "OK", and before, the writer re-signed the record without a word
    priv, pub, print_ = keys
    other, _, _ = generate_keypair(tmp_path / "other")
    run = tmp_path / "run"
    write_run(run, signing_key=priv)
    _forge(run)
    write_seal(run, signing_key=other)
    seal = json.loads((run / "record.json").read_text())
    seal["signature"]["public_key_sha256"] = print_
    (run / "record.json").write_text(json.dumps(seal, indent=2, sort_keys=True) + "\n")
    assert verify(run).ok
    with pytest.raises(RecordRefused) as err:
        DiaryWriter(run, signing_key=priv)
    assert err.value.rule == "diary.writer.resume" and "seal.signature" in str(err.value)
    assert not verify(run, public_key=pub).ok  # nothing signed


def test_a_crashed_session_is_resumed_with_a_word_and_refused_under_require_seal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run = tmp_path / "run"
    with DiaryWriter(run, seal=False) as w:  # on disk as a crash leaves it
        w.append("run_start", BODIES["run_start"])
    (run / "metrics.jsonl").write_bytes(b'{"step":')  # a torn row: said too
    with pytest.raises(RecordRefused, match="no run_end at its end"):
        DiaryWriter(run, require_seal=True)
    with caplog.at_level(logging.WARNING, logger="trainrecord.diary"):
        w = _session(run)
    assert w.unvouched == CRASHED
    said = _said(caplog)
    assert len(said) == 3, said
    assert CRASHED in said[0] and "a crash leaves a record so" in said[0]
    assert "verify says: metrics.jsonl ends in a torn row (8 bytes)" in said[1]
    assert f"{run} is sealed now" in said[2] and CRASHED in said[2]
    assert verify(run).ok


def test_seal_false_then_a_resume_is_the_case_the_warning_names(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run = tmp_path / "run"
    write_run(run, seal=False)
    with caplog.at_level(logging.WARNING, logger="trainrecord.diary"):
        _session(run)
    assert any("(unless seal=False" in s for s in _said(caplog))


@pytest.mark.parametrize("signed", [False, True])
def test_a_record_sealed_as_it_stands_is_resumed_without_a_word_even_under_require_seal(
    tmp_path: Path, keys: tuple[Any, Path, str], caplog: pytest.LogCaptureFixture, signed: bool
) -> None:
    priv, pub, _ = keys
    run = tmp_path / "run"
    key = priv if signed else None
    write_run(run, signing_key=key)
    with caplog.at_level(logging.WARNING, logger="trainrecord.diary"):
        w = _session(run, signing_key=key, require_seal=True)
    assert w.unvouched is None and _said(caplog) == []
    assert verify(run, public_key=pub if signed else None).ok


def test_require_seal_refuses_a_seal_signed_by_another_key(
    tmp_path: Path, keys: tuple[Any, Path, str]
) -> None:
    priv, _, _ = keys
    other, _, other_print = generate_keypair(tmp_path / "other")
    run = tmp_path / "run"
    write_run(run, signing_key=other)
    with pytest.raises(RecordRefused, match=f"signed by another key \\({other_print[:16]}"):
        DiaryWriter(run, signing_key=priv, require_seal=True)
    with pytest.raises(TypeError, match="require_seal"):
        DiaryWriter(run, require_seal="yes")  # type: ignore[arg-type]
