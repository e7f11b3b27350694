"""The Node implementation's newer operations against the Python runtime, through the harness.

Keys and seals cross the language boundary both ways (a key made by one loads in the other
with the same fingerprint; a record sealed and signed by one verifies, signature included,
in the other); ``build_report`` gives byte for byte the report the Python builder gives for
the same job state, secrets and event; ``load_settings`` reads what Python's ``tomllib``
reads and refuses the same rules; ``architecture`` and ``read_metrics`` agree with the
Python functions; a diary appended to by Node verifies in Python.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import SPEC
from tests.typescript.node_harness import NODE_IMPL, Harness, require_node
from trainrecord.diary import (
    DiaryWriter,
    architecture_sha256,
    architecture_text,
    fingerprint,
    generate_keypair,
    load_private_key,
    load_public_key,
    verify,
    write_seal,
)
from trainrecord.errors import RecordRefused
from trainrecord.report import load_settings
from trainrecord_conformance import operations as python_ops
from trainrecord_conformance.checks.payload import base_state, cases, edge_input
from trainrecord_conformance.checks.reporting import _vector_reports

pytestmark = pytest.mark.xdist_group("node")

NOT_SERIALIZABLE = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


# --- keys and seals --------------------------------------------------------------------


def test_keys_cross_languages(harness: Harness, tmp_path: Path) -> None:
    made = harness.run("keygen", private=str(tmp_path / "n.pem"), public=str(tmp_path / "n.pub"))
    assert fingerprint(load_private_key(tmp_path / "n.pem").public_key()) == made["fingerprint"]
    assert fingerprint(load_public_key(tmp_path / "n.pub")) == made["fingerprint"]
    assert (tmp_path / "n.pem").stat().st_mode & 0o777 == 0o600
    _, _, theirs = generate_keypair(tmp_path / "p.pem", tmp_path / "p.pub")
    for kind, name in (("private", "p.pem"), ("public", "p.pub"), ("public", "p.pem")):
        got = harness.run("load_key", path=str(tmp_path / name), kind=kind)
        assert got == {"fingerprint": theirs}, (kind, name)
    again = harness.run("keygen", private=str(tmp_path / "x.pem"), public=str(tmp_path / "p.pub"))
    assert again == {"refused": True, "rules": ["seal.key.exists"]}
    assert not (tmp_path / "x.pem").exists()


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n",
    ],
)
def test_bad_key_files_refused_in_both(harness: Harness, tmp_path: Path, content: bytes) -> None:
    (tmp_path / "bad.pem").write_bytes(content)
    for kind, load in (("private", load_private_key), ("public", load_public_key)):
        with pytest.raises(RecordRefused) as exc:
            load(tmp_path / "bad.pem")
        assert {p.rule for p in exc.value.problems} == {"seal.key.format"}
        got = harness.run("load_key", path=str(tmp_path / "bad.pem"), kind=kind)
        assert got == {"refused": True, "rules": ["seal.key.format"]}


def _fields(event: str) -> dict[str, Any]:
    """The fields of the first valid ``event`` line of the diary vectors."""
    for group in json.loads((SPEC / "vectors" / "diary" / "events.json").read_text("utf-8")):
        for test in group["tests"]:
            data = test["data"]
            if test["valid"] and isinstance(data, dict) and data.get("event") == event:
                return {k: v for k, v in data.items() if k not in COMMON}
    raise AssertionError(f"no valid {event} vector")


COMMON = ("seq", "time", "event", "prev", "hash")


def _diary(folder: Path, seal: bool = False) -> None:
    with DiaryWriter(folder, seal=seal) as w:
        w.append("run_start", _fields("run_start"))
        w.append("alarm", _fields("alarm"))


def test_node_signed_seal_verifies_in_python(harness: Harness, tmp_path: Path) -> None:
    run = tmp_path / "run"
    _diary(run)
    harness.run("keygen", private=str(tmp_path / "k.pem"), public=str(tmp_path / "k.pub"))
    out = harness.run("seal", dir=str(run), key=str(tmp_path / "k.pem"))
    assert json.loads((run / "record.json").read_text()) == out["seal"]
    result = verify(run, public_key=load_public_key(tmp_path / "k.pub"), workers=1)
    assert result.ok and result.sealed and result.signed, result.summary()
    # the other key: named as such in both verifiers
    _, other_pub, _ = generate_keypair(tmp_path / "o.pem", tmp_path / "o.pub")
    assert verify(run, public_key=load_public_key(other_pub), workers=1).failure.rule == (
        "seal.signature.key"
    )
    node = harness.run("verify_diary", dir=str(run), key=str(other_pub))
    assert node["rules"] == ["seal.signature.key"]


def test_python_signed_seal_verifies_in_node(harness: Harness, tmp_path: Path) -> None:
    run = tmp_path / "run"
    _diary(run)
    generate_keypair(tmp_path / "k.pem", tmp_path / "k.pub")
    write_seal(run, signing_key=tmp_path / "k.pem")
    assert harness.run("verify_diary", dir=str(run), key=str(tmp_path / "k.pub")) == {
        "ok": True,
        "status": "ok",
        "rules": [],
        "line": None,
    }
    sig = (run / "record.sig").read_bytes()
    (run / "record.sig").write_bytes(sig[:10] + (b"A" if sig[10:11] != b"A" else b"B") + sig[11:])
    got = harness.run("verify_diary", dir=str(run), key=str(tmp_path / "k.pub"))
    assert got["rules"] == ["seal.signature.invalid"]


def test_append_continues_and_python_verifies(harness: Harness, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_bytes(b"")
    _diary(run, seal=True)
    before = (run / "diary.jsonl").read_bytes()
    end = {"event": "run_end", **_fields("run_end"), "metrics_sha256": hashlib.sha256().hexdigest()}
    start = {"event": "run_start", **_fields("run_start")}
    alarm = {"event": "alarm", **_fields("alarm")}
    for policy in ("always", "interval", "critical"):  # each session opens with run_start
        got = harness.run("append_diary", dir=str(run), events=[start, alarm], fsync_policy=policy)
        assert got == {"path": str(run / "diary.jsonl")}
    harness.run("append_diary", dir=str(run), events=[start, end], fsync_policy="critical")
    assert (run / "diary.jsonl").read_bytes().startswith(before)
    result = verify(run, workers=1)
    assert result.ok and result.sealed and result.lines == 10, result.summary()
    events = [alarm]
    refused = harness.run("append_diary", dir=str(run), events=events[:1], fsync_policy="never")
    assert refused == {"refused": True, "rules": ["diary.writer.fsync_policy"]}


# --- pure functions ----------------------------------------------------------------------


@given(
    st.lists(
        st.tuples(
            st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
            st.lists(st.integers(0, 2**40), max_size=4),
        ),
        min_size=1,
        max_size=5,
    )
)
@NOT_SERIALIZABLE
def test_architecture_matches_python(harness: Harness, pairs: list[tuple[str, list[int]]]) -> None:
    got = harness.run("architecture", parameters=[[n, s] for n, s in pairs])
    assert got == {"text": architecture_text(pairs), "sha256": architecture_sha256(pairs)}


def test_read_metrics_matches_python(harness: Harness, tmp_path: Path) -> None:
    rows = [
        {"benchmark": "mnist", "metric": "acc", "horizon": 1, "seed": 0, "value": 97.5},
        {"benchmark": "mnist", "metric": "loss", "horizon": 2, "seed": 1, "value": 0.0},
    ]
    (tmp_path / "metrics.json").write_text(json.dumps(rows))
    assert harness.run("read_metrics", path=str(tmp_path / "metrics.json")) == {"rows": rows}
    (tmp_path / "metrics.json").write_text(json.dumps(rows).replace('"acc"', '"acc", "seed": 3'))
    got = harness.run("read_metrics", path=str(tmp_path / "metrics.json"))
    assert got == {"refused": True, "rules": ["metrics.file.json"]}  # a duplicate name


# --- reports -------------------------------------------------------------------------------


@given(cases())
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_build_report_matches_python(harness: Harness, case: dict[str, Any]) -> None:
    """The same job state, event, secrets: the same report, field for field and number for
    number (ints stay ints, floats floats), or the same refusal."""
    try:
        want: Any = python_ops.build_report(json.loads(json.dumps(case)))
    except RecordRefused as exc:
        want = {"refused": True, "rules": list(dict.fromkeys(exc.rules))}
    got = harness.run("build_report", **case)
    if "report" in want and want["report"]["kind"] == "wordset":
        # a word set's eta is measured on the builder's own clock
        got["report"]["eta_seconds"] = want["report"]["eta_seconds"]
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)


def _state(kind: str) -> dict[str, Any]:
    for report in _vector_reports():
        if report["kind"] == kind:
            return base_state(report)
    raise AssertionError(f"no {kind} report vector")


MESSAGES = [
    "PID 4242 failed",
    "PID 99 and process=17 and pid:5",
    "Process id: 4242; see C:\\Users\\uaaaa\\run.log",
    "cannot open /home/uaaaa/x and /data/sets/words.txt",
    "uaaaa's job (tok-secret-000000) " + "x" * 600,
    "",
    "DataLoader worker (pid(s) 12345, 12346) exited unexpectedly",
    "worker pid=17 (pids [1, 2] and processes 3 and 4) could not open '/model.pt' or /data",
    "POST https://h.example/r?t=tok-secret-%30%300000 (and %74%6F%6b-secret-000000) failed",
    "3/4 of loss/acc, N/A, +/- and https://example.org/docs/errors stay; C:/Users/x.pt goes",
]


@pytest.mark.parametrize("kind", ["lesion", "wordset"])  # the consistent vectors
def test_build_report_progress_and_errors_match_python(harness: Harness, kind: str) -> None:
    """Every phase at several points of an epoch (fraction, eta), word counts, and error
    messages with every kind of secret: the same report as the Python builder."""
    base = _state(kind)
    secrets = {"token": "tok-secret-000000", "home": "/home/uaaaa", "user": "uaaaa", "pid": 4242}
    variants: list[tuple[dict[str, Any], str, str]] = []
    phases = [None, "initial_validation", "training", "validation", "selectivity", "other"]
    for phase in phases:
        for batch, batches in ((None, None), (0, 10), (3, 10), (7, 8), (12, 10), (5, 0)):
            variants.append(({"phase": phase, "batch": batch, "batches": batches},
                             "progress", "in progress"))  # fmt: skip
    # 1/32 and 5/32 are exact ties at four digits: Python rounds them half to even
    for done, total in ((None, 10), (0, 0), (3, 7), (9, 7), (None, None), (1, 32), (5, 32)):
        variants.append(({"words_done": done, "words_total": total}, "progress", "in progress"))
    for message in MESSAGES:
        variants.append(({"error": {"type": "OSError", "message": message}}, "failed", "failed"))
    variants.append(({"error": {"type": "not an identifier", "message": "m"}}, "failed", "failed"))
    for status in ("in progress", "stopped"):  # a snapshot's epoch: known while in progress
        variants.append(({"running": False}, "snapshot", status))
    for fields, event, status in variants:
        state = {**base, "running": status == "in progress", **fields}
        case = {"state": state, "event": event, "status": status, "seq": 7,
                "sent_at": "2026-10-05T21:48:05-04:00", "secrets": secrets}  # fmt: skip
        try:
            want: Any = python_ops.build_report(json.loads(json.dumps(case)))
        except RecordRefused as exc:
            want = {"refused": True, "rules": list(dict.fromkeys(exc.rules))}
        got = harness.run("build_report", **case)
        if kind == "wordset" and "report" in want:
            got["report"]["eta_seconds"] = want["report"]["eta_seconds"]
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True), fields


@pytest.mark.parametrize("kind", ["training", "lesion"])
def test_node_fraction_is_what_the_report_s_own_progress_fields_give(
    harness: Harness, kind: str
) -> None:
    """report.consistency.fraction (the probe), Node as Python: a job 7 batches of 100 into
    its training phase, whose state says it runs. A snapshot (of it in progress or stopped),
    a failed and a complete report show phase, batch and batches null and fraction
    epochs_completed / epochs_total; a progress report shows them and counts their share."""
    for event, status in (
        ("snapshot", "in progress"),
        ("snapshot", "stopped"),
        ("failed", "failed"),
        ("complete", "complete"),
        ("progress", "in progress"),
    ):
        case = edge_input(event, status, kind)
        case["state"].update(phase="training", batch=7, batches=100, running=True)
        got = harness.run("build_report", **case)
        progress = got["report"]["progress"]
        shown = progress["phase"] is not None
        assert shown == (event == "progress"), (event, status, progress)
        done, total = progress["epochs_completed"], progress["epochs_total"]
        wanted = (done + 0.95 * 7 / 100) / total if shown else done / total
        assert progress["fraction"] == round(wanted, 4), (event, status, progress)
        want = python_ops.build_report(json.loads(json.dumps(case)))
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)


TOML_DOCS = [
    '[paths]\ndata = "d"\n[report]\nurl = "https://h/api/runs"\nevery = 60\n',
    '[report]\nurl = "http://127.0.0.1:8080/r"  # loopback\nevery = 1e-05\n',
    "[report]\nurl = 'https://h/r'\nevery = 0.5\nca_bundle = 'ca.pem'\n",
    '[report]\n"url" = """https://h/r"""\nevery = 1_000\n',
    'report.url = "https://h/r"\nreport.every = 0x3c\n',
    'report = { url = "https://h/r", every = 30 }\n',
    '[report]\nurl = "https://h/r"\nevery = inf\n',
    '[report]\nurl = "https://h/r"\nevery = nan\n',
    '[report]\nurl = "https://h/r"\nevery = true\n',
    '[report]\nurl = "https://h/r"\nevery = "60"\n',
    '[report]\nurl = "https://h/r"\nevery = -0.0\n',
    '[report]\nurl = "https://h/r"\nevery = 1979-05-27\n',
    '[report]\nurl = "https://h/r"\nurl = "https://other/r"\n',
    '[report]\nurl = "https://h/r"\n[report]\nevery = 1\n',
    '[report]\nurl = "https://h/r" every = 1\n',
    '[report]\nurl = "\\ud83d"\n',
    '[report]\nurl = "https://h/r\\u00e9"\nevery = 2\n',
    "[report]\nurl = 'https://user:pw@h/r'\n",
    "[report]\nurl = 'ftp://h/r'\n",
    "[report]\nurl = 'http://example.org/r'\n",
    '[report]\nurl = "https://h/r"\ntoken = "abc"\n',
    # the token (tok-123) in the URL: as written, as user name (not url_credentials), encoded
    # (unquote's way: bad UTF-8 replaced, a lone % kept), before a bad scheme or every
    "[report]\nurl = 'https://tok-123@h/r'\n",
    "[report]\nurl = 'ftp://h/r/tok-123'\nevery = 0\n",
    '[report]\nurl = "https://h/r?t=%74ok%2d123"\n',
    '[report]\nurl = "https://h/r#%E2%82tok%2D123"\n',
    '[report]\nurl = "https://h/r?t=%%74ok-123%"\n',
    '[report]\nurl = "https://h/r?t=%74ok-12%33%ZZ%\u00e9"\n',
    '[report]\nurl = "https://h/r?t=%74ok-12"\n',
    # no host as Python's urlsplit reads it (the WHATWG parser would find host r), white
    # space around the URL
    "[report]\nurl = 'https:///r'\n",
    "[report]\nurl = 'https:/r'\n",
    "[report]\nurl = 'https:r'\n",
    "[report]\nurl = 'https:\\\\h/r'\n",
    "[report]\nurl = ' https://h/r'\n",
    "[report]\nurl = 'https://h/r '\n",
    "[report]\nurl = 'https://h/r\u2028'\n",
    'report = "https://h/r"\n',
    '[[report]]\nurl = "https://h/r"\n',
    "[paths]\n",
    "",
]


