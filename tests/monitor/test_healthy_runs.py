"""Healthy training runs write no warnings: the false alarms a user probe found in ordinary
runs (convergence read as vanishing gradients, one hard batch read as an explosion or a
loss spike, a unit off for one small batch read as a silent channel, a count wavering at
half a layer), each from real training, with the real problem beside it still caught."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from tests.monitor.conftest import events, read_run
from trainrecord.monitor import Monitor

WARNINGS = ("alarm", "loss_spike", "channels", "channels_cleared")


def bars(n: int, seed: int, size: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    """Images of one bar (4 classes: horizontal, vertical, two diagonals) in noise."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 4, (n,), generator=g)
    x = 0.3 * torch.randn(n, 1, size, size, generator=g)
    offset = torch.randint(2, size - 2, (n,), generator=g)
    idx = torch.arange(size)
    for i in range(n):
        o, c = int(offset[i]), int(y[i])
        if c == 0:
            x[i, 0, o, :] += 1
        elif c == 1:
            x[i, 0, :, o] += 1
        elif c == 2:
            x[i, 0, idx, (idx + o) % size] += 1
        else:
            x[i, 0, idx, (o - idx) % size] += 1
    return x, y


def teacher(n: int, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """20-dimensional vectors labelled (4 classes) by a random two-layer teacher."""
    g = torch.Generator().manual_seed(seed)
    w1, w2 = torch.randn(20, 32, generator=g), torch.randn(32, 4, generator=g)
    x = torch.randn(n, 20, generator=g)
    return x, (torch.tanh(x @ w1 / math.sqrt(20)) @ w2).argmax(-1)


def bars_cnn() -> nn.Sequential:
    """Three Conv-BatchNorm-ReLU blocks and a linear head."""

    def block(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()
        )

    return nn.Sequential(
        block(1, 16),
        nn.MaxPool2d(2),
        block(16, 32),
        nn.MaxPool2d(2),
        block(32, 32),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 4),
    )


def fit(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    data: tuple[torch.Tensor, torch.Tensor],
    run_dir: Path,
    steps: int,
    batch: int,
    check_every: int,
    before: Callable[[int], None] | None = None,
    **options: object,
) -> list[dict[str, object]]:
    """An ordinary loop on random minibatches of ``data``; the diary's lines."""
    x, y = data
    g = torch.Generator().manual_seed(0)
    with Monitor(model, optimizer, run_dir, check_every=check_every, **options) as monitor:  # type: ignore[arg-type]
        for step in range(steps):
            if before is not None:
                before(step)
            index = torch.randint(0, len(x), (batch,), generator=g)
            loss = F.cross_entropy(model(x[index]), y[index])
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    return read_run(run_dir)


def warnings(lines: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [(e["event"], e["step"], e.get("layer")) for e in lines if e["event"] in WARNINGS]


def test_a_converging_network_is_not_vanishing(run_dir: Path) -> None:
    # The probe: loss 1.45 -> 0.004 by step 100; four layers called vanishing, and the
    # head's alarm stayed open for the rest of a 100 %-accuracy run.
    torch.manual_seed(10)
    model = bars_cnn()
    optimizer = torch.optim.SGD(model.parameters(), 0.05, momentum=0.9)
    x, y = bars(3000, seed=10)
    lines = fit(model, optimizer, (x[:2500], y[:2500]), run_dir, 300, 32, 20)
    assert warnings(lines) == []  # before: four layers called vanishing at step 100
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 15


def test_a_saturated_layer_is_vanishing_alone(run_dir: Path) -> None:
    # The real thing beside it: at step 200 the first layer's weights are scaled by 1000
    # (a bad update), its Tanh saturates and passes almost no gradient back: the first
    # layer's gradient falls two to three decades while the layers after it learn on (their
    # inputs are the saturated +-1) and the loss stays where it was.
    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4)
    )
    optimizer = torch.optim.SGD(model.parameters(), 0.05, momentum=0.9)

    def saturate(step: int) -> None:
        if step == 200:
            with torch.no_grad():
                model[0].weight.mul_(1000.0)
                model[0].bias.mul_(1000.0)

    lines = fit(model, optimizer, teacher(5000), run_dir, 300, 32, 10, before=saturate)
    alarms = [(a["step"], a["layer"], a["diagnosis"]) for a in events(lines, "alarm")]
    assert alarms == [(210, "0", "vanishing")]  # the second check below its band
    assert not events(lines, "alarm_cleared")


