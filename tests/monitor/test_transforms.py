"""Models run under torch.func transforms (``vmap`` + ``functional_call`` ensembles,
per-sample gradients): the Monitor's hooks leave the transform's wrapped tensors alone (they
must not escape it: torch raised an internal assert at the first check, ending training),
and it says what is wrong when the parameters trained are not the model's own."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torch.func import functional_call, grad, stack_module_state, vmap
from torch.nn import functional as F

from tests.monitor.conftest import events, metrics, read_run
from trainrecord.monitor import Monitor


def test_a_vmap_ensemble_trains_on_and_no_gradients_names_the_transform(run_dir: Path) -> None:
    torch.manual_seed(0)
    models = [nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)) for _ in range(3)]
    params, buffers = stack_module_state(models)  # type: ignore[arg-type]
    base = models[0]

    def member(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], x: torch.Tensor):
        return functional_call(base, (p, b), (x,))

    optimizer = torch.optim.SGD(params.values(), lr=0.1)
    x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
    with Monitor(base, optimizer, run_dir, check_every=2, log=False) as monitor:
        for _ in range(6):
            out = vmap(member, in_dims=(0, 0, None))(params, buffers, x)
            loss = F.cross_entropy(out.reshape(-1, 2), y.repeat(3))
            loss.backward()
            monitor.step(loss)  # raised "INTERNAL ASSERT FAILED" at step 0 before
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    assert "error" not in lines[-1] and lines[-1]["steps"] == 6
    (said,) = events(lines, "no_gradients")
    assert "torch.func transform" in said["message"]
    assert lines[-1]["counts"]["checks_without_gradients"] == 3


def test_per_sample_gradients_under_vmap_and_grad_are_measured_as_set(run_dir: Path) -> None:
    # Per-sample gradients (as differential privacy computes them), clipped, averaged and
    # written into .grad: the hooks skip the transformed passes, the norms are those set.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    names = [n for n, _ in model.named_parameters()]

    def sample_loss(p: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor):
        return F.cross_entropy(functional_call(model, p, (x[None],)), y[None])

    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    with Monitor(model, optimizer, run_dir, check_every=1, log=False) as monitor:
        for _ in range(3):
            params = {n: p.detach() for n, p in model.named_parameters()}
            per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))(params, x, y)
            for name, p in zip(names, model.parameters(), strict=True):
                p.grad = per_sample[name].clamp(-1, 1).mean(0)
            monitor.step(F.cross_entropy(model(x), y).detach())
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    assert events(lines, "no_gradients") == []
    rows = metrics(run_dir)
    assert len(rows) == 3 and all(v is not None and v > 0 for v in rows[0]["grad"].values())
