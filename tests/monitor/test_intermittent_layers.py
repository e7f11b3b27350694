"""Intermittent layers and ``no_gradient``: task heads drawn at random.

Multi-task training that draws a task at random at each step (a head per task, one trunk)
leaves a head without a batch in some check windows (the ``check_every + 1`` steps since
the previous check's, both checks included): with 20 tasks, a head misses a window of 6
steps (``check_every=5``) 74 % of the time, one of 51 steps (the default 50) 7 % of the
time. Before, each such window was ``no_gradient`` for that head, cleared when a later
check step drew it: 198 alarms in 200 checks at ``check_every=5`` (every head alarmed
again and again), 40 in 60 checks at 50 (19 heads, 15 of them more than once), the same
under either ``zero_grad(set_to_none=...)``.

A layer that went unfed and was fed again is intermittent, as a ReLU unit reported
silent that fired again is sparse (``Monitor._silence``): it is ``no_gradient`` only after
more unfed checks in a row than twice its longest such run before, at most
``GradientAlarms.unfed_cap`` (32). So is a routed layer, one that sat a check step out (no
gradient then, one in its window) and learnt again, with a run of at least 1. A layer fed
at every window before that never sat a check step out (a block bypassed by a bug) is
still ``no_gradient`` at its first unfed check, and an intermittent head that is never
trained again is still reported, within the cap. The Monitor's first check, whose window
is step 0 alone, counts for neither.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from tests.monitor.conftest import events, metrics, read_run
from tests.monitor.test_gradless_layers import MultiTask
from tests.monitor.test_interrupted_check import Interrupter
from trainrecord.monitor import Monitor

TASKS = 20


def _draws(tasks: int, steps: int, seed: int = 2) -> list[int]:
    """The task of each step, drawn at random (uniformly, a seeded generator)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, tasks, (steps,), generator=g).tolist()


