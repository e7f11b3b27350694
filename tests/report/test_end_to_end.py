"""End to end: a small real torch training job reports through the client to
``trainrecord serve`` over HTTPS on loopback (a test CA from trustme), and the read API shows
the run from start to complete."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.report.conftest import TOKEN, TLSFiles
from trainrecord.report import (
    JobState,
    Reporter,
    config,
    epoch_entry,
    load_settings,
    validation_entry,
)


def _serve(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "trainrecord.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.fixture
def served(tmp_path: Path, tls: TLSFiles) -> Iterator[str]:
    env = {**os.environ, "CORREAD_REPORT_TOKEN": TOKEN}
    proc = _serve(
        [
            "--port",
            "0",
            "--db",
            str(tmp_path / "reports.sqlite"),
            "--cert",
            tls.cert,
            "--key",
            tls.key,
            "--every",
            "1",
        ],
        env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line.startswith("serving https://127.0.0.1:"), line or proc.stderr.read()
    yield line.split()[1]
    proc.terminate()
    proc.wait(30)


def _train(reporter: Reporter, epochs: int) -> None:
    """A tiny real training run: a linear classifier on random data, with validation."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data, target = torch.randn(64, 8), torch.randint(0, 4, (64,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def validate(phase: str) -> dict:
        start = time.monotonic()
        model.eval()
        with torch.no_grad():
            for b in range(4):
                reporter.progress(phase=phase, batch=b, batches=4)
            out = model(data)
            loss = loss_fn(out, target).item()
            acc = 100.0 * (out.argmax(1) == target).float().mean().item()
        model.train()
        return {
            "val_loss": loss,
            "val_loss_images": loss,
            "val_accuracy_images": acc,
            "duration_seconds": time.monotonic() - start,
        }

    reporter.initial_validation(validation_entry("training", **validate("initial_validation")))
    for epoch in range(epochs):
        start, total = time.monotonic(), 0.0
        for b in range(4):
            x, y = data[b * 16 : (b + 1) * 16], target[b * 16 : (b + 1) * 16]
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item()
            reporter.progress(phase="training", batch=b, batches=4)
            time.sleep(0.02)
        val = validate("validation")
        val["duration_seconds"] = time.monotonic() - start
        reporter.epoch_end(
            epoch_entry(
                "training",
                epoch=epoch,
                lr=0.1,
                train_loss=total / 4,
                train_loss_images=total / 4,
                **val,
            )
        )


@pytest.mark.torch
def test_a_training_job_reports_to_trainrecord_serve_over_https(
    served: str, tls: TLSFiles, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    (tmp_path / "paths.toml").write_text(
        f'[report]\nurl = "{served}/api/runs"\nevery = 0.01\nca_bundle = "{tls.ca}"\n'
    )
    settings = load_settings(tmp_path / "paths.toml", env={"CORREAD_REPORT_TOKEN": TOKEN})
    state = JobState(
        kind="training",
        run_id=str(uuid.uuid4()),
        name="pre_z_1",
        group="pre",
        config=config(
            "training",
            mode="pre",
            model_choice="z",
            model_class="Linear",
            parameters=36,
            outputs=4,
            batch_size=16,
            lr=0.1,
            momentum=0.0,
            weight_decay=0.0,
            img_classes=4,
            train_images=64,
            val_images=64,
            device_name="cpu",
            gpus_used=0,
        ),
        epochs_first=0,
        epochs_total=3,
    )
    with Reporter(settings, state, seq_path=tmp_path / "report_seq.json") as reporter:
        _train(reporter, 3)
    assert reporter.sender.failed == 0 and reporter.sender.refused == 0
    auth = {"Authorization": f"Bearer {TOKEN}"}
    runs = requests.get(f"{served}/api/runs", headers=auth, verify=tls.ca, timeout=10).json()
    [run] = [r for r in runs["runs"] if r["run_id"] == state.run_id]
    assert (run["state"], run["event"], run["name"], run["group"]) == (
        "complete",
        "complete",
        "pre_z_1",
        "pre",
    )
    latest = requests.get(
        f"{served}/api/runs/{state.run_id}", headers=auth, verify=tls.ca, timeout=10
    ).json()
    assert [h["epoch"] for h in latest["history"]] == [0, 1, 2]
    assert latest["initial_validation"]["val_loss"] > 0
    assert latest["progress"]["fraction"] == 1.0 and latest["finished_at"] is not None
    receipts = requests.get(
        f"{served}/api/runs/{state.run_id}/receipts", headers=auth, verify=tls.ca, timeout=10
    ).json()["receipts"]
    seqs = [r["seq"] for r in receipts]
    # Intermediate reports may be skipped under load (§3 keeps only the newest unsent one):
    # the first report and the final one always arrive.
    assert len(seqs) >= 2 and seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # An untrusting client is refused by TLS, and an unauthorised one by the receiver.
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{served}/api/runs", headers=auth, timeout=10)
    assert requests.get(f"{served}/api/runs", verify=tls.ca, timeout=10).status_code == 401


def test_serve_refuses_plain_http_off_loopback(tmp_path: Path) -> None:
    env = {**os.environ, "CORREAD_REPORT_TOKEN": TOKEN}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainrecord.cli",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--db",
            str(tmp_path / "r.sqlite"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "report.server.plain_http_loopback" in proc.stderr and "Traceback" not in proc.stderr


def test_serve_needs_the_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CORREAD_REPORT_TOKEN"}
    proc = _serve_refused(tmp_path / "r.sqlite", env)
    assert proc.returncode == 2 and "CORREAD_REPORT_TOKEN" in proc.stderr


def _serve_refused(db: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``trainrecord serve --port 0 --db DB`` run to its (expected) refusal."""
    return subprocess.run(
        [sys.executable, "-m", "trainrecord.cli", "serve", "--port", "0", "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("every", ["nan", "inf", "-inf", "NaN", "0", "-5"])
def test_serve_refuses_an_every_that_is_not_a_finite_number_above_0(
    tmp_path: Path,
    every: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import trainrecord.report.receiver as receiver
    from trainrecord.cli import main

    def never(*args: object, **kw: object) -> None:
        raise AssertionError(f"--every {every} was accepted: the receiver was started")

    monkeypatch.setattr(receiver, "make_server", never)
    monkeypatch.setenv("CORREAD_REPORT_TOKEN", TOKEN)
    db = tmp_path / "r.sqlite"
    code = main(["serve", "--port", "0", "--db", str(db), f"--every={every}"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "report.settings.every" in err and "--every" in err and "finite" in err
    assert "Traceback" not in err and TOKEN not in err
    assert not db.exists()  # refused before anything was opened


def test_serve_refuses_a_token_easy_to_guess(tmp_path: Path) -> None:
    """Security probe R2: a one-character token was taken, and guessed online in 8 tries."""
    proc = _serve_refused(tmp_path / "r", {**os.environ, "CORREAD_REPORT_TOKEN": "7" * 15})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "[report.server.auth]" in proc.stderr and "at least 16" in proc.stderr
    assert "7" * 15 not in proc.stderr
    assert not (tmp_path / "r").exists()