def test_small_batches_show_no_silent_units_that_are_alive(run_dir: Path) -> None:
    # The probe: at batch 8 and check_every=1 a layer with no dead unit wrote 703
    # channels/channels_cleared events in 2000 checks (a unit off for 8 samples).
    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4)
    )
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    x, y = teacher(5000)
    lines = fit(model, optimizer, (x, y), run_dir, 400, 8, 1)
    with torch.no_grad():  # no unit of the first layer is dead on the whole training set
        assert bool((model[0](x).amax(0) > 0).all())
    assert [w for w in warnings(lines) if w[2] == "0"] == []


def test_a_dead_unit_is_reported_once_it_showed_enough_values(run_dir: Path) -> None:
    # ... and a unit that is dead is reported: once 256 values (32 checks of 8) showed it.
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))
    with torch.no_grad():
        model[0].bias[5] = -100.0
    optimizer = torch.optim.SGD(model.parameters(), 0.0)
    lines = fit(model, optimizer, teacher(5000), run_dir, 40, 8, 1)
    [channels] = events(lines, "channels")
    assert (channels["step"], channels["observed"], channels["level"]) == (31, [5], "some")
    assert events(lines, "manifest")[0]["channel_checks"]["silent_min_values"] == 256


def test_a_count_wavering_at_half_a_layer_writes_one_event(run_dir: Path) -> None:
    # The probe: 8 of 18 units dead and one firing on half the inputs: most (9/18,
    # warning) <-> some (8/18) at every other check, 254 warnings in 1000 steps.
    torch.manual_seed(0)
    x = torch.randn(4000, 6)
    y = (x[:, 0] > 0).long()
    model = nn.Sequential(nn.Linear(6, 18), nn.ReLU(), nn.Linear(18, 2))
    with torch.no_grad():
        model[0].bias[:8] = -20.0
        model[0].weight[8].zero_()
        model[0].weight[8, 1] = 1.0
        model[0].bias[8] = 0.0
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    # silent_min_values=1: each check's batch of 4 decides, so the count wavers 8 <-> 9
    lines = fit(model, optimizer, (x, y), run_dir, 300, 4, 1, silent_min_values=1)
    rows = [r for r in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 300
    changes = events(lines, "channels") + events(lines, "channels_cleared")
    assert len(changes) <= 2 and all(c["level"] in ("some", "most") for c in changes)


def test_one_hard_batch_is_no_spike_and_no_explosion(run_dir: Path) -> None:
    # The probe: batch 8 at check_every=1 near convergence: 60 loss spikes and 22
    # exploding alarms in 1500 steps, each over at the next step (one misclassified sample).
    torch.manual_seed(4)
    model = bars_cnn()
    optimizer = torch.optim.SGD(model.parameters(), 0.01, momentum=0.9, weight_decay=5e-4)
    lines = fit(model, optimizer, bars(2500, seed=4), run_dir, 700, 8, 1)
    assert events(lines, "alarm") == []
    # Before: 25 spikes in these 700 steps. Now one, where two hard batches came in a row
    # after a calm stretch (0.28 then 0.086 over a baseline of 0.008).
    assert len(events(lines, "loss_spike")) <= 1


def test_units_dead_by_their_weights_are_silent_at_once(run_dir: Path) -> None:
    # An integration probe: 40 of 64 units killed (zero weights, bias -1) under SGD with
    # momentum: no certificate (the momentum may revive them), and the channels event came
    # 8 checks later, when each unit had shown 256 values. Weights that make the ReLU's
    # input <= 0 for every input are evidence enough that a unit is silent now.
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), 0.0, momentum=0.9)

    def kill(step: int) -> None:
        if step == 10:
            with torch.no_grad():
                model[0].weight[:10] = 0.0
                model[0].bias[:10] = -1.0

    lines = fit(model, optimizer, teacher(5000), run_dir, 20, 8, 1, before=kill)
    [channels] = events(lines, "channels")
    assert (channels["step"], channels["n_observed"]) == (10, 10)
    assert channels["observed"] == list(range(10))
    [refused] = events(lines, "certificate_refused")
    assert refused["step"] == 10 and "momentum_buffer" in refused["reason"]