def _train(
    run_dir: Path,
    tasks: list[int],
    *,
    set_to_none: bool,
    check_every: int | None,
    bypass_at: int | None = None,
    before_step: Callable[[int, MultiTask, torch.optim.Optimizer], None] | None = None,
    interrupt: tuple[int, Interrupter] | None = None,
    warmup: int | None = None,
) -> tuple[list[dict[str, Any]], Monitor]:
    """Train a trunk, a residual block and one head per task (held by a container module
    that runs at every step: ``MultiTask``), step k on task ``tasks[k]``, with SGD and
    momentum; at ``bypass_at`` the block is left out of the forward pass for good, still
    attached and trainable. ``before_step``: called before each step's forward pass.
    ``interrupt``: (step, interrupter): Ctrl+C inside that step's check, caught by the
    loop, which calls ``step()`` again at once. ``warmup``: the Monitor's (default: its
    default, 5)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(512, 20, generator=g)
    y = (x @ torch.randn(20, 4, generator=g)).argmax(-1)
    model = MultiTask(max(tasks) + 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    every: dict[str, int] = {} if check_every is None else {"check_every": check_every}
    if warmup is not None:
        every["warmup"] = warmup
    with Monitor(model, opt, run_dir, log=False, **every) as monitor:  # type: ignore[arg-type]
        for step, task in enumerate(tasks):
            if before_step is not None:
                before_step(step, model, opt)
            model.use_block = bypass_at is None or step < bypass_at
            i = slice(step * 32 % 512, step * 32 % 512 + 32)
            loss = F.cross_entropy(model(x[i], task), y[i])
            loss.backward()
            if interrupt is not None and step == interrupt[0]:
                sys.setprofile(interrupt[1])
            try:
                monitor.step(loss)
            except KeyboardInterrupt:
                sys.setprofile(None)
                monitor.step(loss)  # the same step again
            finally:
                sys.setprofile(None)
            opt.step()
            opt.zero_grad(set_to_none=set_to_none)
    return read_run(run_dir), monitor


def _no_gradient(lines: list[dict[str, Any]], layer: str | None = None) -> list[tuple[int, str]]:
    """(step, layer) of each ``no_gradient`` alarm (of ``layer`` only, when given)."""
    return [
        (a["step"], a["layer"])
        for a in events(lines, "alarm")
        if a["diagnosis"] == "no_gradient" and layer in (None, a["layer"])
    ]


def _last_fed_check(tasks: list[int], task: int, check_every: int) -> int:
    """The last check whose window (the steps since the previous check's, both included)
    drew ``task``."""
    last = max(step for step, t in enumerate(tasks) if t == task)
    return (last // check_every + 1) * check_every


@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize(("check_every", "steps"), [(5, 1000), (None, 3000)])
def test_heads_drawn_at_random_are_not_no_gradient_at_each_window_they_miss(
    run_dir: Path, set_to_none: bool, check_every: int | None, steps: int
) -> None:
    """20 heads drawn at random, at check_every 5 (200 checks) and the default 50 (60).
    Before: a head without a batch in a window was ``no_gradient`` (grad_norm null, or 0
    under ``set_to_none=False``), cleared when a later check step drew it: 198 alarms at
    check_every=5, 40 at 50. Now a head that missed a window, or sat a check step out,
    and learnt again is intermittent, and is alarmed only after more than twice its
    longest gap (at least 3 unfed checks in a row): 18 alarms (17 heads, one of them
    twice) at check_every=5, none at 50. Before that, at 50, the head step 0 drew was
    alarmed at its first miss (step 1400): the first check's window, step 0 alone, had
    made every other head intermittent, and that one was taken for a block bypassed by a
    bug. The block, which runs at every step, is never alarmed; the record verifies."""
    lines, _ = _train(
        run_dir, _draws(TASKS, steps), set_to_none=set_to_none, check_every=check_every
    )
    alarms = _no_gradient(lines)
    assert {layer for _, layer in alarms} <= {f"heads.task{t}" for t in range(TASKS)}
    per_head = Counter(layer for _, layer in alarms)
    assert len(alarms) <= (TASKS if check_every else 0), per_head
    assert sum(n - 1 for n in per_head.values()) <= 1, per_head  # alarmed again: 1 head


@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize(
    ("check_every", "stop", "steps"), [(5, 600, 800), (10, 1200, 1600), (None, 1500, 1800)]
)
def test_a_head_drawn_at_random_that_is_never_trained_again_is_no_gradient_within_the_cap(
    run_dir: Path, set_to_none: bool, check_every: int | None, stop: int, steps: int
) -> None:
    """From step ``stop`` on task 0 is never drawn again (a task dropped by a bug): its head
    stopped learning. It is ``no_gradient`` once its run of unfed checks since the last
    window that drew it is more than twice its longest gap before (its longest gap and the
    checks needed: 16 and 32, the cap, at check_every=5; 8 and 17 at 10; 1 and 3 at 50),
    and within ``unfed_cap`` checks however long its gaps were. Its gradient is None, or 0
    under ``set_to_none=False``."""
    every = check_every or 50
    tasks = _draws(TASKS, steps)
    tasks[stop:] = [t if t else 1 + step % (TASKS - 1) for step, t in enumerate(tasks[stop:])]
    lines, monitor = _train(run_dir, tasks, set_to_none=set_to_none, check_every=check_every)
    last = _last_fed_check(tasks, 0, every)
    needed = monitor.alarms.unfed_needed("heads.task0")
    assert 1 < needed <= monitor.alarms.unfed_cap == 32  # intermittent; at most 32 checks
    alarm = [a for a in events(lines, "alarm") if a["layer"] == "heads.task0" and a["step"] > last]
    assert [(a["step"], a["diagnosis"]) for a in alarm] == [(last + needed * every, "no_gradient")]
    assert alarm[0]["grad_norm"] == (None if set_to_none else 0.0)
    cleared = [c for c in events(lines, "alarm_cleared") if c["layer"] == "heads.task0"]
    assert not [c for c in cleared if c["step"] > alarm[0]["step"]]  # (other heads' may)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_a_block_fed_at_every_window_is_still_no_gradient_at_its_first_unfed_check(
    run_dir: Path, set_to_none: bool
) -> None:
    """The heads drawn at random are intermittent; the block, run at every step, is not:
    left out of the forward pass from step 400 on, it is ``no_gradient`` at the first
    check whose window gave it nothing, 405 (check_every=5), as in
    ``test_gradless_layers``."""
    lines, _ = _train(
        run_dir, _draws(TASKS, 600), set_to_none=set_to_none, check_every=5, bypass_at=400
    )
    assert _no_gradient(lines, "block") == [(405, "block")]


@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize(("tasks", "check_every"), [(5, 2), (9, 3)])
def test_heads_in_turn_with_more_tasks_than_a_window_holds_are_not_no_gradient(
    run_dir: Path, set_to_none: bool, tasks: int, check_every: int
) -> None:
    """Round-robin heads with more tasks than ``check_every + 1``: each head misses some
    windows, and missed one in the warm-up. Before: 72 ``no_gradient`` alarms in 75
    checks (5 tasks at check_every=2), 68 in 67 (9 at 3), cleared and opened again.
    Now none: no gap is more than twice the longest before."""
    steps = 150 if tasks == 5 else 200
    lines, _ = _train(
        run_dir, [s % tasks for s in range(steps)], set_to_none=set_to_none, check_every=check_every
    )
    assert _no_gradient(lines) == []


@pytest.mark.parametrize("set_to_none", [True, False])
def test_the_first_checks_one_step_window_makes_no_head_intermittent(
    run_dir: Path, set_to_none: bool
) -> None:
    """Three heads in turn at check_every=3, except that step 0 trains task 1: every check
    step from 3 on trains task 0, and every window (steps 3k-3 to 3k) trains each head.
    The first check's window is step 0 alone (the steps since the Monitor began), which
    did not train task 0. From step 60 on task 0 is never trained again: ``no_gradient``
    at 63, the first check whose window gave it nothing. Before, check 0 counted as a
    window task 0 missed, so it was intermittent from the start and alarmed at 69 (three
    unfed checks in a row); tasks 1 and 2 sit every check step out and learn again:
    routed, intermittent either way."""
    tasks = [1] + [s % 3 if s < 60 or s % 3 else 1 for s in range(1, 80)]
    lines, monitor = _train(run_dir, tasks, set_to_none=set_to_none, check_every=3)
    assert _no_gradient(lines) == [(63, "heads.task0")]
    assert monitor.alarms.intermittent == {"heads.task1": 1, "heads.task2": 1}


@pytest.mark.parametrize("set_to_none", [True, False])
def test_with_no_warm_up_the_first_check_alarms_no_head_step_0_did_not_train(
    run_dir: Path, set_to_none: bool
) -> None:
    """``warmup=0``: checks are judged from the first. Three heads in turn at
    check_every=3: every window trains each head, and every check step task 0. The first
    check's window is step 0 alone, which counts for no run of unfed checks; but a layer
    without a gradient there was judged: heads 1 and 2 were ``no_gradient`` at step 0,
    for the whole run (the later check steps they sit out keep the alarm). Now a layer
    without a gradient at the first check is not judged there: a block run under
    ``torch.no_grad()`` from the start is ``no_gradient`` at the first whole window, 3."""

    def no_grad_block(step: int, model: MultiTask, opt: torch.optim.Optimizer) -> None:
        model.block_no_grad = True

    lines, _ = _train(
        run_dir,
        [s % 3 for s in range(60)],
        set_to_none=set_to_none,
        check_every=3,
        warmup=0,
        before_step=no_grad_block,
    )
    assert _no_gradient(lines) == [(3, "block")]


def _scheduled(gap: range, stop: int, steps: int) -> list[int]:
    """Tasks 0 and 1 in turn, but task 1 at the steps of ``gap`` and from ``stop`` on."""
    return [1 if step in gap or step >= stop else step % 2 for step in range(steps)]


def test_a_check_interrupted_and_run_again_counts_an_unfed_check_once(tmp_path: Path) -> None:
    """Task 0's head misses the window of check 22 (steps 20-22), its first miss:
    ``no_gradient``, cleared at 24, which trains it. It went unfed and was fed again: it
    needs 3 unfed checks in a row from then on. It is never trained after step 39: unfed at the
    checks 42, 44 and 46, ``no_gradient`` at 46. Ctrl+C anywhere in check 44, caught by
    the loop, which runs the check again: the run again counts check 44 once (the state
    the check changes is put back first), so the alarm is still at 46, and the record
    verifies and equals the uninterrupted one."""
    tasks = _scheduled(range(20, 23), 40, 60)
    control, _ = _train(tmp_path / "control", tasks, set_to_none=True, check_every=2)
    assert _no_gradient(control) == [(22, "heads.task0"), (46, "heads.task0")]
    point, landed = 0, 0
    while True:
        point += 29  # about 875 points in that check: every 29th
        interrupter = Interrupter(point, ("_check",))
        run_dir = tmp_path / str(point)
        lines, _ = _train(
            run_dir, tasks, set_to_none=True, check_every=2, interrupt=(44, interrupter)
        )
        if interrupter.landed is None:
            break
        landed += 1
        assert _no_gradient(lines) == _no_gradient(control), interrupter.landed
        assert metrics(run_dir) == metrics(tmp_path / "control"), interrupter.landed
    assert landed > 25  # the check was driven through


def test_a_replaced_head_starts_with_no_history_of_gaps(run_dir: Path) -> None:
    """Task 0's head is intermittent (it missed check 22's window, and was fed at the next
    ones): a real stop would need
    3 unfed checks. After check 40 the loop replaces it with a new head (added to the
    optimizer), which a bug leaves out of training: the new module has none of the old
    one's history, and is ``no_gradient`` at its first check, 42, not 46."""

    def replace(step: int, model: MultiTask, opt: torch.optim.Optimizer) -> None:
        if step == 41:
            model.heads.task0 = nn.Linear(32, 4)
            opt.add_param_group({"params": list(model.heads.task0.parameters())})

    lines, _ = _train(
        run_dir,
        _scheduled(range(20, 23), 40, 60),
        set_to_none=True,
        check_every=2,
        before_step=replace,
    )
    assert _no_gradient(lines) == [(22, "heads.task0"), (42, "heads.task0")]