@pytest.mark.parametrize("doc", TOML_DOCS)
def test_load_settings_matches_python(harness: Harness, tmp_path: Path, doc: str) -> None:
    (tmp_path / "paths.toml").write_text(doc, encoding="utf-8")
    env = {"CORREAD_REPORT_TOKEN": "tok-123"}
    try:
        s = load_settings(tmp_path / "paths.toml", env=env)
        want: Any = {"url": s.url, "every": s.every, "ca_bundle": bool(s.ca_bundle)}
    except RecordRefused as exc:
        want = {"refused": True, "rules": list(dict.fromkeys(exc.rules))}
    got = harness.run("load_settings", path=str(tmp_path / "paths.toml"), env=env)
    if "every" in got and "every" in want:
        assert math.isclose(got.pop("every"), want.pop("every"))
    assert got == want


@pytest.mark.parametrize("where", ["missing.toml", "folder"])
def test_an_unreadable_paths_toml_is_refused_alike(
    harness: Harness, tmp_path: Path, where: str
) -> None:
    # A README probe: Python raised a bare FileNotFoundError (fixed), and Node threw ENOENT.
    (tmp_path / "folder").mkdir()
    given = tmp_path / where
    with pytest.raises(RecordRefused) as caught:
        load_settings(given, env={"CORREAD_REPORT_TOKEN": "tok-123"})
    got = harness.run("load_settings", path=str(given), env={"CORREAD_REPORT_TOKEN": "tok-123"})
    assert got == {"refused": True, "rules": ["report.settings.toml"]}
    assert list(dict.fromkeys(caught.value.rules)) == ["report.settings.toml"]
    harness.seq += 1
    said = harness.request(
        {"cmd": "run", "seq": harness.seq, "op": "load_settings", "input": {"path": str(given)}}
    )
    assert said["outcome"] == "refused", said
    assert str(given) in json.dumps(said)  # where it was looked for, and why not
    assert ("does not exist" if where == "missing.toml" else "is a folder") in json.dumps(said)


