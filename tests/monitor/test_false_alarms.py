"""Healthy training that the Monitor used to report as faulty (probe s11/fa: F1, F2, F3).

Each test trains a real model; on the code before the fixes each scenario wrote the false
or noisy report named in its test, and the fixed rules still report the real fault next to
it (a fault after the head replacement, a blip the loss rule calls a spike).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from tests.monitor.conftest import TinyMLP, batches, events, metrics, read_run
from trainrecord.monitor import Monitor
from trainrecord.monitor.demo import make_data


def test_sparse_units_do_not_flap_between_channels_and_cleared(run_dir: Path) -> None:
    """F1: eight units of a Linear layer fire on a few samples in a thousand (alive, but
    silent over 256 values about half the time). Before the fix the layer went
    ``channels`` / ``channels_cleared`` 41 times in 750 checks: a unit is silent only after
    256 values, but the layer was cleared at the first check where none was. Now a clear
    needs as many values with nothing stuck, so the layer stays at ``some``."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4096, 20, generator=g)
    y = (x @ torch.randn(20, 4, generator=g)).argmax(-1)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
    with torch.no_grad():  # unit-norm weights and bias -2.5: fires on ~0.6 % of inputs
        rows = model[0].weight[:8]
        rows /= rows.norm(dim=1, keepdim=True)
        model[0].bias[:8] = -2.5
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        for _ in range(1500):
            index = torch.randint(0, x.shape[0], (32,), generator=g)
            loss = F.cross_entropy(model(x[index]), y[index])
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    with torch.no_grad():  # the units are alive: each fires on some training inputs
        fired = (model[0](x)[:, :8] > 0).sum(0)
    assert bool((fired > 0).all()), fired
    lines = read_run(run_dir)
    entered, cleared = events(lines, "channels"), events(lines, "channels_cleared")
    assert len(entered) <= 2 and len(cleared) <= 1, (len(entered), len(cleared))
    assert entered and entered[0]["layer"] == "0" and entered[0]["level"] == "some"


def test_a_replaced_head_starts_a_new_loss_baseline(run_dir: Path) -> None:
    """F2: after pretraining, the backbone is frozen and the head replaced for a new task
    whose loss stays far above the old one. Before the fix that was a ``loss_spike``
    against the old model's baseline, and the tracker stayed ``spiking``: a real fault
    later (the head's learning rate 100 x for 20 steps) got no event. Now the loss of the
    new model is a new series: no spike at the replacement, one at the fault."""
    torch.manual_seed(0)
    model = TinyMLP(hidden=32)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        for i, (x, y) in enumerate(batches(600, seed=1)):
            if i == 200:
                model.fc1.requires_grad_(False)
                model.fc2 = nn.Linear(32, 4)
                optimizer.add_param_group({"params": model.fc2.parameters()})
            if i >= 200:  # the new task: other classes, 30 % of the labels noise
                g = torch.Generator().manual_seed(i)
                noisy = torch.rand(y.shape, generator=g) < 0.3
                y = torch.where(noisy, torch.randint(0, 4, y.shape, generator=g), (y + 1) % 4)
            optimizer.param_groups[-1]["lr"] = 5.0 if 450 <= i < 470 else 0.05
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    assert [e["step"] for e in events(lines, "structure")] == [0, 202]
    spikes = events(lines, "loss_spike")
    assert [s["step"] for s in spikes] == [454], spikes
    assert spikes[0]["baseline"] > 0.5  # the new task's loss, not the pretrained one's


def _blip_run(run_dir: Path, mix: float, hard: int) -> list[dict[str, Any]]:
    """A TinyMLP trained to a loss of 2e-4 with Adam; at steps 500-503 the last ``hard``
    samples of each batch are new boundary samples (``mix`` of one image plus the rest of
    another, labelled as the first): the loss ticks up for two checks and comes back."""
    torch.manual_seed(0)
    model = TinyMLP(hidden=32)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    fx, fy = make_data(64, size=8, classes=4, seed=5, noise=1.0)
    fx = mix * fx + (1.0 - mix) * fx[torch.roll(torch.arange(64), 1)]
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        for i, (x, y) in enumerate(batches(560, seed=1)):
            if 500 <= i < 504:
                k = (i - 500) * hard
                x = torch.cat([x[hard:], fx[k : k + hard]])
                y = torch.cat([y[hard:], fy[k : k + hard]])
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    return read_run(run_dir)


def test_a_loss_blip_below_the_loss_floor_is_not_exploding(run_dir: Path) -> None:
    """F3: near convergence one boundary sample per batch lifts the loss 2e-4 -> 0.036,
    0.004 (under the loss rule's floor, 5 % of the run's largest baseline: no spike), and
    every layer's gradient rises with it (a cross-entropy's gradient grows with the loss).
    Before the fix both layers were ``exploding``; now the rise the loss explains is none."""
    lines = _blip_run(run_dir, mix=0.55, hard=1)
    rows = {r["step"]: r["loss"] for r in metrics(run_dir)}
    assert rows[500] > 100 * rows[498]  # the loss did rise two decades
    assert events(lines, "loss_spike") == []
    assert events(lines, "alarm") == []


def test_a_loss_blip_the_loss_rule_calls_a_spike_keeps_its_alarms(run_dir: Path) -> None:
    """F3's other side: two mislabelled samples per batch lift the loss above the loss
    rule's margin twice: ``loss_spike``, and the layers above their bands are alarmed
    with it, at the same check."""
    lines = _blip_run(run_dir, mix=0.0, hard=2)
    assert [s["step"] for s in events(lines, "loss_spike")] == [502]
    alarms = events(lines, "alarm")
    assert {a["layer"] for a in alarms} == {"fc1", "fc2"}
    assert {(a["step"], a["diagnosis"]) for a in alarms} == {(502, "exploding")}


def test_a_spike_that_lasts_becomes_the_new_level_and_a_later_fault_is_reported(
    run_dir: Path,
) -> None:
    """A lasting rise with no model change (here a term of 2.0 joins the loss at step 200,
    as when a loss term is added): ``loss_spike`` when it starts. Before, the tracker then
    stayed ``spiking`` for the rest of the run, and a real fault later (the labels
    scrambled for 30 steps) got no loss event; now a spike that lasts 20 checks is the
    loss's new level, and the fault is a spike against it, which recovers."""
    torch.manual_seed(0)
    model = TinyMLP(hidden=32)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        for i, (x, y) in enumerate(batches(600, seed=1)):
            if 450 <= i < 480:  # the fault: labels scrambled
                y = torch.randint(0, 4, y.shape, generator=torch.Generator().manual_seed(i))
            loss = F.cross_entropy(model(x), y) + (2.0 if i >= 200 else 0.0)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    spikes = events(lines, "loss_spike")
    assert [s["step"] for s in spikes] == [202, 452], spikes
    assert 1.99 < spikes[1]["baseline"] < 2.01  # measured against the new level
    recovered = events(lines, "loss_recovered")
    assert [r["step"] for r in recovered if r["step"] > 452] != [], recovered
