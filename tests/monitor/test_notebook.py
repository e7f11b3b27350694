"""A Monitor used from notebook cells: one long-lived process runs the cells in one
namespace, a cell stopped with a real SIGINT (the stop button) raises KeyboardInterrupt,
and the next cells go on (see tests/notebook.py). Small real models trained on CPU; each
record is checked with the diary verifier."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.diary.helpers import cli
from tests.notebook import run_cells
from trainrecord.diary import verify

SETUP = """
import os, signal, threading, time
import torch
from tests.monitor.conftest import TinyCNN, train
from trainrecord import Monitor
torch.manual_seed(0)
model = TinyCNN()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
"""


def diary(run: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (run / "diary.jsonl").read_text().splitlines()]


# A slow sink (a callback posting each line somewhere slow) makes close() wait for it: the
# user presses stop again. The sink holds its first line until close() began, then the
# SIGINT comes while close() waits for it.
SLOW_SINK = """
closing = threading.Event()
def slow(line):
    if line["event"] == "run_start":
        closing.wait(30)
        time.sleep(0.3)  # close() waits for the sinks by now
        os.kill(os.getpid(), signal.SIGINT)
monitor = Monitor(model, optimizer, "runs/exp1", check_every=2, callback=slow)
train(model, optimizer, monitor, 5)
"""


@pytest.mark.parametrize(
    "where",
    [
        "the sinks' wait",  # a slow callback (most of close()'s time)
        "sha256",  # metrics.jsonl's digest, before run_end
        "write_line",  # run_end's line
        "write_seal",  # the seal, after run_end
    ],
)
def test_ctrl_c_in_close_leaves_a_close_that_the_next_one_finishes(
    tmp_path: Path, where: str
) -> None:
    # A second Ctrl+C during close() (pressed again while close() waited 10 s for a slow
    # sink) left the Monitor marked closed with diary.jsonl open and locked and no run_end:
    # close() again did nothing, and every new Monitor on the run_dir was refused
    # (diary.writer.locked) until the kernel restarted.
    if where == "the sinks' wait":
        first = [SLOW_SINK, "closing.set()\nmonitor.close()"]
    else:
        first = [
            "monitor = Monitor(model, optimizer, 'runs/exp1', check_every=2)\n"
            "train(model, optimizer, monitor, 5)",
            f"interrupt_in({where!r})\nmonitor.close()",
        ]
    notebook = run_cells(
        [
            SETUP,
            *first,
            "monitor.close()",  # the user closes it again
            "from trainrecord.diary import verify\n"  # the record is whole: run_end, seal
            "found = verify('runs/exp1')\n"
            "assert found.ok and found.complete and found.sealed, found.summary()",
            "with Monitor(model, optimizer, 'runs/exp1', check_every=2, start_step=5) as again:\n"
            "    train(model, optimizer, again, 3)",
        ],
        tmp_path,
    )
    setup, *cells = notebook.cells
    assert setup.error is None, setup.output
    interrupted, closed_again, whole, resumed = cells[-4:]
    assert interrupted.error == "KeyboardInterrupt", interrupted.output
    assert closed_again.error is None, closed_again.output
    assert whole.error is None, whole.output
    assert resumed.error is None, resumed.output  # the run_dir is free
    run = tmp_path / "runs" / "exp1"
    result = verify(run)
    assert result.ok and result.complete and result.sealed, result.summary()
    lines = diary(run)
    assert [x["event"] for x in lines].count("run_end") == 2  # one per session, not more
    first_end = next(x for x in lines if x["event"] == "run_end")
    assert first_end["steps"] == 5 and "error" not in first_end
    assert "was not closed" not in notebook.at_exit


def test_ctrl_c_in_the_sinks_wait_of_a_with_block_still_ends_the_run(tmp_path: Path) -> None:
    # The with block's exit closes on the first Ctrl+C; a second one, while that close
    # waits for a slow sink, stops the wait only: run_end records the first, and the record
    # is whole without another close().
    notebook = run_cells(
        [
            SETUP,
            """
closing = threading.Event()
def slow(line):
    if line["event"] == "run_start":
        closing.wait(30)
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)
with Monitor(model, optimizer, "runs/exp1", check_every=2, callback=slow) as monitor:
    train(model, optimizer, monitor, 5)
    closing.set()
    raise KeyboardInterrupt  # the first stop
