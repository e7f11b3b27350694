"""Layers without a gradient at a check: which are ``no_gradient`` and which sat the check
step out (session 13).

``no_gradient`` means none or all zero. A layer whose module did not run in the check
step's forward pass may be a task head of round-robin multi-task training (it learns at
other steps: not judged) or a block left out of the forward pass for good (it stopped
learning: ``no_gradient``). Two gaps the rules had, each from real training:

- a false alarm: round-robin heads held by a container module whose forward runs at every
  step (``TaskHeads.forward(h, task)``), under ``zero_grad(set_to_none=False)``, at
  check_every a multiple of the task count: a head never seen run at a check while its
  holder ran was taken as run (the fallback for ``MultiheadAttention.out_proj``), so its
  zero gradient was ``no_gradient`` for the whole run;
- a missed alarm: a block bypassed after it had gradients (its flag flipped, or run under
  ``torch.no_grad()``), under ``set_to_none=False``: its gradient stays all zero while
  momentum or weight decay keep moving its parameters, which was read as trained between
  checks, and it was never alarmed.

The rules now count what reached each gradient since the step before the previous check
(its version counter, read at a check and at the step before it), and the tests below pin
the torch behaviour that rests on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from tests.monitor.conftest import events, read_run
from trainrecord.monitor import Monitor, channels

TASKS = 3


class TaskHeads(nn.Module):
    """One head per task, chosen by the forward pass: the container runs at every step,
    each head at its task's steps."""

    def __init__(self, tasks: int) -> None:
        super().__init__()
        for t in range(tasks):
            self.add_module(f"task{t}", nn.Linear(32, 4))

    def forward(self, h: torch.Tensor, task: int) -> torch.Tensor:
        """The scores of task ``task``."""
        head = self.get_submodule(f"task{task}")
        return head(h)


class MultiTask(nn.Module):
    """A trunk, a residual block (``use_block``: whether the forward pass runs it;
    ``block_no_grad``: run it under ``torch.no_grad()``) and the task heads."""

    def __init__(self, tasks: int = TASKS) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(20, 32), nn.ReLU())
        self.block = nn.Linear(32, 32)
        self.heads = TaskHeads(tasks)
        self.use_block = True
        self.block_no_grad = False

    def forward(self, x: torch.Tensor, task: int) -> torch.Tensor:
        """Task ``task``'s scores."""
        h = self.trunk(x)
        if self.use_block:
            if self.block_no_grad:  # (the trunk still gets its gradient)
                with torch.no_grad():
                    b = self.block(h)
            else:
                b = self.block(h)
            h = h + b
        return self.heads(h, task)


def _optimizer(kind: str, model: nn.Module) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    if kind == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9)
    return torch.optim.AdamW(params, lr=3e-3, weight_decay=0.01)


