"""A writer process for the crash test: appends events until killed.

Usage: python -m tests.diary.crash_writer RUN_DIR PAD_BYTES [TEAR_AFTER]. After each append
it prints ``seq hash`` on stdout (flushed), so the parent knows which lines were written
before it killed this process. With TEAR_AFTER, after that many lines the process writes
the first half of the next line and kills itself: what a crash inside a write leaves.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from tests.diary.helpers import BODIES
from trainrecord.diary import DiaryWriter


def main() -> None:
    run_dir, pad = sys.argv[1], int(sys.argv[2])
    tear_after = int(sys.argv[3]) if len(sys.argv) > 3 else -1
    w = DiaryWriter(run_dir, fsync_policy="critical", drop_torn_tail=True, seal=False)
    line = w.append("run_start", BODIES["run_start"])
    print(line["seq"], line["hash"], flush=True)
    i = 0
    while True:
        i += 1
        if i == tear_after:
            half = json.dumps({"event": "alarm", "seq": w.seq, "x_pad": "p" * pad}).encode()
            os.write(w._file.fd, half[: len(half) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        line = w.append(
            "alarm", {**BODIES["alarm"], "step": i, "x_pad": "p" * pad, "grad_norm": 1.0 / (i + 1)}
        )
        print(line["seq"], line["hash"], flush=True)


if __name__ == "__main__":
    main()