class SwitchMoE(nn.Module):
    """An input layer, 6 experts and an output layer; each token goes to one expert, and
    each expert is called on the tokens routed to it, an empty batch when there is none
    (the loop of Switch Transformers' sparse MLP): the expert ran, a backward reached it,
    and its gradient is all zero."""

    def __init__(self, experts: int = 6) -> None:
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.experts = nn.ModuleList(nn.Linear(32, 32) for _ in range(experts))
        self.out = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor, route: torch.Tensor) -> torch.Tensor:
        """Class scores; ``route``: each token's expert."""
        h = F.relu(self.inp(x))
        mixed = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            mask = route == e
            mixed[mask] = expert(h[mask])
        return self.out(h + mixed)


def _train_moe(
    run_dir: Path, set_to_none: bool, dropped_from: int | None = None
) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """300 steps of 12 tokens, each routed at random (hash routing) to one of 6 experts,
    AdamW, check_every=5; from step ``dropped_from`` on no token goes to expert 5 (the
    router dropped it). Returns the diary and the tokens each expert got at each step."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3600, 16, generator=g)
    y = (x @ torch.randn(16, 4, generator=g)).argmax(-1)
    model = SwitchMoE()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = []
    with Monitor(model, opt, run_dir, log=False, check_every=5) as monitor:
        for step in range(300):
            dropped = dropped_from is not None and step >= dropped_from
            route = torch.randint(0, 5 if dropped else 6, (12,), generator=g)
            tokens.append(torch.bincount(route, minlength=6).tolist())
            i = slice(step * 12, step * 12 + 12)
            loss = F.cross_entropy(model(x[i], route), y[i])
            loss.backward()
            monitor.step(loss)
            opt.step()
            opt.zero_grad(set_to_none=set_to_none)
    return read_run(run_dir), tokens


@pytest.mark.parametrize("set_to_none", [True, False])
def test_an_expert_given_no_token_at_a_check_step_is_not_no_gradient(
    run_dir: Path, set_to_none: bool
) -> None:
    """Experts of a mixture of experts, each called on the tokens routed to it (an empty
    batch when none was): at a check step that routed no token to an expert, its gradient
    is all zero, though the window's other steps trained it. Before, that was
    ``no_gradient`` at the expert's first such check after the warm-up (experts 0 and 2,
    at steps 25 and 95, cleared at the next check), the module having run, as a detached
    branch does: 6 alarms (experts 5, 4, 3, 2, 2 and 1, at steps 25, 40, 65, 90, 115
    and 200), either ``set_to_none``. Now an expert run on empty batches only at a check
    step is routed: a ``no_gradient`` alarm needs more such checks in a row than twice its
    longest run before, at least 3: one alarm, experts.2 at 115, the third check step in a
    row that gave it no token (105, 110, 115; the Monitor cannot see the tokens the steps
    between gave it)."""
    lines, tokens = _train_moe(run_dir, set_to_none)
    starved = [(s, e) for s in range(25, 300, 5) for e in range(6) if tokens[s][e] == 0]
    assert len(starved) >= 5  # the case is exercised: check steps that gave an expert none
    for step, layer in _no_gradient(lines):  # only at a third check in a row without tokens
        e = int(layer.split(".")[1])
        assert all(tokens[s][e] == 0 for s in (step, step - 5, step - 10)), (step, layer)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_an_expert_the_router_drops_is_still_no_gradient(run_dir: Path, set_to_none: bool) -> None:
    """From step 150 on no token goes to expert 5: it stopped learning. Its empty batches
    make it routed, so it is ``no_gradient`` at the 3rd check without tokens (step 160),
    as a routed task head dropped by a bug is, with grad_norm 0 (a backward reached it)."""
    lines, _ = _train_moe(run_dir, set_to_none, dropped_from=150)
    alarm = [a for a in events(lines, "alarm") if a["layer"] == "experts.5"]
    assert [(a["step"], a["diagnosis"], a["grad_norm"]) for a in alarm] == [
        (160, "no_gradient", 0.0)
    ]
