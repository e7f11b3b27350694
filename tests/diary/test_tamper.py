"""Every single change to a written record is detected, and the verifier agrees with the
seed's snippet on where the chain first breaks. Hypothesis picks the mutations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.diary.helpers import seed_first_failure, write_run
from trainrecord.diary import generate_keypair, verify


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A sealed and signed record of 36 lines, and the signer's public key."""
    root = tmp_path_factory.mktemp("record")
    priv, pub, _ = generate_keypair(root / "key")
    write_run(root / "run", repeat=2, signing_key=priv)
    return root / "run", pub


def _copy(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst


def _lines(run: Path) -> list[bytes]:
    return (run / "diary.jsonl").read_bytes().splitlines(keepends=True)


def _write(run: Path, lines: list[bytes]) -> None:
    (run / "diary.jsonl").write_bytes(b"".join(lines))


def test_the_intact_record_verifies_with_its_key(record: tuple[Path, Path]) -> None:
    run, pub = record
    result = verify(run, public_key=pub)
    assert result.ok and result.sealed and result.signed and result.complete
    assert seed_first_failure(run / "diary.jsonl") is None


def _mutate_value(line: dict, key: str, salt: int) -> dict:
    value = line[key]
    if isinstance(value, bool) or value is None:
        new: object = salt
    elif isinstance(value, (int, float)):
        new = value + 1 + salt
    elif isinstance(value, str):
        new = value + "x" * (salt % 3 + 1)
    elif isinstance(value, list):
        new = [*value, salt]
    else:
        new = {**value, "x": salt}
    return {**line, key: new}


@given(data=st.data())
def test_a_changed_value_is_detected_at_that_line(record, tmp_path_factory, data) -> None:
    run = _copy(record[0], tmp_path_factory.mktemp("t") / "run")
    lines = _lines(run)
    n = data.draw(st.integers(0, len(lines) - 1), label="line")
    line = json.loads(lines[n])
    key = data.draw(st.sampled_from(sorted(k for k in line if k not in ("prev", "hash"))))
    changed = _mutate_value(line, key, data.draw(st.integers(0, 5)))
    lines[n] = (json.dumps(changed, sort_keys=True, separators=(",", ":")) + "\n").encode()
    _write(run, lines)
    result = verify(run, public_key=record[1])
    assert result.status == "failed"
    assert result.failure is not None and result.failure.line == n + 1, result.summary()
    if key != "seq":
        assert seed_first_failure(run / "diary.jsonl") == n + 1


@given(data=st.data())
def test_a_changed_byte_anywhere_in_the_diary_is_detected(record, tmp_path_factory, data) -> None:
    run = _copy(record[0], tmp_path_factory.mktemp("t") / "run")
    raw = bytearray((run / "diary.jsonl").read_bytes())
    pos = data.draw(st.integers(0, len(raw) - 1), label="pos")
    new = data.draw(st.integers(0, 255).filter(lambda b: b != raw[pos]), label="byte")
    raw[pos] = new
    (run / "diary.jsonl").write_bytes(bytes(raw))
    result = verify(run, public_key=record[1])
    assert result.status in ("failed", "torn") and not result.ok
    if result.status == "failed" and result.failure and result.failure.file == "diary.jsonl":
        snippet = seed_first_failure(run / "diary.jsonl")
        # where the snippet sees a break, the verifier saw one no later
        assert snippet is None or result.failure.line <= snippet


@given(data=st.data())
def test_a_deleted_line_is_detected(record, tmp_path_factory, data) -> None:
    run = _copy(record[0], tmp_path_factory.mktemp("t") / "run")
    lines = _lines(run)
    n = data.draw(st.integers(0, len(lines) - 1))
    del lines[n]
    _write(run, lines)
    result = verify(run, public_key=record[1])
    assert result.status == "failed"
    if n < len(lines):
        assert result.failure.line == n + 1 and result.failure.rule in (
            "diary.chain.seq",
            "diary.order.run_start",
        )
    else:  # the last line: a cut tail, only the seal can see it
        assert result.failure.rule == "seal.diary.lines"


@given(data=st.data())
def test_a_swapped_pair_is_detected(record, tmp_path_factory, data) -> None:
    run = _copy(record[0], tmp_path_factory.mktemp("t") / "run")
    lines = _lines(run)
    i = data.draw(st.integers(0, len(lines) - 2))
    j = data.draw(st.integers(i + 1, len(lines) - 1))
    lines[i], lines[j] = lines[j], lines[i]
    _write(run, lines)
    result = verify(run, public_key=record[1])
    assert result.status == "failed" and result.failure.line == i + 1


@given(data=st.data())
def test_a_duplicated_line_is_detected(record, tmp_path_factory, data) -> None:
    run = _copy(record[0], tmp_path_factory.mktemp("t") / "run")
    lines = _lines(run)
    n = data.draw(st.integers(0, len(lines) - 1))
    lines.insert(n + 1, lines[n])
    _write(run, lines)
    result = verify(run, public_key=record[1])
    assert result.status == "failed" and result.failure.line == n + 2


@given(cut=st.integers(1, 35))
def test_a_cut_tail_fails_against_the_seal(record, tmp_path_factory, cut: int) -> None:
    run = _copy(record[0], tmp_path_factory.mktemp("t") / "run")
    lines = _lines(run)
    _write(run, lines[: len(lines) - cut])
    result = verify(run, public_key=record[1])
    assert result.status == "failed" and result.failure.rule == "seal.diary.lines"
    assert result.lines == len(lines) - cut  # the lines that are there still verify
    # without the seal a cut tail is only a warning: the chain cannot see it
    (run / "record.json").unlink()
    (run / "record.sig").unlink()
    unsealed = verify(run)
    assert unsealed.ok and any("not sealed" in w for w in unsealed.warnings)


def test_an_appended_line_fails_against_the_seal(record, tmp_path: Path) -> None:
    run = _copy(record[0], tmp_path / "run")
    lines = _lines(run)
    last = json.loads(lines[-1])
    extra = {
        "seq": last["seq"] + 1,
        "time": last["time"],
        "event": "run_start",
        **{k: v for k, v in json.loads(lines[0]).items() if k not in ("seq", "time")},
    }
    body = {k: v for k, v in extra.items() if k not in ("prev", "hash")}
    import hashlib

    extra["prev"] = last["hash"]
    extra["hash"] = hashlib.sha256(
        (last["hash"] + json.dumps(body, sort_keys=True, separators=(",", ":"))).encode()
    ).hexdigest()
    lines.append((json.dumps(extra, sort_keys=True, separators=(",", ":")) + "\n").encode())
    _write(run, lines)
    assert seed_first_failure(run / "diary.jsonl") is None  # a valid chain extension...
    result = verify(run, public_key=record[1])
    assert result.status == "failed" and result.failure.rule == "seal.diary.lines"


@given(data=st.data())
@pytest.mark.parametrize("name", ["record.json", "record.sig"])
def test_a_changed_byte_in_the_seal_or_signature_is_detected(
    record, tmp_path_factory, name, data
) -> None:
    run = _copy(record[0], tmp_path_factory.mktemp("t") / "run")
    raw = bytearray((run / name).read_bytes())
    pos = data.draw(st.integers(0, len(raw) - 1))
    raw[pos] = data.draw(st.integers(0, 255).filter(lambda b: b != raw[pos]))
    (run / name).write_bytes(bytes(raw))
    result = verify(run, public_key=record[1])
    assert result.status == "failed" and result.failure.rule.startswith("seal."), result.summary()


def test_a_torn_last_line_is_told_apart_from_tampering(record, tmp_path: Path) -> None:
    run = _copy(record[0], tmp_path / "run")
    (run / "record.json").unlink()
    (run / "record.sig").unlink()
    lines = _lines(run)
    lines[-1] = lines[-1][:40]  # a crash while writing the last line
    _write(run, lines)
    result = verify(run)
    assert result.status == "torn" and result.lines == len(lines) - 1
    assert result.torn_bytes == 40 and "as a crash while writing leaves it" in result.summary()
    # the same broken line with its newline is not a crash: it is a bad line
    lines[-1] += b"\n"
    _write(run, lines)
    result = verify(run)
    assert result.status == "failed" and result.failure.rule == "diary.file.json"


def test_a_wrong_key_fails(record, tmp_path: Path) -> None:
    _, other, _ = generate_keypair(tmp_path / "other")
    result = verify(record[0], public_key=other)
    assert result.failure.rule == "seal.signature.key"


def test_record_version_other_than_1_is_refused(tmp_path: Path) -> None:
    write_run(tmp_path, seal=False)
    lines = _lines(tmp_path)
    line = json.loads(lines[0])
    line["record_version"] = 2
    lines[0] = (json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n").encode()
    _write(tmp_path, lines)
    result = verify(tmp_path)
    assert result.failure.rule == "diary.run_start.record_version.unsupported"
    assert result.failure.line == 1


def test_metrics_changed_after_run_end_is_detected(tmp_path: Path) -> None:
    write_run(tmp_path, seal=False)
    with open(tmp_path / "metrics.jsonl", "ab") as fh:
        fh.write(b'{"step":9,"loss":1.0,"grad":{},"stuck":{}}\n')
    result = verify(tmp_path)
    assert result.failure.rule == "diary.metrics.sha256"


@given(data=st.data())
@pytest.mark.parametrize("name", ["diary.jsonl", "metrics.jsonl", "record.json", "record.sig"])
def test_arbitrary_bytes_never_crash_the_verifier(record, tmp_path_factory, name, data) -> None:
    run = _copy(record[0], tmp_path_factory.mktemp("t") / "run")
    original = (run / name).read_bytes()
    garbage = data.draw(
        st.one_of(
            st.binary(max_size=300),
            st.builds(
                lambda cut, junk: original[:cut] + junk,
                st.integers(0, len(original)),
                st.binary(max_size=40),
            ),
        )
    )
    (run / name).write_bytes(garbage)
    result = verify(run, public_key=record[1])  # a verdict, never an exception
    assert result.status in ("ok", "torn", "failed")
    if result.ok:
        assert garbage == original


def test_a_number_beyond_a_double_is_refused_by_name(record, tmp_path: Path) -> None:
    run = _copy(record[0], tmp_path / "run")
    lines = _lines(run)
    lines[3] = lines[3].replace(b'"seq":', b'"x":1e400,"seq":', 1)  # an extra field: schema-valid
    _write(run, lines)
    result = verify(run)
    assert result.status == "failed" and result.failure.line == 4
    assert result.failure.rule == "diary.file.json"
    assert "too large for a 64-bit float" in result.failure.message