def test_a_nan_in_the_activations_clears_no_stuck_channels(run_dir: Path) -> None:
    # An integration probe: channels_cleared at the check that first saw NaN (a NaN
    # maximum is not <= 0, so every silent channel looked alive).
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))
    with torch.no_grad():
        model[0].bias[:10] = -100.0  # ten units silent on every input
    optimizer = torch.optim.SGD(model.parameters(), 0.0)
    x, y = teacher(5000)
    x[:, 3] = torch.where(torch.arange(len(x)) % 7 == 0, torch.nan, x[:, 3])  # NaN samples

    with Monitor(model, optimizer, run_dir, check_every=1, silent_min_values=1) as monitor:
        for step in range(6):
            rows = slice(1, 7) if step < 3 else slice(0, 6)  # NaN in the batch from step 3
            loss = F.cross_entropy(model(x[rows]), y[rows])
            loss.backward()
            monitor.step(loss)
            optimizer.zero_grad()
    lines = read_run(run_dir)
    [channels] = events(lines, "channels")
    assert channels["step"] == 0 and set(range(10)) <= set(channels["observed"])
    assert events(lines, "channels_cleared") == []
    assert '"loss":"NaN"' in (run_dir / "metrics.jsonl").read_text().splitlines()[3]


def test_a_grad_scaler_whose_scale_underflows_to_zero_is_critical_not_a_crash(
    run_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A fault-detection probe: an inf gradient at every step halves the scale at each
    # skipped step until it is 0.0 (~160 steps); monitor.step() then raised
    # ZeroDivisionError (and, that fixed, the skipped_step event with scale 0, which the
    # spec refuses: scale > 0), ending the training loop.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu", init_scale=256.0)
    model[2].weight.register_hook(lambda g: g * float("inf"))
    x, y = teacher(5000)
    with Monitor(model, optimizer, run_dir, check_every=10, scaler=scaler) as monitor:
        for step in range(200):
            loss = F.cross_entropy(model(x[step * 8 : step * 8 + 8]), y[step * 8 : step * 8 + 8])
            scaler.scale(loss).backward()
            monitor.step(loss)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    assert scaler.get_scale() == 0.0
    lines = read_run(run_dir)
    skipped = events(lines, "skipped_step")
    critical = events(lines, "nonfinite_gradient")
    assert skipped and all(s["scale"] > 0 for s in skipped)
    assert critical and critical[0]["step"] > skipped[-1]["step"]
    assert lines[-1]["event"] == "run_end" and "error" not in lines[-1]
    assert not [r for r in caplog.records if "not recorded" in r.getMessage()]


def test_an_event_the_spec_refuses_is_logged_and_training_goes_on(
    run_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The safety net under the case above: a Monitor bug that builds an event the schema
    # refuses costs that event (logged once, naming the rule), not the training run.
    model = nn.Sequential(nn.Linear(20, 4))
    with Monitor(model, None, run_dir, check_every=1) as monitor:
        for _ in range(2):
            monitor._emit(
                "skipped_step", {"step": 0, "severity": "info", "scale": 0.0, "layers": []}
            )
    said = [r.getMessage() for r in caplog.records if "not recorded" in r.getMessage()]
    assert (
        len(said) == 1 and "diary.skipped_step.scale" in said[0] and "training goes on" in said[0]
    )
    lines = read_run(run_dir)
    assert [line["event"] for line in lines] == ["run_start", "run_end"]
    assert lines[-1]["counts"].get("skipped_step", 0) == 0


def test_round_robin_task_heads_the_checks_never_land_on_are_not_no_gradient(
    run_dir: Path,
) -> None:
    # An integration probe trained three task heads in turn (step k trains head k % 3) at
    # check_every=3: every check saw the same head with a gradient and the other two
    # without one, and no_gradient alarms on both stayed open for the whole run. Their
    # parameters changed between checks (the optimizer updated them at the other steps),
    # so they learn. A head that is never trained (detached) is still no_gradient.
    torch.manual_seed(0)
    trunk = nn.Sequential(nn.Linear(20, 32), nn.ReLU())
    heads = nn.ModuleList(nn.Linear(32, 4) for _ in range(4))  # heads[3]: never trained
    model = nn.ModuleDict({"trunk": trunk, "heads": heads})
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = teacher(512)
    with Monitor(model, optimizer, run_dir, check_every=3, log=False) as monitor:
        for step in range(150):
            i = slice(step * 32 % 512, step * 32 % 512 + 32)
            out = heads[step % 3](trunk(x[i]))
            loss = F.cross_entropy(out, y[i])
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    alarms = events(read_run(run_dir), "alarm")
    assert {(a["layer"], a["diagnosis"]) for a in alarms} == {("heads.3", "no_gradient")}
