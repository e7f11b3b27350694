"""A Reporter used from notebook cells (see tests/notebook.py): the cell that starts the
Reporter and the loop's cell are separate, cells are run again, a cell is stopped with a
real SIGINT and the kernel with a real SIGTERM. Against the reference receiver over HTTP on
loopback; a small real model trained on CPU."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.notebook import run_cells
from tests.report.conftest import TOKEN
from tests.report.servers import wait_until
from trainrecord.report import ReportServer

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals")

START = """
from trainrecord.report import Reporter, config, epoch_entry, load_settings, open_run
settings = load_settings("paths.toml")
run = open_run("models/pre/pre_s_1", {"mode": "pre", "batch_size": 8})
state = run.job_state(
    "training", config("training", mode="pre", batch_size=8, lr=0.1),
    epochs_first=0, epochs_total=2,
)
print("run", run.run_id)
"""

TRAIN = """
import os, signal, time, torch
torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def train_epoch(report, epoch, stop_at=None):
    for batch in range(4):
        if batch == stop_at:
            os.kill(os.getpid(), signal.SIGINT)  # the stop button
        loss = torch.nn.functional.cross_entropy(model(torch.randn(8, 4)), torch.zeros(8).long())
        optimizer.zero_grad(); loss.backward(); optimizer.step()
        report.progress(phase="training", batch=batch, batches=4)
    report.epoch_end(epoch_entry("training", epoch=epoch, train_loss=loss.item()))
"""


def _paths(tmp_path: Path, receiver: ReportServer) -> dict[str, str]:
    (tmp_path / "paths.toml").write_text(
        f'[report]\nurl = "{receiver.url}/api/runs"\nevery = 60\n', encoding="utf-8"
    )
    return {"CORREAD_REPORT_TOKEN": TOKEN}


def _run_id(output: str) -> str:
    return next(x.split()[1] for x in output.splitlines() if x.startswith("run "))


def test_a_reporter_started_again_in_a_cell_replaces_the_first(
    tmp_path: Path, receiver: ReportServer
) -> None:
    # The cell that starts the Reporter was run twice (the first Reporter never closed):
    # the second was told "another process is reporting run pre/pre_s_1", and the first
    # stayed the SIGTERM handler's for as long as the kernel lived. The run completed
    # through the second; a SIGTERM to the kernel later (Slurm's time limit, docker stop)
    # made the first send interrupted, and the receiver showed the completed run
    # interrupted.
    started = START + "report = Reporter(settings, state, run=run)\nreport.started()\n"
    notebook = run_cells(
        [
            TRAIN,
            started,
            started,  # run again
            "for epoch in range(2):\n    train_epoch(report, epoch)\n"
            "report.complete()\nassert report.close()",
            "os.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(10)",  # the kernel is stopped
        ],
        tmp_path,
        env=_paths(tmp_path, receiver),
    )
    _, first, again, loop = notebook.cells  # (the SIGTERM's cell has no result)
    assert notebook.returncode == -signal.SIGTERM, notebook.at_exit
    assert first.error is None and again.error is None and loop.error is None, loop.output
    assert "another process" not in again.output
    assert "earlier Reporter of this process" in again.output
    run_id = _run_id(first.output)
    assert _run_id(again.output) == run_id  # (resumed: the same run)
    wait_until(lambda: receiver.store.latest(run_id) is not None)
    latest = receiver.store.latest(run_id)
    assert latest is not None
    assert (latest["event"], latest["status"]) == ("complete", "complete")
    assert len(latest["history"]) == 2


def test_a_discarded_run_is_refused_when_its_cell_is_run_again(
    tmp_path: Path, receiver: ReportServer
) -> None:
    # Ctrl+C before the first epoch ended discards a new run (its folder deleted). Running
    # the loop's cell again with the same run and state trained to the end and reported
    # nothing (every seq and metadata.json write failed: the folder was gone), with a
    # warning at every epoch, and the receiver kept "discarded".
    loop = (
        "with Reporter(settings, state, run=run) as report:\n"
        "    for epoch in range(len(state.history), 2):\n"
        "        train_epoch(report, epoch, stop_at={stop})\n"
    )
    notebook = run_cells(
        [
            TRAIN,
            START,
            loop.format(stop=2),  # stopped in epoch 0
            loop.format(stop=None),  # run again
            START + loop.format(stop=None),  # started again, as the refusal says
        ],
        tmp_path,
        env=_paths(tmp_path, receiver),
    )
    _, start, stopped, again, restarted = notebook.cells
    assert stopped.error == "KeyboardInterrupt", stopped.output
    assert again.error == "ArgumentRefused", again.output
    assert "discarded" in again.message and "open_run" in again.message
    assert "Traceback" in again.output and again.output.count("File ") <= 3  # not deep
    assert restarted.error is None, restarted.output
    old, new = _run_id(start.output), _run_id(restarted.output)
    assert old != new  # a new run
    latest = receiver.store.latest(old)
    assert latest is not None and latest["status"] == "discarded"
    wait_until(lambda: (receiver.store.latest(new) or {}).get("status") == "complete")


def test_a_reporter_shown_in_a_cell_names_its_run(tmp_path: Path, receiver: ReportServer) -> None:
    # A Reporter shown in a cell was <trainrecord.report.reporter.Reporter object at 0x...>.
    notebook = run_cells(
        [
            START + "report = Reporter(settings, state, run=run)\nprint(repr(report))",
            "report.complete(); report.close(); print(repr(report))",
        ],
        tmp_path,
        env=_paths(tmp_path, receiver),
    )
    started, closed = notebook.cells
    run_id = _run_id(started.output)
    assert f"<Reporter pre/pre_s_1 (run_id {run_id}): reporting>" in started.output
    assert closed.output.strip() == f"<Reporter pre/pre_s_1 (run_id {run_id}): closed>"
    assert TOKEN not in started.output + closed.output
