"""Layers whose weights are computed at each forward pass: ``torch.nn.utils.parametrize``
(``parametrizations.spectral_norm``, ``weight_norm``, a mask of one's own) and pruning
masks (``torch.nn.utils.prune``: ``weight = weight_orig * weight_mask`` by a forward
pre-hook). The Monitor reads what the forward pass uses without changing it, proves
nothing and repairs nothing that rests on such a copy, and says nothing to the user about
torch internals it touched. A parametrized module is one layer, named as the user named it
(``X``, of its class, ``Conv2d``), over its own parameters and its parametrizations'
(``X.parametrizations.weight.original``), as a pruned one is over ``weight_orig``."""

from __future__ import annotations

import logging
import math
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import parametrizations, parametrize, prune

from tests.monitor.conftest import TinyCNN, TinyMLP, batches, events, metrics, read_run, train
from tests.monitor.test_gradless_layers import MultiTask, _alarms, _train
from trainrecord.cli import main
from trainrecord.monitor import Monitor
from trainrecord.monitor import monitor as monitor_module
from trainrecord.monitor.gradients import named_modules


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
    # the pruned units output their bias: pruned on purpose, not stuck (see
    # test_pruned_channels)
    assert metrics(run_dir)[-1]["stuck"]["fc1"] == [0, 0, 0, 0]
    assert {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}["fc1"]["pruned"] == 4
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
    # gamma pruned (network slimming): the channels are pruned, not stuck
    assert metrics(run_dir)[-1]["stuck"]["conv2"] == [0, 0, 0, 0]
    assert {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}["conv2"][
        "pruned"
    ] == 2
    assert _silent_peak(model, [0, 1]) == 0.0


# -- one layer per user module: a parametrized module's rows --------------------------------