def test_toml_reader_matches_tomllib() -> None:
    """lib/toml.js against tomllib on documents beyond paths.toml (values, tables, errors)."""
    import tomllib

    require_node()
    docs = [
        *TOML_DOCS,
        'a = [1, 2.0, "s", [true], {b = 1}]\nb = [\n 1, # c\n 2,\n]\n',
        "x = \"\"\"\nab\\\n   cd\"\"\"\ny = '''\nraw\\n'''\n",
        "[[a]]\nb = 1\n[[a]]\nb = 2\n[a.c]\n",
        "a.b = 1\na.c = 2\n[a.d]\ne = 3\n",
        "a = {b = 1}\na.c = 2\n",
        "x = 01\n",
        "x = 1.\n",
        "x = .5\n",
        "x = +1\ny = -0\nz = 0o17\nw = 0b101\n",
        "x = 9223372036854775808\n",
        'x = "a\tb"\n',
        'x = "a\x01b"\n',
        "x = 5e-324\ny = 1.7976931348623157e+308\nz = -1.5E+9\n",
    ]
    script = (
        "const {parse} = require(process.argv[1]);"
        "const n = (v) => typeof v === 'bigint' ? {i: v.toString()} :"
        " typeof v === 'number' ? {f: Number.isNaN(v) ? 'nan' : String(v)} :"
        " Array.isArray(v) ? v.map(n) : v && typeof v === 'object' ?"
        " (v.constructor && v.constructor.name === 'TomlDateTime' ? {d: 1} :"
        " Object.fromEntries(Object.entries(v).map(([k, x]) => [k, n(x)]))) : v;"
        "const out = JSON.parse(require('fs').readFileSync(0, 'utf8')).map((d) => {"
        " try { return n(parse(d)); } catch (e) { return 'ERROR'; } });"
        "process.stdout.write(JSON.stringify(out));"
    )
    proc = subprocess.run(
        ["node", "-e", script, str(NODE_IMPL / "lib" / "toml.js")],
        input=json.dumps(docs),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )

    def norm(v: Any) -> Any:
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, int):
            return {"i": str(v)}
        if isinstance(v, float):
            return {"f": "nan" if math.isnan(v) else float(v)}
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return {"d": 1}  # a date or time

    def js(v: Any) -> Any:
        if isinstance(v, dict) and set(v) == {"f"}:
            return {"f": "nan" if v["f"] == "nan" else float(v["f"])}
        if isinstance(v, dict):
            return {k: js(x) for k, x in v.items()}
        if isinstance(v, list):
            return [js(x) for x in v]
        return v

    for doc, got in zip(docs, json.loads(proc.stdout), strict=True):
        try:
            want: Any = norm(tomllib.loads(doc))
        except tomllib.TOMLDecodeError:
            want = "ERROR"
        assert js(got) == want, doc


