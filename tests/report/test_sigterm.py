"""SIGTERM (Slurm scancel or preemption, docker stop, Kubernetes): a real child process runs
a real Reporter against the reference receiver over HTTPS on loopback and is sent a real
SIGTERM. The receiver stores ``interrupted`` (never ``discarded``; the run folder is kept)
and the child still dies of SIGTERM; a SIGTERM handler the user installed is left alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.report.conftest import TOKEN, TLSFiles, settings_for, training_state
from tests.report.servers import Behaviour, TestServer, wait_until
from trainrecord import sigterm as sigterm_module
from trainrecord.diary import verify
from trainrecord.report import Reporter, ReportServer

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

JOB = """
import signal, sys, time
from trainrecord.report import Reporter, config, load_settings, open_run

paths_toml, folder, own_handler = sys.argv[1], sys.argv[2], sys.argv[3] == "own"
stop = []
if own_handler:
    def handler(signum, frame):
        print("own handler ran", flush=True)
        stop.append(signum)
    signal.signal(signal.SIGTERM, handler)
run = open_run(folder, {"mode": "pre"})
state = run.job_state(
    "training", config("training", mode="pre", batch_size=10, lr=0.1),
    epochs_first=0, epochs_total=5,
)
monitor = None
if sys.argv[3] == "monitor":  # a Monitor and a Reporter in one job: both record the stop
    import torch
    from trainrecord import Monitor
    model = torch.nn.Linear(4, 2)
    monitor = Monitor(model, None, folder + "-diary", check_every=1, log=False)
with Reporter(load_settings(paths_toml), state, run=run) as reporter:
    mine = signal.getsignal(signal.SIGTERM) is handler if own_handler else True
    print("ready", run.run_id, mine, flush=True)
    batch = 0
    while not stop:
        reporter.progress(phase="training", batch=batch, batches=10**6)
        if monitor is not None:
            model(torch.ones(3, 4)).sum().backward()
            monitor.step()
            model.zero_grad()
        batch += 1
        time.sleep(0.01)
