"""The README's Monitor examples, run as written on a small model: the loop, mixed
precision, clipping, gradient accumulation and resuming. Each block is read from README.md
(its "## Monitor" section), so an example edited into something the Monitor refuses, or
that no longer runs, fails here. The Lightning callback needs lightning, which the test
environment lacks; its hooks are the ones docs/monitor.md describes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.nn import functional as F

from tests.conftest import ROOT
from tests.monitor.conftest import TinyMLP, batches, events, read_run
from tests.monitor.test_misuse import misuse_warnings
from trainrecord.diary import verify
from trainrecord.monitor import Monitor


def _monitor_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Monitor\n") : readme.index("\n## Diary\n")]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


def _block(needle: str) -> str:
    found = [b for b in _monitor_blocks() if needle in b]
    assert len(found) == 1, (needle, len(found))
    return found[0]


def _names(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    data = batches(12, batch=8)
    return {
        "torch": torch,
        "Monitor": Monitor,
        "model": model,
        "optimizer": optimizer,
        "loader": data,
        "batches": data,
        "loss_fn": F.cross_entropy,
        "cfg": {"lr": 0.05},
    }


def _run(code: str, names: dict[str, Any]) -> dict[str, Any]:
    try:
        exec(compile(code, "README.md", "exec"), names)  # the README's own code
    finally:
        monitor = names.get("monitor")
        if isinstance(monitor, Monitor):
            monitor.close()
    return names


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_readme_names_the_examples_this_file_runs() -> None:
    blocks = _monitor_blocks()
    assert len(blocks) == 6  # loop, AMP, clipping, accumulation, resume, Lightning
    assert sum("lightning" in b for b in blocks) == 1


def test_the_loop_example_writes_a_sealed_record(in_tmp: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    names = _run(
        _block("for x, y in loader:"), _names(model, torch.optim.SGD(model.parameters(), lr=0.05))
    )
    assert names["monitor"].steps == 12
    assert verify(in_tmp / "runs" / "exp1").status == "ok"


def test_the_mixed_precision_and_clipping_examples_run_with_a_scaler(in_tmp: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    names = _names(model, optimizer)
    names["scaler"] = torch.amp.GradScaler("cpu", init_scale=1024.0)
    x, y = names["batches"][0]
    names["loss"] = F.cross_entropy(model(x), y)
    _run(_block("scaler=scaler"), names)  # the Monitor made, one step
    assert names["monitor"].steps == 1
    # the clipping recipe on a Monitor of its own (the block above closed its one)
    names["monitor"] = Monitor(model, optimizer, in_tmp / "clip", scaler=names["scaler"])
    for x, y in names["batches"][:3]:
        names["loss"] = F.cross_entropy(model(x), y)
        exec(compile(_block("clip_grad_norm_"), "README.md", "exec"), names)
        optimizer.zero_grad()
    names["monitor"].close()
    assert names["monitor"].steps == 3
    assert "GradScaler" in events(read_run(in_tmp / "clip"), "manifest")[0]["precision"]
    for run in (in_tmp / "runs" / "exp1", in_tmp / "clip"):
        assert verify(run).status == "ok", run


def test_the_accumulation_example_is_one_monitor_step_per_optimizer_step(in_tmp: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    names = _names(model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9))
    names["monitor"] = Monitor(model, names["optimizer"], in_tmp / "acc", check_every=1)
    with misuse_warnings() as got:
        _run(_block("micro-batch"), names)
    assert names["monitor"].steps == 3  # 12 batches, 4 per optimizer step
    assert got == []


def test_the_resume_example_carries_on_from_the_checkpoint(in_tmp: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(model, optimizer, "runs/exp1", check_every=2) as monitor:
        for x, y in batches(5, batch=8):
            F.cross_entropy(model(x), y).backward()
            monitor.step()
            optimizer.step()
            optimizer.zero_grad()
    torch.save(
        {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 5},
        "checkpoint.pt",
    )
    again = TinyMLP()
    names = _names(again, torch.optim.SGD(again.parameters(), lr=0.05, momentum=0.9))
    _run(_block("start_step"), names)
    assert names["monitor"].steps == 5
    lines = read_run(in_tmp / "runs" / "exp1")
    assert len(events(lines, "run_start")) == 2
    assert verify(in_tmp / "runs" / "exp1").status == "ok"
