"""Loops the architecture probe (/tmp/probe_arch) ran that the Monitor misread: a
validation pass run with gradients in eval mode between two steps made units dead on every
training batch look alive, and step() called once per micro-batch of gradient
accumulation went unsaid. Real training of a small MLP; each test failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyMLP, batches, events, read_run
from tests.monitor.test_misuse import said
from trainrecord.monitor import Monitor

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


@pytest.mark.parametrize("validate", ["none", "eval, with gradients", "eval, no_grad"])
def test_an_eval_mode_pass_between_steps_leaves_the_channel_verdict_alone(
    tmp_path: Path, validate: str
) -> None:
    model = _dead_on_training_data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    run = tmp_path / "run"
    with Monitor(model, optimizer, run, check_every=2, silent_min_values=64) as monitor:
        for x, y in batches(30):
            loss = F.cross_entropy(model(x.abs()), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
            if validate == "none":
                continue
            model.eval()  # a validation pass on other data: the dead units fire on it
            if validate == "eval, no_grad":
                with torch.no_grad():
                    model(-x.abs())
            else:
                F.cross_entropy(model(-x.abs()), y).item()  # (a common loop: no no_grad)
            model.train()
    lines = read_run(run)
    silent = {c for e in events(lines, "channels") if e["layer"] == "fc1" for c in e["observed"]}
    assert set(DEAD) <= silent, [e for e in lines if e["event"] == "channels"]
    manifest = events(lines, "manifest")[0]
    assert any("count only when it ran none in training mode" in n for n in manifest["notes"])


def test_a_model_only_ever_in_eval_mode_is_still_measured(tmp_path: Path) -> None:
    """Fine-tuning in eval mode (a frozen BatchNorm's habit): its passes are the ones there
    are, so they are judged."""
    model = _dead_on_training_data().eval()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    run = tmp_path / "run"
    with Monitor(model, optimizer, run, check_every=2, silent_min_values=64) as monitor:
        for x, y in batches(30):
            loss = F.cross_entropy(model(x.abs()), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    silent = {c for e in events(read_run(run), "channels") for c in e["observed"]}
    assert set(DEAD) <= silent


@pytest.mark.parametrize("check_every", [1, 2, 5])
def test_step_once_per_micro_batch_is_warned_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, check_every: int
) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = batches(48, batch=8)
    for keep_zeros in (True, False):  # zero_grad(set_to_none=...) either way: no word
        monitor = Monitor(model, optimizer, tmp_path / f"r{keep_zeros}", check_every=check_every)
        for start in range(0, 48, 4):  # the README's accumulation loop
            for x, y in data[start : start + 4]:
                loss = F.cross_entropy(model(x), y) / 4
                loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad(set_to_none=not keep_zeros)
        monitor.close()
    assert not said(caplog, "step() was called")

    run = tmp_path / "wrong"
    with Monitor(model, optimizer, run, check_every=check_every) as monitor:
        for start in range(0, 48, 4):
            for x, y in data[start : start + 4]:
                loss = F.cross_entropy(model(x), y) / 4
                loss.backward()
                monitor.step(loss)  # the probe: 4 "steps" per optimizer step, unsaid
            optimizer.step()
            optimizer.zero_grad()
    [warning] = said(caplog, "step() was called")
    assert "a backward between but no optimizer step" in warning
    assert "once per optimizer step, after the last micro-batch's backward()" in warning
    assert events(read_run(run), "run_end")[0]["steps"] == 48  # as called
