"""Every rule only the writer or the verifier can check (``schema: false`` in
spec/rules/diary.json) has a case here that breaks it and sees that rule reported, or, for
guarantees, names the test that holds the writer to it."""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import SPEC
from tests.diary import test_canonical_vectors, test_crash, test_verify_tamper_probe, test_writer
from tests.diary.helpers import BODIES, write_run
from trainrecord.diary import DiaryWriter, generate_keypair, verify, write_seal


def _lines(run: Path) -> list[bytes]:
    return (run / "diary.jsonl").read_bytes().splitlines(keepends=True)


def _put(run: Path, lines: list[bytes]) -> None:
    (run / "diary.jsonl").write_bytes(b"".join(lines))


def _edit_line(run: Path, n: int, **changes: object) -> None:
    lines = _lines(run)
    line = json.loads(lines[n])
    line.update(changes)
    lines[n] = (json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n").encode()
    _put(run, lines)


def _seal_edit(run: Path, edit: Callable[[dict], None]) -> None:
    seal = json.loads((run / "record.json").read_text())
    edit(seal)
    (run / "record.json").write_text(json.dumps(seal, indent=2, sort_keys=True) + "\n")


def _relink(run: Path, renumber: bool = True, first_prev: str = "0" * 64) -> None:
    """Recompute seq, prev and hash of every line (a forger who knows the recipe), the first
    line's prev being ``first_prev``."""
    import hashlib

    lines = [json.loads(x) for x in _lines(run)]
    prev = first_prev
    out = []
    for seq, line in enumerate(lines):
        if renumber:
            line["seq"] = seq
        body = {k: v for k, v in line.items() if k not in ("prev", "hash")}
        digest = hashlib.sha256(
            (prev + json.dumps(body, sort_keys=True, separators=(",", ":"))).encode()
        ).hexdigest()
        out.append(
            json.dumps(
                {**body, "prev": prev, "hash": digest}, sort_keys=True, separators=(",", ":")
            ).encode()
            + b"\n"
        )
        prev = digest
    _put(run, out)


def _break_seq(run: Path) -> None:
    _edit_line(run, 5, seq=99)
    _relink(run, renumber=False)


def _break_prev(run: Path) -> None:
    lines = _lines(run)
    line = json.loads(lines[5])
    line["prev"] = "1" * 64
    lines[5] = (json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n").encode()
    _put(run, lines)


def _break_hash(run: Path) -> None:
    _edit_line(run, 5, step=12345)


def _time_int(run: Path) -> None:
    _edit_line(run, 5, time=1764460800)
    _relink(run)


def _metrics_folder(run: Path) -> None:
    (run / "metrics.jsonl").unlink()
    (run / "metrics.jsonl").mkdir()


def _not_json(run: Path) -> None:
    lines = _lines(run)
    lines[3] = b'{"seq": 3, "value": NaN}\n'
    _put(run, lines)


def _torn(run: Path) -> None:
    with open(run / "diary.jsonl", "ab") as fh:
        fh.write(b'{"seq":')


def _empty(run: Path) -> None:
    (run / "diary.jsonl").write_bytes(b"")


def _not_run_start(run: Path) -> None:
    _put(run, _lines(run)[1:])
    _relink(run)


def _after_run_end(run: Path) -> None:
    lines = _lines(run)
    _put(run, [*lines, lines[3]])
    _relink(run)


def _metrics_sha(run: Path) -> None:
    with open(run / "metrics.jsonl", "ab") as fh:
        fh.write(b'{"step":9,"loss":1.0,"grad":{},"stuck":{}}\n')


def _metrics_json(run: Path) -> None:
    (run / "metrics.jsonl").write_bytes(b'{"step": 1, "loss": NaN}\n')


def _rows(run: Path, steps: list[int], checks: int) -> None:
    """metrics.jsonl with rows of these steps; the run_end says ``checks`` and names the
    file's digest (every hash recomputed): only the rows against the diary are wrong."""
    import hashlib

    rows = b"".join(b'{"grad":{},"loss":1.0,"stuck":{},"step":%d}\n' % step for step in steps)
    (run / "metrics.jsonl").write_bytes(rows)
    end = len(_lines(run)) - 1
    _edit_line(run, end, checks=checks, metrics_sha256=hashlib.sha256(rows).hexdigest())
    _relink(run)


def _rows_not_checks(run: Path) -> None:
    _rows(run, [0, 50], 1)


def _rows_out_of_order(run: Path) -> None:
    _rows(run, [50, 0], 2)


def _checks_over_steps(run: Path) -> None:
    end = len(_lines(run)) - 1
    _edit_line(run, end, steps=0)
    _relink(run)


def _relative_change(run: Path) -> None:
    _edit_line(run, _line_of(run, "repair"), weight_norm_before=2.0, relative_change=7.0)
    _relink(run)


def _seal_missing(run: Path) -> None:
    (run / "record.json").unlink()


def _seal_json(run: Path) -> None:
    (run / "record.json").write_text("{not json")


def _seal_lines(run: Path) -> None:
    _put(run, _lines(run)[:-2])


def _seal_head(run: Path) -> None:
    _seal_edit(run, lambda s: s["diary"].update(head_hash="ab" * 32))


def _seal_sha(run: Path) -> None:
    _seal_edit(run, lambda s: s["diary"].update(sha256="ab" * 32))


def _seal_metrics(run: Path) -> None:
    _seal_edit(run, lambda s: s["metrics"].update(rows=s["metrics"]["rows"] + 1))


def _sig_missing(run: Path) -> None:
    (run / "record.sig").unlink()


def _sig_unexpected(run: Path) -> None:
    sig = (run / "record.sig").read_bytes()
    write_seal(run)  # an unsigned seal...
    (run / "record.sig").write_bytes(sig)  # ...with a signature file left beside it


def _sig_format(run: Path) -> None:
    (run / "record.sig").write_text("not base64!\n")


def _sig_invalid(run: Path) -> None:
    raw = bytearray(base64.b64decode((run / "record.sig").read_text()))
    raw[0] ^= 1
    (run / "record.sig").write_text(base64.b64encode(bytes(raw)).decode() + "\n")


CASES: dict[str, Callable[[Path], None]] = {
    "diary.chain.seq": _break_seq,
    "diary.chain.prev": _break_prev,
    "diary.chain.hash": _break_hash,
    "diary.file.json": _not_json,
    "diary.time.precision": _time_int,
    "diary.file.regular": _metrics_folder,
    "diary.file.empty": _empty,
    "diary.order.run_start": _not_run_start,
    "diary.order.run_end": _after_run_end,
    "diary.metrics.sha256": _metrics_sha,
    "diary.metrics.json": _metrics_json,
    "diary.metrics.rows": _rows_not_checks,
    "diary.metrics.order": _rows_out_of_order,
    "diary.run_end.checks": _checks_over_steps,
    "diary.repair.relative_change.value": _relative_change,
    "seal.missing": _seal_missing,
    "seal.file.json": _seal_json,
    "seal.diary.lines": _seal_lines,
    "seal.diary.head": _seal_head,
    "seal.diary.sha256": _seal_sha,
    "seal.metrics.sha256": _seal_metrics,
    "seal.signature.missing": _sig_missing,
    "seal.signature.unexpected": _sig_unexpected,
    "seal.signature.format": _sig_format,
    "seal.signature.invalid": _sig_invalid,
}
TORN = {"diary.file.torn": _torn}
ELSEWHERE = {
    "diary.writer.refuse": test_writer.test_an_invalid_event_is_refused_and_nothing_is_written,
    "diary.writer.time": test_writer.test_time_is_unix_seconds_rounded_to_milliseconds,
    "diary.writer.durable": test_crash.test_a_killed_writer_leaves_a_verifiable_prefix,
    "diary.writer.resume": test_writer.test_resume_refuses_a_diary_that_fails_verification,
    "diary.writer.reserved": test_writer.test_the_writer_sets_the_common_fields_itself,
    "diary.writer.locked": test_writer.test_a_second_writer_on_the_same_diary_is_refused,
    "diary_metrics.writer.locked": test_writer.test_a_second_writer_on_the_same_diary_is_refused,
    "diary.writer.fsync_policy": test_writer.test_an_unknown_fsync_policy_is_refused,
    "diary.text.surrogate": (
        test_writer.test_text_with_a_surrogate_code_point_is_refused_and_nothing_is_written
    ),
    "diary.architecture.text": test_canonical_vectors.test_architecture_vector,
    "diary.file.changed": (
        test_verify_tamper_probe.test_a_diary_cut_while_it_is_verified_fails_diary_file_changed
    ),
    "seal.verify": None,  # tests/diary/test_cli_and_seal.py: seal refuses a bad record
    "seal.key.exists": None,  # test_cli_and_seal.py: keygen never overwrites a key
    "seal.key.format": None,  # test_cli_and_seal.py: a bad key file names the file only
    "seal.signature.key": None,  # test_tamper.py: a wrong key fails
}


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("rules")
    priv, pub, _ = generate_keypair(root / "key")
    write_run(root / "run", repeat=1, signing_key=priv)
    return root / "run", pub


LINE = {
    "diary.chain.seq": 6,
    "diary.chain.prev": 6,
    "diary.chain.hash": 6,
    "diary.file.json": 4,
    "diary.time.precision": 6,
    "diary.order.run_start": 1,
    "diary.order.run_end": 20,
    "diary.metrics.sha256": 19,
    "diary.metrics.json": 1,
}
"""The 1-based line each case's failure names (in diary.jsonl; metrics.jsonl for
diary.metrics.json): the broken line itself, not a later line that fails because of it (a
forward jump of seq accepted would fail only on the next line, with the same rule)."""


@pytest.mark.parametrize("rule", sorted(CASES))
def test_the_verifier_reports_the_rule(signed, tmp_path: Path, rule: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(signed[0], run)
    assert verify(run, public_key=signed[1]).ok
    CASES[rule](run)
    result = verify(run, public_key=signed[1])
    assert result.status == "failed" and result.failure is not None
    assert result.failure.rule == rule, result.summary()
    if rule in LINE:
        assert result.failure.line == LINE[rule], result.summary()


def test_a_torn_tail_is_reported_as_torn(signed, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(signed[0], run)
    for name in ("record.json", "record.sig"):
        (run / name).unlink()
    _torn(run)
    result = verify(run)
    assert result.status == "torn" and result.torn_bytes == len(b'{"seq":')
    (run / "diary.jsonl").write_bytes(b'{"seq":0')  # a lone torn line: torn, not empty
    result = verify(run)
    assert (result.status, result.failure, result.torn_bytes) == ("torn", None, 8)


def _first_prev(run: Path) -> None:
    _relink(run, first_prev="1" * 64)  # every hash right, the first prev not 64 zeros


def _run_end_after_run_end(run: Path) -> None:
    lines = _lines(run)
    _put(run, [*lines, lines[-1]])  # the final run_end twice
    _relink(run)


def _sig_padding_bits(run: Path) -> None:
    """The same 64 bytes in base64 whose unused padding bits are not zero (the last data
    character before '==' carries 2 bits of the last byte and 4 unused bits)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    text = (run / "record.sig").read_text()
    assert text.endswith("==\n")
    last = alphabet.index(text[-4])
    assert last & 0b1111 == 0
    odd = text[:-4] + alphabet[last | 1] + text[-3:]
    assert base64.b64decode(odd.strip(), validate=True) == base64.b64decode(text.strip())
    (run / "record.sig").write_text(odd)


VARIANTS: dict[str, tuple[str, int, bool, Callable[[Path], None]]] = {
    "first line's prev": ("diary.chain.prev", 1, False, _first_prev),
    "run_end after run_end": ("diary.order.run_end", 20, False, _run_end_after_run_end),
    "sealed, torn tail": ("seal.diary.lines", 0, True, _torn),
    "signature padding bits": ("seal.signature.format", 0, True, _sig_padding_bits),
}
"""More ways to break a rule: (rule, line, sealed, break). The diary cases are checked
unsealed, so that only the diary itself can fail them."""


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_verifier_reports_the_rule_on_its_line(signed, tmp_path: Path, name: str) -> None:
    """diary.chain.prev on the first line (its prev against 64 zeros, every hash right);
    diary.order.run_end for a run_end straight after a run_end; a sealed record whose diary
    has a torn tail fails seal.diary.lines (the line count the seal pins, whatever the
    bytes); record.sig must be canonical base64 (the same signature with non-zero padding
    bits fails seal.signature.format)."""
    rule, line, sealed, breaker = VARIANTS[name]
    run = tmp_path / "run"
    shutil.copytree(signed[0], run)
    key = signed[1] if sealed else None
    if not sealed:
        for seal_file in ("record.json", "record.sig"):
            (run / seal_file).unlink()
    assert verify(run, public_key=key).ok
    breaker(run)
    result = verify(run, public_key=key)
    assert result.status == "failed" and result.failure is not None, result.summary()
    assert (result.failure.rule, result.failure.line) == (rule, line), result.summary()


def test_a_final_run_end_may_not_name_an_earlier_run_ends_digest(tmp_path: Path) -> None:
    """diary.metrics.sha256: the final run_end names the whole of metrics.jsonl. A resumed
    session that added a row, whose run_end repeats the first session's digest (a prefix
    of the file, valid for the first run_end), fails on the final run_end's line."""
    from tests.diary.helpers import BODIES
    from trainrecord.diary import DiaryWriter, MetricsWriter

    run = tmp_path / "run"
    digests = []
    for session in range(2):
        with DiaryWriter(run, seal=False) as w, MetricsWriter(run) as m:
            w.append("run_start", BODIES["run_start"])
            row = {"step": session, "loss": 1.0, "grad": {"a": 0.1}, "stuck": {"a": [0, 0, 0, 0]}}
            m.append(row)
            digests.append(m.sha256())
            end = {**BODIES["run_end"], "checks": 1, "metrics_sha256": m.sha256()}
            w.append("run_end", end)
    assert verify(run).ok, verify(run).summary()
    n = len(_lines(run))
    _edit_line(run, n - 1, metrics_sha256=digests[0])
    _relink(run)
    result = verify(run)
    assert result.status == "failed" and result.failure is not None
    assert (result.failure.rule, result.failure.line) == ("diary.metrics.sha256", n), (
        result.summary()
    )


def test_every_verifier_or_writer_rule_has_a_case() -> None:
    rules = json.loads((SPEC / "rules" / "diary.json").read_text())["rules"]
    ids = {r["id"] for r in rules if r.get("schema") is False}
    covered = set(CASES) | set(TORN) | set(ELSEWHERE)
    assert ids == covered, (sorted(ids - covered), sorted(covered - ids))


def test_a_run_end_without_metrics_jsonl_fails_even_when_it_names_no_bytes(
    tmp_path: Path,
) -> None:
    """diary.metrics.sha256 (decided in spec/README, the seed is silent): a run_end names
    the digest of metrics.jsonl, and a missing file is not an empty one. With the file gone
    the record fails on the first run_end's line, even when that digest is the SHA-256 of
    no bytes (a run that wrote no row), where an empty metrics.jsonl verifies. A diary with
    no run_end names no digest and needs no metrics.jsonl."""
    import hashlib

    from tests.diary.helpers import BODIES
    from trainrecord.diary import DiaryWriter

    run = tmp_path / "ended"
    empty = hashlib.sha256(b"").hexdigest()
    with DiaryWriter(run, seal=False) as w:
        w.append("run_start", BODIES["run_start"])
        w.append("run_end", {**BODIES["run_end"], "metrics_sha256": empty})
    (run / "metrics.jsonl").write_bytes(b"")
    assert verify(run).ok
    (run / "metrics.jsonl").unlink()
    result = verify(run)
    assert result.status == "failed" and result.failure is not None
    assert (result.failure.rule, result.failure.line) == ("diary.metrics.sha256", 2)
    crashed = tmp_path / "crashed"
    with DiaryWriter(crashed, seal=False) as w:
        w.append("run_start", BODIES["run_start"])
    assert not (crashed / "metrics.jsonl").exists()
    assert verify(crashed).ok


def _line_of(run: Path, event: str) -> int:
    return next(i for i, x in enumerate(_lines(run)) if json.loads(x)["event"] == event)


@pytest.mark.parametrize("diagnosis", ["vanishing", "exploding"])
@pytest.mark.parametrize(
    ("field", "no_gradient", "rule"),
    [
        ("baseline", {"baseline": None}, "diary.alarm.baseline.null"),
        (
            "grad_norm",
            {"grad_norm": None, "baseline": 0.5, "sigma": None},
            "diary.alarm.grad_norm.null",
        ),
    ],
)
def test_only_a_no_gradient_alarm_has_a_null_baseline_or_grad_norm(
    signed, tmp_path: Path, diagnosis: str, field: str, no_gradient: dict, rule: str
) -> None:
    """diary.alarm.baseline.null and diary.alarm.grad_norm.null: a no_gradient alarm may have
    a null baseline (a layer without history) or grad_norm (a layer that got no gradient at
    all); the verifier (whose fast check is the generated model, which drops the schema's
    if/then) and the writer take it, and refuse a vanishing or exploding alarm without one."""
    from trainrecord.diary import DiaryWriter
    from trainrecord.errors import RecordRefused

    run = tmp_path / "run"
    shutil.copytree(signed[0], run)
    for name in ("record.json", "record.sig"):
        (run / name).unlink()
    n = _line_of(run, "alarm")
    _edit_line(run, n, diagnosis="no_gradient", **no_gradient)
    _relink(run)
    assert verify(run).ok, verify(run).summary()
    taken = {k: v for k, v in json.loads(_lines(run)[n]).items() if k not in COMMON_FIELDS}
    _edit_line(run, n, diagnosis=diagnosis)
    _relink(run)
    result = verify(run)
    assert result.failure is not None and result.failure.line == n + 1, result.summary()
    assert result.failure.rule == rule
    assert result.failure.message.startswith(f"{field}: ")
    alarm = {k: v for k, v in json.loads(_lines(run)[n]).items() if k not in COMMON_FIELDS}
    with DiaryWriter(tmp_path / "new") as writer:
        writer.append("run_start", _body(run, 0))
        writer.append("alarm", taken)
        with pytest.raises(RecordRefused) as refused:
            writer.append("alarm", alarm)
    assert [p.rule for p in refused.value.problems] == [rule]


COMMON_FIELDS = ("seq", "time", "event", "prev", "hash")


def _body(run: Path, n: int) -> dict:
    return {k: v for k, v in json.loads(_lines(run)[n]).items() if k not in COMMON_FIELDS}


@pytest.mark.parametrize(
    ("time", "valid", "said"),
    [
        (1764460800, False, "time: 1764460800 is an integer token"),
        (1764460800.123456, False, "time: 1764460800.123456 has more than three decimals"),
        (1764460800.1234, False, "time: 1764460800.1234 has more than three decimals"),
        (1e-05, False, "time: 1e-05 has more than three decimals"),
        (1764460800.0, True, None),
        (1764460800.5, True, None),
        (1764460800.123, True, None),
        (0.001, True, None),
    ],
)
def test_time_is_a_float_rounded_to_milliseconds(
    signed, tmp_path: Path, time: float, valid: bool, said: str | None
) -> None:
    """diary.time.precision: the seed's time is a float rounded to milliseconds; the
    verifier names the line, the field and what to write instead."""
    run = tmp_path / "run"
    shutil.copytree(signed[0], run)
    for name in ("record.json", "record.sig"):
        (run / name).unlink()
    _edit_line(run, 3, time=time)
    _relink(run)
    result = verify(run)
    if valid:
        assert result.ok, result.summary()
        return
    assert result.failure is not None and result.failure.rule == "diary.time.precision"
    assert (result.failure.line, result.failure.seq) == (4, 3)
    assert result.failure.message.startswith(said), result.failure.message
    assert "round(time.time(), 3)" in result.failure.message
    assert result.lines == 3


def test_the_writers_time_is_a_float_token_also_on_a_whole_second(tmp_path: Path) -> None:
    """A time on a whole second is written 1764460800.0 (a float token), never 1764460800:
    the Python writer stamps round(time.time(), 3), a float, whose canonical JSON (the
    line's text on disk) keeps the .0; every line it writes is a float token."""
    from tests.diary.helpers import write_run
    from trainrecord.canonical import canonical_line

    assert canonical_line({"time": round(1764460800.0002, 3)}) == '{"time":1764460800.0}'
    write_run(tmp_path / "run")
    for raw in _lines(tmp_path / "run"):
        assert isinstance(json.loads(raw)["time"], float)
    assert verify(tmp_path / "run").ok


ODD_FILES = ("diary.jsonl", "metrics.jsonl", "record.json", "record.sig")


def _make_odd(path: Path, kind: str) -> None:
    import os

    path.unlink()
    if kind == "folder":
        path.mkdir()
        (path / "inside").write_text("x")
    else:
        os.mkfifo(path)


@pytest.mark.parametrize("kind", ["folder", "fifo"])
@pytest.mark.parametrize("name", ODD_FILES)
def test_a_file_of_the_record_that_is_not_a_regular_file_fails_verification(
    signed, tmp_path: Path, name: str, kind: str
) -> None:
    """diary.file.regular: a folder or a FIFO in place of a record's file is a failure
    naming the file and what it is; verify() does not raise (a folder raised
    IsADirectoryError) and does not block (a FIFO blocked the read forever). The CLI runs in
    a child with a time limit, so a verifier that blocks fails the test instead of hanging it."""
    import subprocess
    import sys

    run = tmp_path / "run"
    shutil.copytree(signed[0], run)
    _make_odd(run / name, kind)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainrecord.cli",
            "verify",
            "--json",
            "--key",
            str(signed[1]),
            str(run),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1, out.stderr
    failure = json.loads(out.stdout)["failure"]
    what = "a folder" if kind == "folder" else "a FIFO (named pipe)"
    assert (failure["rule"], failure["file"], failure["line"]) == ("diary.file.regular", name, 0)
    assert failure["message"].startswith(f"{name} is {what}, not a regular file")
    result = verify(run, public_key=signed[1])  # in this process: no exception, no wait
    assert result.status == "failed" and result.failure is not None
    assert result.failure.rule == "diary.file.regular"


def test_failure_messages_show_the_rule_once_and_count_the_lines_right(
    signed, tmp_path: Path
) -> None:
    """A metrics row or seal that breaks its schema names the rule once, then the field;
    a failure on a line that verified (run_end's metrics digest) does not claim that line
    as unverified."""
    run = tmp_path / "run"
    shutil.copytree(signed[0], run)
    _seal_edit(run, lambda s: s["diary"].pop("head_hash"))
    text = verify(run).summary()
    assert text.count("[seal.diary.fields]") == 1, text
    assert "record.json: [seal.diary.fields] diary.head_hash: required field" in text
    shutil.rmtree(run)
    shutil.copytree(signed[0], run)
    (run / "metrics.jsonl").write_bytes(b'{"step":1,"loss":1.0,"grad":{}}\n')
    text = verify(run).summary()
    assert text.count("[diary_metrics.fields.missing]") == 1, text
    assert "metrics.jsonl line 1: [diary_metrics.fields.missing] stuck: required field" in text
    (run / "metrics.jsonl").unlink()
    result = verify(run)
    n = result.lines
    assert result.failure is not None and result.failure.line == n  # the run_end line
    assert result.summary().endswith(f"(the {n} diary lines verify)"), result.summary()
    assert "lines verified before it" not in result.summary()


def test_a_one_line_diary_is_said_in_the_singular(tmp_path: Path) -> None:
    """verify said 'OK: 1 lines verified' and 'the first 1 lines verify' of a diary of one
    line (a run that has written only run_start, then crashed mid-line)."""
    with DiaryWriter(tmp_path, seal=False) as writer:
        writer.append("run_start", BODIES["run_start"])
    ok = verify(tmp_path).summary()
    assert ok.startswith("OK: 1 line verified ("), ok
    with (tmp_path / "diary.jsonl").open("ab") as f:
        f.write(b'{"seq": 1')
    torn = verify(tmp_path).summary()
    assert torn.startswith("TORN TAIL: the first 1 line verifies; the last line is"), torn
