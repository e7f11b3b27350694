"""The model changing during a run: what the monitor checks follows it.

Fine-tuning schedules freeze a backbone and unfreeze it later (gradual unfreezing), or
freeze layers that are done; a new head replaces the old one, an adapter is added, the
model goes to float64. The layers are the modules owning parameters that require
gradients now; when they change, the next check writes a new manifest first and checks
the new set from then on (an unfrozen layer is measured, a frozen one raises no
no_gradient alarm); when modules are added or replaced, the structure is learnt again.
"""

from __future__ import annotations

import copy
import gc
import weakref
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from tests.diary.helpers import cli
from tests.monitor.conftest import TinyCNN, batches, events, metrics, read_run, train
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
    # first in its check; with the structure learnt again: block1 was frozen at the first
    # check, so its pair and ReLU were never seen (a frozen path has no autograd graph)
    assert at_12[:2] == ["structure", "manifest"]
    structures = events(lines, "structure")
    assert "block1.0" not in structures[0]["pairs"]
    assert structures[1]["pairs"]["block1.0"] == "block1.1"
    assert "block1.0" in structures[1]["relu_after"] or any(
        p["layer"] == "block1.0" and p["relu"] for p in manifests[1]["producers"]
    )
    assert events(lines, "alarm") == []  # an unfrozen layer is no alarm by itself
    rows = metrics(run_dir)
    for row in rows:
        assert ("block1.0" in row["grad"]) == (row["step"] >= 12), row
        assert ("block1.0" in row["stuck"]) == (row["step"] >= 12), row
    assert all(r["grad"]["block1.0"] > 0 for r in rows if r["step"] >= 12)
    assert lines[-1]["counts"]["manifest"] == 2
    # show lists the layers checked last, not run_start's (a probe read "layers (2)")
    shown = cli("show", run_dir).stdout
    assert f"  layers ({len(manifests[1]['layers'])}): block1.0, block1.1," in shown


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


class Adaptable(nn.Module):
    """A body, a head, and an adapter slot filled later."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1)
        )
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(8, 4)
        self.adapter: nn.Module | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores."""
        y = self.flatten(self.body(x))
        if self.adapter is not None:
            y = y + self.adapter(y)
        return self.fc(y)


def test_a_replaced_head_and_an_added_adapter_are_checked_and_raise_no_alarm(
    run_dir: Path,
) -> None:
    torch.manual_seed(0)
    model = Adaptable()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(model, optimizer, run_dir, check_every=2, warmup=2) as monitor:
        train(model, optimizer, monitor, 10)
        model.fc = nn.Linear(8, 4)  # a new head: its parameters are new objects
        model.adapter = nn.Linear(8, 8)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        train(model, optimizer, monitor, 10, seed=1)
    lines = read_run(run_dir)
    # before: no_gradient for the old head's parameters (no longer in the model), and the
    # adapter never checked
    assert events(lines, "alarm") == []
    structures = events(lines, "structure")
    manifests = events(lines, "manifest")
    assert [s["step"] for s in structures] == [0, 12]  # learnt again at the next armed check
    assert [m["step"] for m in manifests] == [0, 12]
    assert "adapter" in manifests[1]["layers"]
    assert [p["layer"] for p in manifests[1]["producers"]] == ["body.0", "fc", "adapter"]
    assert structures[1]["pairs"] == {"body.0": "body.1"}
    rows = {r["step"]: r for r in metrics(run_dir)}
    # check 10 had its hooks installed before the change: gradients of the new layers,
    # no channel statistics; from check 12 on, both
    assert set(rows[10]["grad"]) == {"body.0", "body.1", "fc", "adapter"}
    assert rows[10]["stuck"] == {}
    assert set(rows[12]["stuck"]) == {"body.0", "fc", "adapter"}
    assert all(v is not None and v > 0 for r in rows.values() for v in r["grad"].values())


