"""Bench: `trainrecord.diary.verify` against the seed's by-hand snippet, side by side.

Writes a diary of N lines (default 1,000,000) with the real DiaryWriter (a realistic mix of
events, ~290-byte lines), then times, in one run and alternately:

* the seed's recipe, verbatim: for each line, ``json.loads``, drop prev and hash,
  ``json.dumps(body, sort_keys=True, separators=(",", ":"))``, sha256 (line by line);
* ``trainrecord.diary.verify`` (which also checks every line's schema, seq, links and
  order, and uses both cores).

It checks that both agree on every line: on the intact diary both accept all N lines; on a
copy with one value changed in the middle both reject exactly that line first. It prints
lines/s of each and the ratio. ``--lines`` sets the size (``--lines 200000`` for a quick run);
``--single`` times only the one-process verify against the snippet (per-line cost, which a
busy machine disturbs less than a parallel run). CPU microseconds per line are printed too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from trainrecord.diary import DiaryWriter, verify


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the verifier's workers)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def seed_snippet(path: Path) -> tuple[int, int | None]:
    """The seed's by-hand check, line by line; (lines checked, first failing line or None)."""
    n = 0
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            n += 1
            line = json.loads(raw)
            body = {k: v for k, v in line.items() if k not in ("prev", "hash")}
            if (
                line["hash"]
                != hashlib.sha256(
                    (
                        line["prev"] + json.dumps(body, sort_keys=True, separators=(",", ":"))
                    ).encode()
                ).hexdigest()
            ):
                return n, n
    return n, None


def write_diary(run: Path, lines: int) -> None:
    """A diary of ``lines`` lines through the real writer (schema checks off for speed)."""
    layers = [f"features.{i}.conv" for i in range(12)]
    with DiaryWriter(run, fsync_policy="critical", validate=False, seal=False) as w:
        w.append(
            "run_start",
            {
                "name": "bench",
                "tool": "trainrecord bench",
                "model": "ResNet",
                "parameters": 11_689_512,
                "layers": layers,
                "architecture_sha256": "0" * 64,
                "optimizer": "SGD",
                "python": sys.version.split()[0],
                "torch": None,
                "platform": sys.platform,
                "config": {"lr": 0.1, "batch": 32},
                "record_version": 1,
            },
        )
        for i in range(1, lines):
            layer = layers[i % len(layers)]
            k = i % 4
            if k == 0:
                w.append(
                    "alarm",
                    {
                        "step": i,
                        "severity": "warning",
                        "layer": layer,
                        "kind": "Conv2d",
                        "diagnosis": "vanishing",
                        "grad_norm": 1.0 / (i + 7),
                        "baseline": 0.0123456789 + i * 1e-9,
                        "sigma": 3.25 + (i % 100) / 7,
                    },
                )
            elif k == 1:
                w.append(
                    "alarm_cleared",
                    {
                        "step": i,
                        "layer": layer,
                        "diagnosis": "vanishing",
                        "grad_norm": 0.0123 + 1.0 / (i + 3),
                        "baseline": 0.0123456789,
                    },
                )
            elif k == 2:
                w.append(
                    "channels",
                    {
                        "step": i,
                        "severity": "warning",
                        "layer": layer,
                        "batchnorm": layer + ".bn",
                        "channels": 64,
                        "level": "some",
                        "n_certified": 2,
                        "n_flat": 1,
                        "n_observed": 3,
                        "n_decayed": 0,
                        "certified": [3, 17],
                        "flat": [5],
                        "observed": [1, 2, 9],
                    },
                )
            else:
                w.append(
                    "loss_spike",
                    {
                        "step": i,
                        "severity": "warning",
                        "value": 2.5 + (i % 1000) / 997,
                        "baseline": 2.302585092994046,
                    },
                )


