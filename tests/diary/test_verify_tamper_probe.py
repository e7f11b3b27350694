"""Tamper probe (items 2, 4, 5, 8, 9, 10): verify answers with a verdict on deep nesting and
on a diary cut while it is read, and says what it knows and no more (a torn tail, a seal
that does not match, an unsigned seal, what the seal covers, a value in the file)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.diary.helpers import BODIES, seed_verify_file, write_run
from trainrecord.canonical import GENESIS
from trainrecord.diary import DiaryWriter, generate_keypair, verify, write_seal
from trainrecord.errors import RecordRefused

ROOT = Path(__file__).resolve().parents[2]


def _run_start_fields(run: Path) -> dict:
    first = json.loads((run / "diary.jsonl").read_bytes().splitlines()[0])
    return {k: v for k, v in first.items() if k not in ("seq", "time", "event", "prev", "hash")}


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("plain") / "run"
    write_run(run, seal=False)
    return run


# --- item 4: nesting deeper than orjson writes -------------------------------------------


@pytest.mark.parametrize("depth", [254, 300])
def test_a_config_nested_deeper_than_orjson_writes_is_sealed_and_verifies(
    plain: Path, tmp_path: Path, depth: int
) -> None:
    """orjson.dumps stops at 255 levels (TypeError "Recursion limit reached") where json and
    the seed's snippet go on: the writer wrote such a line, then its own close (which
    verifies before sealing) and verify raised the TypeError. The slow path takes it."""
    fields = _run_start_fields(plain)
    fields["config"] = {"x": json.loads("[" * depth + "]" * depth)}
    run = tmp_path / "run"
    with DiaryWriter(run) as writer:  # close() seals: it verifies first
        writer.append("run_start", fields)
    assert (run / "record.json").exists()
    assert seed_verify_file(run / "diary.jsonl") == 1
    result = verify(run, workers=1)
    assert result.ok and result.sealed and result.lines == 1, result.summary()


def _deep_line(run: Path, plain: Path, depth: int) -> None:
    """A run_start whose config nests ``depth`` arrays, chained by hand (deeper than the
    writer's own checks go, and than json.loads can parse again for line_hash)."""
    body = {**_run_start_fields(plain), "seq": 0, "time": 1764460800.0, "event": "run_start"}
    body["config"] = {"x": 0}
    canon = json.dumps(body, sort_keys=True, separators=(",", ":"))
    canon = canon.replace('{"x":0}', '{"x":' + "[" * depth + "]" * depth + "}")
    digest = hashlib.sha256((GENESIS + canon).encode()).hexdigest()
    run.mkdir(parents=True, exist_ok=True)
    line = canon[:-1] + f',"hash":"{digest}","prev":"{GENESIS}"}}'
    (run / "diary.jsonl").write_text(line + "\n")


@pytest.mark.parametrize(
    ("depth", "status"),
    [(255, "ok"), (900, "ok"), (1030, "failed"), (100_000, "failed")],
)
def test_deep_nesting_is_a_verdict_never_an_exception(
    plain: Path, tmp_path: Path, depth: int, status: str
) -> None:
    """Up to what json parses (the seed's snippet) the line verifies; beyond orjson's parse
    limit (1024) and json's recursion the line fails diary.file.json, named so."""
    run = tmp_path / "run"
    _deep_line(run, plain, depth)
    result = verify(run, workers=1)
    assert result.status == status, result.summary()
    if status == "failed":
        assert result.failure is not None and result.failure.rule == "diary.file.json"
        assert "nested too deeply" in result.failure.message


# --- item 5: the diary cut while it is read ----------------------------------------------

_CUT_WHILE_READ = """
import json, os, sys
import trainrecord.diary.verifier as v
from trainrecord.diary import verify
run, workers = sys.argv[1], int(sys.argv[2])
v.CHUNK_BYTES = v.MIN_CHUNK_BYTES = 20_000
v.PARALLEL_MIN_BYTES = 1
def cut(done, total):
    if done < total:
        os.truncate(os.path.join(run, "diary.jsonl"), 1000)
print(json.dumps(verify(run, workers=workers, progress=cut).to_json()))
"""


@pytest.mark.parametrize("workers", [1, 2])
def test_a_diary_cut_while_it_is_verified_fails_diary_file_changed(
    tmp_path: Path, workers: int
) -> None:
    """The verifier mmapped the diary: cut while read, the process died of SIGBUS (exit
    135, no verdict). Now every range is read with plain reads, in this process and in the
    workers, and a read that ends early is diary.file.changed (a child process: SIGBUS
    would take the test runner with it)."""
    run = tmp_path / "run"
    write_run(run, repeat=20, seal=False)  # ~120 KB: several 20 KB ranges
    out = subprocess.run(
        [sys.executable, "-c", _CUT_WHILE_READ, str(run), str(workers)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    doc = json.loads(out.stdout)
    assert doc["status"] == "failed" and not doc["ok"]
    failure = doc["failure"]
    assert (failure["rule"], failure["file"], failure["line"]) == (
        "diary.file.changed",
        "diary.jsonl",
        0,
    )
    assert "changed while it was being verified" in failure["message"]


def test_ranges_are_read_with_plain_reads_not_a_map(plain: Path) -> None:
    """The verifier's module no longer maps files (a fault there is a signal, not an
    exception), and its range finder agrees with bytes.find."""
    import trainrecord.diary.verifier as verifier

    assert not hasattr(verifier, "mmap")
    data = (plain / "diary.jsonl").read_bytes()
    with open(plain / "diary.jsonl", "rb") as fh:
        diary = verifier._DiaryFile(fh, len(data))
        assert verifier._ranges(diary, len(data), 700) == verifier._ranges(data, len(data), 700)
        assert diary.rfind(b"\n", len(data)) == data.rfind(b"\n")


# --- item 8: a torn tail is what a crash leaves, and what a cut leaves ---------------------


def test_the_torn_tail_summary_does_not_claim_it_is_not_tampering(plain: Path, tmp_path) -> None:
    run = tmp_path / "run"
    shutil.copytree(plain, run)
    data = (run / "diary.jsonl").read_bytes()
    (run / "diary.jsonl").write_bytes(data[: len(data) // 2])
    result = verify(run)
    assert result.status == "torn"
    text = result.summary()
    assert "not tampering" not in text
    assert "as a crash while writing leaves it" in text
    assert "A cut made on purpose leaves the same" in text and "seal" in text


# --- items 2 and 10: what the seal covers, and whether it is signed ------------------------


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("keys")
    priv, pub, _ = generate_keypair(root / "signer")
    return priv, pub


def _utc(sealed_at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(sealed_at))


def test_an_unsigned_seal_reads_not_signed_and_a_signed_one_not_checked(
    plain: Path, tmp_path: Path, keys: tuple[Path, Path]
) -> None:
    """An unsigned seal said "signature not checked", as a signed record verified without
    its key does, so a signed record resealed unsigned (anyone can) read the same as the
    genuine one, minus the warning. Now the verdict and --json tell them apart."""
    priv, pub = keys
    unsealed = verify(plain)
    assert unsealed.signature is None and unsealed.sealed_at is None
    assert "signature" not in unsealed.summary() and "not sealed" in unsealed.summary()

    run = tmp_path / "run"
    shutil.copytree(plain, run)
    seal = write_seal(run)
    result = verify(run)
    assert result.ok and result.signature == "absent" and not result.signed
    assert (result.sealed_at, result.sealed_lines) == (seal["sealed_at"], seal["diary"]["lines"])
    text = result.summary()
    assert "not signed" in text and "not checked" not in text
    assert f"sealed {_utc(seal['sealed_at'])} over {result.lines} lines" in text
    doc = result.to_json()
    assert (doc["signature"], doc["sealed_at"], doc["sealed_lines"]) == (
        "absent",
        seal["sealed_at"],
        result.lines,
    )

    seal = write_seal(run, signing_key=priv)
    result = verify(run)
    assert result.ok and result.signature == "not checked" and not result.signed
    assert "signed, signature not checked: pass --key PUBLIC_KEY" in result.summary()
    assert any("--key PUBLIC_KEY" in w for w in result.warnings)
    result = verify(run, public_key=pub)
    assert result.ok and result.signature == "valid" and result.signed
    assert result.summary().endswith("signature valid)")
    assert result.to_json()["signature"] == "valid"


def test_a_rollback_to_an_older_signed_seal_shows_its_date_and_lines(
    tmp_path: Path, keys: tuple[Path, Path]
) -> None:
    """Cut a signed two-session record back to its first session and put back that
    session's signed seal: it verifies (by design: the chain and the signature hold), and
    the verdict shows the old seal's sealed_at and the lines it pins, so a reader can see
    what it vouches for (the OK line named neither)."""
    priv, pub = keys
    run = tmp_path / "run"
    write_run(run, repeat=1, signing_key=priv)
    names = ("diary.jsonl", "metrics.jsonl", "record.json", "record.sig")
    old = {name: (run / name).read_bytes() for name in names}
    with DiaryWriter(run, signing_key=priv) as writer:  # a second session, sealed anew
        writer.append("run_start", BODIES["run_start"])
    assert verify(run, public_key=pub).sealed_lines == len(old["diary.jsonl"].splitlines()) + 1
    for name, data in old.items():
        (run / name).write_bytes(data)
    result = verify(run, public_key=pub)
    sealed = json.loads(old["record.json"])
    assert result.ok and result.signature == "valid", result.summary()
    assert (result.sealed_at, result.sealed_lines) == (
        sealed["sealed_at"],
        sealed["diary"]["lines"],
    )
    assert f"sealed {_utc(sealed['sealed_at'])} over {sealed['diary']['lines']} lines" in (
        result.summary()
    )


def test_a_seal_date_beyond_the_calendar_is_shown_as_written(plain: Path, tmp_path) -> None:
    run = tmp_path / "run"
    shutil.copytree(plain, run)
    write_seal(run)
    seal = json.loads((run / "record.json").read_text())
    seal["sealed_at"] = 1e300
    (run / "record.json").write_text(json.dumps(seal, indent=2, sort_keys=True) + "\n")
    result = verify(run)
    assert result.ok and "sealed sealed_at 1e+300 over" in result.summary()


# --- item 9: messages say what is known, values as JSON spells them ----------------------


def test_another_records_seal_is_not_called_an_append(
    plain: Path, tmp_path: Path, keys: tuple[Path, Path]
) -> None:
    """record.json of another run was reported as "the diary was appended to after
    sealing" though the diary was not changed."""
    other = tmp_path / "other"
    write_run(other, repeat=1)  # another record, with fewer lines
    run = tmp_path / "run"
    write_run(run, repeat=2, seal=False)
    shutil.copy(other / "record.json", run / "record.json")
    failure = verify(run).failure
    assert failure is not None and failure.rule == "seal.diary.lines"
    assert "appended to" not in failure.message
    assert "another record's seal, or the diary was rewritten after sealing" in failure.message

    appended = tmp_path / "appended"
    write_run(appended, repeat=1)
    sealed = (appended / "record.json").read_bytes()
    with DiaryWriter(appended, seal=False) as writer:  # resumed: the seal is removed
        writer.append("run_start", BODIES["run_start"])
    (appended / "record.json").write_bytes(sealed)  # the seal of its first session
    failure = verify(appended).failure
    assert failure is not None and failure.rule == "seal.diary.lines"
    assert "end at the sealed head, so the diary was appended to after sealing" in (failure.message)

    cut = tmp_path / "cut"
    shutil.copytree(other, cut)
    lines = (cut / "diary.jsonl").read_bytes().splitlines(keepends=True)
    (cut / "diary.jsonl").write_bytes(b"".join(lines[:-1]))
    failure = verify(cut).failure
    assert failure is not None and failure.rule == "seal.diary.lines"
    assert failure.message.endswith(
        "the diary was cut after sealing, or record.json is another record's seal"
    )


def _edit_line(run: Path, n: int, old: bytes, new: bytes) -> None:
    lines = (run / "diary.jsonl").read_bytes().splitlines(keepends=True)
    assert old in lines[n]
    lines[n] = lines[n].replace(old, new, 1)
    (run / "diary.jsonl").write_bytes(b"".join(lines))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (b'"seq":3', b'"seq":true', "seq: true is not of type 'integer'"),
        (b'"seq":3', b'"seq":3.0', "seq: 3.0 is not of type 'integer'"),
        (b'"seq":3', b'"seq":"3"', "seq: \"3\" is not of type 'integer'"),
    ],
)
def test_a_schema_message_shows_the_value_once_as_json_spells_it(
    plain: Path, tmp_path: Path, old: bytes, new: bytes, message: str
) -> None:
    """Was `seq: True is not of type 'integer' (got True)`: Python's spelling, twice."""
    run = tmp_path / "run"
    shutil.copytree(plain, run)
    _edit_line(run, 3, old, new)
    failure = verify(run).failure
    assert failure is not None and failure.rule == "diary.seq.type"
    assert failure.message == message


def test_a_number_beyond_a_double_is_shown_as_written_not_as_inf(
    plain: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(plain, run)
    lines = (run / "diary.jsonl").read_bytes().splitlines(keepends=True)
    n = next(i for i, raw in enumerate(lines) if b'"event":"alarm"' in raw)
    line = json.loads(lines[n])
    _edit_line(run, n, f'"sigma":{json.dumps(line["sigma"])}'.encode(), b'"sigma":1e400')
    failure = verify(run).failure
    assert failure is not None and failure.line == n + 1
    assert "1e400 is too large for a 64-bit float" in failure.message
    assert "inf" not in failure.message.replace("infinity", "")


def test_a_fixed_value_and_an_enum_are_spelled_as_json(plain: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(plain, run)
    lines = (run / "diary.jsonl").read_bytes().splitlines(keepends=True)
    n = next(i for i, raw in enumerate(lines) if b'"event":"alarm"' in raw)
    _edit_line(run, n, b'"severity":"warning"', b'"severity":null')
    failure = verify(run).failure
    assert failure is not None
    assert failure.message == 'severity: "warning" was expected (got null)'


def test_seal_and_metrics_messages_spell_values_as_json(plain: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(plain, run)
    write_seal(run)
    seal = json.loads((run / "record.json").read_text())
    seal["diary"]["lines"] = True
    (run / "record.json").write_text(json.dumps(seal, indent=2, sort_keys=True) + "\n")
    failure = verify(run).failure
    assert failure is not None and failure.file == "record.json"
    assert failure.message.startswith("diary.lines: true "), failure.message
    assert "True" not in failure.message and "(got" not in failure.message


# --- item 9: a key given for an unsigned record ------------------------------------------


def test_a_key_given_for_an_unsigned_record_is_loaded_and_the_record_fails(
    plain: Path, tmp_path: Path, keys: tuple[Path, Path]
) -> None:
    """A missing or garbage --key was not read at all for an unsigned record (the verdict
    was only seal.signature.missing): the key problem is now said first, signed or not."""
    run = tmp_path / "run"
    shutil.copytree(plain, run)
    write_seal(run)
    with pytest.raises(FileNotFoundError):
        verify(run, public_key=tmp_path / "nope.pub")
    garbage = tmp_path / "garbage.pub"
    garbage.write_text("not a key\n")
    with pytest.raises(RecordRefused) as refused:
        verify(run, public_key=garbage)
    assert [p.rule for p in refused.value.problems] == ["seal.key.format"]
    failure = verify(run, public_key=keys[1]).failure
    assert failure is not None and failure.rule == "seal.signature.missing"
    assert "record.json names no signature and there is no record.sig" in failure.message
    with pytest.raises(FileNotFoundError):  # unsealed too
        verify(plain, public_key=tmp_path / "nope.pub")


def test_a_diary_cut_after_its_lines_were_read_fails_and_one_growing_verifies(
    tmp_path: Path,
) -> None:
    """Workers can read every range before this process hears of the first one, so a cut
    made then was said OK (the race test above failed 2 runs in 4 under load). A diary
    shorter at the end of verification than at its start now fails diary.file.changed,
    deterministically; one that grew (a live run appending) verifies the lines it had."""
    run = tmp_path / "run"
    write_run(run, seal=False)
    diary = run / "diary.jsonl"
    whole = diary.read_bytes()

    def cut(done: int, total: int) -> None:
        if done == total:  # after the last read
            os.truncate(diary, 100)

    result = verify(run, progress=cut)
    assert result.failure is not None and result.failure.rule == "diary.file.changed"
    assert "after its lines were read" in result.failure.message
    assert f"it had {len(whole)} bytes" in result.failure.message

    diary.write_bytes(whole)
    lines = len(whole.splitlines())

    def grow(done: int, total: int) -> None:
        with diary.open("ab") as fh:
            fh.write(b'{"torn": ')

    grown = verify(run, progress=grow)
    assert grown.status == "ok" and grown.lines == lines, grown.summary()


def test_metrics_read_a_chunk_at_a_time_give_the_same_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """metrics.jsonl is read in chunks (the whole file and a digest per row in memory took
    326 MB for a million rows at every close); rows split across chunks verify as before,
    and a changed row or a torn last row are still found."""
    import trainrecord.diary.verifier as verifier

    monkeypatch.setattr(verifier, "METRICS_CHUNK", 7)  # every row split
    run = tmp_path / "run"
    write_run(run, repeat=5, seal=False)
    result = verify(run)
    assert result.ok and result.metrics_rows == 5, result.summary()
    metrics = run / "metrics.jsonl"
    rows = metrics.read_bytes()
    metrics.write_bytes(rows.replace(b'"loss":2.29', b'"loss":2.28', 1))
    changed = verify(run)
    assert changed.failure is not None and changed.failure.rule == "diary.metrics.sha256"
    metrics.write_bytes(rows + b'{"step": 9')
    torn = verify(run)
    assert any("torn row (10 bytes)" in w for w in torn.warnings)
    assert torn.failure is not None and torn.failure.rule == "diary.metrics.sha256"
