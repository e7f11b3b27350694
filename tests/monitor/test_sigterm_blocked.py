"""SIGTERM to the writing rank of a DDP run while its main thread is blocked in a
collective (DDP's backward all_reduce, the other rank stalled): the process still stops
within seconds, with run_end ``error.type`` "SIGTERM" and a record that verifies. Before,
the Monitor's Python handler could only run when the collective returned: the rank died
at the collective's timeout (30 minutes with gloo's default; 25 s here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.monitor.conftest import read_run
from trainrecord.diary import verify

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

RANK = textwrap.dedent(
    """
    import datetime, sys, time
    import torch, torch.distributed as dist
    from torch.nn import functional as F
    from torch.nn.parallel import DistributedDataParallel
    from tests.monitor.conftest import TinyMLP
    from trainrecord.monitor import Monitor

    rank, init_file, run_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=2, timeout=datetime.timedelta(seconds=25))
    torch.manual_seed(0)
    ddp = DistributedDataParallel(TinyMLP())
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x, y = torch.randn(8, 3, 8, 8), torch.zeros(8, dtype=torch.long)
    with Monitor(ddp, optimizer, run_dir, check_every=2, log=False) as monitor:
        for step in range(4):
            loss = F.cross_entropy(ddp(x), y)
            if step == 2 and rank == 1:
                time.sleep(30)  # a stalled peer
            if step == 2 and rank == 0:
                print("blocked", flush=True)  # in DDP's backward all_reduce next
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    """
)


def test_sigterm_stops_a_rank_blocked_in_a_collective_promptly(tmp_path: Path) -> None:
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    ranks = [
        subprocess.Popen(
            [sys.executable, str(script), str(r), str(tmp_path / "init"), str(tmp_path / "run")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for r in range(2)
    ]
    try:
        assert ranks[0].stdout is not None
        for line in ranks[0].stdout:
            if line.strip() == "blocked":
                break
        time.sleep(1.0)  # inside the collective now
        sent = time.monotonic()
        ranks[0].send_signal(signal.SIGTERM)
        try:
            ranks[0].wait(timeout=12)
        except subprocess.TimeoutExpired:
            pytest.fail("rank 0 still running 12 s after SIGTERM (blocked in a collective)")
        took = time.monotonic() - sent
    finally:
        for rank in ranks:
            if rank.poll() is None:
                rank.kill()
            rank.wait()
    assert ranks[0].returncode == -signal.SIGTERM
    assert took < 8.0
    end = read_run(tmp_path / "run")[-1]
    assert end["event"] == "run_end" and end["error"]["type"] == "SIGTERM"
    result = verify(tmp_path / "run")
    assert result.ok and result.sealed, result.failure


FORKED = textwrap.dedent(
    """
    import os, signal, sys, time
    from trainrecord import sigterm

    class Owner:
        pass

    owner, begun = Owner(), []
    assert sigterm.activate(owner, sigterm.Stop(lambda: begun.append(1)), watch=True)
    child = os.fork()
    if child == 0:  # a forked worker (a DataLoader's) stopped by SIGTERM
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    time.sleep(sigterm.BLOCKED_GRACE + 1.5)  # the watch would have stopped this process
    print("alive", os.waitstatus_to_exitcode(status), begun, flush=True)
    sigterm.deactivate(owner)
    """
)


def test_a_forked_child_stopped_by_sigterm_leaves_the_watched_parent_alone(
    tmp_path: Path,
) -> None:
    # the wakeup fd is inherited by a fork: without dropping it in the child, the child's
    # SIGTERM woke the parent's watch, which stopped the parent
    script = tmp_path / "forked.py"
    script.write_text(FORKED)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"alive {-signal.SIGTERM} []"
