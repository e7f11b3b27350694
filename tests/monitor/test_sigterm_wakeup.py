"""The SIGTERM watch (a DDP Monitor's) gives the wakeup fd back only while it is its own.

A real child process activates the watch as a Monitor under DDP does, then a real asyncio
loop adds a signal handler (which sets its own wakeup fd), then the watch is closed (the
Monitor's close()), and a real SIGUSR1 is sent. Found by the session-10 review: close()
restored the fd it found (-1), so the loop's signal callbacks never ran again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

CHILD = textwrap.dedent(
    """
    import asyncio, json, os, signal, threading
    from trainrecord import sigterm

    class Owner:
        pass

    owner = Owner()
    active = sigterm.activate(owner, sigterm.Stop(lambda: None), watch=True)
    loop = asyncio.new_event_loop()
    got = []
    loop.add_signal_handler(signal.SIGUSR1, lambda: got.append(1))
    asyncio_fd = loop._csock.fileno()
    sigterm.deactivate(owner)  # the Monitor's close()
    now = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(now)
    threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGUSR1)).start()
    loop.run_until_complete(asyncio.sleep(1.5))
    print(json.dumps({"active": active, "kept": now == asyncio_fd, "callback": bool(got)}))
    """
)


def test_closing_the_watch_leaves_a_wakeup_fd_set_since_in_place() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"active": True, "kept": True, "callback": True}
    assert "replaced the SIGTERM watch's" in proc.stderr
