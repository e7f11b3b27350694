"""Layers whose weights are computed at each forward pass: ``torch.nn.utils.parametrize``
(``parametrizations.spectral_norm``, ``weight_norm``, a mask of one's own) and pruning
masks (``torch.nn.utils.prune``: ``weight = weight_orig * weight_mask`` by a forward
pre-hook). The Monitor reads what the forward pass uses without changing it, proves
nothing and repairs nothing that rests on such a copy, and says nothing to the user about
torch internals it touched."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils import parametrizations, parametrize, prune

from tests.monitor.conftest import TinyCNN, TinyMLP, batches, events, metrics, read_run, train
from trainrecord.monitor import Monitor


def _spectral_run(run_dir: Path | None) -> dict[str, torch.Tensor]:
    """A TinyCNN under spectral_norm trained 9 steps, watched (every 2 steps) or not."""
    torch.manual_seed(0)
    model = TinyCNN()
    for layer in (model.block1[0], model.conv2, model.head):
        parametrizations.spectral_norm(layer)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    if run_dir is None:
        train(model, optimizer, None, 9)
    else:
        with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
            train(model, optimizer, monitor, 9)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_a_watch_only_monitor_leaves_spectral_norm_training_unchanged(run_dir: Path) -> None:
    # Before, every read of a spectral-normed weight at a check (channel counts, the scales
    # of the decayed rule) ran a power iteration in training mode: its _u and _v moved, and
    # the weights trained with the Monitor differed from those trained without it.
    watched, alone = _spectral_run(run_dir), _spectral_run(None)
    assert any(k.endswith("._u") for k in alone)
    assert watched.keys() == alone.keys()
    changed = [k for k in alone if not torch.equal(watched[k], alone[k])]
    assert changed == []
    read_run(run_dir)


def test_a_pruned_layer_raises_no_torch_warning_from_the_monitor(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    prune.ln_structured(model.fc1, "weight", amount=0.25, n=2, dim=0)  # 4 units' rows zero
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with warnings.catch_warnings():
        # Before: "The .grad attribute of a Tensor that is not a leaf Tensor is being
        # accessed", at every check, from the Monitor reading the gradient of the pruned
        # weight (weight_orig * weight_mask, a computed tensor): an error here
        warnings.simplefilter("error")
        with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
            train(model, optimizer, monitor, 6)
    lines = read_run(run_dir)
    certified, flat, silent, _ = metrics(run_dir)[-1]["stuck"]["fc1"]
    assert (certified, flat + silent) == (0, 4)  # the pruned units output their bias
    assert not events(lines, "certificate")


class Shifted(nn.Module):
    """A BatchNorm weight computed as ``original + shift``, ``shift`` a learnt scalar."""

    def __init__(self) -> None:
        super().__init__()
        self.shift = nn.Parameter(torch.zeros(()))

    def forward(self, original: torch.Tensor) -> torch.Tensor:
        return original + self.shift


def _silent_peak(model: TinyCNN, channels: list[int]) -> float:
    """The largest value ``model.relu2`` passes on ``channels`` over a fresh batch."""
    seen: list[torch.Tensor] = []
    hook = model.relu2.register_forward_hook(lambda m, i, o: seen.append(o.detach()))
    with torch.no_grad():
        model(batches(1, batch=64, seed=7)[0][0])
    hook.remove()
    return float(seen[0][:, channels].max())


def test_a_computed_batchnorm_weight_gets_no_certificate(run_dir: Path) -> None:
    # gamma = original + shift with original 0 on two channels and beta <= 0: those
    # channels output 0 after the ReLU now, but the shift learns from the other channels
    # and carries them off 0. Before, with the optimizer not yet known (optimizer=None),
    # a certificate proved them dead for good; they fired a few steps later.
    torch.manual_seed(0)
    model = TinyCNN()
    parametrize.register_parametrization(model.bn2, "weight", Shifted())
    with torch.no_grad():
        model.bn2.parametrizations.weight.original[:2] = 0.0
        model.bn2.bias[:2] = -0.01
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    assert _silent_peak(model, [0, 1]) == 0.0
    with Monitor(model, None, run_dir, check_every=2) as monitor:
        train(model, optimizer, monitor, 12)
    lines = read_run(run_dir)
    assert not events(lines, "certificate")
    refused = events(lines, "certificate_refused")
    assert [r["layer"] for r in refused] == ["conv2"]
    assert "the weight of bn2 is computed from other parameters" in refused[0]["reason"]
    producer = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}["conv2"]
    assert not producer["certifiable"] and "bn2" in producer["reason"]
    assert _silent_peak(model, [0, 1]) > 0.0  # they fire: a certificate would have been false


def test_a_pruned_batchnorm_weight_is_never_repaired(run_dir: Path) -> None:
    # A pruning mask zeroes bn2's weight on two channels (beta <= 0: silent). Before, the
    # repair wrote its BatchNorm weight 1 into bn2.weight, the product the pre-hook computes
    # again at the next forward pass: nothing changed, the channels stayed silent and were
    # "repaired" again every repair_patience checks.
    torch.manual_seed(0)
    model = TinyCNN()
    mask = torch.ones(8)
    mask[:2] = 0.0
    prune.custom_from_mask(model.bn2, "weight", mask)
    with torch.no_grad():
        model.bn2.bias[:2] = -0.1
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(
        model, optimizer, run_dir, check_every=2, repair=True, repair_min_values=64
    ) as monitor:
        train(model, optimizer, monitor, 12)
    lines = read_run(run_dir)
    assert not events(lines, "repair")
    repair = events(lines, "manifest")[0]["repair"]
    assert "the weight of bn2 is computed" in repair["not_repaired"]["conv2"]
    assert metrics(run_dir)[-1]["stuck"]["conv2"][2] == 2  # silent, and said so
    assert _silent_peak(model, [0, 1]) == 0.0