def test_report_job_and_status_against_a_receiver(harness: Harness, tmp_path: Path) -> None:
    """report_status and report_job post to a real loopback server; seq rises above a floor
    kept in the run's report_seq.json across calls."""
    import http.server
    import threading

    seen: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.append(json.loads(body))
            code = 500 if self.path.startswith("/fail") else 200
            payload = b"x" * 400 if code == 500 else b"{}"
            self.send_response(code)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        state = base_state(_vector_reports()[0])
        ok = harness.run("report_status", url=base + "/ok", token="tok-1", state=state,
                         status="stopped", ca_file=None)  # fmt: skip
        assert ok["raised"] is False and seen[-1]["seq"] == ok["seq"]
        assert seen[-1]["event"] == "snapshot" and seen[-1]["status"] == "stopped"
        bad = harness.run("report_status", url=base + "/fail", token="tok-1", state=state,
                          status="stopped", ca_file=None)  # fmt: skip
        assert bad["raised"] is True and "500" in bad["message"] and "x" * 300 in bad["message"]
        assert "x" * 301 not in bad["message"]
        floor = ok["seq"] + 10**9
        first = len(seen)
        for last_seq in (floor, None):
            out = harness.run("report_job", url=base + "/ok", token="tok-1", state=state,
                              progress=2, end="complete", seq_dir=str(tmp_path),
                              last_seq=last_seq, pause=0.0)  # fmt: skip
            assert out == {"closed": True, "warnings": 0}
        seqs = [r["seq"] for r in seen[first:]]
        assert seqs and seqs[0] > floor and seqs == sorted(set(seqs)), seqs
        assert json.loads((tmp_path / "report_seq.json").read_text())["last_seq"] == seqs[-1]
        out = harness.run("report_job", url=base + "/fail", token="tok-1", state=state,
                          progress=1, end="interrupted", seq_dir=str(tmp_path),
                          last_seq=None, pause=0.0)  # fmt: skip
        assert out == {"closed": True, "warnings": 1}
    finally:
        srv.shutdown()
        srv.server_close()


def test_open_run_keeps_the_run_id(harness: Harness, tmp_path: Path) -> None:
    folder = tmp_path / "pre" / "run"
    first = harness.run("open_run", dir=str(folder), metadata={"mode": "pre", "lr": 1.0})
    assert first["created"] is True
    stored = json.loads((folder / "metadata.json").read_text())
    assert stored["run_id"] == first["run_id"] and stored["lr"] == 1.0
    assert isinstance(stored["lr"], float)
    again = harness.run("open_run", dir=str(folder), metadata=None)
    assert again == {"run_id": first["run_id"], "created": False}
    from trainrecord.report import open_run

    assert open_run(folder).run_id == first["run_id"]  # Python reads what Node wrote
    (folder / "metadata.json").write_text('{"run_id": "X", "run_id": "Y"}')
    got = harness.run("open_run", dir=str(folder), metadata=None)
    assert got == {"refused": True, "rules": ["report.metadata.json"]}
