"""The verify, show, plot, keygen and seal commands, run as real processes, and the seal."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.diary.helpers import BODIES, cli, write_run
from trainrecord.diary import DiaryWriter, MetricsWriter, generate_keypair, verify, write_seal
from trainrecord.errors import RecordRefused


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("cli")
    out = cli("keygen", root / "keys" / "signer")
    assert out.returncode == 0, out.stderr
    priv, pub = root / "keys" / "signer", root / "keys" / "signer.pub"
    write_run(root / "run", repeat=2, seal=False)
    out = cli("seal", root / "run", "--key", priv)
    assert out.returncode == 0, out.stderr
    return root / "run", priv, pub


def test_keygen_writes_a_private_key_only_its_owner_can_read(signed) -> None:
    _, priv, pub = signed
    assert stat.S_IMODE(os.stat(priv).st_mode) == 0o600
    assert b"PRIVATE KEY" in priv.read_bytes() and b"PUBLIC KEY" in pub.read_bytes()


def test_keygen_never_overwrites_a_key(signed) -> None:
    _, priv, _ = signed
    before = priv.read_bytes()
    out = cli("keygen", priv)
    assert out.returncode == 2 and "seal.key.exists" in out.stderr
    assert "Traceback" not in out.stderr and priv.read_bytes() == before


def test_verify_with_the_key_exits_0(signed) -> None:
    run, _, pub = signed
    out = cli("verify", run, "--key", pub)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OK: 36 lines verified" in out.stdout and "signature valid" in out.stdout


def test_verify_json_output(signed) -> None:
    run, _, pub = signed
    out = cli("verify", run, "--key", pub, "--json")
    doc = json.loads(out.stdout)
    assert doc["ok"] and doc["status"] == "ok" and doc["signed"] and doc["sealed"]
    assert doc["lines"] == 36 and doc["events"]["alarm"] == 2 and doc["failure"] is None


def test_verify_names_the_first_failing_line_and_exits_1(signed, tmp_path: Path) -> None:
    run = signed[0]
    bad = tmp_path / "run"
    bad.mkdir()
    lines = (run / "diary.jsonl").read_bytes().splitlines(keepends=True)
    lines[9] = lines[9].replace(b'"step":', b'"step":7', 1)
    (bad / "diary.jsonl").write_bytes(b"".join(lines))
    (bad / "metrics.jsonl").write_bytes((run / "metrics.jsonl").read_bytes())
    out = cli("verify", bad, "--json")
    assert out.returncode == 1
    failure = json.loads(out.stdout)["failure"]
    assert failure["line"] == 10 and failure["rule"] == "diary.chain.hash"
    out = cli("verify", bad)
    assert "FAILED: diary.jsonl line 10 (seq 9): [diary.chain.hash]" in out.stdout


def test_verify_exits_3_on_a_torn_tail(tmp_path: Path) -> None:
    write_run(tmp_path, seal=False)
    with open(tmp_path / "diary.jsonl", "ab") as fh:
        fh.write(b'{"seq":')
    out = cli("verify", tmp_path)
    assert out.returncode == 3 and "TORN TAIL" in out.stdout
    only = tmp_path / "only"
    only.mkdir()
    (only / "diary.jsonl").write_bytes(b'{"seq":0')  # torn in its first line
    out = cli("verify", only)
    assert out.returncode == 3 and "TORN TAIL" in out.stdout


def test_verify_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    out = cli("verify", tmp_path / "nope")
    assert out.returncode == 2 and "does not exist" in out.stderr


def test_verify_a_bad_key_file_names_the_file_not_its_content(signed, tmp_path: Path) -> None:
    run = signed[0]
    key = tmp_path / "bad.pem"
    key.write_text("-----BEGIN PUBLIC KEY-----\nSECRETSTUFF\n-----END PUBLIC KEY-----\n")
    out = cli("verify", run, "--key", key)
    assert out.returncode == 2 and "seal.key.format" in out.stderr and str(key) in out.stderr
    assert "SECRETSTUFF" not in out.stderr + out.stdout


def test_the_private_key_never_appears_in_records_or_output(signed) -> None:
    run, priv, _ = signed
    secret = priv.read_text().splitlines()[1]
    for name in ("diary.jsonl", "metrics.jsonl", "record.json", "record.sig"):
        assert secret not in (run / name).read_text()
    out = cli("seal", run, "--key", priv)
    assert secret not in out.stdout + out.stderr


def test_seal_refuses_a_record_that_does_not_verify(tmp_path: Path) -> None:
    write_run(tmp_path, seal=False)
    lines = (tmp_path / "diary.jsonl").read_bytes().splitlines(keepends=True)
    del lines[3]
    (tmp_path / "diary.jsonl").write_bytes(b"".join(lines))
    out = cli("seal", tmp_path)
    assert out.returncode == 2 and "seal.verify" in out.stderr
    assert not (tmp_path / "record.json").exists()
    with pytest.raises(RecordRefused):
        write_seal(tmp_path)


def test_the_seal_pins_the_head_and_the_files(signed) -> None:
    run, _, _ = signed
    seal = json.loads((run / "record.json").read_text())
    result = verify(run)
    assert seal["diary"]["lines"] == 36 and seal["diary"]["head_seq"] == 35
    assert seal["diary"]["head_hash"] == result.head_hash
    assert seal["record_version"] == 1 and seal["signature"]["algorithm"] == "ed25519"


def test_a_seal_re_encoded_as_utf16_fails_as_not_strict_json(signed, tmp_path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for name in ("diary.jsonl", "metrics.jsonl", "record.json", "record.sig"):
        (run / name).write_bytes((signed[0] / name).read_bytes())
    assert verify(run).failure is None
    path = run / "record.json"
    path.write_bytes(path.read_text(encoding="utf-8").encode("utf-16"))
    result = verify(run)
    assert result.failure and result.failure.rule == "seal.file.json"


def test_a_signature_from_another_key_file_or_a_missing_sig_fails(signed, tmp_path) -> None:
    run, _, pub = signed
    other = tmp_path / "run"
    other.mkdir()
    for name in ("diary.jsonl", "metrics.jsonl", "record.json"):
        (other / name).write_bytes((run / name).read_bytes())
    result = verify(other, public_key=pub)
    assert result.failure and result.failure.rule == "seal.signature.missing"
    priv2, _, _ = generate_keypair(tmp_path / "k2")
    write_seal(other, signing_key=priv2)
    assert verify(other, public_key=pub).failure.rule == "seal.signature.key"


def test_an_unsigned_seal_verifies_and_a_key_for_it_fails(tmp_path: Path) -> None:
    write_run(tmp_path)
    assert verify(tmp_path).ok and verify(tmp_path).sealed
    _, pub, _ = generate_keypair(tmp_path / "k")
    assert verify(tmp_path, public_key=pub).failure.rule == "seal.signature.missing"


def test_show_summarises_the_run(signed) -> None:
    run, _, _ = signed
    out = cli("show", run)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for needle in (
        "run 'exp1': SmallCNN",
        "conv2.0: no_gradient at step 450-900, 451-901",  # each alarm with its clear
        "certificates (2)",
        "repairs (2)",
        "loss_spike 9.5",
        "nonfinite_loss NaN",
        "events: alarm 2",
    ):
        assert needle in text, needle


def test_show_reports_stuck_channels_that_have_not_cleared(tmp_path: Path) -> None:
    with DiaryWriter(tmp_path) as w:
        w.append("run_start", BODIES["run_start"])
        w.append("channels", {**BODIES["channels"], "layer": "conv3.0"})
    out = cli("show", tmp_path)
    assert "stuck channels (1 layer)" in out.stdout and "conv3.0: all of 64" in out.stdout
    assert "no run_end" in out.stdout


def test_plot_writes_a_png(signed, tmp_path: Path) -> None:
    run, _, _ = signed
    with DiaryWriter(tmp_path / "p") as w, MetricsWriter(tmp_path / "p") as m:
        w.append("run_start", BODIES["run_start"])
        for step in range(0, 500, 50):
            m.append(
                {
                    "step": step,
                    "loss": 2.0,
                    "grad": {"a": 0.1 / (step + 1), "b": "NaN"},
                    "stuck": {"a": [step // 100, 0, 1, 0]},
                }
            )
        w.append("alarm", {**BODIES["alarm"], "step": 200})
        w.append("repair", {**BODIES["repair"], "step": 300})
    out = cli("plot", tmp_path / "p", "-o", tmp_path / "out" / "plot.png")
    assert out.returncode == 0, out.stderr
    png = (tmp_path / "out" / "plot.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    out = cli("plot", run, "-o", tmp_path / "run.png")
    assert out.returncode == 0 and (tmp_path / "run.png").stat().st_size > 10_000


def test_plot_without_metrics_is_a_usage_error(tmp_path: Path) -> None:
    out = cli("plot", tmp_path, "-o", tmp_path / "x.png")
    assert out.returncode == 2 and "no metrics.jsonl" in out.stderr
