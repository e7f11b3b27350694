"""The optimizer replaced mid-run, and SAM (loops probe, session 11: B1, B3).

Before: the Monitor kept the optimizer it was given. A loop that replaced it by a new
object over the same parameters got a false certificate (the old optimizer's empty state
read: channels "cannot recover" that the new one's momentum moved one step later), repairs
that zeroed the discarded optimizer's state and left the real momentum, and, with a
GradScaler and ``unscale_``, every later gradient norm divided by the scale a second time.
Under SAM (a wrapper holding ``base_optimizer``, restoring ``p.data = old_p``) every
repair was undone: it zeroed SAM's ``old_p``, the parameter's own memory after the
restore, and never the base optimizer's momentum. Real training of the tiny CNN; each test
failed before its fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyCNN, batches, events, metrics, read_run
from trainrecord.arguments import ArgumentRefused
from trainrecord.monitor import Monitor

DEAD = [0, 1, 2]

REPAIR_AT_ONCE: dict[str, Any] = {
    "check_every": 2,
    "repair": True,
    "repair_patience": 1,
    "repair_min_values": 256,
    "silent_min_values": 256,
}
"""Repair a channel silent at one check over 256 values (the tests kill channels at a check)."""


def _kill(model: TinyCNN, state: Any = None) -> None:
    """bn2 channels 0-2: gamma 0, beta 0 (their ReLU outputs 0 for every input); with an
    optimizer ``state``, their momentum too."""
    with torch.no_grad():
        model.bn2.weight[DEAD] = 0.0
        model.bn2.bias[DEAD] = 0.0
    if state is not None:
        for p in (model.bn2.weight, model.bn2.bias):
            state[p]["momentum_buffer"][DEAD] = 0.0


def _sgd(model: TinyCNN, momentum: float = 0.0) -> torch.optim.SGD:
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=momentum)


def test_a_new_optimizers_momentum_refuses_the_certificate_the_old_one_allowed(
    run_dir: Path,
) -> None:
    """Plain SGD replaced at step 3 by SGD with momentum; bn2 channels zeroed at step 6.
    Before: certificate at step 6 ("the optimizer (SGD) state of these channels is zero",
    read from the plain SGD), and gamma moved at the next step."""
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = _sgd(model)
    gamma_after: list[float] = []
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        for step, (x, y) in enumerate(batches(8)):
            if step == 3:
                optimizer = _sgd(model, momentum=0.9)
            if step == 6:
                _kill(model)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
            if step == 6:
                gamma_after = model.bn2.weight[DEAD].tolist()
    assert any(g != 0.0 for g in gamma_after)  # what a certificate would have denied
    lines = read_run(run_dir)
    assert events(lines, "certificate") == []
    [refused] = events(lines, "certificate_refused")
    assert refused["step"] == 6 and "momentum_buffer" in refused["reason"]
    manifests = events(lines, "manifest")
    assert [m["step"] for m in manifests] == [0, 4]
    [note] = [n for n in manifests[1]["notes"] if n.startswith("optimizer: ")]
    assert note.startswith("optimizer: SGD since the check of step 4: in the step before it")
    assert not any(n.startswith("optimizer") for n in manifests[0]["notes"])
    assert lines[0]["optimizer"] == "SGD"  # run_start is history: the session began so


def test_a_repair_after_the_optimizer_was_replaced_resets_the_new_ones_state(
    run_dir: Path,
) -> None:
    """Adam replaced at step 3 by SGD with momentum; bn2 channels certified dead (their
    momentum zeroed) at step 6 and repaired. Before: optimizer_slices_reset 8 (Adam's
    exp_avg and exp_avg_sq, never used again) and the head's columns kept SGD's momentum."""
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer: torch.optim.Optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    momentum: dict[str, torch.Tensor] = {}
    with Monitor(model, optimizer, run_dir, check_every=2, repair=True) as monitor:
        for step, (x, y) in enumerate(batches(8)):
            if step == 3:
                optimizer = _sgd(model, momentum=0.9)
            if step == 6:
                _kill(model, optimizer.state)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            if step == 6:
                state = optimizer.state
                momentum = {
                    "head": state[model.head.weight]["momentum_buffer"][:, DEAD].clone(),
                    "conv2": state[model.conv2.weight]["momentum_buffer"][DEAD].clone(),
                }
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    [certificate] = events(lines, "certificate")
    assert certificate["step"] == 6 and certificate["channels"] == DEAD
    assert any("optimizer (SGD) state" in a for a in certificate["assumes"])
    [repair] = events(lines, "repair")
    assert repair["step"] == 6 and repair["channels"] == DEAD
    # SGD's momentum of conv2.weight, bn2.weight, bn2.bias and head.weight
    assert repair["optimizer_slices_reset"] == 4
    assert "head zeroed" in repair["method"]
    assert float(momentum["head"].abs().max()) == 0.0
    assert float(momentum["conv2"].abs().max()) == 0.0


@pytest.mark.parametrize("swap", [3, 4])
def test_gradient_norms_under_a_grad_scaler_stay_true_after_the_optimizer_is_replaced(
    run_dir: Path, swap: int
) -> None:
    """``scaler.unscale_(optimizer)`` before ``monitor.step``, the optimizer replaced at a
    step before a check (3) or at a check (4, the new one not seen stepping yet). Before:
    every row from the swap on divided by the scale (1024) a second time."""
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = _sgd(model, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    true: list[float] = []
    with Monitor(model, optimizer, run_dir, check_every=2, scaler=scaler) as monitor:
        for step, (x, y) in enumerate(batches(10)):
            if step == swap:
                optimizer = _sgd(model, momentum=0.9)
            loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            if step % 2 == 0:
                true.append(
                    float(torch.cat([p.grad.flatten() for p in model.head.parameters()]).norm())
                )
            monitor.step(loss)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    read_run(run_dir)
    recorded = [row["grad"]["head"] for row in metrics(run_dir)]
    assert recorded == pytest.approx(true, rel=1e-5)


def test_several_optimizers_replacing_one_stop_certificates_and_repairs_until_named(
    run_dir: Path,
) -> None:
    """Adam replaced at step 3 by two plain SGDs (the convolutions; the head): which state
    moves the channels is not known, so nothing is certified or repaired; after
    ``set_optimizer`` names the convolutions' SGD, the same channels are certified and
    repaired. Before: certified and repaired at once from Adam's state."""
    torch.manual_seed(0)
    model = TinyCNN()
    adam = torch.optim.Adam(model.parameters(), lr=1e-3)
    body = [p for n, p in model.named_parameters() if not n.startswith("head")]
    optimizers: list[torch.optim.Optimizer] = [adam]
    with Monitor(model, adam, run_dir, check_every=2, repair=True) as monitor:
        for step, (x, y) in enumerate(batches(12)):
            if step == 3:
                optimizers = [
                    torch.optim.SGD(body, lr=0.05),
                    torch.optim.SGD(model.head.parameters(), lr=0.05),
                ]
            if step == 6:
                _kill(model)
            if step == 9:
                with pytest.raises(ArgumentRefused, match="optimizer"):
                    monitor.set_optimizer("SGD")  # type: ignore[arg-type]
                monitor.set_optimizer(optimizers[0])
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            for optimizer in optimizers:
                optimizer.step()
                optimizer.zero_grad()
    lines = read_run(run_dir)
    [refused] = events(lines, "certificate_refused")
    assert refused["step"] == 6 and "is not known" in refused["reason"]
    assert "monitor.set_optimizer(optimizer)" in refused["reason"]
    [certificate] = events(lines, "certificate")
    assert certificate["step"] == 10 and certificate["channels"] == DEAD
    assert [r["step"] for r in events(lines, "repair")] == [10]
    manifests = events(lines, "manifest")
    assert [m["step"] for m in manifests] == [0, 4, 10]
    assert any(
        n.startswith("optimizer unknown since the check of step 4") for n in manifests[1]["notes"]
    )
    assert any(
        n.startswith(
            "optimizer: SGD since step 9, given with monitor.set_optimizer() (before: Adam)"
        )
        for n in manifests[2]["notes"]
    )