def tamper(src: Path, dst: Path, line_no: int) -> None:
    """Copy the diary, changing one value on line ``line_no`` (1-based)."""
    dst.mkdir(parents=True, exist_ok=True)
    with open(src / "diary.jsonl", "rb") as fin, open(dst / "diary.jsonl", "wb") as fout:
        for n, raw in enumerate(fin, 1):
            if n == line_no:
                raw = raw.replace(b'"step":', b'"step":1', 1)
            fout.write(raw)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1, help="timed rounds of each")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument(
        "--single", action="store_true", help="time only the one-process verify (no workers)"
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="verify-bench-"))
    try:
        run = tmp / "run"
        t0 = time.perf_counter()
        write_diary(run, args.lines)
        size = (run / "diary.jsonl").stat().st_size
        print(
            f"wrote {args.lines} lines ({size / args.lines:.0f} bytes/line) in "
            f"{time.perf_counter() - t0:.1f}s"
        )
        snippet_t, verify_t, single_t = [], [], []
        snippet_cpu, verify_cpu, single_cpu = [], [], []
        for _ in range(args.repeat):
            t, c = time.perf_counter(), cpu_seconds()
            n, bad = seed_snippet(run / "diary.jsonl")
            snippet_t.append(time.perf_counter() - t)
            snippet_cpu.append(cpu_seconds() - c)
            assert n == args.lines and bad is None, (n, bad)
            if not args.single:
                t, c = time.perf_counter(), cpu_seconds()
                res = verify(run, workers=args.workers)
                verify_t.append(time.perf_counter() - t)
                verify_cpu.append(cpu_seconds() - c)
                assert res.status == "ok" and res.lines == args.lines, res.summary()
            t, c = time.perf_counter(), cpu_seconds()
            res = verify(run, workers=1)
            single_t.append(time.perf_counter() - t)
            single_cpu.append(cpu_seconds() - c)
            assert res.status == "ok" and res.lines == args.lines, res.summary()
        bad_line = args.lines // 2 + 1
        tamper(run, tmp / "tampered", bad_line)
        _, snippet_bad = seed_snippet(tmp / "tampered" / "diary.jsonl")
        res = verify(tmp / "tampered", workers=1 if args.single else args.workers)
        assert snippet_bad == bad_line and res.failure and res.failure.line == bad_line, (
            snippet_bad,
            res.summary(),
        )
        print(
            f"agreement: both accept all {args.lines} lines of the intact diary; both reject "
            f"line {bad_line} first in the tampered copy ({res.failure.rule})"
        )
        s, one = min(snippet_t), min(single_t)
        us = 1e6 / args.lines
        print(
            f"seed snippet (json + hashlib)  : {s:7.2f} s  {args.lines / s:10,.0f} lines/s  "
            f"{min(snippet_cpu) * us:5.2f} us CPU/line"
        )
        print(
            f"trainrecord verify, 1 process  : {one:7.2f} s  {args.lines / one:10,.0f} lines/s  "
            f"{min(single_cpu) * us:5.2f} us CPU/line = {s / one:.2f}x "
            "(plus schema, seq, links, order)"
        )
        load = os.getloadavg()[0]
        if args.single:
            print(
                f"ratio: verify in one process is {s / one:.2f}x the seed snippet "
                f"(CPU time: {min(snippet_cpu) / min(single_cpu):.2f}x; load average "
                f"{load:.1f} while measuring)"
            )
            return 0
        v = min(verify_t)
        workers = args.workers or os.cpu_count() or 1
        print(
            f"trainrecord verify, {workers} workers  : {v:7.2f} s  {args.lines / v:10,.0f} "
            f"lines/s = {s / v:.2f}x"
        )
        print(
            f"CPU seconds used: snippet {min(snippet_cpu):.2f}, verify {min(verify_cpu):.2f} "
            f"over {v:.2f} s of wall time (the cores it got: {min(verify_cpu) / max(v, 1e-9):.2f})"
        )
        print(
            f"ratio: verify is {s / v:.2f}x the seed snippet ({workers} workers, "
            f"{os.cpu_count()} CPUs, load average {load:.1f} while measuring)"
        )
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
