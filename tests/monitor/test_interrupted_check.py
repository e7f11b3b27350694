"""Ctrl+C in the middle of a check's writing, caught by the loop, which trains on (a
notebook's interrupted cell run again): the next checks and close() give a record that
verifies, holds its structure and manifest, and whose run_end counts say its lines.

A profile hook raises KeyboardInterrupt at one signal point (a trainrecord function's entry,
or right after a C call returns: where the interpreter handles a real Ctrl+C) inside the
writing of a check's events and row (``_emit``, ``_learn``, the writers' ``append``), one
point per run. Before: Ctrl+C after the first check took its structure but before its line
left producers without their state (the next check raised KeyError), or the structure was
never written (nor the manifest: it was no longer due); an event interrupted before its
line was counted in run_end anyway; a line or row whose fsync was interrupted was in the
file but not in the chain (diary.chain.seq) or the check count (diary.metrics.rows).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from types import FrameType

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyCNN
from trainrecord.diary import verify
from trainrecord.monitor import Monitor

WRITING = ("_emit", "_learn", "append")
TALLIES = ("checks_without_gradients", "sink_errors")  # run_end counts that are not lines


def _run(run_dir: Path, check: int, point: int) -> str | None:
    """Train 7 steps (checks at 0, 2, 4, 6) with Ctrl+C at the ``point``-th signal point of
    the writing in step ``check``; return where it landed (None: fewer points)."""
    seen = 0
    landed: str | None = None

    def interrupt(frame: FrameType, event: str, arg: object) -> None:
        nonlocal seen, landed
        if event not in ("call", "c_return") or "/trainrecord/" not in frame.f_code.co_filename:
            return
        outer: FrameType | None = frame
        while outer is not None and outer.f_code.co_name not in WRITING:
            outer = outer.f_back
        if outer is None:
            return
        seen += 1
        if seen == point:
            name = getattr(arg, "__qualname__", None) or frame.f_code.co_qualname
            landed = f"{event} {name} (line {frame.f_lineno})"
            raise KeyboardInterrupt

    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        for step in range(7):
            F.cross_entropy(model(x), y).backward()
            if step == check:
                sys.setprofile(interrupt)
            try:
                monitor.step(F.cross_entropy(model(x), y).detach())
            except KeyboardInterrupt:
                pass  # the loop goes on
            finally:
                sys.setprofile(None)
            optimizer.step()
            optimizer.zero_grad()
    return landed


@pytest.mark.parametrize(("check", "stride"), [(0, 4), (2, 1)])
def test_ctrl_c_while_a_check_writes_then_training_on_leaves_a_whole_record(
    tmp_path: Path, check: int, stride: int
) -> None:
    # the first check (structure, manifest, row) every 4th point: ~120 runs; the second
    # (a row) at each of its points
    point = 0
    while True:
        point += stride
        run_dir = tmp_path / str(point)
        try:
            landed = _run(run_dir, check, point)
        except Exception as exc:  # the point is named in the failure
            pytest.fail(f"Ctrl+C at point {point}: the run then raised {exc!r}")
        if landed is None:
            break
        result = verify(run_dir)
        assert result.ok and result.sealed, (landed, result.failure)
        lines = [json.loads(raw) for raw in (run_dir / "diary.jsonl").read_text().splitlines()]
        events = Counter(line["event"] for line in lines)
        assert events["structure"] == 1 and events["manifest"] >= 1, (landed, events)
        counts = {k: v for k, v in lines[-1]["counts"].items() if k not in TALLIES}
        del events["run_start"], events["run_end"]
        assert counts == dict(events), landed
    assert point > 40 * stride  # the writing was driven through
