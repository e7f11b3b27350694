"""Channels removed on purpose by ``torch.nn.utils.prune`` are pruned, not stuck.

Structured pruning (``ln_structured`` along the output axis) zeroes whole rows of a
producer's ``weight_mask``; the pruned channels output their bias (or their BatchNorm's
beta), a constant by design. They are in none of the four stuck categories (the level
stays the seed's: how many of the layer's channels, all of them, are stuck), never
certified or repaired, and counted in the
manifest's producers entries (``pruned``), which a check after more pruning writes again.
A real dead channel among them is still reported. Real training throughout."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import prune

from tests.monitor.conftest import TinyCNN, TinyMLP, batches, events, metrics, read_run, train
from trainrecord.cli import main
from trainrecord.monitor import Monitor
from trainrecord.monitor.channels import ChannelCounts

STEPS = 40
MORE_AT = 20  # the step before which two more channels are pruned


def _cnn(dead: bool) -> tuple[nn.Module, nn.Module, int | None]:
    """A TinyCNN whose conv2 (16 channels, BatchNorm and ReLU after it) has 8 channels
    pruned; with ``dead``, one more channel is dead for real (its BatchNorm gamma 0 and beta
    below 0: silent whatever comes in), its incoming weights made the largest so that no
    pruning takes it. (model, the pruned producer, the dead channel)."""
    model = TinyCNN(width=8)
    conv = model.conv2
    channel = None
    if dead:
        with torch.no_grad():
            norms = conv.weight.flatten(1).norm(dim=1)
            channel = int(norms.argmax())
            conv.weight[channel] *= 10.0
            model.bn2.weight[channel] = 0.0
            model.bn2.bias[channel] = -1.0
    prune.ln_structured(conv, "weight", amount=0.5, n=2, dim=0)
    return model, conv, channel


def _mlp(dead: bool) -> tuple[nn.Module, nn.Module, int | None]:
    """A TinyMLP whose fc1 (16 units, ReLU after it, no BatchNorm) has 8 units pruned;
    with ``dead``, one more unit is dead for real (its bias far below anything its weights
    give: silent on every input), its weights made the largest so that no pruning takes it."""
    model = TinyMLP(hidden=16)
    fc1 = model.fc1
    channel = None
    if dead:
        with torch.no_grad():
            channel = int(fc1.weight.norm(dim=1).argmax())
            fc1.weight[channel] *= 3.0
            fc1.bias[channel] = -100.0
    prune.ln_structured(fc1, "weight", amount=0.5, n=2, dim=0)
    return model, fc1, channel


MODELS = {"cnn": (_cnn, "conv2"), "mlp": (_mlp, "fc1")}


def _run(
    run_dir: Path, kind: str, dead: bool, repair: bool = False
) -> tuple[nn.Module, nn.Module, int | None, list[float]]:
    """Prune (8 of 16 channels at step 0, 2 more before step ``MORE_AT``) and train
    ``STEPS`` steps under a Monitor checking every 2 steps."""
    torch.manual_seed(0)
    build, _ = MODELS[kind]
    model, producer, channel = build(dead)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    options: dict[str, Any] = {"repair": True, "repair_min_values": 64} if repair else {}
    with Monitor(model, optimizer, run_dir, check_every=2, **options) as monitor:
        for step, (x, y) in enumerate(batches(STEPS, batch=32)):
            if step == MORE_AT:  # iterative pruning: two more of the channels left
                prune.ln_structured(producer, "weight", amount=2, n=2, dim=0)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
            losses.append(float(loss.detach()))
    return model, producer, channel, losses


def _pruned_rows(producer: nn.Module) -> list[int]:
    """The output channels whose incoming weights the producer's mask holds at zero."""
    mask = producer.weight_mask
    return (mask.flatten(1) == 0).all(dim=1).nonzero().flatten().tolist()