print("left the block", flush=True)
"""


def _start_job(tmp_path: Path, url: str, tls: TLSFiles, handler: str) -> subprocess.Popen[str]:
    (tmp_path / "paths.toml").write_text(
        f'[report]\nurl = "{url}/api/runs"\nevery = 60\nca_bundle = "{tls.ca}"\n',
        encoding="utf-8",
    )
    env = {**os.environ, "CORREAD_REPORT_TOKEN": TOKEN}
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(JOB),
            str(tmp_path / "paths.toml"),
            str(tmp_path / "models" / "pre" / "pre_z_1"),
            handler,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _ready(proc: subprocess.Popen[str]) -> tuple[str, str]:
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    assert line[:1] == ["ready"], line or proc.communicate(timeout=30)
    return line[1], line[2]


def _terminated(
    receiver: ReportServer, tls: TLSFiles, tmp_path: Path, mode: str
) -> tuple[str, str]:
    """Start the job, wait for its first report, send SIGTERM; the job must die of it.
    Returns the run_id and what the job printed."""
    proc = _start_job(tmp_path, receiver.url, tls, mode)
    try:
        run_id, _ = _ready(proc)
        wait_until(lambda: receiver.store.latest(run_id) is not None)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, err)
    return run_id, out


def test_sigterm_sends_interrupted_and_the_process_still_dies_of_sigterm(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path
) -> None:
    run_id, out = _terminated(https_receiver, tls, tmp_path, "default")
    assert "left the block" not in out  # no code after the signal ran, as with SIG_DFL
    latest = https_receiver.store.latest(run_id)
    assert latest is not None
    assert (latest["event"], latest["status"], latest["run_id"]) == (
        "interrupted",
        "interrupted",
        run_id,
    )
    # A new training run with no epoch finished: Ctrl+C would discard it; SIGTERM never
    # does, since a preempted job is usually requeued and resumed.
    assert (tmp_path / "models" / "pre" / "pre_z_1" / "metadata.json").is_file()


def test_a_monitor_and_a_reporter_in_one_job_both_record_the_sigterm(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path
) -> None:
    run_id, _ = _terminated(https_receiver, tls, tmp_path, "monitor")
    latest = https_receiver.store.latest(run_id)
    assert latest is not None and latest["status"] == "interrupted"
    diary = tmp_path / "models" / "pre" / "pre_z_1-diary"
    result = verify(diary)
    assert result.ok and result.complete, result.summary()
    end = json.loads((diary / "diary.jsonl").read_text().splitlines()[-1])
    assert (end["event"], end["error"]["type"]) == ("run_end", "SIGTERM")


def test_a_sigterm_handler_the_user_installed_is_left_alone(
    https_receiver: ReportServer, tls: TLSFiles, tmp_path: Path
) -> None:
    proc = _start_job(tmp_path, https_receiver.url, tls, "own")
    try:
        run_id, still_theirs = _ready(proc)
        assert still_theirs == "True"  # the Reporter did not replace it
        wait_until(lambda: https_receiver.store.latest(run_id) is not None)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    # The user's handler ran and the job went on to leave the block normally: complete.
    assert proc.returncode == 0, err
    assert "own handler ran" in out and "left the block" in out
    latest = https_receiver.store.latest(run_id)
    assert latest is not None and latest["status"] == "complete"


def test_the_handler_is_there_only_while_the_reporter_is_active(
    receiver: ReportServer,
) -> None:
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with Reporter(settings_for(receiver.url), training_state()):
            assert sigterm_module.is_installed()
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        # Not in another thread: signal handlers belong to the main thread.
        seen: list[object] = []

        def job() -> None:
            with Reporter(settings_for(receiver.url), training_state()):
                seen.append(signal.getsignal(signal.SIGTERM))

        worker = threading.Thread(target=job)
        worker.start()
        worker.join(30)
        assert seen == [signal.SIG_DFL]

        # A handler installed while the Reporter was active is not taken away at its end.
        def theirs(signum: int, frame: object) -> None:
            pass

        with Reporter(settings_for(receiver.url), training_state()):
            signal.signal(signal.SIGTERM, theirs)
        assert signal.getsignal(signal.SIGTERM) is theirs
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_hanging_server_delays_the_death_by_at_most_the_flush_bound(
    hostile: Callable[..., TestServer], tls: TLSFiles, tmp_path: Path
) -> None:
    server = hostile(Behaviour(mode="hang"), tls.context)
    proc = _start_job(tmp_path, server.url, tls, "default")
    try:
        _ready(proc)
        wait_until(lambda: server.arrived.is_set())  # started is stuck at the server
        proc.send_signal(signal.SIGTERM)
        begun = time.monotonic()
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - begun
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, err)
    assert took < 5.0 + 4.0, took  # flush_timeout (5 s) plus a generous margin
    assert "not delivered" in err  # one warning says the report did not go out


_ENDING = """
import os, signal, sys, threading, time
from trainrecord.report import Reporter, ReportSettings, open_run
from tests.report.conftest import TOKEN, training_state
url, folder = sys.argv[1], sys.argv[2]
run = open_run(folder)
state = training_state(run_id=run.run_id, name=run.name, group=run.group)
reporter = Reporter(ReportSettings(url=url, every=60.0, token=TOKEN), state, run=run)
reporter.started()
print("ready", flush=True)
sys.stdin.readline()
threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
reporter.complete()  # waits in seq.next(): another process holds the run's seq lock
reporter.close(5)
print("exited normally", flush=True)
"""


def test_a_sigterm_while_the_final_report_takes_its_seq_waits_for_it(
    receiver: ReportServer, tmp_path: Path
) -> None:
    """Review of the final report's seq taken in the job's thread: a SIGTERM in that window
    found the report marked final and sent nothing; the receiver stayed on in progress."""
    import fcntl

    from trainrecord.report import open_run

    run = open_run(tmp_path / "models" / "pre" / "s1", {"mode": "pre"})
    job = subprocess.Popen(
        [sys.executable, "-c", _ENDING, receiver.url, str(run.folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert job.stdin is not None and job.stdout is not None
        assert job.stdout.readline() == "ready\n"
        wait_until(lambda: receiver.store.latest(run.run_id) is not None)
        with open(run.seq_path.with_name(run.seq_path.name + ".lock"), "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # another reporter of the run
            job.stdin.write("go\n")
            job.stdin.flush()
            time.sleep(1.5)  # the SIGTERM lands while the job waits for the lock
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == -signal.SIGTERM  # it still dies of SIGTERM
    latest = receiver.store.latest(run.run_id)
    assert latest is not None and (latest["event"], latest["status"]) == ("complete", "complete")
