"""Healthy training outside plain supervised learning (probe s12/regimes).

GANs, policy gradients and contrastive encoders have ReLU units that fire on one input in
a few hundred: alive, but silent over ``silent_min_values`` values now and then. Each test
trains a real model; on the code before the fix the scenario wrote the noisy report named
in its test, and the fixed rule still reports a unit that dies.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from tests.monitor.conftest import events, metrics, read_run
from trainrecord.monitor import Monitor


def _rare_unit_run(
    run_dir: Path, *, dies_at: int | None, steps: int = 60, planted: set[int] | None = None
) -> None:
    """``steps`` steps, a check at each, batches of 128: unit 0 of layer ``0`` fires only on
    a planted sample, present at every third step (silent over 256 values between; or at
    the steps in ``planted``), until step ``dies_at``, after which it is never planted again
    (the unit is dead to the data)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    with torch.no_grad():  # unit 0 reads feature 0 only, and fires above 10
        model[0].weight[0] = torch.tensor([1.0, 0.0, 0.0, 0.0])
        model[0].bias[0] = -10.0
        model[0].bias[1:] = 1.0  # the other units fire on most inputs
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    target = torch.randn(4, 2, generator=g)
    with Monitor(model, optimizer, run_dir, check_every=1, log=False) as monitor:
        for step in range(steps):
            x = torch.randn(128, 4, generator=g).clamp(-3, 3)
            due = step % 3 == 0 if planted is None else step in planted
            if due and (dies_at is None or step < dies_at):
                x[0, 0] = 20.0  # the one input unit 0 fires on
            loss = F.mse_loss(model(x), x @ target)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()


def test_a_sparse_unit_reported_silent_once_is_not_reported_at_each_gap(run_dir: Path) -> None:
    """A unit silent for 256 values (two checks), then firing, over and over: before the
    fix it went ``channels`` / ``channels_cleared`` at every gap (20 ``channels`` in 60
    checks). Now a unit that fired after being reported silent is silent again only after
    twice that silence, and its layer keeps its level while it is silent in between: one
    report, and the metrics rows count it silent at the first gap only."""
    _rare_unit_run(run_dir, dies_at=None)
    lines = read_run(run_dir)
    entered = events(lines, "channels")
    assert len(entered) == 1, [(e["step"], e["observed"]) for e in entered]
    assert entered[0]["layer"] == "0" and entered[0]["observed"] == [0]
    assert events(lines, "channels_cleared") == []
    silent_at = [row["step"] for row in metrics(run_dir) if row["stuck"]["0"][2]]
    assert silent_at == [2], silent_at


def test_a_sparse_unit_that_dies_is_still_reported(run_dir: Path) -> None:
    """The same unit stops firing at step 30 (its input is never planted again): it is
    silent again once its silence is twice its longest healthy one (512 values: four
    checks), and from then on at every check."""
    _rare_unit_run(run_dir, dies_at=30)
    silent_at = [row["step"] for row in metrics(run_dir) if row["stuck"]["0"][2]]
    assert silent_at == [2, *range(31, 60)], silent_at  # silent at steps 28 to 31
    assert len(events(read_run(run_dir), "channels")) == 1  # the layer stayed at "some"


def test_a_sparse_unit_whose_silences_grew_is_reported_within_a_bound_once_it_dies(
    run_dir: Path,
) -> None:
    """Silences that double (planted at steps 0, 3, 9, 21, 45: 256, 640, 1408, 2944 values)
    doubled the silence a revived unit needs each time, without bound: after its death at
    step 45 it was counted silent only at step 91 (5888 values). A revived unit needs at
    most 8 x silent_min_values (2048 values: 16 checks), so it is counted silent from step
    61 on (and at step 37, in the longest gap, already)."""
    _rare_unit_run(run_dir, dies_at=46, steps=100, planted={0, 3, 9, 21, 45})
    silent_at = [row["step"] for row in metrics(run_dir) if row["stuck"]["0"][2]]
    assert silent_at == [2, 7, 8, 19, 20, *range(37, 45), *range(61, 100)], silent_at
    assert len(events(read_run(run_dir), "channels")) == 1  # the layer stayed at "some"
