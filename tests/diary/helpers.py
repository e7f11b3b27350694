"""Shared helpers of the diary tests: the seed's by-hand snippet, verbatim, and a full run."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import SPEC
from tests.processes import communicate
from trainrecord.diary import DiaryWriter, MetricsWriter

COMMON = ("seq", "time", "event", "prev", "hash")


def seed_check(line: dict[str, Any]) -> None:
    """The seed's snippet, verbatim ("To verify one line by hand")."""
    body = {k: v for k, v in line.items() if k not in ("prev", "hash")}
    assert (
        line["hash"]
        == hashlib.sha256(
            (line["prev"] + json.dumps(body, sort_keys=True, separators=(",", ":"))).encode()
        ).hexdigest()
    )


def seed_verify_file(path: Path) -> int:
    """Run the snippet on every line of a diary; return the number of lines."""
    n = 0
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            seed_check(json.loads(raw))
            n += 1
    return n


def seed_first_failure(path: Path) -> int | None:
    """The 1-based number of the first line the snippet rejects (or cannot parse), or None."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, raw in enumerate(fh, 1):
            try:
                seed_check(json.loads(raw))
            except (AssertionError, ValueError, KeyError, TypeError, AttributeError):
                return n
    return None


def event_bodies() -> dict[str, dict[str, Any]]:
    """A valid body (fields beyond the common ones) for each of the 19 event types."""
    groups = json.loads((SPEC / "vectors" / "diary" / "events.json").read_text("utf-8"))
    out = {}
    for group in groups:
        data = group["tests"][0]["data"]
        out[data["event"]] = {k: v for k, v in data.items() if k not in COMMON}
    # a record written with these bodies has one metrics row per check (diary.metrics.rows):
    # none unless the test writes rows and says how many checks they are (write_run does)
    out["run_end"]["checks"] = 0
    return out


BODIES = event_bodies()


def write_run(
    run_dir: Path, *, repeat: int = 1, signing_key: Any = None, seal: bool = True
) -> list[dict[str, Any]]:
    """Write a complete run with every event type (``repeat`` times each) and metrics."""
    written = []
    with DiaryWriter(run_dir, signing_key=signing_key, seal=seal) as w, MetricsWriter(run_dir) as m:
        written.append(w.append("run_start", BODIES["run_start"]))
        for i in range(repeat):
            for event, body in BODIES.items():
                if event in ("run_start", "run_end"):
                    continue
                if "step" in body:
                    body = {**body, "step": body["step"] + i}
                written.append(w.append(event, body))
            m.append(
                {
                    "step": i,
                    "loss": 2.3 - i / 100,
                    "grad": {"conv1.0": 0.01 + i},
                    "stuck": {"conv1.0": [0, 0, i % 3, 0]},
                }
            )
        end = {**BODIES["run_end"], "checks": repeat, "metrics_sha256": m.sha256()}
        written.append(w.append("run_end", end))  # one metrics row per check
    return written


def cli(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m trainrecord.cli ARGS`` (the installed command's code) in a new process.

    One that runs past ``timeout`` seconds fails the test with where each of its threads
    was (faulthandler's dump at SIGABRT) and what it printed, not a bare TimeoutExpired."""
    command = [sys.executable, "-m", "trainrecord.cli", *map(str, args)]
    code, out, err = communicate(command, what=" ".join(command[1:]), timeout=timeout)
    return subprocess.CompletedProcess(command, code, out, err)


def rechain(run_dir: Path, change: Callable[[int, dict[str, Any]], None] | None = None) -> None:
    """What a forger does: read diary.jsonl, apply ``change`` to each line (its number from
    1, and the line as a dict to change in place), recompute every prev and hash from the
    genesis and write the diary back."""
    from trainrecord.canonical import GENESIS, canonical_line, line_hash

    path = run_dir / "diary.jsonl"
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    prev = GENESIS
    for number, line in enumerate(lines, 1):
        if change is not None:
            change(number, line)
        body = {k: v for k, v in line.items() if k not in ("prev", "hash")}
        line["prev"], line["hash"] = prev, line_hash(prev, body)
        prev = line["hash"]
    path.write_text("".join(canonical_line(x) + "\n" for x in lines), encoding="utf-8")


def mode(path: Path) -> int:
    """The permission bits of the file at ``path``."""
    return stat.S_IMODE(path.stat().st_mode)


def umask_bits() -> int:
    """The bits a new file gets: ``0666`` less this process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask
