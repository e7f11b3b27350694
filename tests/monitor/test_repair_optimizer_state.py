"""A repair resets the optimizer state of the channels it mends, whatever the optimizer keeps
(session 12: Adafactor, Lookahead, no optimizer given).

Before: Adafactor's factored second moments (``row_var``, ``col_var``: not shaped like the
parameter) were never reset, so a repaired unit kept the dead one's moment; a Lookahead
holding ``optimizer`` and slow weights of its own was looked through as a framework's
pass-through wrapper, and a certificate was written under the inner SGD's rules while the
Lookahead pulled the "dead" parameters back to their slow weights; and a repairing
``Monitor(model, None, repair=True)`` repaired with no optimizer state reset at all while
Adam trained the model. Real training of the tiny models; each test failed before its fix.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyCNN, TinyMLP, batches, events, metrics, read_run, train
from trainrecord.monitor import Monitor

SILENT_AFTER_TWO_CHECKS: dict[str, Any] = {
    "check_every": 2,
    "repair": True,
    "repair_patience": 2,
    "repair_min_values": 64,
    "silent_min_values": 64,
}
"""A unit is repaired once silent at two checks in a row of 32 samples each."""


State = dict[torch.Tensor, dict[str, torch.Tensor]]


def _state(optimizer: Any) -> State:
    """A copy of every tensor of ``optimizer``'s state, by parameter."""
    return {
        p: {k: v.clone() for k, v in s.items() if isinstance(v, torch.Tensor)}
        for p, s in optimizer.state.items()
    }


def _run_until_repair(
    model: torch.nn.Module, optimizer: Any, run_dir: Path, kill: Any, given: Any = "same"
) -> tuple[State, State, list[float]]:
    """Train 6 healthy steps, ``kill()`` channels, train on until the first repair, then 30
    steps more. Returns the optimizer's state just before and just after the repair's
    ``monitor.step()``, and the losses of the 30 steps. ``given``: the optimizer the
    Monitor is given (default: the one training)."""
    monitor_optimizer = optimizer if given == "same" else given
    with Monitor(model, monitor_optimizer, run_dir, **SILENT_AFTER_TWO_CHECKS) as monitor:
        train(model, optimizer, monitor, 6)
        kill()
        for x, y in batches(20, seed=1):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            before = _state(optimizer)
            monitor.step(loss.detach())
            after = _state(optimizer)
            optimizer.step()
            optimizer.zero_grad()
            if _repaired(run_dir):
                break
        else:
            raise AssertionError("no repair")
        losses = train(model, optimizer, monitor, 30, seed=2)
    return before, after, losses


def _repaired(run_dir: Path) -> bool:
    return '"event":"repair"' in (run_dir / "diary.jsonl").read_text()


def _reset_only(now: torch.Tensor, then: torch.Tensor, dim: int, index: list[int]) -> None:
    """``now`` is ``then`` with the slices ``index`` along ``dim`` zeroed, and those slices
    were not zero before (else the test would show nothing)."""
    at = torch.tensor(index)
    assert bool(then.index_select(dim, at).ne(0).any()), "the slices were zero already"
    expected = then.clone().index_fill_(dim, at, 0.0)
    torch.testing.assert_close(now, expected, rtol=0, atol=0)


def test_adafactor_factors_of_repaired_linear_units_are_reset(run_dir: Path) -> None:
    """fc1 units 0-3 die after 6 steps (bias -100), their row_var rows still holding the
    moment of before. The repair resets fc1's row_var rows and fc1.bias's variance entries
    and fc2's col_var columns (the units' outgoing weights); fc1's col_var and fc2's
    row_var are means over every row (column), shared with the units not repaired: kept,
    and the event names them. Before: only the bias's variance was reset (count 1)."""
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.Adafactor(model.parameters(), lr=0.01)
    dead = [0, 1, 2, 3]

    def kill() -> None:
        with torch.no_grad():
            model.fc1.bias[dead] = -100.0

    before, after, losses = _run_until_repair(model, optimizer, run_dir, kill)
    w1, b1, w2 = model.fc1.weight, model.fc1.bias, model.fc2.weight
    _reset_only(after[w1]["row_var"], before[w1]["row_var"], 0, dead)
    _reset_only(after[b1]["variance"], before[b1]["variance"], 0, dead)
    _reset_only(after[w2]["col_var"], before[w2]["col_var"], 1, dead)
    assert torch.equal(after[w1]["col_var"], before[w1]["col_var"])  # shared: kept
    assert torch.equal(after[w2]["row_var"], before[w2]["row_var"])
    [repair] = events(read_run(run_dir), "repair")
    assert repair["layer"] == "fc1" and repair["channels"] == dead
    assert repair["optimizer_slices_reset"] == 3
    assert "kept as they were (col_var of fc1 weight, row_var of fc2 weight)" in repair["method"]
    assert "laid out unlike" not in repair["method"]
    # the network trains on: the mended units fire and their outgoing weights learn
    assert sum(losses[-5:]) < sum(losses[:5])
    assert (w2[:, dead] != 0).all()
    assert metrics(run_dir)[-1]["stuck"]["fc1"] == [0, 0, 0, 0]


def test_adafactor_factors_of_repaired_conv_channels_are_reset(run_dir: Path) -> None:
    """conv2 channels 0-3 silenced after 6 steps (bn2 gamma 0, beta -0.1; not certified:
    Adafactor is not a known optimizer). Adafactor factors a Conv weight over its last two
    dimensions (the kernel's): row_var (8, 4, 3, 1) and col_var (8, 4, 1, 3) both keep the
    output-channel axis, so both have the channels' slices reset; the head's col_var
    (1, 8) has the channels' columns reset and its row_var (4, 1) is kept."""
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.Adafactor(model.parameters(), lr=0.01)
    dead = [0, 1, 2, 3]

    def kill() -> None:
        with torch.no_grad():
            model.bn2.weight[dead] = 0.0
            model.bn2.bias[dead] = -0.1

    before, after, losses = _run_until_repair(model, optimizer, run_dir, kill)
    conv, gamma, beta, head = (
        model.conv2.weight,
        model.bn2.weight,
        model.bn2.bias,
        model.head.weight,
    )
    assert before[conv]["row_var"].shape == (8, 4, 3, 1)
    _reset_only(after[conv]["row_var"], before[conv]["row_var"], 0, dead)
    _reset_only(after[conv]["col_var"], before[conv]["col_var"], 0, dead)
    _reset_only(after[head]["col_var"], before[head]["col_var"], 1, dead)
    for p in (gamma, beta):
        assert torch.equal(after[p]["variance"][dead], torch.zeros(4))
    assert torch.equal(after[head]["row_var"], before[head]["row_var"])
    [repair] = events(read_run(run_dir), "repair")
    assert repair["layer"] == "conv2" and repair["channels"] == dead
    # conv2 row_var and col_var, bn2 weight and bias variance, head col_var
    assert repair["optimizer_slices_reset"] == 5
    assert "kept as they were (row_var of head weight)" in repair["method"]
    assert sum(losses[-5:]) < sum(losses[:5])
    assert (head[:, dead] != 0).all()


class Lookahead(torch.optim.Optimizer):
    """torch_optimizer's Lookahead (not installed here), as it is: it holds the inner
    optimizer in ``optimizer`` and the slow weights in a ``state`` of its own; every ``k``
    steps, ``slow += alpha * (fast - slow)`` and ``fast = slow``."""

    def __init__(self, optimizer: torch.optim.Optimizer, k: int = 5, alpha: float = 0.5) -> None:
        self.optimizer = optimizer
        self.k, self.alpha = k, alpha
        self.param_groups = optimizer.param_groups
        self.fast_state = optimizer.state
        self.state: dict[Any, Any] = defaultdict(dict)
        for group in self.param_groups:
            group["counter"] = 0

    def update(self, group: dict[str, Any]) -> None:
        for fast in group["params"]:
            state = self.state[fast]
            if "slow_param" not in state:
                state["slow_param"] = fast.data.clone()
            slow = state["slow_param"]
            slow += (fast.data - slow) * self.alpha
            fast.data.copy_(slow)

    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        loss = self.optimizer.step(closure)
        for group in self.param_groups:
            if group["counter"] == 0:
                self.update(group)
            group["counter"] += 1
            if group["counter"] >= self.k:
                group["counter"] = 0
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none)


class ListLookahead(torch.optim.Optimizer):
    """The other common Lookahead (lonePatient's): the inner optimizer in ``optimizer``, its
    ``state`` the inner one's, and the slow weights in a list beside it."""

    def __init__(self, optimizer: torch.optim.Optimizer, k: int = 5, alpha: float = 0.5) -> None:
        self.optimizer = optimizer
        self.k, self.alpha, self.counter = k, alpha, 0
        self.param_groups = optimizer.param_groups
        self.state = optimizer.state
        self.slow_weights = [[p.detach().clone() for p in g["params"]] for g in self.param_groups]

    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        loss = self.optimizer.step(closure)
        self.counter += 1
        if self.counter % self.k == 0:
            for group, slows in zip(self.param_groups, self.slow_weights, strict=True):
                for fast, slow in zip(group["params"], slows, strict=True):
                    slow += (fast.data - slow) * self.alpha
                    fast.data.copy_(slow)
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none)


@pytest.mark.parametrize("wrapper", [Lookahead, ListLookahead], ids=["state", "list"])
def test_a_lookahead_is_not_looked_through_and_certifies_nothing(
    run_dir: Path, wrapper: type[torch.optim.Optimizer]
) -> None:
    """bn2 channels 0-3 zeroed (gamma 0, beta -0.1, their momentum 0) in the middle of a
    Lookahead cycle, so their slow weights still hold gamma near 1. Before: the Lookahead
    was taken for a pass-through wrapper (it holds ``optimizer``), run_start named SGD and
    a certificate said the channels output 0 for every input from now on, under SGD's
    rules; two steps later the Lookahead's synchronisation set gamma halfway back to its
    slow weights and the channels fired again. Now the Lookahead is the optimizer: its
    update of a zero-gradient parameter is not known, so the certificate is refused."""
    torch.manual_seed(0)
    model = TinyCNN()
    inner = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    optimizer = wrapper(inner, k=5)
    dead = [0, 1, 2, 3]
    with Monitor(model, optimizer, run_dir, check_every=4) as monitor:
        train(model, optimizer, monitor, 8)  # a synchronisation at step 5; the check at 8
        with torch.no_grad():
            model.bn2.weight[dead] = 0.0
            model.bn2.bias[dead] = -0.1
            for p in (model.bn2.weight, model.bn2.bias):
                inner.state[p]["momentum_buffer"][dead] = 0.0
        train(model, optimizer, monitor, 4, seed=3)  # steps 8-11: the sync at step 10
    lines = read_run(run_dir)
    assert lines[0]["optimizer"] == wrapper.__name__
    assert events(lines, "certificate") == []
    [refused] = events(lines, "certificate_refused")
    assert f"optimizer {wrapper.__name__} is not one whose update" in refused["reason"]
    # what the refused certificate would have claimed is false: the channels came back
    assert (model.bn2.weight[dead] > 0.1).all()


def _slow(optimizer: Any, param: torch.Tensor) -> torch.Tensor:
    """The slow weights of ``param`` in either Lookahead: its own state, or its list."""
    if isinstance(optimizer, ListLookahead):
        [slow] = [
            s
            for group, slows in zip(optimizer.param_groups, optimizer.slow_weights, strict=True)
            for p, s in zip(group["params"], slows, strict=True)
            if p is param
        ]
        return slow
    return optimizer.state[param]["slow_param"]


@pytest.mark.parametrize("wrapper", [Lookahead, ListLookahead], ids=["state", "list"])
def test_a_repair_under_a_lookahead_gives_its_slow_weights_the_new_values(
    run_dir: Path, wrapper: type[torch.optim.Optimizer]
) -> None:
    """A repair under a Lookahead: the slow weights of the repaired channels (torch_optimizer's
    ``slow_param`` in the Lookahead's own state, or lonePatient's ``slow_weights`` list
    beside it, matched to the parameters by position in the param groups) take the new
    values and the inner SGD's momentum of them is zeroed, so the next synchronisation keeps
    the repair. Before (the list): its slow weights kept the dead values, and the first
    synchronisation after the repair pulled bn2's new gamma of 1 halfway back to 0."""
    torch.manual_seed(0)
    model = TinyCNN()
    inner = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    optimizer = wrapper(inner, k=3)
    dead = [0, 1, 2, 3]

    def kill() -> None:  # dead for good: the slow weights and the momentum too
        with torch.no_grad():
            for p, value in ((model.bn2.weight, 0.0), (model.bn2.bias, -0.1)):
                p[dead] = value
                _slow(optimizer, p)[dead] = value
                inner.state[p]["momentum_buffer"][dead] = 0.0

    gamma = model.bn2.weight
    slow_before: list[torch.Tensor] = []
    original_step = optimizer.step

    def step(closure: Any = None) -> Any:  # the slow gamma as each step found it
        if isinstance(optimizer, ListLookahead) or "slow_param" in optimizer.state[gamma]:
            slow_before.append(_slow(optimizer, gamma)[dead].clone())
        return original_step(closure)

    optimizer.step = step  # type: ignore[method-assign]
    _run_until_repair(model, optimizer, run_dir, kill)
    [repair] = events(read_run(run_dir), "repair")
    assert repair["layer"] == "conv2" and repair["channels"] == dead
    assert "copies of the weights in the optimizer state" in repair["method"]
    assert "left as they were" not in repair["method"]
    # the step right after the repair found the slow gamma at the new value 1, not 0
    assert any(
        torch.equal(then, torch.zeros(4)) and torch.equal(now, torch.ones(4))
        for then, now in itertools.pairwise(slow_before)
    )
    assert (gamma[dead] - 1.0).abs().max() < 0.2  # not pulled back to 0
    assert (_slow(optimizer, model.head.weight)[:, dead] != 0).all()  # the outgoing ones learn


def test_a_repair_names_a_lookahead_list_it_cannot_match_to_the_parameters(
    run_dir: Path,
) -> None:
    """A list of slow weights not laid out as the param groups (here in reverse order):
    which of its tensors is a repaired parameter's is not known, so the repair leaves the
    list as it is and its event's ``method`` names it (and the layers it was not updated
    for)."""
    torch.manual_seed(0)
    model = TinyMLP()
    inner = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    optimizer = ListLookahead(inner, k=1000)  # no synchronisation in the test
    optimizer.slow_weights = [list(reversed(optimizer.slow_weights[0]))]
    before = [s.clone() for s in optimizer.slow_weights[0]]

    def kill() -> None:
        with torch.no_grad():
            model.fc1.bias[[0, 1, 2, 3]] = -100.0

    _run_until_repair(model, optimizer, run_dir, kill)
    [repair] = events(read_run(run_dir), "repair")
    assert repair["layer"] == "fc1"
    assert (
        "3 tensors in lists an optimizer keeps beside its state, not one per parameter as "
        "its param groups hold them, whose part for these channels is not known, left as "
        "they were (slow_weights of fc1 weight, slow_weights of fc1 bias, slow_weights of "
        "fc2 weight)" in repair["method"]
    )
    for now, then in zip(optimizer.slow_weights[0], before, strict=True):
        assert torch.equal(now, then)


def test_a_repairing_monitor_given_no_optimizer_follows_the_one_stepping_the_model(
    run_dir: Path,
) -> None:
    """``Monitor(model, None, repair=True)`` while Adam trains the model. Before: the
    repair reset no optimizer state (count 0), leaving the dead units' Adam moments. Now
    the Monitor follows the optimizer it sees stepping the model's parameters (the check
    of step 2 adopts Adam and its manifest says so), and the repair resets Adam's moments
    of the units, as with the optimizer given."""
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    dead = [0, 1, 2, 3]

    def kill() -> None:
        with torch.no_grad():
            model.fc1.bias[dead] = -100.0

    before, after, _ = _run_until_repair(model, optimizer, run_dir, kill, given=None)
    w1 = model.fc1.weight
    for key in ("exp_avg", "exp_avg_sq"):
        _reset_only(after[w1][key], before[w1][key], 0, dead)
    lines = read_run(run_dir)
    [repair] = events(lines, "repair")
    assert repair["optimizer_slices_reset"] == 6  # both moments of fc1 weight, bias, fc2
    notes = [n for m in events(lines, "manifest") for n in m["notes"] if "optimizer:" in n]
    assert notes[0].startswith("optimizer: none given to the Monitor: repairs wait")
    assert notes[-1].startswith("optimizer: Adam since the check of step 2: none was given")
    assert lines[0]["optimizer"] is None


def test_a_repairing_monitor_without_optimizer_repairs_a_loop_updating_by_hand(
    run_dir: Path,
) -> None:
    """A loop updating the parameters itself (no torch optimizer, so no state to reset):
    once the parameters changed in the steps before two checks in a row with no optimizer
    stepping (the checks of steps 2 and 4), a manifest note says so, and repairs go ahead."""
    torch.manual_seed(0)
    model = TinyMLP()
    dead = [0, 1, 2, 3]
    with Monitor(model, None, run_dir, **SILENT_AFTER_TWO_CHECKS) as monitor:
        for step, (x, y) in enumerate(batches(14)):
            if step == 4:
                with torch.no_grad():
                    model.fc1.bias[dead] = -100.0
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss.detach())
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.05 * p.grad
                    p.grad = None
    lines = read_run(run_dir)
    [repair] = events(lines, "repair")
    assert repair["channels"] == dead and repair["optimizer_slices_reset"] == 0
    notes = [n for m in events(lines, "manifest") for n in m["notes"] if "optimizer:" in n]
    assert (
        "no torch optimizer stepped in the steps before the checks of steps 2 to 4 while the "
        "model's parameters changed in them" in notes[-1]
    )


def test_a_nan_guard_skipping_the_step_before_a_check_is_no_sign_of_updates_by_hand(
    run_dir: Path,
) -> None:
    """``Monitor(model, None, repair=True)`` while Adam trains the model, and the loop's own
    NaN guard skips ``optimizer.step()`` at step 1, right before the check of step 2. Before:
    that check concluded the loop updated the weights itself (no torch optimizer stepped in
    its window) and repaired the dead units at once resetting nothing (count 0), leaving
    Adam's moments of them. Now the parameters did not change in that window, so the
    Monitor waits: Adam steps before the check of step 4, is followed, and the repair
    there resets its moments (6 tensors, as with Adam given)."""
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with torch.no_grad():
        model.fc1.bias[[0, 1, 2, 3]] = -100.0  # dead from the start: due for repair at 2
    with Monitor(model, None, run_dir, **SILENT_AFTER_TWO_CHECKS) as monitor:
        for step, (x, y) in enumerate(batches(8)):
            loss = F.cross_entropy(model(x), y)
            if step == 1:
                loss = loss * float("nan")  # a bad batch
            loss.backward()
            monitor.step(loss.detach())
            if torch.isfinite(loss):  # the loop's NaN guard
                optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    [repair] = events(lines, "repair")
    assert (repair["step"], repair["optimizer_slices_reset"]) == (4, 6)
    notes = [n for m in events(lines, "manifest") for n in m["notes"] if "optimizer:" in n]
    assert not any("updated by the loop itself" in n for n in notes)
    assert notes[-1].startswith("optimizer: Adam since the check of step 4")