@pytest.mark.parametrize("set_to_none", [True, False])
def test_a_deleted_module_raises_no_alarm_and_leaves_the_checks(
    run_dir: Path, set_to_none: bool
) -> None:
    # `del model.adapter` (an auxiliary head dropped after pre-training): torch reports a
    # deletion to no hook, so before, its parameters stayed in the checks with no gradient
    # (a no_gradient alarm at every later check) and the Monitor kept the module alive.
    # With zero_grad(set_to_none=False) the optimizer's copies of the deleted parameters
    # keep a zero gradient: before, the deletion was only inferred from a missing gradient,
    # so the adapter stayed a layer for good (grad 0.0 in every row, a no_gradient alarm).
    torch.manual_seed(0)
    model = Adaptable()
    model.adapter = nn.Linear(8, 8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(model, optimizer, run_dir, check_every=2, warmup=2) as monitor:
        train(model, optimizer, monitor, 10, set_to_none=set_to_none)
        adapter = weakref.ref(model.adapter)
        del model.adapter
        model.adapter = None  # (a plain attribute: no module registered)
        train(model, optimizer, monitor, 10, seed=1, set_to_none=set_to_none)
        gc.collect()
        assert adapter() is None  # the Monitor no longer holds it
    lines = read_run(run_dir)
    assert events(lines, "alarm") == []
    manifests = events(lines, "manifest")
    assert "adapter" in manifests[0]["layers"]
    assert "adapter" not in manifests[-1]["layers"]
    assert [p["layer"] for p in manifests[-1]["producers"]] == ["body.0", "fc"]
    rows = {r["step"]: r for r in metrics(run_dir)}
    assert "adapter" in rows[8]["grad"]
    assert all("adapter" not in r["grad"] for s, r in rows.items() if s >= 10)
    assert all(v is not None and v > 0 for r in rows.values() for v in r["grad"].values())


def test_a_parameter_replaced_on_its_module_is_measured_from_the_next_check(
    run_dir: Path,
) -> None:
    # `model.fc.weight = nn.Parameter(...)` (a head re-initialised, the module kept): the
    # Monitor read the model again but compared only requires_grad and dtype, so it went on
    # measuring the old Parameter objects: fc's norm null in every later row, a no_gradient
    # alarm for a head that trains.
    torch.manual_seed(0)
    model = Adaptable()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(model, optimizer, run_dir, check_every=2, warmup=2) as monitor:
        train(model, optimizer, monitor, 10)
        model.fc.weight = nn.Parameter(torch.randn(4, 8) * 0.1)
        model.fc.bias = nn.Parameter(torch.zeros(4))
        optimizer.add_param_group({"params": [model.fc.weight, model.fc.bias]})
        train(model, optimizer, monitor, 10, seed=1)
    lines = read_run(run_dir)
    assert events(lines, "alarm") == [] and events(lines, "no_gradients") == []
    assert [m["step"] for m in events(lines, "manifest")] == [0, 10]  # fc's layer taken again
    rows = metrics(run_dir)
    assert [r["step"] for r in rows] == list(range(0, 20, 2))
    assert all(v is not None and v > 0 for r in rows for v in r["grad"].values())


def test_a_state_dict_loaded_with_assign_is_measured_and_the_stale_optimizer_named(
    run_dir: Path,
) -> None:
    # model.load_state_dict(state, assign=True) puts new Parameter objects in the model:
    # the Monitor kept measuring the old ones, which no longer get gradients, and wrote
    # no_gradients "call it after loss.backward()", which the loop did; nothing said that
    # the optimizer now updates none of the model's parameters.
    torch.manual_seed(0)
    model = Adaptable()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(model, optimizer, run_dir, check_every=2, warmup=2) as monitor:
        train(model, optimizer, monitor, 4)
        state = copy.deepcopy(model.state_dict())
        train(model, optimizer, monitor, 6, seed=1)
        model.load_state_dict(state, assign=True)
        train(model, optimizer, monitor, 6, seed=2)
    lines = read_run(run_dir)
    assert events(lines, "no_gradients") == []
    rows = metrics(run_dir)
    assert all(v is not None and v > 0 for r in rows for v in r["grad"].values())
    manifests = events(lines, "manifest")
    assert [m["step"] for m in manifests] == [0, 10]
    assert not [n for n in manifests[0]["notes"] if "none of the model's" in n]
    [note] = [n for n in manifests[1]["notes"] if "none of the model's" in n]
    assert "SGD" in note and "assign=True" in note


def test_the_stale_optimizer_note_says_what_is_known_when_the_loop_built_a_new_one(
    run_dir: Path,
) -> None:
    # The usual fix after load_state_dict(assign=True) is a new optimizer: the note of the
    # check before the new one first stepped said "nothing trains them", false of a model
    # its new optimizer trains. Only the Monitor's optimizer is known to hold none of its
    # parameters then; the new one is followed from the next check, and the note goes.
    torch.manual_seed(0)
    model = Adaptable()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        train(model, optimizer, monitor, 2)
        state = copy.deepcopy(model.state_dict())
        model.load_state_dict(state, assign=True)
        new = torch.optim.SGD(model.parameters(), lr=0.05)
        before = model.fc.weight.detach().clone()
        train(model, new, monitor, 4, seed=1)
        assert not torch.equal(model.fc.weight.detach(), before)  # trained by the new one
    manifests = events(read_run(run_dir), "manifest")
    assert [m["step"] for m in manifests] == [0, 2, 4]
    [note] = [n for n in manifests[1]["notes"] if "none of the model's" in n]
    assert "nothing trains them" not in note
    assert "holds none of the model's trainable parameters now" in note
    assert "An optimizer built again over them is followed from the first check" in note
    assert not [n for n in manifests[2]["notes"] if "none of the model's" in n]


def test_a_change_of_dtype_writes_a_manifest_with_the_new_precision(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(model, optimizer, run_dir, check_every=4) as monitor:
        train(model, optimizer, monitor, 6)
        model.double()
        for x, y in batches(6, seed=1):
            loss = F.cross_entropy(model(x.double()), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    manifests = events(read_run(run_dir), "manifest")
    assert [(m["step"], m["precision"]) for m in manifests] == [(0, "float32"), (8, "float64")]


def test_a_model_without_parameters_is_refused_and_a_frozen_one_told_so(
    run_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: run_start with layers [] and a no_gradients telling the user to call step()
    # after backward(), which they did.
    with pytest.raises(ValueError, match=r"\(ReLU\) has no parameters: nothing to monitor"):
        Monitor(nn.ReLU(), None, run_dir)
    assert not run_dir.exists()  # refused before any file
    model = nn.Sequential(nn.BatchNorm1d(4, affine=False), nn.Linear(4, 2))
    model.requires_grad_(False)
    with (
        caplog.at_level("WARNING", logger="trainrecord.monitor"),
        Monitor(model, None, run_dir, check_every=1) as monitor,
    ):
        for _ in range(2):
            model(torch.randn(8, 4)).sum()
            monitor.step()
    assert "no parameter that requires gradients (all frozen)" in caplog.text
    (said,) = events(read_run(run_dir), "no_gradients")
    assert said["message"].startswith("the model has no parameter that requires gradients")
