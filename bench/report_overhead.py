"""Step time of a tiny training loop with reporting to a hanging server vs no reporting.

The Reporting API v2 promises that reporting never slows a run (§3). This bench trains a
small MLP (torch, CPU; a pure-Python loop when torch is missing) and measures the mean step
time, in alternating rounds so that both modes see the same machine load:

* ``off``: no reporting;
* ``hang-every60``: reporting on with the seed's ``every = 60``, to a server that accepts
  the connection and never answers (the background thread sits in its 10 s timeout);
* ``hang-stress``: the same with ``every = 0.0001``, so nearly every step queues a report
  (a snapshot copy and a hand-over to the sender thread).

Each step also calls ``progress()``; each "epoch" (100 steps) calls ``epoch_end()``. It
prints the median step time per mode (wall clock, and process CPU time over all threads,
which a loaded machine disturbs less) with the ratios to ``off`` side by side, and the cost
of one ``progress()`` call measured directly. Usage:
``python bench/report_overhead.py [--rounds 15] [--steps 400]``.
"""

from __future__ import annotations

import argparse
import logging
import socket
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from trainrecord.report import JobState, Reporter, ReportSettings, config, epoch_entry

TOKEN = "bench-token-0123456789abcdef"


class HangingServer:
    """Accepts connections, reads, and never answers."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.stop.set()
        for conn in self.held:
            conn.close()
        self.sock.close()


def make_step(width: int = 128, batch: int = 32) -> tuple[Callable[[], None], str]:
    """One training step of a small MLP (64-width-10), and a description of it."""
    try:
        import torch
    except ImportError:
        weights = [0.01 * i for i in range(256)]

        def py_step() -> None:
            acc = 0.0
            for i, w in enumerate(weights):
                acc += w * (i % 7)
            weights[0] = acc * 1e-9

        return py_step, "pure-Python loop (torch not installed)"
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, width), torch.nn.ReLU(), torch.nn.Linear(width, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, 64), torch.randint(0, 10, (batch,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def torch_step() -> None:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return torch_step, f"torch MLP 64-{width}-10, batch {batch}, CPU, 1 thread"


def new_state() -> JobState:
    return JobState(
        kind="training",
        run_id=str(uuid.uuid4()),
        name="bench",
        group="pre",
        config=config("training", mode="pre", batch_size=32, lr=0.01),
        epochs_first=0,
        epochs_total=1000,
    )


def run_round(
    step: Callable[[], None], steps: int, reporter: Reporter | None
) -> tuple[float, float]:
    """Mean wall seconds and process CPU seconds (all threads) per step."""
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(steps):
        step()
        if reporter is not None:
            reporter.progress(phase="training", batch=i % 100, batches=100)
            if i % 100 == 99:
                reporter.epoch_end(
                    epoch_entry(
                        "training", epoch=i // 100, lr=0.01, train_loss=1.0, duration_seconds=1.0
                    )
                )
    return (time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps


def per_call(call: Callable[[], Any], n: int = 20000) -> float:
    """Median seconds per call over 5 batches of ``n`` calls."""
    out = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            call()
        out.append((time.perf_counter() - start) / n)
    return statistics.median(out)


def per_due_call(call: Callable[[], Any], pause: float, n: int = 2000) -> float:
    """Median seconds of one call made after ``pause`` seconds without calls (so a report
    is due at each: ``pause`` longer than the reporter's ``every``); the pause is not timed."""
    out = []
    for _ in range(n):
        time.sleep(pause)
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return statistics.median(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument(
        "--width", type=int, default=128, help="hidden width (128: a ~0.1 ms step, the worst case)"
    )
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args(argv)
    logging.getLogger("trainrecord.report").setLevel(logging.ERROR)  # the hang is on purpose
    step, what = make_step(args.width, args.batch)
    server = HangingServer()
    url = f"http://127.0.0.1:{server.port}/api/runs"
    reporters: dict[str, Any] = {
        "off": None,
        "hang-every60": Reporter(
            ReportSettings(url=url, every=60, token=TOKEN), new_state(), flush_timeout=0.5
        ),
        "hang-stress": Reporter(
            ReportSettings(url=url, every=0.0001, token=TOKEN), new_state(), flush_timeout=0.5
        ),
    }
    for reporter in reporters.values():
        if reporter is not None:
            reporter.started()
    for _ in range(3):  # warm up
        step()
    times: dict[str, list[float]] = {name: [] for name in reporters}
    cpu: dict[str, list[float]] = {name: [] for name in reporters}
    for r in range(args.rounds):
        names = list(reporters)
        order = names[r % len(names) :] + names[: r % len(names)]  # rotate: no mode always first
        for name in order:
            wall, used = run_round(step, args.steps, reporters[name])
            times[name].append(wall)
            cpu[name].append(used)
    superseded = {name: rep.sender.superseded for name, rep in reporters.items() if rep}
    held = len(server.held)
    idle = per_call(lambda: reporters["hang-every60"].progress(phase="training", batch=1))
    queued = per_due_call(
        lambda: reporters["hang-stress"].progress(phase="training", batch=1), pause=0.0002
    )
    for reporter in reporters.values():
        if reporter is not None:
            reporter.close(0.5)
    server.close()
    base = statistics.median(times["off"])
    print(f"report_overhead: {what}; {args.rounds} rotating rounds x {args.steps} steps")
    print(
        f"{'mode':<14} {'wall step':>10} {'wall ratio':>11} {'paired':>8} "
        f"{'cpu step':>10} {'cpu ratio':>10}"
    )
    cpu_base = statistics.median(cpu["off"])
    for name, values in times.items():
        med, cmed = statistics.median(values), statistics.median(cpu[name])
        paired = statistics.median(v / o for v, o in zip(values, times["off"], strict=True))
        print(
            f"{name:<14} {med * 1e6:>8.1f}us {med / base:>11.4f} {paired:>8.4f} "
            f"{cmed * 1e6:>8.1f}us {cmed / cpu_base:>10.4f}"
        )
    print(
        f"progress() with no report due: {idle * 1e6:.2f}us ({100 * idle / base:.3f} % of a "
        f"step); progress() that queues a report: {queued * 1e6:.2f}us "
        f"({100 * queued / base:.2f} % of a step)"
    )
    print(
        f"server connections held open (hanging): {held}; reports superseded while the "
        f"server hung: {superseded}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
