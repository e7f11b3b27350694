"""Ctrl+C in the middle of a check's writing, caught by the loop, which trains on (a
notebook's interrupted cell run again): the next checks and close() give a record that
verifies, holds its structure and manifest, and whose run_end counts say its lines.

A profile hook raises KeyboardInterrupt at one signal point (a trainrecord function's entry,
or right after a C call returns: where the interpreter handles a real Ctrl+C) inside the
writing of a check's events and row (``_emit``, ``_learn``, the writers' ``append``), one
point per run. Before: Ctrl+C after the first check took its structure but before its line
left producers without their state (the next check raised KeyError), or the structure was
never written (nor the manifest: it was no longer due); an event interrupted before its
line was counted in run_end anyway; a line or row whose fsync was interrupted was in the
file but not in the chain (diary.chain.seq) or the check count (diary.metrics.rows).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from types import FrameType

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyCNN, batches, metrics, read_run
from tests.monitor.test_aborted_pass import said
from tests.monitor.test_events import sgd, zero_block2
from trainrecord.diary import verify
from trainrecord.monitor import Monitor

# The Interrupter raises at every signal point, the resumption of a generator that is
# closed unfinished among them (``any(... for ...)`` that stopped early, then collected):
# Python cannot raise out of that finalisation, prints the KeyboardInterrupt as "Exception
# ignored in: <generator object ...>" and goes on, and pytest reports it as a warning. A
# real Ctrl+C can land there too, in any Python code (about 60 such generators in
# runtime/trainrecord; more in torch and the standard library): Python loses it, and the
# Monitor goes on as if it had not come, which the checks below cover. A sweep of every
# signal point of these scenarios meets 8 of them (in the monitor, repair, certificate and
# optimizers modules); rewriting those as loops would not close the window, only move it.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <generator object \S+ at 0x[0-9a-f]+>\s+Traceback[\s\S]*"
    r"\nKeyboardInterrupt\n:pytest.PytestUnraisableExceptionWarning"
)

WRITING = ("_emit", "_learn", "append")
TALLIES = ("checks_without_gradients", "sink_errors")  # run_end counts that are not lines


class Interrupter:
    """A profile function that raises KeyboardInterrupt at the ``point``-th signal point
    (a call, or a C function's return) of trainrecord's code run inside a function named
    in ``within``; ``landed`` says where (None until it has)."""

    def __init__(self, point: int, within: tuple[str, ...]) -> None:
        self.point, self.within = point, within
        self.seen = 0
        self.landed: str | None = None

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event not in ("call", "c_return") or "/trainrecord/" not in frame.f_code.co_filename:
            return
        outer: FrameType | None = frame
        while outer is not None and outer.f_code.co_name not in self.within:
            outer = outer.f_back
        if outer is None:
            return
        self.seen += 1
        if self.seen == self.point:
            name = getattr(arg, "__qualname__", None) or frame.f_code.co_qualname
            self.landed = f"{event} {name} (line {frame.f_lineno})"
            raise KeyboardInterrupt


def _run(run_dir: Path, check: int, point: int) -> str | None:
    """Train 7 steps (checks at 0, 2, 4, 6) with Ctrl+C at the ``point``-th signal point of
    the writing in step ``check``; return where it landed (None: fewer points)."""
    interrupt = Interrupter(point, WRITING)

    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        for step in range(7):
            F.cross_entropy(model(x), y).backward()
            if step == check:
                sys.setprofile(interrupt)
            try:
                monitor.step(F.cross_entropy(model(x), y).detach())
            except KeyboardInterrupt:
                pass  # the loop goes on
            finally:
                sys.setprofile(None)
            optimizer.step()
            optimizer.zero_grad()
    return interrupt.landed


@pytest.mark.parametrize(("check", "stride"), [(0, 4), (2, 1)])
def test_ctrl_c_while_a_check_writes_then_training_on_leaves_a_whole_record(
    tmp_path: Path, check: int, stride: int
) -> None:
    # the first check (structure, manifest, row) every 4th point: ~120 runs; the second
    # (a row) at each of its points
    point = 0
    while True:
        point += stride
        run_dir = tmp_path / str(point)
        try:
            landed = _run(run_dir, check, point)
        except Exception as exc:  # the point is named in the failure
            pytest.fail(f"Ctrl+C at point {point}: the run then raised {exc!r}")
        if landed is None:
            break
        result = verify(run_dir)
        assert result.ok and result.sealed, (landed, result.failure)
        lines = [json.loads(raw) for raw in (run_dir / "diary.jsonl").read_text().splitlines()]
        events = Counter(line["event"] for line in lines)
        assert events["structure"] == 1 and events["manifest"] >= 1, (landed, events)
        counts = {k: v for k, v in lines[-1]["counts"].items() if k not in TALLIES}
        del events["run_start"], events["run_end"]
        assert counts == dict(events), landed
    assert point > 40 * stride  # the writing was driven through


def _zeroed_block_run(run_dir: Path, point: int | None) -> tuple[str | None, list[int]]:
    """The zeroed-block scenario (block 2 zeroed at step 10, checks every 2 steps: the check
    of step 10 writes a certificate, channels, a repair and four alarms) with Ctrl+C at the
    ``point``-th signal point of that check (None: none), caught by the loop, which calls
    ``step()`` again at once; return where it landed (None: fewer points) and the seq of
    every line the callback received."""
    interrupt = Interrupter(point, ("_check",))

    delivered: list[int] = []
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    with Monitor(
        model,
        optimizer,
        run_dir,
        check_every=2,
        warmup=3,
        repair=True,
        callback=lambda line: delivered.append(line["seq"]),
    ) as monitor:
        for step, (x, y) in enumerate(ZEROED_BLOCK_DATA):
            if step == 10:
                zero_block2(model, optimizer)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            if step == 10 and point is not None:
                sys.setprofile(interrupt)
            try:
                monitor.step(loss.detach())
            except KeyboardInterrupt:
                sys.setprofile(None)
                monitor.step(loss.detach())  # the same step again
            finally:
                sys.setprofile(None)
            optimizer.step()
            optimizer.zero_grad()
    return interrupt.landed, delivered


ZEROED_BLOCK_DATA = batches(14, batch=16)


def test_a_check_interrupted_anywhere_and_run_again_writes_each_event_once(
    tmp_path: Path,
) -> None:
    """Before: an event the interrupted check had written was written again by the run
    again (a second certificate, channels or alarm line, or a second repair, of other
    weights), and one it had decided but not written was lost (an alarm, a channels event);
    the run again also lost the check's channel statistics (its hooks were gone)."""
    _, control_delivered = _zeroed_block_run(tmp_path / "control", None)
    control = said(read_run(tmp_path / "control"))
    assert [line["event"] for line in control if line.get("step") == 10] == [
        "certificate",
        "channels",
        "repair",
        "channels",
        "alarm",
        "alarm",
        "alarm",
        "alarm",
    ]
    control_rows = metrics(tmp_path / "control")
    point = 0
    while True:
        point += 29  # about 1650 points in that check: every 29th
        run_dir = tmp_path / str(point)
        landed, delivered = _zeroed_block_run(run_dir, point)
        if landed is None:
            break
        lines = read_run(run_dir)  # (verified)
        assert said(lines) == control, landed
        assert metrics(run_dir) == control_rows, landed
        assert sorted(delivered) == sorted(control_delivered), landed  # each line once
    assert point > 40 * 29  # the check was driven through


def test_a_check_run_again_after_the_loop_trained_on_keeps_that_training(
    tmp_path: Path,
) -> None:
    """Ctrl+C in the check of step 10 after its repair of conv2's channels 0-3 (before its
    row), caught by the loop, which trains on (``optimizer.step()``, the next batch's
    backward); the next ``step()`` runs the check again. Before: the run again put back
    the whole weights of conv2, bn2 and head and their momentum as the repair had found
    them, undoing the optimizer step on channels 4-7 too, and rewound the global RNG to
    before the repair's draw (the numbers the loop drew since came again)."""
    landed: list[str] = []

    def interrupt(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_name == "_gradients" and not landed:
            landed.append(frame.f_code.co_qualname)
            raise KeyboardInterrupt  # the repair is made, the row not written

    def run(run_dir: Path, interrupted: bool) -> dict[str, torch.Tensor]:
        torch.manual_seed(0)
        model = TinyCNN()
        optimizer = sgd(model)
        after: dict[str, torch.Tensor] = {}
        with Monitor(model, optimizer, run_dir, check_every=2, warmup=3, repair=True) as monitor:
            for step, (x, y) in enumerate(ZEROED_BLOCK_DATA[:12]):
                if step == 10:  # channels 0-3 of block 2 die
                    with torch.no_grad():
                        for p in [model.conv2.weight, model.bn2.weight, model.bn2.bias]:
                            p[:4].zero_()
                            optimizer.state[p]["momentum_buffer"][:4].zero_()
                loss = F.cross_entropy(F.dropout(model(x), 0.1), y)  # (draws from the RNG)
                loss.backward()
                if step == 11:
                    tensors = {
                        "conv2": model.conv2.weight,
                        "head": model.head.weight.t(),
                        "head momentum": optimizer.state[model.head.weight]["momentum_buffer"].t(),
                    }
                    before = {k: t.detach()[4:].clone() for k, t in tensors.items()}
                    rng = torch.get_rng_state()
                if step == 10 and interrupted:
                    sys.setprofile(interrupt)
                try:
                    monitor.step(loss.detach())
                except KeyboardInterrupt:
                    pass  # the loop goes on
                finally:
                    sys.setprofile(None)
                if step == 11:  # what this step() changed outside channels 0-3
                    after = {
                        k: (t.detach()[4:] - before[k]).abs().amax() for k, t in tensors.items()
                    }
                    after["rng"] = (torch.get_rng_state() != rng).sum()
                optimizer.step()
                optimizer.zero_grad()
        return after

    control = run(tmp_path / "control", False)
    assert all(float(v) == 0 for v in control.values()), control
    changed = run(tmp_path / "interrupted", True)
    assert landed
    assert all(float(v) == 0 for v in changed.values()), changed
    repairs = [
        (line["step"], line["layer"], line["channels"])
        for line in read_run(tmp_path / "interrupted")
        if line["event"] == "repair"
    ]
    assert repairs == [(10, "conv2", [0, 1, 2, 3])]


def test_a_check_run_again_after_the_next_batch_reports_its_own_step(tmp_path: Path) -> None:
    """The loss is 50 times larger from step 10 on (a spike at the check of step 12);
    Ctrl+C right after that check wrote its loss_spike, caught by the loop, which trains
    on; the next ``step()`` (with the next batch's loss and gradients) runs the check of
    step 12 again. Before: the run again judged the next batch's loss, and wrote a second
    loss_spike at step 12 with another value; its row had that batch's loss and norms."""
    landed: list[str] = []

    def interrupt(frame: FrameType, event: str, arg: object) -> None:
        if (
            event == "return"
            and frame.f_code.co_name == "_emit"
            and frame.f_locals.get("event") == "loss_spike"
            and not landed
        ):
            landed.append("loss_spike")
            raise KeyboardInterrupt

    def run(run_dir: Path, interrupted: bool) -> None:
        torch.manual_seed(0)
        model = TinyCNN()
        optimizer = sgd(model)
        with Monitor(model, optimizer, run_dir, check_every=2, warmup=3) as monitor:
            for step, (x, y) in enumerate(batches(16, batch=16)):
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                if interrupted:
                    sys.setprofile(interrupt)
                try:
                    monitor.step(loss.detach() * (50 if step >= 10 else 1))
                except KeyboardInterrupt:
                    pass  # the loop goes on
                finally:
                    sys.setprofile(None)
                optimizer.step()
                optimizer.zero_grad()

    run(tmp_path / "control", False)
    control = said(read_run(tmp_path / "control"))
    assert [(line["event"], line["step"]) for line in control if line.get("step") == 12] == [
        ("loss_spike", 12)
    ]
    run(tmp_path / "interrupted", True)
    assert landed
    lines = said(read_run(tmp_path / "interrupted"))
    assert lines[-1]["steps"] == control[-1]["steps"] - 1  # (the interrupted call: no step)
    lines[-1]["steps"] = control[-1]["steps"]
    assert lines == control
    rows = metrics(tmp_path / "interrupted")
    assert [row for row in rows if row["step"] <= 12] == metrics(tmp_path / "control")[:7]


CELL_STEPS = 8
CELL_DATA = batches(CELL_STEPS, batch=16)


def _global_hooks() -> tuple[int, int, int]:
    """How many global forward, forward-pre and optimizer-step hooks the process holds."""
    from torch.nn.modules import module
    from torch.optim import optimizer

    return (
        len(module._global_forward_hooks),
        len(module._global_forward_pre_hooks),
        len(optimizer._global_optimizer_post_hooks),
    )


def _cell_run_again(
    run_dir: Path, check_every: int, at: int, interrupt: Interrupter | None
) -> tuple[int, tuple[int, ...]]:
    """A notebook's training cell (zero_grad, forward, backward, ``step()``,
    ``optimizer.step()``) stopped by Ctrl+C inside ``step()`` at the loop's step ``at``:
    that step's ``optimizer.step()`` never runs. The cell run again goes on from the step
    it stopped at (its batch again) to ``CELL_STEPS`` optimizer steps. Returns the
    Monitor's step count then, and the global hooks the run left after close()."""
    before = _global_hooks()
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    done = 0  # the loop's optimizer steps

    def cell() -> None:
        nonlocal done
        while done < CELL_STEPS:
            x, y = CELL_DATA[done]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            if done == at and interrupt is not None and interrupt.landed is None:
                sys.setprofile(interrupt)
            try:
                monitor.step(loss.detach())
            finally:
                sys.setprofile(None)
            optimizer.step()
            done += 1

    monitor = Monitor(model, optimizer, run_dir, check_every=check_every)
    try:
        cell()
    except KeyboardInterrupt:
        cell()  # the cell run again
    steps = monitor.steps
    monitor.close()
    return steps, tuple(n - m for n, m in zip(_global_hooks(), before, strict=True))


@pytest.mark.parametrize(
    ("check_every", "at"),
    [
        (2, 3),  # the step after the check of step 2, which arms the check of step 4
        (1, 3),  # a check, then the arming of the next (every step)
    ],
)
def test_ctrl_c_anywhere_in_step_then_the_cell_run_again_numbers_the_loops_steps(
    tmp_path: Path, check_every: int, at: int
) -> None:
    """Ctrl+C at each signal point of ``step()`` (all of its last 200, every 11th before:
    inside the check itself, which the tests above cover), not caught: the cell stops
    before that step's ``optimizer.step()``, and is run again from that step. The record
    and the metrics equal the uninterrupted run's, the Monitor counts the loop's optimizer
    steps, and no hook is left behind. Before: a Ctrl+C in the arming of a check (the
    step before it) or after a complete check counted the step, so the cell run again
    took every later step as one step further (run_end.steps 9 for the loop's 8, each
    later check on the step before its own), and one landing as the arming kept its
    activation probe left that probe's three global hooks in the process for good."""
    control_steps, left = _cell_run_again(tmp_path / "control", check_every, at, None)
    assert (control_steps, left) == (CELL_STEPS, (0, 0, 0))
    control = said(read_run(tmp_path / "control"))
    control_rows = metrics(tmp_path / "control")
    counting = Interrupter(0, ("step",))  # (never raises: counts the points)
    _cell_run_again(tmp_path / "counting", check_every, at, counting)
    total = counting.seen
    points = [*range(1, total - 200, 11), *range(max(total - 200, 1), total + 1)]
    for point in points:
        run_dir = tmp_path / str(point)
        interrupt = Interrupter(point, ("step",))
        steps, left = _cell_run_again(run_dir, check_every, at, interrupt)
        assert interrupt.landed is not None, point
        assert steps == CELL_STEPS, interrupt.landed
        assert left == (0, 0, 0), interrupt.landed
        assert said(read_run(run_dir)) == control, interrupt.landed  # (verified)
        assert metrics(run_dir) == control_rows, interrupt.landed
    assert total > 100  # step() was driven through


def test_a_check_run_again_after_the_scheduler_stepped_judges_the_first_attempt_s_lrs(
    tmp_path: Path,
) -> None:
    # Ctrl+C in the loss rule of the check at step 4, after the check read the learning
    # rates; the loop steps the optimizer and the scheduler (lr x10 every step) and calls
    # step() again: the run again took the first attempt's loss but read the lrs afresh,
    # after scheduler.step(), so "lr raised" judged an lr the first attempt never saw.
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 10.0**epoch)
    x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))
    interrupt = Interrupter(1, ("observe",))
    seen: list[float] = []
    with Monitor(model, optimizer, tmp_path / "run", check_every=2) as monitor:
        for step in range(6):
            F.cross_entropy(model(x), y).backward()
            loss = F.cross_entropy(model(x), y).detach()
            if step == 4:
                seen = [group["lr"] for group in optimizer.param_groups]
                sys.setprofile(interrupt)
                try:
                    monitor.step(loss)
                except KeyboardInterrupt:
                    sys.setprofile(None)
                    optimizer.step()
                    scheduler.step()  # the lr changes before the check is run again
                    monitor.step(loss)
                finally:
                    sys.setprofile(None)
            else:
                monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
            scheduler.step()
        assert interrupt.landed is not None and "LossTracker.observe" in interrupt.landed
        assert list(monitor.loss._lrs)[-1] == tuple(seen), (list(monitor.loss._lrs), seen)
    assert verify(tmp_path / "run").ok
