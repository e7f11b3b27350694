"""Loops the architecture probe (/tmp/probe_arch) ran that the Monitor misread: a
validation pass run with gradients in eval mode between two steps made units dead on every
training batch look alive, and step() called once per micro-batch of gradient
accumulation went unsaid; and (newcomer probe) a Monitor never closed ended without a word.
Real training of a small MLP; each test failed before its fix."""

from __future__ import annotations

import gc
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyMLP, batches, events, read_run, train
from tests.monitor.test_misuse import misuse_warnings, said
from trainrecord.diary import verify
from trainrecord.monitor import Monitor, MonitorMisuseWarning
from trainrecord.monitor.sinks import describe

DEAD = [0, 1, 2]


def _dead_on_training_data() -> TinyMLP:
    """fc1 units 0-2 are dead on non-negative inputs (weights -1, bias -0.1) and fire on
    negative ones; they get no gradient, so they stay so."""
    torch.manual_seed(0)
    model = TinyMLP()
    with torch.no_grad():
        model.fc1.weight[DEAD] = -1.0
        model.fc1.bias[DEAD] = -0.1
    return model


def _train_on_positive_inputs(
    model: TinyMLP,
    run: Path,
    after_step: Callable[[torch.Tensor, torch.Tensor], None] | None = None,
) -> Path:
    """30 steps on non-negative inputs (the DEAD units never fire), a check every 2;
    ``after_step(x, y)`` runs after each optimizer step (between two steps)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(model, optimizer, run, check_every=2, silent_min_values=64) as monitor:
        for x, y in batches(30):
            loss = F.cross_entropy(model(x.abs()), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
            if after_step is not None:
                after_step(x, y)
    return run


@pytest.mark.parametrize("validate", ["none", "eval, with gradients", "eval, no_grad"])
def test_an_eval_mode_pass_between_steps_leaves_the_channel_verdict_alone(
    tmp_path: Path, validate: str
) -> None:
    model = _dead_on_training_data()

    def validation(x: torch.Tensor, y: torch.Tensor) -> None:
        if validate == "none":
            return
        model.eval()  # a validation pass on other data: the dead units fire on it
        if validate == "eval, no_grad":
            with torch.no_grad():
                model(-x.abs())
        else:
            F.cross_entropy(model(-x.abs()), y).item()  # (a common loop: no no_grad)
        model.train()

    lines = read_run(_train_on_positive_inputs(model, tmp_path / "run", validation))
    silent = {c for e in events(lines, "channels") if e["layer"] == "fc1" for c in e["observed"]}
    assert set(DEAD) <= silent, [e for e in lines if e["event"] == "channels"]
    manifest = events(lines, "manifest")[0]
    assert any("count only when it ran none in training mode" in n for n in manifest["notes"])
    # the log line lists the counts in the seed's order (it said silent before flat)
    line = describe(events(lines, "channels")[0])
    assert re.search(r"\(certified \d+, flat \d+, silent [1-9]\d*, decayed \d+\)", line), line


def test_a_model_only_ever_in_eval_mode_is_still_measured(tmp_path: Path) -> None:
    """Fine-tuning in eval mode (a frozen BatchNorm's habit): its passes are the ones there
    are, so they are judged."""
    model = _dead_on_training_data().eval()
    run = _train_on_positive_inputs(model, tmp_path / "run")
    silent = {c for e in events(read_run(run), "channels") for c in e["observed"]}
    assert set(DEAD) <= silent


@pytest.mark.parametrize("check_every", [1, 2, 5])
def test_step_once_per_micro_batch_is_warned_once(tmp_path: Path, check_every: int) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = batches(48, batch=8)
    with misuse_warnings() as right:
        for keep_zeros in (True, False):  # zero_grad(set_to_none=...) either way: no word
            monitor = Monitor(
                model, optimizer, tmp_path / f"r{keep_zeros}", check_every=check_every
            )
            for start in range(0, 48, 4):  # the README's accumulation loop
                for x, y in data[start : start + 4]:
                    loss = F.cross_entropy(model(x), y) / 4
                    loss.backward()
                monitor.step(loss)
                optimizer.step()
                optimizer.zero_grad(set_to_none=not keep_zeros)
            monitor.close()
    assert right == []

    run = tmp_path / "wrong"
    # Session 12: it went to the trainrecord.monitor logger only (pytest.warns and warnings
    # filters could not catch it); a MonitorMisuseWarning now
    with (
        pytest.warns(
            MonitorMisuseWarning, match="a backward between but no optimizer step"
        ) as seen,
        Monitor(model, optimizer, run, check_every=check_every) as monitor,
    ):
        for start in range(0, 48, 4):
            for x, y in data[start : start + 4]:
                loss = F.cross_entropy(model(x), y) / 4
                loss.backward()
                monitor.step(loss)  # the probe: 4 "steps" per optimizer step, unsaid
            optimizer.step()
            optimizer.zero_grad()
    [warning] = [w for w in seen if issubclass(w.category, MonitorMisuseWarning)]
    assert "once per optimizer step, after the last micro-batch's backward()" in str(
        warning.message
    )
    assert warning.filename == __file__  # pointing at the loop's monitor.step() call
    assert events(read_run(run), "run_end")[0]["steps"] == 48  # as called


class DataSGD(torch.optim.Optimizer):
    """An optimizer in the pre-2.0 style, writing through ``p.data``: the parameter's version
    counter never moves (review of the micro-batch warning: it fired on a correct loop)."""

    def __init__(self, params: Any, lr: float = 0.05) -> None:
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.data.add_(p.grad.data, alpha=-group["lr"])


def test_an_optimizer_writing_through_data_is_no_sign_of_micro_batches(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = DataSGD(model.parameters())
    with misuse_warnings() as got, Monitor(model, optimizer, run_dir, check_every=1) as monitor:
        for x, y in batches(6):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)
    assert got == []


def test_the_step_twice_warning_stays_on_after_a_micro_batch_one(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = batches(8)
    with misuse_warnings() as got, Monitor(model, optimizer, run_dir, check_every=1) as monitor:
        for x, y in data[:2]:  # two micro-batches, a step() each: the micro-batch warning
            F.cross_entropy(model(x), y).backward()
            monitor.step()
        optimizer.step()
        optimizer.zero_grad()
        x, y = data[2]
        F.cross_entropy(model(x), y).backward()
        monitor.step()
        monitor.step()  # twice with nothing between: still said
        optimizer.step()
        optimizer.zero_grad()
    assert len([m for m in got if "with a backward between but no optimizer step" in m]) == 1
    assert len([m for m in got if "with nothing between" in m]) == 1


_UNCLOSED = """
import sys, torch
from tests.monitor.conftest import TinyMLP, train
from trainrecord import Monitor
model = TinyMLP()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
monitor = Monitor(model, optimizer, sys.argv[1], check_every=2)
train(model, optimizer, monitor, 3)
if sys.argv[2] == "close":
    monitor.close()
elif sys.argv[2] == "raise":
    raise RuntimeError("boom")
"""


@pytest.mark.parametrize("end", ["close", "forget", "raise"])
def test_a_monitor_never_closed_is_named_when_the_process_ends(tmp_path: Path, end: str) -> None:
    """Newcomer probe: a script that forgot monitor.close() (or raised outside a with block)
    ended without a word, its record left without run_end and seal."""
    run = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-c", _UNCLOSED, str(run), end],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    warned = f"trainrecord.Monitor: {run} was not closed" in out.stderr
    assert warned == (end != "close"), out.stderr[-2000:]
    if warned:
        assert "use 'with Monitor(...) as monitor:'" in out.stderr
        assert not verify(run).complete
    else:
        assert out.returncode == 0 and verify(run).complete


def test_a_monitor_dropped_unclosed_is_named_when_it_is_collected(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def train_and_forget() -> None:
        model = TinyMLP()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        monitor = Monitor(model, optimizer, tmp_path / "run", check_every=2)
        train(model, optimizer, monitor, 3)

    train_and_forget()
    gc.collect()
    assert said(caplog, "was not closed")


def test_running_a_script_again_on_its_run_dir_says_how_to_start_afresh(
    run_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Newcomer probe: the warning explained a resume only; one re-running an experiment
    usually wanted a new record."""
    for _ in range(2):
        model = TinyMLP()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
            train(model, optimizer, monitor, 2)
    [warning] = said(caplog, "continues an earlier run's diary")
    assert "pass start_step=" in warning and "to start a new record instead, use a new run_dir" in (
        warning
    )


def test_a_trainable_layer_the_optimizer_does_not_hold_is_named_in_the_manifest(
    run_dir: Path,
) -> None:
    """Architecture probe 5: Adam over the head only, fc1 still requires grad: the manifest
    listed fc1 as any other layer, certifiable, with no word that nothing updates it."""
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.Adam(model.fc2.parameters(), lr=1e-3)
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        train(model, optimizer, monitor, 4)
    notes = events(read_run(run_dir), "manifest")[0]["notes"]
    [note] = [n for n in notes if "does not hold" in n]
    assert note.startswith(
        "layers with trainable parameters the optimizer given to the Monitor does not hold: fc1:"
    )
    assert "unless another optimizer updates them" in note  # (review: SparseAdam does)
    full = run_dir.parent / "full"
    whole = torch.optim.Adam(model.parameters(), lr=1e-3)
    with Monitor(model, whole, full, check_every=2) as monitor:
        train(model, whole, monitor, 4)
    assert not any("does not hold" in n for n in events(read_run(full), "manifest")[0]["notes"])
