"""Layers frozen or unfrozen during a run: what the monitor checks follows requires_grad.

Fine-tuning schedules freeze a backbone and unfreeze it later (gradual unfreezing), or
freeze layers that are done. The layers are the modules owning parameters that require
gradients now; when that set changes, the next check writes a new manifest first and
checks the new set from then on: an unfrozen layer is measured, a frozen one raises no
no_gradient alarm.
"""

from __future__ import annotations

from pathlib import Path

import torch

from tests.monitor.conftest import TinyCNN, events, metrics, read_run, train
from tests.monitor.test_events import zero_block2
from trainrecord.monitor import Monitor

BLOCK1 = ["block1.0", "block1.1"]


def freeze(module: torch.nn.Module, frozen: bool) -> None:
    for p in module.parameters():
        p.requires_grad_(not frozen)


def test_an_unfrozen_backbone_is_checked_from_the_next_check(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    freeze(model.block1, True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(model, optimizer, run_dir, check_every=4, warmup=2) as monitor:
        train(model, optimizer, monitor, 10)  # steps 0-9: checks 0, 4, 8
        freeze(model.block1, False)  # before step 10; the next check is step 12
        train(model, optimizer, monitor, 14, seed=1)
    lines = read_run(run_dir)
    manifests = events(lines, "manifest")
    assert [m["step"] for m in manifests] == [0, 12]
    assert not set(BLOCK1) & set(manifests[0]["layers"])
    assert set(BLOCK1) <= set(manifests[1]["layers"])
    assert "block1.0" in [p["layer"] for p in manifests[1]["producers"]]
    assert lines[0]["layers"] == manifests[0]["layers"]  # run_start: the layers at the start
    at_12 = [line["event"] for line in lines if line.get("step") == 12]
    assert at_12[0] == "manifest"  # first in its check
    assert events(lines, "alarm") == []  # an unfrozen layer is no alarm by itself
    rows = metrics(run_dir)
    for row in rows:
        assert ("block1.0" in row["grad"]) == (row["step"] >= 12), row
        assert ("block1.0" in row["stuck"]) == (row["step"] >= 12), row
    assert all(r["grad"]["block1.0"] > 0 for r in rows if r["step"] >= 12)
    assert lines[-1]["counts"]["manifest"] == 2


def test_a_frozen_layer_raises_no_alarm_and_leaves_the_checks(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(model, optimizer, run_dir, check_every=2, warmup=2) as monitor:
        train(model, optimizer, monitor, 12)
        freeze(model.block1, True)  # set_to_none: its gradients are None from now on
        train(model, optimizer, monitor, 12, seed=1)
    lines = read_run(run_dir)
    assert events(lines, "alarm") == []  # before the fix: no_gradient for block1.0 and .1
    manifests = events(lines, "manifest")
    assert [m["step"] for m in manifests] == [0, 12]
    assert not set(BLOCK1) & set(manifests[1]["layers"])
    assert all("block1.0" not in r["grad"] for r in metrics(run_dir) if r["step"] >= 12)


def test_a_layer_in_alarm_that_is_frozen_is_dropped_and_starts_afresh(run_dir: Path) -> None:
    """A producer with dead channels and gradient alarms, frozen: nothing more is said
    of it; unfrozen again while still dead, it is reported again from a clean state."""
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(model, optimizer, run_dir, check_every=2, warmup=2) as monitor:
        train(model, optimizer, monitor, 10)
        zero_block2(model, optimizer)
        train(model, optimizer, monitor, 4, seed=1)  # checks 10, 12: conv2 dead, alarms
        freeze(model.conv2, True)
        freeze(model.bn2, True)
        train(model, optimizer, monitor, 4, seed=2)  # checks 14, 16: not checked
        freeze(model.conv2, False)
        freeze(model.bn2, False)
        train(model, optimizer, monitor, 4, seed=3)  # checks 18, 20: checked again
    lines = read_run(run_dir)
    channels = [c for c in events(lines, "channels") if c["layer"] == "conv2"]
    # said again once watched again: the hooks for check 18 were installed after step 17,
    # while conv2 was still frozen, so its channels are measured from check 20
    assert [c["step"] for c in channels] == [10, 20]
    assert events(lines, "channels_cleared") == []  # freezing is not a recovery
    assert [m["step"] for m in events(lines, "manifest")] == [0, 14, 18]
    conv2_alarms = [a for a in events(lines, "alarm") if a["layer"] == "conv2"]
    assert [a["step"] for a in conv2_alarms] == [10, 18]
    assert not [c for c in events(lines, "alarm_cleared") if c["layer"] in ("conv2", "bn2")]
    steps_with_conv2 = [r["step"] for r in metrics(run_dir) if "conv2" in r["stuck"]]
    assert 14 not in steps_with_conv2 and 16 not in steps_with_conv2 and 18 in steps_with_conv2