class Scaled(nn.Module):
    """A weight computed as ``original * scale``, ``scale`` a learnt scalar: a
    parametrization with a parameter of its own (``X.parametrizations.weight.0.scale``)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, original: torch.Tensor) -> torch.Tensor:
        return original * self.scale


def _parametrize(module: nn.Module, how: str) -> None:
    """Put ``module``'s weight under ``how``: torch's spectral_norm, weight_norm (two
    originals, ``original0`` and ``original1``), orthogonal, or :class:`Scaled`."""
    if how == "custom":
        parametrize.register_parametrization(module, "weight", Scaled())
    else:
        getattr(parametrizations, how)(module)


CRITIC = ["conv1", "conv2", "branch", "head"]
"""The layers of :class:`Critic`: its modules, named as the user named them."""


class Critic(nn.Module):
    """An SNGAN-like critic on 3x8x8 images: conv1 (bias), conv2 (no bias), a residual
    branch (a Conv2d whose output ``zero_branch`` multiplies by 0: no gradient reaches it)
    and a Linear head, every weight parametrized by ``how``."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.conv2 = nn.Conv2d(6, 6, 3, padding=1, bias=False)
        self.branch = nn.Conv2d(6, 6, 3, padding=1)
        self.head = nn.Linear(6, 4)
        for name in CRITIC:
            _parametrize(self.get_submodule(name), how)
        self.zero_branch = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores."""
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        branch = self.branch(x)
        x = x + (branch * 0.0 if self.zero_branch else branch)
        return self.head(x.mean(dim=(2, 3)))


def _layer_of(parameter: str) -> str:
    """The user module a parameter of :class:`Critic` belongs to, from its full name
    (``conv1.parametrizations.weight.original`` -> ``conv1``, ``conv1.bias`` -> ``conv1``)."""
    return parameter.split(".")[0]


HOW = ["spectral_norm", "weight_norm", "orthogonal", "custom"]


@pytest.mark.parametrize("how", HOW)
def test_a_parametrized_module_is_one_layer_over_all_its_parameters(
    run_dir: Path, how: str
) -> None:
    # Before, each module was two layers, X (its bias) and X.parametrizations.weight (the
    # originals; with Scaled, a third: X.parametrizations.weight.0), and conv2 (no bias)
    # only the latter: rows named after torch's internals, and no producer conv2.
    torch.manual_seed(0)
    model = Critic(how)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    expected: list[dict[str, float]] = []

    def norms(step: int) -> None:  # float64 sum of squares of every trainable gradient
        squares: dict[str, float] = {}
        for name, param in model.named_parameters():
            assert param.grad is not None, name
            total = float(param.grad.double().pow(2).sum())
            squares[_layer_of(name)] = squares.get(_layer_of(name), 0.0) + total
        expected.append({layer: math.sqrt(s) for layer, s in squares.items()})

    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        train(model, optimizer, monitor, 8, after_backward=norms)
    lines = read_run(run_dir)
    assert lines[0]["layers"] == CRITIC
    manifest = events(lines, "manifest")[0]
    assert manifest["layers"] == CRITIC
    assert [p["layer"] for p in manifest["producers"]] == CRITIC
    rows = metrics(run_dir)
    assert [r["step"] for r in rows] == [0, 2, 4, 6]
    for row in rows:
        assert list(row["grad"]) == CRITIC
        for layer in CRITIC:
            assert row["grad"][layer] == pytest.approx(expected[row["step"]][layer], rel=1e-6)
    text = (run_dir / "diary.jsonl").read_text() + (run_dir / "metrics.jsonl").read_text()
    assert "parametrizations" not in text


@pytest.mark.parametrize("how", ["spectral_norm", "weight_norm", "orthogonal"])
def test_a_zeroed_parametrized_branch_raises_one_alarm(run_dir: Path, how: str) -> None:
    # Before: two no_gradient alarms for one fault, branch and branch.parametrizations.weight
    # (kind ParametrizedConv2d and ParametrizationList).
    torch.manual_seed(0)
    model = Critic(how)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    def fault(step: int, loss: torch.Tensor) -> torch.Tensor:
        model.zero_branch = step >= 11  # (the loss of this step was made before: next one)
        return loss

    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        train(model, optimizer, monitor, 24, before_step=fault)
    lines = read_run(run_dir)
    alarms = events(lines, "alarm")
    assert [(a["layer"], a["diagnosis"], a["kind"]) for a in alarms] == [
        ("branch", "no_gradient", "Conv2d")
    ]
    assert alarms[0]["step"] == 12
    assert metrics(run_dir)[-1]["grad"]["branch"] == 0.0


@pytest.mark.parametrize("bypass_at", [None, 60])
def test_which_module_ran_is_the_parametrized_module(run_dir: Path, bypass_at: int | None) -> None:
    # Round-robin task heads and a block, all under weight_norm, zero_grad(set_to_none=
    # False): a head whose module did not run at a check sat it out (not judged), and the
    # block left out of the forward pass from step 60 is no_gradient once, as block. Before,
    # its originals were a second layer, block.parametrizations.weight, with a second alarm.
    torch.manual_seed(0)
    model = MultiTask()
    for module in (model.block, *model.heads.children()):
        parametrizations.weight_norm(module)
    lines, _ = _train(run_dir, set_to_none=False, check_every=3, bypass_at=bypass_at, model=model)
    assert _alarms(lines) == ([] if bypass_at is None else [(63, "block", "no_gradient", 0.0)])
    assert lines[0]["layers"] == ["trunk.0", "block", "heads.task0", "heads.task1", "heads.task2"]


def test_a_frozen_parametrized_module_is_one_frozen_layer(run_dir: Path) -> None:
    # conv1 frozen (its bias and its weight's original): the manifest's note names one
    # frozen module, conv1. Before: two, conv1 and conv1.parametrizations.weight.
    torch.manual_seed(0)
    model = Critic("spectral_norm")
    model.conv1.requires_grad_(False)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        train(model, optimizer, monitor, 4)
    lines = read_run(run_dir)
    assert lines[0]["layers"] == CRITIC[1:]
    notes = events(lines, "manifest")[0]["notes"]
    assert next(n for n in notes if n.startswith("frozen")).endswith(": 1 module: conv1")


def test_tied_parametrized_weights_are_one_parameter_of_two_layers(run_dir: Path) -> None:
    # Two spectral-normed Linear layers sharing one original. Before, the manifest's tied
    # note named torch's internals: "3.parametrizations.weight and 5.parametrizations.weight".
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Flatten(),
        *(nn.Linear(192, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU()),
        *(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)),
    )
    for layer in (model[3], model[5]):
        parametrizations.spectral_norm(layer)
    model[5].parametrizations.weight.original = model[3].parametrizations.weight.original
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        train(model, optimizer, monitor, 4)
    lines = read_run(run_dir)
    assert lines[0]["layers"] == ["1", "3", "5", "7"]
    manifest = events(lines, "manifest")[0]
    tied = [n for n in manifest["notes"] if n.startswith("layers sharing a parameter")]
    assert tied and tied[0].startswith("layers sharing a parameter (tied weights): 3 and 5:")
    producers = {p["layer"]: p for p in manifest["producers"]}
    for name in ("3", "5"):  # no proof rests on a computed weight: the reason names it
        assert not producers[name]["certifiable"]
        assert f"the weight of {name} is computed" in producers[name]["reason"]


def test_a_bare_parametrized_model_is_one_layer(run_dir: Path) -> None:
    # A bare Linear is the layer "model"; under spectral_norm its only submodules are its
    # parametrizations. Before: two layers of kind Parameter and ParametrizationList,
    # "bias" and "parametrizations.weight", and no producer.
    torch.manual_seed(0)
    model = nn.Linear(192, 4)
    parametrizations.spectral_norm(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        for x, y in batches(4):
            loss = F.cross_entropy(model(x.flatten(1)), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    assert lines[0]["layers"] == ["model"] and lines[0]["model"] == "Linear"
    assert [p["layer"] for p in events(lines, "manifest")[0]["producers"]] == ["model"]
    assert [list(r["grad"]) for r in metrics(run_dir)] == [["model"], ["model"]]


def test_ddp_names_a_parametrized_module_as_the_user_did(tmp_path: Path) -> None:
    # One gloo process: the wrapper's "module." is stripped, and so are parametrizations.
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    run_dir = tmp_path / "run"
    dist.init_process_group("gloo", rank=0, world_size=1, init_method=f"file://{tmp_path / 'init'}")
    try:
        torch.manual_seed(0)
        model = DistributedDataParallel(Critic("spectral_norm"))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
            train(model, optimizer, monitor, 4)
    finally:
        dist.destroy_process_group()
    lines = read_run(run_dir)
    assert (lines[0]["model"], lines[0]["layers"]) == ("Critic", CRITIC)
    assert [list(r["grad"]) for r in metrics(run_dir)] == [CRITIC] * 2


def _layers_before(model: nn.Module) -> dict[str, list[tuple[str, nn.Parameter]]]:
    """``parameter_layers`` as it was before parametrized modules were one layer (main at
    6b292aa): every module owning trainable parameters directly, a parametrization's
    ``X.parametrizations.weight`` included; used to write a record as that version did."""
    out: dict[str, list[tuple[str, nn.Parameter]]] = {}
    for name, module in named_modules(model).items():
        params = [(n, p) for n, p in module.named_parameters(recurse=False) if p.requires_grad]
        if params and name:
            out[name] = params
        elif params:
            out.update({n: [(n, p)] for n, p in params})
    return out


def test_a_record_with_the_old_layer_names_is_continued(
    run_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A run recorded before the change (its run_start lists branch.parametrizations.weight)
    # continued by this version: the parameters' names and shapes, and so
    # architecture_sha256, are the same; no warning of another model, the record verifies,
    # and show and plot read its two sessions.
    torch.manual_seed(0)
    model = Critic("spectral_norm")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with monkeypatch.context() as patch:
        patch.setattr(monitor_module, "parameter_layers", _layers_before)
        with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
            train(model, optimizer, monitor, 4)
    old = events(read_run(run_dir), "run_start")[0]["layers"]
    assert "branch.parametrizations.weight" in old and "conv2" not in old
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord"),
        Monitor(model, optimizer, run_dir, check_every=2, start_step=4) as monitor,
    ):
        train(model, optimizer, monitor, 4, seed=1)
    assert not [r for r in caplog.records if "another model" in r.getMessage()]
    lines = read_run(run_dir)
    starts = events(lines, "run_start")
    assert [s["layers"] for s in starts] == [old, CRITIC]
    assert starts[0]["architecture_sha256"] == starts[1]["architecture_sha256"]
    rows = metrics(run_dir)
    assert [(r["step"], list(r["grad"])) for r in rows[2:]] == [
        (4, CRITIC),
        (6, CRITIC),
    ]
    assert main(["show", str(run_dir)]) == 0
    assert "layers (4): conv1, conv2, branch, head" in capsys.readouterr().out
    assert main(["plot", str(run_dir), "-o", str(tmp_path / "plot.png")]) == 0
