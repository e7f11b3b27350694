"""SAM and repair (loops probe, session 11: B3).

Under SAM (a wrapper holding ``base_optimizer``, restoring ``p.data = old_p``) every
repair was undone: it zeroed SAM's ``old_p``, the parameter's own memory after the
restore, and never the base optimizer's momentum. Real training of the tiny CNN; each test
failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyCNN, batches, events, metrics, read_run
from trainrecord.monitor import Monitor

DEAD = [0, 1, 2]


def _kill(model: TinyCNN) -> None:
    """bn2 channels 0-2: gamma 0, beta 0 (their ReLU outputs 0 for every input)."""
    with torch.no_grad():
        model.bn2.weight[DEAD] = 0.0
        model.bn2.bias[DEAD] = 0.0


def _sgd(model: TinyCNN, momentum: float = 0.0) -> torch.optim.SGD:
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=momentum)


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
    with Monitor(
        model,
        optimizer,
        run_dir,
        check_every=2,
        repair=True,
        repair_patience=1,
        repair_min_values=256,
        silent_min_values=256,
    ) as monitor:
        for step, (x, y) in enumerate(batches(10)):
            if step == 2:
                _kill(model)
                for p in (model.bn2.weight, model.bn2.bias):
                    base[p]["momentum_buffer"][DEAD] = 0.0
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