""",
            "monitor.closed",
            "Monitor(model, optimizer, 'runs/exp1', check_every=2, start_step=5).close()",
        ],
        tmp_path,
    )
    _, stopped, _, reopened = notebook.cells
    assert stopped.error == "KeyboardInterrupt", stopped.output
    assert reopened.error is None, reopened.output
    run = tmp_path / "runs" / "exp1"
    assert verify(run).complete
    ends = [x for x in diary(run) if x["event"] == "run_end"]
    assert ends[0]["error"]["type"] == "KeyboardInterrupt"
    assert len(ends) == 2


def test_show_after_the_kernel_died_in_a_resumed_session_says_it_has_no_end(
    tmp_path: Path,
) -> None:
    # A resumed run (session 2 from step 10) whose kernel was killed (restarted) in its
    # second session: show took session 1's run_end for the last session's, "ended after
    # 10 steps of the last session (steps 10-19)", though session 2 has no run_end.
    notebook = run_cells(
        [
            SETUP,
            "with Monitor(model, optimizer, 'runs/exp1', check_every=2) as monitor:\n"
            "    train(model, optimizer, monitor, 10)",
            "monitor = Monitor(model, optimizer, 'runs/exp1', check_every=2, start_step=10)\n"
            "train(model, optimizer, monitor, 5)",
            "os.kill(os.getpid(), signal.SIGKILL)",  # the kernel is restarted
        ],
        tmp_path,
    )
    assert notebook.returncode == -signal.SIGKILL
    shown = cli("show", tmp_path / "runs" / "exp1")
    assert shown.returncode == 0, shown.stderr
    assert "no run_end: the run is still going, or it crashed" in shown.stdout
    assert "ended after" not in shown.stdout
    assert "the last session continued from step 10" in shown.stdout


def test_a_monitor_a_failed_function_left_open_frees_its_run_dir_when_run_again(
    tmp_path: Path,
) -> None:
    # fit() made a Monitor and raised: the last error's traceback kept it, open. Running
    # fit() again was refused with diary.writer.locked from five frames inside the diary
    # writer ("close() it": there was no variable to close), and so was every run after,
    # until the garbage collector happened to run.
    fit = """
def fit(steps, fail_at=None):
    monitor = Monitor(model, optimizer, "runs/exp1", check_every=2)
    def fail(step, loss):
        if step == fail_at:
            raise RuntimeError("shapes do not match")
        return loss
    train(model, optimizer, monitor, steps, before_step=fail)
    monitor.close()
"""
    notebook = run_cells([SETUP + fit, "fit(6, fail_at=3)", "fit(4)", "fit(4)"], tmp_path)
    _, failed, again, third = notebook.cells
    assert failed.error == "RuntimeError"
    assert again.error == "ArgumentRefused", again.output
    assert "'monitor' of fit()" in again.message and "run this cell again" in again.message
    assert again.output.count('File "') <= 3, again.output  # the cell, fit(), Monitor()
    assert third.error is None, third.output
    found = verify(tmp_path / "runs" / "exp1")
    assert found.ok and found.complete and found.sealed, found.summary()
    events = [x["event"] for x in diary(tmp_path / "runs" / "exp1")]
    assert events.count("run_start") == 2 and events.count("run_end") == 1  # (the first: none)


def test_a_monitor_cell_run_twice_is_refused_naming_the_open_one(tmp_path: Path) -> None:
    # The cell `monitor = Monitor(...)` run twice: the second was refused with
    # diary.writer.locked from inside the diary writer (five frames deep); it names the
    # open Monitor and what to do now, and doing it works.
    make = "mon = Monitor(model, optimizer, 'runs/exp1', check_every=2)"
    notebook = run_cells([SETUP, make, make, "mon.close()", make + "\nmon.close()"], tmp_path)
    _, first, again, closed, third = notebook.cells
    assert first.error is None and closed.error is None, closed.output
    assert again.error == "ArgumentRefused", again.output
    assert "Close it (mon.close())" in again.message and "run_dir" in again.message
    assert again.output.count('File "') <= 2, again.output  # the cell, Monitor()
    assert third.error is None, third.output
    assert verify(tmp_path / "runs" / "exp1").complete


def test_a_monitor_a_cell_holds_and_a_failed_function_was_given_is_named_by_the_cell(
    tmp_path: Path,
) -> None:
    # The notebook's `monitor` passed to a training function that raised: the last error's
    # traceback holds it as train()'s argument, and so does the notebook's variable. The
    # refusal named train()'s variable and said that running the cell again lets it go and
    # continues the record; run again, it was refused again (the variable still held it).
    make = "monitor = Monitor(model, optimizer, 'runs/exp1', check_every=2)"
    fail = (
        "def fail(step, loss):\n"
        "    if step == 3:\n"
        "        raise RuntimeError('shapes do not match')\n"
        "    return loss\n"
        "train(model, optimizer, monitor, 6, before_step=fail)"
    )
    notebook = run_cells([SETUP, make, fail, make, "monitor.close()\n" + make], tmp_path)
    _, _, failed, again, closed = notebook.cells
    assert failed.error == "RuntimeError", failed.output
    assert again.error == "ArgumentRefused", again.output
    assert "Close it (monitor.close())" in again.message, again.message
    assert "run this cell again" not in again.message and "train()" not in again.message
    assert closed.error is None, closed.output  # doing what it says works


def test_a_monitor_whose_close_was_cut_short_is_named_when_its_run_dir_is_taken_again(
    tmp_path: Path,
) -> None:
    # Ctrl+C in close() (run_end's line) leaves diary.jsonl open and locked until close()
    # runs again. A new Monitor on the run_dir meanwhile was refused by the diary's lock
    # (RecordRefused diary.writer.locked, from inside the diary writer, naming no Monitor):
    # the Monitor had left the register of open Monitors as its close began.
    make = "monitor = Monitor(model, optimizer, 'runs/exp1', check_every=2, start_step=5)"
    notebook = run_cells(
        [
            SETUP,
            "monitor = Monitor(model, optimizer, 'runs/exp1', check_every=2)\n"
            "train(model, optimizer, monitor, 5)",
            "interrupt_in('write_line')\nmonitor.close()",
            make,
            "monitor.close()\n" + make + "\ntrain(model, optimizer, monitor, 3)\nmonitor.close()",
        ],
        tmp_path,
    )
    _, _, interrupted, again, resumed = notebook.cells
    assert interrupted.error == "KeyboardInterrupt", interrupted.output
    assert again.error == "ArgumentRefused", again.output
    assert "Close it (monitor.close())" in again.message, again.message
    assert resumed.error is None, resumed.output
    found = verify(tmp_path / "runs" / "exp1")
    assert found.ok and found.complete and found.sealed, found.summary()
    assert [x["event"] for x in diary(tmp_path / "runs" / "exp1")].count("run_end") == 2


def test_a_model_built_again_in_another_cell_is_named_when_the_old_monitor_steps(
    tmp_path: Path,
) -> None:
    # The model and optimizer built again in another cell while the Monitor made for the
    # old model stayed open; the training cell, run again, steps that Monitor with the new
    # model's loss. Its checks read the old model's last gradients (never changed again)
    # beside the new loss, and the only warning said step() was called twice.
    fit = """