def _train(
    run_dir: Path,
    *,
    set_to_none: bool,
    check_every: int,
    optimizer: str = "sgd",
    tasks: int = TASKS,
    bypass_at: int | None = None,
    how: str = "flag",
    steps: int = 150,
    model: MultiTask | None = None,
    replace_grads: bool = False,
    give: str = "tensor",
) -> tuple[list[dict[str, Any]], MultiTask]:
    """Round-robin training of ``tasks`` heads (step k trains task k % tasks) on one trunk
    and block; at ``bypass_at`` the block is left out of the forward pass (``how``:
    ``flag``, a flag flipped; ``no_grad``, run under ``torch.no_grad()``), still attached,
    its parameters still requiring gradients. ``replace_grads``: after each backward the
    loop replaces every gradient by a new tensor (clamped to [-1, 1], out of place).
    ``give``: what step() is given, the loss ``tensor``, its ``item()`` or ``detach()``."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(512, 20, generator=g)
    y = (x @ torch.randn(20, 4, generator=g)).argmax(-1)
    model = model or MultiTask(tasks)
    opt = _optimizer(optimizer, model)
    with Monitor(model, opt, run_dir, check_every=check_every, log=False) as monitor:
        for step in range(steps):
            if step == bypass_at:
                if how == "flag":
                    model.use_block = False
                else:
                    model.block_no_grad = True
            i = slice(step * 32 % 512, step * 32 % 512 + 32)
            loss = F.cross_entropy(model(x[i], step % tasks), y[i])
            loss.backward()
            if replace_grads:
                for p in model.parameters():
                    if p.grad is not None:
                        p.grad = p.grad.clamp(-1.0, 1.0)
            monitor.step({"tensor": loss, "item": loss.item(), "detach": loss.detach()}[give])
            opt.step()
            opt.zero_grad(set_to_none=set_to_none)
    return read_run(run_dir), model


def _alarms(lines: list[dict[str, Any]]) -> list[tuple[int, str, str, float | None]]:
    return [(a["step"], a["layer"], a["diagnosis"], a["grad_norm"]) for a in events(lines, "alarm")]


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
@pytest.mark.parametrize("check_every", [3, 6])
def test_round_robin_heads_in_a_container_that_runs_every_step_are_not_no_gradient(
    run_dir: Path, check_every: int, optimizer: str
) -> None:
    """Gap 1: every check lands on task 0's turn, so heads.task1 and heads.task2 never run
    at a check, while their holder, TaskHeads, does at every step. Under
    ``set_to_none=False`` their gradients are all zero at the checks; they got one at
    their own steps between. Before: ``no_gradient`` for both at the first judged check,
    held for the whole run."""
    lines, _ = _train(run_dir, set_to_none=False, check_every=check_every, optimizer=optimizer)
    assert _alarms(lines) == []
    assert events(lines, "alarm_cleared") == []


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
@pytest.mark.parametrize("set_to_none", [False, True])
@pytest.mark.parametrize("how", ["flag", "no_grad"])
def test_a_block_left_out_of_the_forward_pass_is_no_gradient(
    run_dir: Path, set_to_none: bool, optimizer: str, how: str
) -> None:
    """Gap 2: the block trains for 60 steps, then the forward pass leaves it out (a flag
    flipped, or run under ``torch.no_grad()``) while it stays attached and trainable. It
    stopped learning: ``no_gradient`` at the first check whose window (the steps since
    the previous check's) gave it no gradient, step 63; its gradient is None after
    ``zero_grad()``, 0 after ``zero_grad(set_to_none=False)``. Before, under
    ``set_to_none=False``, SGD's momentum and AdamW's moments and weight decay kept its
    parameters moving, which was read as trained between checks: no alarm ever. The
    round-robin heads in their container (gap 1) stay quiet."""
    lines, model = _train(
        run_dir, set_to_none=set_to_none, check_every=3, optimizer=optimizer, bypass_at=60, how=how
    )
    norm = None if set_to_none else 0.0
    assert (63, "block", "no_gradient", norm) in _alarms(lines)
    assert _alarms(lines) == [(63, "block", "no_gradient", norm)]
    assert events(lines, "alarm_cleared") == []
    assert model.block.weight.requires_grad


def test_the_bypassed_blocks_parameters_keep_moving_under_set_to_none_false(
    run_dir: Path,
) -> None:
    """Why moving parameters are no evidence of learning under ``set_to_none=False``:
    after the bypass SGD's momentum moves the block's weight at every step (less and less),
    with a gradient that stays exactly zero."""
    torch.manual_seed(0)
    model = MultiTask()
    opt = _optimizer("sgd", model)
    x, y = torch.randn(32, 20), torch.randint(0, 4, (32,))
    for step in range(6):
        model.use_block = step < 3
        F.cross_entropy(model(x, step % TASKS), y).backward()
        before = model.block.weight.detach().clone()
        opt.step()
        if step >= 3:
            grad = model.block.weight.grad
            assert grad is not None and not bool(grad.any())
            assert not torch.equal(before, model.block.weight)
        opt.zero_grad(set_to_none=False)


def test_round_robin_heads_still_not_judged_at_check_every_2(run_dir: Path) -> None:
    """At check_every=2 every head runs at one check in three and sits out the others; each
    got a gradient at one of the steps since the previous check's (its own, or the previous
    check's). No alarm under either ``set_to_none``."""
    for set_to_none in (False, True):
        lines, _ = _train(run_dir / str(set_to_none), set_to_none=set_to_none, check_every=2)
        assert _alarms(lines) == [], set_to_none


@pytest.mark.parametrize("check_every", [3, 6])
def test_round_robin_heads_whose_gradients_the_loop_replaces_are_not_no_gradient(
    run_dir: Path, check_every: int
) -> None:
    """A loop that replaces every gradient after backward (``p.grad = p.grad.clamp(-1,
    1)``), under ``zero_grad(set_to_none=False)``: a head the check step did not choose has
    an all-zero gradient tensor made at that step, not by its backward. It was taken as
    reached at the check step and nowhere else in the window: heads task1 and task2, which
    no check step at a multiple of 3 trains, were ``no_gradient`` from the first judged
    check (15, 30) for the whole run. The loss's graph reaches neither: they sat out, as
    when their gradients cannot be counted. Under ``zero_grad()`` a block left out of the
    forward pass is still ``no_gradient`` at the next check."""
    lines, _ = _train(run_dir, set_to_none=False, check_every=check_every, replace_grads=True)
    assert _alarms(lines) == []
    lines, _ = _train(
        run_dir.parent / "bypassed",
        set_to_none=True,
        check_every=check_every,
        replace_grads=True,
        bypass_at=90,
    )
    assert _alarms(lines) == [(90 + check_every, "block", "no_gradient", None)]


@pytest.mark.parametrize("give", ["item", "detach"])
def test_replaced_gradients_of_heads_when_step_is_given_no_loss_graph(
    run_dir: Path, give: str
) -> None:
    """As above, with step() given ``loss.item()`` or ``loss.detach()``: no graph to walk,
    and heads task1 and task2 were ``no_gradient`` from the first judged check (15) for
    the whole run, as before 2470d23. The graphs of the check step's forward passes (the
    model's outputs, which the backward reached) now tell the same: they sat out. The
    block left out of the forward pass is still ``no_gradient`` at the next check."""
    lines, _ = _train(run_dir, set_to_none=False, check_every=3, replace_grads=True, give=give)
    assert _alarms(lines) == []
    lines, _ = _train(
        run_dir.parent / "bypassed",
        set_to_none=True,
        check_every=3,
        replace_grads=True,
        bypass_at=90,
        give=give,
    )
    assert _alarms(lines) == [(93, "block", "no_gradient", None)]


class Attention(nn.Module):
    """Self-attention whose output is scaled by a fixed ``gate`` (0: an all-zero gradient
    reaches the attention) on a residual (``detach``: its output detached), and a head."""

    def __init__(self, gate: float) -> None:
        super().__init__()
        self.embed = nn.Linear(20, 8)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.head = nn.Linear(8, 4)
        self.register_buffer("gate", torch.tensor(gate))
        self.detach = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores of a sequence of 5 positions."""
        h = self.embed(x)
        a = self.attn(h, h, h, need_weights=False)[0]
        if self.detach:
            a = a.detach()
        return self.head((h + self.gate * a).mean(1))


@pytest.mark.parametrize("set_to_none", [False, True])
@pytest.mark.parametrize(("gate", "detach_at"), [(0.0, None), (1.0, 30)])
def test_out_proj_with_an_all_zero_gradient_is_no_gradient(
    run_dir: Path, set_to_none: bool, gate: float, detach_at: int | None
) -> None:
    """``MultiheadAttention`` uses ``out_proj``'s weight directly, never calling it: its
    module never runs at a check. With the attention's output gated by 0 (an all-zero
    gradient reaches out_proj at every step) or detached from step 30 on (none reaches it
    any more), out_proj is ``no_gradient`` with the attention's own in_proj (layer
    ``attn``), under either ``set_to_none``. With the gate at 1 nothing is alarmed."""
    lines = _attention_run(run_dir, Attention(gate), set_to_none, detach_at)
    layers = {(a["layer"], a["diagnosis"]) for a in events(lines, "alarm")}
    assert layers == {("attn", "no_gradient"), ("attn.out_proj", "no_gradient")}, layers

    healthy = _attention_run(run_dir.parent / "healthy", Attention(1.0), set_to_none)
    assert events(healthy, "alarm") == []


def _attention_run(
    run_dir: Path, model: Attention, set_to_none: bool, detach_at: int | None = None
) -> list[dict[str, Any]]:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(256, 5, 20, generator=g)
    y = (x.mean(1) @ torch.randn(20, 4, generator=g)).argmax(-1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(model, opt, run_dir, check_every=3, log=False) as monitor:
        for step in range(60):
            model.detach = detach_at is not None and step >= detach_at
            i = slice(step * 16 % 256, step * 16 % 256 + 16)
            loss = F.cross_entropy(model(x[i]), y[i])
            loss.backward()
            monitor.step(loss)
            opt.step()
            opt.zero_grad(set_to_none=set_to_none)
    return read_run(run_dir)


@pytest.mark.parametrize("set_to_none", [False, True])
def test_a_block_run_under_no_grad_on_purpose_is_no_gradient_until_frozen(
    run_dir: Path, set_to_none: bool
) -> None:
    """A block run under ``torch.no_grad()`` from the start (a fixed feature map, a teacher)
    whose parameters still require gradients gets none: ``no_gradient`` (grad_norm null:
    no gradient was ever made for it), as the docs say; frozen with
    ``requires_grad_(False)`` it is no layer, and nothing is alarmed."""
    model = MultiTask()
    model.block_no_grad = True
    lines, _ = _train(run_dir, set_to_none=set_to_none, check_every=3, steps=30, model=model)
    assert _alarms(lines) == [(15, "block", "no_gradient", None)]  # the first judged check

    frozen = MultiTask()
    frozen.block_no_grad = True
    frozen.block.requires_grad_(False)
    lines, _ = _train(
        run_dir.parent / "frozen", set_to_none=set_to_none, check_every=3, steps=30, model=frozen
    )
    assert _alarms(lines) == []


# -- the torch behaviour the rules rest on ---------------------------------------------------


@pytest.mark.parametrize("foreach", [False, True])
def test_torch_moves_a_gradients_version_once_per_in_place_change(foreach: bool) -> None:
    """Pins what the Monitor reads: under ``set_to_none=False`` a gradient stays the same
    tensor, and its version counter moves by one at each zero_grad (the optimizer's, either
    implementation, and the module's), each backward that reaches the parameter (an
    all-zero gradient too), and each clip_grad_norm_; not at optimizer.step(), and not at a
    backward that does not reach it."""
    torch.manual_seed(0)
    layer, other = nn.Linear(3, 2), nn.Linear(3, 2)
    params = [*layer.parameters(), *other.parameters()]
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=foreach)
    (layer(torch.randn(4, 3)).sum() + other(torch.randn(4, 3)).sum()).backward()
    grad = layer.weight.grad
    assert grad is not None

    def moved(action: Any) -> int:
        before = grad._version
        action()
        assert layer.weight.grad is grad  # the same tensor throughout
        return grad._version - before

    assert moved(lambda: opt.zero_grad(set_to_none=False)) == 1
    assert moved(lambda: layer.zero_grad(set_to_none=False)) == 1
    assert moved(lambda: layer(torch.randn(4, 3)).sum().backward()) == 1
    assert moved(lambda: (0 * layer(torch.randn(4, 3))).sum().backward()) == 1  # all zero
    assert moved(lambda: other(torch.randn(4, 3)).sum().backward()) == 0
    assert moved(lambda: torch.nn.utils.clip_grad_norm_(params, 1e-3)) == 1
    assert moved(opt.step) == 0


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_torch_replaces_the_gradient_under_create_graph_and_shares_a_views_version() -> None:
    """The cases the Monitor does not count and falls back on its older rule for: a backward
    with ``create_graph=True`` makes a new gradient tensor (so a gradient's identity is
    checked), and a view (a DDP bucket view) shares its base's version counter (what
    reaches the other parameters of its bucket moves it too)."""
    layer = nn.Linear(3, 2)
    layer(torch.randn(4, 3)).sum().backward()
    grad = layer.weight.grad
    layer(torch.randn(4, 3)).sum().backward(create_graph=True)
    assert layer.weight.grad is not grad
    layer.zero_grad()  # (the reference cycle create_graph makes)
    base = torch.zeros(10)
    view = base[:4]
    assert view._is_view() and not base._is_view()
    before = view._version
    base[6:].add_(1.0)
    assert view._version == before + 1


class Unrolled(nn.Module):
    """An RNN cell unrolled by hand over the sequence, returning its output at each step as
    a list (a decoder's per-step logits): the graph of each output holds every step before
    it."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.RNNCell(8, 16)
        self.head = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        h = torch.zeros(x.shape[1], 16)
        outs = []
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
            outs.append(self.head(h))
        return outs


def test_walking_the_graphs_of_many_outputs_costs_one_walk(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe walks the graphs of a forward pass's outputs (a loop replacing gradients,
    step() given ``loss.item()``) once for all of them, each node once. Before, each output's
    graph was walked from scratch: an unrolled RNN returning its 800 per-step outputs as a
    list took a walk of 1 + 2 + ... + 800 steps at every check step, about 15 times the step
    itself (measured at 600 outputs: 0.77 s a check step against 0.05 s without the Monitor
    and 0.09 s with one walk). Counted here, not timed: the real walk, wrapped to count its
    walks and the autograd nodes it reaches."""
    walks: list[int] = []
    real = channels.graph_leaves

    def counted_walk(*nodes: Any) -> Any:
        walks.append(len(nodes))
        return real(*nodes)

    monkeypatch.setattr(channels, "graph_leaves", counted_walk)
    torch.manual_seed(0)
    model = Unrolled()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(800, 4, 8)

    def one_step(monitor: Monitor) -> None:
        loss = torch.stack(model(x)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            assert p.grad is not None
            p.grad = p.grad.clamp(-1.0, 1.0)  # (made by the loop: the next checks walk)
        monitor.step(loss.item())
        opt.step()

    with Monitor(model, opt, run_dir, check_every=1, log=False) as monitor:
        one_step(monitor)  # the first check: it saw the loop's gradients
        walks.clear()
        for _ in range(3):
            one_step(monitor)
    # one walk a forward pass, from all 800 outputs at once (before: 800 walks of one each)
    assert walks == [800, 800, 800], walks[:10]
    assert events(read_run(run_dir), "alarm") == []