def test_another_optimizer_over_other_parameters_is_no_replacement(run_dir: Path) -> None:
    """Round-robin: the Monitor's SGD steps the convolutions at even steps, another SGD the
    head at odd ones (the steps right before each check): no manifest says the optimizer
    changed, and the step hook is installed only from the step before a check to it."""
    from torch.optim.optimizer import _global_optimizer_post_hooks

    torch.manual_seed(0)
    model = TinyCNN()
    body = [p for n, p in model.named_parameters() if not n.startswith("head")]
    main, head = torch.optim.SGD(body, lr=0.05), torch.optim.SGD(model.head.parameters(), lr=0.05)
    hooked: list[int] = []
    with Monitor(model, main, run_dir, check_every=4) as monitor:
        for step, (x, y) in enumerate(batches(12)):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            hooked.append(len(_global_optimizer_post_hooks))
            (main if step % 2 == 0 else head).step()
            main.zero_grad()
            head.zero_grad()
    assert hooked == [0, 0, 0, 1] * 3  # armed at the step before each check
    assert len(_global_optimizer_post_hooks) == 0
    manifests = events(read_run(run_dir), "manifest")
    assert len(manifests) == 1


class SAM(torch.optim.Optimizer):
    """Sharpness-aware minimisation as davda54/sam writes it: ``first_step`` saves
    ``old_p`` and climbs, ``second_step`` restores ``p.data = old_p`` and steps the base."""

    def __init__(self, params, base_optimizer, rho: float = 0.05, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params, dict(rho=rho, **kwargs))
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups
        self.defaults.update(self.base_optimizer.defaults)

    @torch.no_grad()
    def first_step(self) -> None:
        grads = [
            p.grad.norm(2) for g in self.param_groups for p in g["params"] if p.grad is not None
        ]
        norm = torch.norm(torch.stack(grads), 2)
        for group in self.param_groups:
            scale = group["rho"] / (norm + 1e-12)
            for p in group["params"]:
                if p.grad is not None:
                    self.state[p]["old_p"] = p.data.clone()
                    p.add_(p.grad * scale)
        self.zero_grad()

    @torch.no_grad()
    def second_step(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.data = self.state[p]["old_p"]
        self.base_optimizer.step()
        self.zero_grad()

    def step(self, closure=None):  # type: ignore[no-untyped-def, override]
        raise NotImplementedError


@pytest.mark.parametrize(("after", "repaired"), [("first backward", 4), ("second backward", 2)])
def test_a_repair_under_sam_stays_repaired(run_dir: Path, after: str, repaired: int) -> None:
    """bn2 channels zeroed with their momentum at step 2, repaired at that check (silent;
    not certifiable under SAM), ``monitor.step()`` after SAM's first or second backward
    (after the first, the window of the check of step 2 holds step 1's second forward
    pass, before the channels were zeroed: repaired at step 4).
    Before: gamma was 0 again after SAM's step (the repair zeroed SAM's old_p, which is
    the parameter's memory after the restore, or a copy the restore brought back), the
    base SGD's momentum on the head's columns was left, and the channels were repaired
    again at every check."""
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = SAM(model.parameters(), torch.optim.SGD, lr=0.05, momentum=0.9)
    base = optimizer.base_optimizer.state
    head = gamma = None
    with Monitor(model, optimizer, run_dir, **REPAIR_AT_ONCE) as monitor:
        for step, (x, y) in enumerate(batches(10)):
            if step == 2:
                _kill(model, base)
            F.cross_entropy(model(x), y).backward()
            if after == "first backward":
                monitor.step()
            optimizer.first_step()
            F.cross_entropy(model(x), y).backward()
            if after == "second backward":
                monitor.step()
            if step == repaired:
                head = base[model.head.weight]["momentum_buffer"][:, DEAD].clone()
            optimizer.second_step()
            if step == repaired:
                gamma = model.bn2.weight[DEAD].detach().clone()
    lines = read_run(run_dir)
    repairs = events(lines, "repair")
    assert [(r["step"], r["channels"]) for r in repairs] == [(repaired, DEAD)]
    assert head is not None and float(head.abs().max()) == 0.0  # the base SGD's, reset
    assert gamma is not None and bool((gamma - 1.0).abs().lt(0.01).all())  # repaired still
    assert metrics(run_dir)[-1]["stuck"]["conv2"] == [0, 0, 0, 0]
    if after == "second backward":  # SAM's old_p, restored by second_step, took the new values
        assert "copies of the weights in the optimizer state" in repairs[0]["method"]


@pytest.mark.parametrize(
    ("rho", "dead"), [(5.0, DEAD), (0.05, list(range(8)))], ids=["large ascent", "zero weight"]
)
def test_sams_old_p_is_a_copy_however_far_from_the_parameter(
    run_dir: Path, rho: float, dead: list[int]
) -> None:
    """``monitor.step()`` after SAM's second backward: the parameter is ``old_p`` plus the
    ascent step, and the repair must give ``old_p`` the new values. bn2 channels zeroed
    with their momentum at step 2 and repaired there: three channels under an ascent step
    (rho 5) larger than half the conv2 rows' norm, or all eight, so that bn2's whole weight
    is 0. Before: ``old_p`` was judged by its distance to the parameter (over half its
    norm, or a norm of 0: no copy), zeroed, and SAM's restore undid the repair without a
    word."""
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = SAM(model.parameters(), torch.optim.SGD, rho=rho, lr=0.05, momentum=0.9)
    base = optimizer.base_optimizer.state
    gamma = rows = None
    with Monitor(model, optimizer, run_dir, **REPAIR_AT_ONCE) as monitor:
        for step, (x, y) in enumerate(batches(4)):
            if step == 2:
                with torch.no_grad():
                    model.bn2.weight[dead] = 0.0
                    model.bn2.bias[dead] = 0.0
                for p in (model.bn2.weight, model.bn2.bias):
                    base[p]["momentum_buffer"][dead] = 0.0
            F.cross_entropy(model(x), y).backward()
            optimizer.first_step()
            F.cross_entropy(model(x), y).backward()
            monitor.step()
            optimizer.second_step()
            if step == 2:
                gamma = model.bn2.weight[dead].detach().clone()
                rows = float(model.conv2.weight[dead].detach().abs().sum())
    repairs = events(read_run(run_dir), "repair")
    assert [(r["step"], r["channels"]) for r in repairs] == [(2, dead)]
    assert "copies of the weights in the optimizer state" in repairs[0]["method"]
    assert gamma is not None and bool((gamma - 1.0).abs().lt(0.01).all())  # repaired still
    assert rows is not None and rows > 0.0


def test_an_optimizer_built_again_after_load_state_dict_with_assign_is_followed(
    run_dir: Path,
) -> None:
    """``load_state_dict(state, assign=True)`` puts new Parameters in the model, and the
    loop builds its optimizer again over them: the old one holds none of them, the new one
    none of the old one's. Before: the manifest note said nothing trains the model for the
    rest of the run, and certificates read the old optimizer's state."""
    import copy

    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = _sgd(model, momentum=0.9)
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        for step, (x, y) in enumerate(batches(10)):
            if step == 4:
                model.load_state_dict(copy.deepcopy(model.state_dict()), assign=True)
                optimizer = _sgd(model, momentum=0.9)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    manifests = events(read_run(run_dir), "manifest")
    notes = manifests[-1]["notes"]
    assert [n for n in notes if n.startswith("optimizer: SGD since the check of step")]
    assert not [n for n in notes if "none of the model's" in n]


@pytest.mark.parametrize("swap", [None, 3])
def test_zero_redundancy_optimizer_is_followed_and_its_shard_state_reset(
    tmp_path: Path, swap: int | None
) -> None:
    """torch's ZeroRedundancyOptimizer (one gloo process, world size 1) given to the
    Monitor, or replacing its SGD at step 3; bn2 channels zeroed with their momentum at
    step 6 and repaired (silent). ZeRO keeps its local optimizer, and that one's state, in
    ``.optim``. Before: the replacement was "optimizer unknown" (ZeRO and its local SGD
    both step, taken for two optimizers), so the repair was skipped; given from the start,
    the repair reset nothing (``optimizer_slices_reset`` 0) and the local SGD's momentum
    stayed on the repaired rows."""
    import torch.distributed as dist
    from torch.distributed.optim import ZeroRedundancyOptimizer

    def zero(model: TinyCNN) -> ZeroRedundancyOptimizer:
        return ZeroRedundancyOptimizer(
            model.parameters(), optimizer_class=torch.optim.SGD, lr=0.05, momentum=0.9
        )

    run_dir = tmp_path / "run"
    dist.init_process_group("gloo", rank=0, world_size=1, init_method=f"file://{tmp_path / 'init'}")
    try:
        torch.manual_seed(0)
        model = TinyCNN()
        optimizer: torch.optim.Optimizer = zero(model) if swap is None else _sgd(model, 0.9)
        left: float | None = None
        with Monitor(model, optimizer, run_dir, **REPAIR_AT_ONCE) as monitor:
            for step, (x, y) in enumerate(batches(10)):
                if step == swap:
                    optimizer = zero(model)
                if step == 6:
                    _kill(model, optimizer.optim.state)  # type: ignore[attr-defined]
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                monitor.step(loss)
                if step == 6:
                    local = optimizer.optim.state  # type: ignore[attr-defined]
                    left = float(local[model.conv2.weight]["momentum_buffer"][DEAD].abs().sum())
                optimizer.step()
                optimizer.zero_grad()
    finally:
        dist.destroy_process_group()
    lines = read_run(run_dir)
    repairs = events(lines, "repair")
    assert [(r["step"], r["channels"]) for r in repairs] == [(6, DEAD)]
    # the local SGD's momentum of conv2.weight, bn2.weight, bn2.bias and head.weight
    assert repairs[0]["optimizer_slices_reset"] == 4
    assert left == 0.0
    notes = [n for m in events(lines, "manifest") for n in m["notes"]]
    assert not [n for n in notes if n.startswith("optimizer unknown")]
    if swap is not None:
        assert [n for n in notes if n.startswith("optimizer: ZeroRedundancyOptimizer since")]


def test_a_frozen_phase_keeps_the_optimizer_of_the_frozen_parameters(run_dir: Path) -> None:
    """The Monitor follows the body's SGD; the head has an SGD of its own. Steps 4-7 freeze
    the body (``requires_grad_(False)``, its SGD not stepped) while the head trains; bn2
    channels zeroed with their momentum at step 12 and repaired. Before: the check of step
    6 adopted the head's SGD ("the optimizer was replaced") and a note said the body's SGD
    held parameters "replaced after it was built"; after unfreezing both stepped, so the
    Monitor never went back, and the repair left the body SGD's momentum on the repaired
    conv2 rows."""
    torch.manual_seed(0)
    model = TinyCNN()
    body = [p for n, p in model.named_parameters() if not n.startswith("head")]
    main = torch.optim.SGD(body, lr=0.05, momentum=0.9)
    head = torch.optim.SGD(model.head.parameters(), lr=0.05, momentum=0.9)
    left: float | None = None
    with Monitor(model, main, run_dir, **REPAIR_AT_ONCE) as monitor:
        for step, (x, y) in enumerate(batches(14)):
            frozen = 4 <= step < 8
            for p in body:
                p.requires_grad_(not frozen)
            if step == 12:
                _kill(model, main.state)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            if step == 12:
                left = float(main.state[model.conv2.weight]["momentum_buffer"][DEAD].abs().sum())
            if not frozen:
                main.step()
            head.step()
            main.zero_grad()
            head.zero_grad()
        assert monitor.optimizer is main
    lines = read_run(run_dir)
    notes = [n for m in events(lines, "manifest") for n in m["notes"]]
    assert not [n for n in notes if n.startswith("optimizer")]
    assert not [n for n in notes if "none of the model's" in n]
    repairs = events(lines, "repair")
    assert [(r["step"], r["channels"]) for r in repairs] == [(12, DEAD)]
    # the body SGD's momentum of conv2.weight, bn2.weight and bn2.bias
    assert repairs[0]["optimizer_slices_reset"] == 3
    assert left == 0.0