from tests.monitor.conftest import batches
def fit(monitor, steps):  # the notebook's loop: the global model and optimizer
    for x, y in batches(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        monitor.step(loss)
        optimizer.step()
"""
    notebook = run_cells(
        [
            SETUP + fit,
            "monitor = Monitor(model, optimizer, 'runs/exp1', check_every=2)\nfit(monitor, 4)",
            "model = TinyCNN()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.05)",
            "fit(monitor, 4)",
            "monitor.close()",
        ],
        tmp_path,
    )
    _, first, _, again, closed = notebook.cells
    assert first.error is None and again.error is None and closed.error is None
    assert "MonitorMisuseWarning" not in first.output, first.output
    assert "MonitorMisuseWarning" in again.output, again.output
    assert "does not come from the model this Monitor watches" in again.output
    assert "built again" in again.output
    assert "nothing between" not in again.output  # (not the cause)


def test_a_monitor_shown_in_a_cell_says_where_it_writes_and_how_far_it_is(
    tmp_path: Path,
) -> None:
    # `monitor` as a cell's last line (or print(monitor)) showed
    # <trainrecord.monitor.monitor.Monitor object at 0x7f...>: nothing of the run.
    notebook = run_cells(
        [
            SETUP,
            "monitor = Monitor(model, optimizer, 'runs/exp1', check_every=2)\n"
            "train(model, optimizer, monitor, 5)\nprint(repr(monitor))",
            "monitor.close()\nprint(monitor)",
        ],
        tmp_path,
    )
    _, trained, closed = notebook.cells
    assert trained.output.strip() == (
        "<Monitor 'runs/exp1': TinyCNN, step 5, 3 checks every 2 steps, open>"
    )
    assert closed.output.strip().endswith("closed>")


@pytest.mark.parametrize("where", ["_emit", "activate"])
def test_ctrl_c_while_a_monitor_is_made_leaves_nothing_open(tmp_path: Path, where: str) -> None:
    # Ctrl+C while Monitor() resumed a record, before its run_start was written ('_emit')
    # or after it ('activate': SIGTERM's handler): the half-made Monitor, kept by the
    # traceback, held diary.jsonl open and locked, and the cell run again was refused.
    make = "monitor = Monitor(model, optimizer, 'runs/exp1', check_every=2, start_step=3)"
    notebook = run_cells(
        [
            SETUP,
            "with Monitor(model, optimizer, 'runs/exp1', check_every=2) as first:\n"
            "    train(model, optimizer, first, 3)",
            f"interrupt_in({where!r})\n{make}",
            make + "\ntrain(model, optimizer, monitor, 3)\nmonitor.close()",
        ],
        tmp_path,
    )
    _, _, stopped, again = notebook.cells
    assert stopped.error == "KeyboardInterrupt", stopped.output
    assert again.error is None, again.output
    run = tmp_path / "runs" / "exp1"
    found = verify(run)
    assert found.ok and found.complete and found.sealed, found.summary()
    lines = diary(run)
    starts = [x for x in lines if x["event"] == "run_start"]
    ends = [x for x in lines if x["event"] == "run_end"]
    assert len(starts) == len(ends)  # every session ended
    if where == "activate":  # its run_start was written: ended at once, by the Ctrl+C
        assert ends[1]["error"]["type"] == "KeyboardInterrupt" and ends[1]["steps"] == 0