def _entry(manifest: dict[str, Any], layer: str) -> dict[str, Any]:
    return {p["layer"]: p for p in manifest["producers"]}[layer]


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_pruned_channels_are_not_stuck_and_a_dead_one_among_them_is(
    run_dir: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before, the 8 pruned channels were silent or flat like dead ones: conv2/fc1 read
    # "most" of 16 (a warning) at once, and the metrics rows counted 9 stuck channels.
    layer = MODELS[kind][1]
    _, producer, channel, _ = _run(run_dir, kind, dead=True)
    assert channel is not None and channel not in _pruned_rows(producer)
    assert len(_pruned_rows(producer)) == 10
    lines = read_run(run_dir)
    mine = [e for e in events(lines, "channels") if e["layer"] == layer]
    assert mine, "the dead channel is reported"
    for event in mine:
        assert event["level"] == "some" and event["severity"] == "info", event
        assert event["channels"] == 16 and event["n_pruned"] in (8, 10)
        assert event["n_observed"] == 1 and event["observed"] == [channel]
        assert event["n_flat"] == event["n_decayed"] == event["n_certified"] == 0
    assert not [e for e in events(lines, "channels_cleared") if e["layer"] == layer]
    rows = metrics(run_dir)
    assert rows[-1]["stuck"][layer] == [0, 0, 1, 0]  # the seed's four counts, pruned in none
    assert all(len(row["stuck"][layer]) == 4 for row in rows)
    assert not events(lines, "certificate")
    refused = [e for e in events(lines, "certificate_refused") if e["layer"] == layer]
    assert all(e["count"] == 1 for e in refused)  # the dead one (weights computed); no pruned
    capsys.readouterr()
    assert main(["show", str(run_dir)]) == 0
    shown = capsys.readouterr().out
    assert f"{layer}: some of 16 (certified 0, flat 0, silent 1, decayed 0; 8 pruned, not " in shown


def test_the_level_counts_a_layer_s_channels_the_pruned_ones_included() -> None:
    # The seed: "level: how many of a layer's channels are stuck". 4 dead beside 8 pruned
    # of 16 are a quarter of the layer's channels (some), not half of the unpruned (most).
    counts = ChannelCounts(total=16, observed=[0, 1, 2, 3], pruned=list(range(8, 16)))
    assert counts.stuck == 4 and counts.level == "some"
    assert ChannelCounts(total=16, pruned=list(range(8))).level == "none"
    dead = ChannelCounts(total=16, observed=list(range(8)), pruned=list(range(8, 16)))
    assert dead.level == "most"


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_pruned_channels_alone_write_no_channels_event(run_dir: Path, kind: str) -> None:
    layer = MODELS[kind][1]
    _run(run_dir, kind, dead=False)
    lines = read_run(run_dir)
    assert not [e for e in events(lines, "channels") if e["layer"] == layer]
    assert all(row["stuck"][layer] == [0, 0, 0, 0] for row in metrics(run_dir))
    manifests = events(lines, "manifest")
    # the first manifest counts the 8 pruned at step 0; the check after two more were
    # pruned writes a new one that counts 10
    counts = [_entry(m, layer).get("pruned") for m in manifests]
    assert counts == [8, 10], counts
    assert manifests[1]["step"] == MORE_AT
    assert all(any("pruned channels" in note for note in m["notes"]) for m in manifests)
    assert f"{layer} (10)" in " ".join(manifests[1]["notes"])
    others = [p for p in manifests[-1]["producers"] if p["layer"] != layer]
    assert others and all("pruned" not in p for p in others)


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_repair_leaves_pruned_channels_pruned_and_the_run_trains_on(
    run_dir: Path, kind: str
) -> None:
    layer = MODELS[kind][1]
    _, producer, _, losses = _run(run_dir, kind, dead=True, repair=True)
    lines = read_run(run_dir)
    assert not [e for e in events(lines, "repair") if e["layer"] == layer]
    assert all(math.isfinite(v) for v in losses)
    assert sum(losses[-5:]) < sum(losses[:5])  # it trained
    with torch.no_grad():  # the masks still hold the 10 pruned channels at zero
        pruned = _pruned_rows(producer)
        assert len(pruned) == 10
        assert float(producer.weight[pruned].abs().max()) == 0.0
    manifest = events(lines, "manifest")[-1]
    assert _entry(manifest, layer)["pruned"] == 10
    assert layer in manifest["repair"]["not_repaired"]
    assert main(["verify", str(run_dir)]) == 0


def test_unstructured_pruning_prunes_no_channel(run_dir: Path) -> None:
    # Individual weights removed (half of them, at random): no whole row, no channel pruned;
    # the manifest says the layer is under a mask that prunes none of its channels.
    torch.manual_seed(0)
    model = TinyMLP(hidden=16)
    prune.random_unstructured(model.fc1, "weight", amount=0.5)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        train(model, optimizer, monitor, 10)
    lines = read_run(run_dir)
    assert _entry(events(lines, "manifest")[0], "fc1")["pruned"] == 0
    assert all("n_pruned" not in e for e in events(lines, "channels"))


def _counting_classify(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the Monitor's calls of the per-producer classification (the real one runs):
    a check that takes the quiet path (no stuck channel anywhere, decided over every
    producer's channels at once) calls it for no producer."""
    import trainrecord.monitor.monitor as monitor_module

    calls: list[str] = []
    real = monitor_module.classify

    def counted(total: int, *args: Any, **kwargs: Any) -> Any:
        calls.append(str(total))
        return real(total, *args, **kwargs)

    monkeypatch.setattr(monitor_module, "classify", counted)
    return calls


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_checks_of_a_pruned_model_with_nothing_stuck_take_the_quiet_path(
    run_dir: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, the pruned channels (flat or silent, zero scale without a BatchNorm) failed
    # the quiet path's tests at every check, and every check classified each producer on
    # its own: a ResNet-18 under 25 % structured pruning took 10.3 ms per check in
    # monitor.step() instead of 4.2 ms. The pruned channels are now left out there too.
    calls = _counting_classify(monkeypatch)
    _run(run_dir, kind, dead=False)
    assert calls == [], f"{len(calls)} producers classified one by one"
    rows = metrics(run_dir)
    assert len(rows) == STEPS // 2
    assert all(row["stuck"][MODELS[kind][1]] == [0, 0, 0, 0] for row in rows)


def test_a_decayed_unit_beside_pruned_ones_is_still_found(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The quiet path leaves the pruned units (zero scale) out of its bound and its medians,
    # not the others: a unit whose incoming weights shrank to a 10^-5 of the others'
    # (alive: its bias keeps it firing) is decayed, among 8 pruned.
    calls = _counting_classify(monkeypatch)
    torch.manual_seed(0)
    model = TinyMLP(hidden=16)
    fc1 = model.fc1
    with torch.no_grad():
        unit = int(fc1.weight.norm(dim=1).argmax())  # the largest: no pruning takes it
        prune.ln_structured(fc1, "weight", amount=0.5, n=2, dim=0)
        fc1.weight_orig[unit] *= 1e-5
        fc1.bias[unit] = 1.0
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # nothing moves
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        train(model, optimizer, monitor, 8)
    assert calls
    assert all(row["stuck"]["fc1"] == [0, 0, 0, 1] for row in metrics(run_dir))
    (event,) = [e for e in events(read_run(run_dir), "channels") if e["layer"] == "fc1"]
    assert event["n_decayed"] == 1 and event["n_pruned"] == 8 and event["level"] == "some"
