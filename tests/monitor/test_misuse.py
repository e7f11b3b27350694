"""The Monitor under misuse (a probe of bad input): every argument checked before any file
or folder is made, naming the argument; a loss no check can read refused before the check
begins; close() of something that is not an exception, pickling and an optimizer of
another model refused saying what to do; step() called twice per optimizer step, a
start_step that numbers recorded steps again and a signed record resumed without its key
said in a warning. Real training of tiny models where the training matters."""

from __future__ import annotations

import copy
import gc
import pickle
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from tests.monitor.conftest import (
    TinyCNN,
    TinyMLP,
    batches,
    events,
    metrics,
    read_run,
    signed_run,
    train,
)
from tests.monitor.test_events import sgd
from trainrecord.arguments import ArgumentRefused
from trainrecord.diary import verify, write_seal
from trainrecord.errors import MonitorMisuseWarning, RecordRefused
from trainrecord.monitor import Monitor


def said(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    """The log messages that contain ``text``."""
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


@contextmanager
def misuse_warnings() -> Iterator[list[str]]:
    """The messages of every ``MonitorMisuseWarning`` issued inside (each one, not only the
    first per place as the default filter shows them); other warnings go as they would."""
    got: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MonitorMisuseWarning)
        yield got
    for warning in caught:
        if issubclass(warning.category, MonitorMisuseWarning):
            got.append(str(warning.message))
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )


@pytest.mark.parametrize(
    ("options", "argument"),
    [
        ({"warmup": -3}, "warmup"),
        ({"warmup": 2.0}, "warmup"),
        ({"decay_ratio": float("nan")}, "decay_ratio"),
        ({"decay_ratio": 2}, "decay_ratio"),
        ({"decay_ratio": True}, "decay_ratio"),
        ({"repair": "no"}, "repair"),  # truthy: it turned repair on
        ({"repair": 1}, "repair"),
        ({"log": "false"}, "log"),
        ({"callback": 5}, "callback"),
        ({"tensorboard": 123}, "tensorboard"),  # made a folder named 123
        ({"tensorboard": ""}, "tensorboard"),
        ({"channel_list_limit": "a"}, "channel_list_limit"),  # '<' not supported
        ({"channel_list_limit": -1}, "channel_list_limit"),
        ({"check_every": True}, "check_every"),
        ({"check_every": 0}, "check_every"),
        ({"start_step": 1.5}, "start_step"),
        ({"repair_seed": "x"}, "repair_seed"),
        ({"repair_seed": True}, "repair_seed"),
        ({"repair_patience": 0}, "repair_patience"),
        ({"silent_min_values": "256"}, "silent_min_values"),
        ({"sinks": object()}, "sinks"),
        ({"scaler": "yes"}, "scaler"),  # the first check crashed training: no get_scale
    ],
)
def test_every_option_is_checked_before_any_file_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], argument: str
) -> None:
    monkeypatch.chdir(tmp_path)
    model = TinyMLP()
    with pytest.raises(ArgumentRefused, match=rf"^Monitor\({argument}=\.\.\.\): {argument} must"):
        Monitor(model, sgd(model), "run", **options)
    assert list(tmp_path.iterdir()) == []
    # both a TypeError and a ValueError: code that caught either before still does
    with pytest.raises(TypeError):
        Monitor(model, sgd(model), "run", **options)
    with pytest.raises(ValueError):
        Monitor(model, sgd(model), "run", **options)


def test_a_scaler_is_anything_with_get_scale(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = sgd(model)
    with pytest.raises(TypeError, match=r"scaler=.*GradScaler.*got 'yes'"):
        Monitor(model, optimizer, run_dir, scaler="yes")
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    with Monitor(model, optimizer, run_dir, check_every=2, scaler=scaler) as monitor:
        train(model, optimizer, monitor, 4)
    assert len(metrics(run_dir)) == 2


def test_a_refused_name_or_run_dir_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The probe: name=123 left empty diary.jsonl and metrics.jsonl; run_dir="" wrote them
    # into the current directory and blamed the field name.
    monkeypatch.chdir(tmp_path)
    model = TinyMLP()
    with pytest.raises(RecordRefused) as err:
        Monitor(model, sgd(model), "run", name=123)  # type: ignore[arg-type]
    assert err.value.rule == "diary.text.type" and err.value.field == "name"
    with pytest.raises(ArgumentRefused, match=r"run_dir must be a non-empty path \('\.' for"):
        Monitor(model, sgd(model), "")
    with pytest.raises(TypeError, match=r"Monitor\(run_dir=\.\.\.\): run_dir must be a path"):
        Monitor(model, sgd(model), None)  # type: ignore[arg-type]
    with pytest.raises(RecordRefused) as err:
        Monitor(model, sgd(model), "run", fsync_policy="sometimes")  # type: ignore[arg-type]
    assert err.value.rule == "diary.writer.fsync_policy"
    with pytest.raises(RecordRefused) as err:
        Monitor(model, sgd(model), "run", signing_key="missing_key")
    assert err.value.rule == "seal.key.format" and "missing_key" in str(err.value)
    assert list(tmp_path.iterdir()) == []
    here = tmp_path / "exp7"
    here.mkdir()
    monkeypatch.chdir(here)
    with Monitor(model, sgd(model), "."):  # the current directory, said so: named after it
        pass
    assert events(read_run(here), "run_start")[0]["name"] == "exp7"


def test_a_loss_no_check_can_read_is_refused_before_the_check(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = sgd(model)
    with Monitor(model, optimizer, run_dir, check_every=1) as monitor:
        x, y = batches(1)[0]
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        with pytest.raises(ValueError, match=r"loss 1000.*\(of type int\) is beyond the range"):
            monitor.step(10**400)  # a bare OverflowError before
        with pytest.raises(TypeError, match=r"complex tensor \(torch\.complex64\)"):
            monitor.step(torch.complex(loss.detach(), torch.tensor(5.0)))  # imag dropped
        assert monitor.steps == 0 and monitor.checks == 0  # nothing of them recorded
        monitor.step(loss)
        optimizer.step()
    assert [row["step"] for row in metrics(run_dir)] == [0]
    assert metrics(run_dir)[0]["loss"] == pytest.approx(loss.item())
    assert events(read_run(run_dir), "run_end")[0]["checks"] == 1


def test_close_takes_an_exception_or_nothing(run_dir: Path) -> None:
    model = TinyMLP()
    monitor = Monitor(model, sgd(model), run_dir)
    for wrong in ("oops", ValueError):
        with pytest.raises(TypeError, match=r"close\(error=\.\.\.\): error must be the exception"):
            monitor.close(wrong)  # type: ignore[arg-type]
        assert not monitor.closed  # the run is still open: close() it right
    monitor.close(KeyError("batch 7"))
    assert read_run(run_dir)[-1]["error"] == {"type": "KeyError", "message": "'batch 7'"}


def test_a_monitor_is_not_pickled_copied_or_saved(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = sgd(model)
    run = tmp_path / "run"
    with Monitor(model, optimizer, run, check_every=2) as monitor:
        train(model, optimizer, monitor, 3)
        attempts = {
            "pickle": lambda: pickle.dumps(monitor),
            "deepcopy": lambda: copy.deepcopy(monitor),
            "copy": lambda: copy.copy(monitor),
            "torch.save": lambda: torch.save(
                {"model": model.state_dict(), "monitor": monitor}, tmp_path / "ckpt.pt"
            ),
        }
        for how, attempt in attempts.items():
            with pytest.raises(TypeError, match="Monitor cannot be pickled") as err:
                attempt()
            text = str(err.value)
            assert "optimizer.state_dict()" in text and "(now 3)" in text, how
            assert f"Monitor(model, optimizer, {str(run)!r}, start_step=<that count>)" in text
        train(model, optimizer, monitor, 2)  # the Monitor goes on
    assert events(read_run(run), "run_end")[0]["steps"] == 5


def test_an_optimizer_of_another_model_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    model = TinyMLP()
    with pytest.raises(ValueError, match=r"updates none of the model's 4 trainable parameters"):
        Monitor(model, sgd(TinyMLP()), "run")
    with pytest.raises(ValueError, match="a copy of this one"):
        Monitor(copy.deepcopy(model), sgd(model), "run")
    assert list(tmp_path.iterdir()) == []
    # a part of the model is fine: a head trained alone, or two optimizers for two parts
    head = torch.optim.SGD(model.fc2.parameters(), lr=0.1)
    body = torch.optim.SGD(model.fc1.parameters(), lr=0.1)
    for i, optimizer in enumerate((head, body, None)):
        with Monitor(model, optimizer, f"part{i}", check_every=1) as monitor:
            train(model, head, monitor, 2, after_backward=lambda _: body.step())
        assert len(metrics(tmp_path / f"part{i}")) == 2
    # an optimizer of plain tensors (a vmap ensemble's stacked parameters, master weights)
    # trains no module's parameters: accepted, and the checks say no gradient is the model's
    copies = [p.detach().clone().requires_grad_() for p in model.parameters()]
    with Monitor(model, torch.optim.SGD(copies, lr=0.1), "copies"):
        pass
    # a model that is all frozen is said to be so, whatever the optimizer
    frozen = TinyMLP().requires_grad_(False)
    with Monitor(frozen, sgd(TinyMLP()), "frozen"):
        pass
    assert said(caplog, "no parameter that requires gradients")


def test_a_second_monitor_on_a_model_is_refused_while_either_repairs(tmp_path: Path) -> None:
    # Two Monitors with repair=True on one model (two run folders) were both accepted and
    # repaired the same channels at one step, the second overwriting the first's new
    # weights: the first record's repair (its rng, its method) no longer described the
    # model, and the second called silent channels the first had repaired.
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = sgd(model)
    first = tmp_path / "first"
    with Monitor(model, optimizer, first, check_every=2, repair=True) as monitor:
        train(model, optimizer, monitor, 3)
        for repair in (True, False):
            with pytest.raises(ArgumentRefused, match="one open Monitor per model") as refused:
                Monitor(model, optimizer, tmp_path / "second", repair=repair)
            message = str(refused.value)
            assert f"(run_dir {first}, repair=True)" in message
            assert "close() the other Monitor first" in message
            assert refused.value.argument == ("repair" if repair else "model")
        assert not (tmp_path / "second").exists()  # refused before any file
        train(model, optimizer, monitor, 3, seed=1)
    # closed, it leaves the model free; watch-only Monitors may share one (each record is
    # true), and then a repairing one is refused until both are closed
    watchers = [tmp_path / "watch1", tmp_path / "watch2"]
    with (
        Monitor(model, optimizer, watchers[0], check_every=2) as one,
        Monitor(model, optimizer, watchers[1], check_every=2) as two,
    ):
        train(model, optimizer, one, 4, after_backward=lambda _: two.step())
        with pytest.raises(ArgumentRefused, match=r"repair=False\) and this one"):
            Monitor(model, optimizer, tmp_path / "third", repair=True)
    # one dropped without close() leaves the model when it is collected
    dropped = Monitor(model, optimizer, tmp_path / "dropped", repair=True)
    del dropped
    gc.collect()
    last = tmp_path / "last"
    with Monitor(model, optimizer, last, check_every=2, repair=True) as monitor:
        train(model, optimizer, monitor, 2)
    for run, rows in ((first, 3), (watchers[0], 2), (watchers[1], 2), (last, 1)):
        read_run(run)  # every record verifies
        assert len(metrics(run)) == rows


def test_a_monitor_whose_callback_refers_to_it_leaves_its_model_once_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A callback that refers to its Monitor (a closure: seen.append(monitor.steps)) made
    # Monitor -> sinks -> callback -> Monitor a cycle that the sinks' thread kept alive: the
    # Monitor was never collected, never said it was not closed, and never left its model,
    # so every later repairing Monitor on that model was refused, telling the user to
    # close() a Monitor they no longer held.
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = sgd(model)

    def session(run: Path) -> tuple[weakref.ref[Monitor], list[int]]:
        seen: list[int] = []
        monitor = Monitor(
            model,
            optimizer,
            run,
            check_every=2,
            repair=True,
            callback=lambda line: seen.append(monitor.steps),
        )
        train(model, optimizer, monitor, 3)
        return weakref.ref(monitor), seen  # dropped unclosed (a cell that raised, say)

    alive, seen = session(tmp_path / "lost")
    deadline = time.monotonic() + 3  # the sinks' thread may still be delivering
    while alive() is not None and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert alive() is None  # collected: the thread held nothing of it between items
    assert seen and said(caplog, f"{tmp_path / 'lost'} was not closed")
    with Monitor(model, optimizer, tmp_path / "next", check_every=2, repair=True) as monitor:
        train(model, optimizer, monitor, 2)
    # the Monitor itself collects once before refusing: no gc.collect() of the user's here
    alive, _ = session(tmp_path / "lost2")
    with Monitor(model, optimizer, tmp_path / "next2", repair=True) as monitor:
        train(model, optimizer, monitor, 1)
    assert alive() is None
    for run in ("next", "next2"):
        read_run(tmp_path / run)
    sinks = [t for t in threading.enumerate() if t.name == "trainrecord-sinks"]
    for thread in sinks:
        thread.join(5)
    assert not any(t.is_alive() for t in sinks)  # each lost Monitor's thread ended


def test_a_monitor_a_traceback_holds_is_named_in_the_refusal(tmp_path: Path) -> None:
    # A training function that raised leaves its Monitor alive through the traceback (a
    # notebook keeps the last one, sys.last_traceback): the refusal said only "close() the
    # other Monitor first", which the user, holding no reference to it, could not do.
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = sgd(model)

    def train_and_fail() -> None:
        monitor = Monitor(model, optimizer, tmp_path / "failed", check_every=2, repair=True)
        train(model, optimizer, monitor, 3)
        raise FloatingPointError("loss is nan")

    try:
        train_and_fail()
    except FloatingPointError:
        kept = sys.exc_info()[2]  # as a notebook keeps it
    with pytest.raises(ArgumentRefused, match="one open Monitor per model") as refused:
        Monitor(model, optimizer, tmp_path / "again")
    assert "while a traceback holds it" in str(refused.value)
    assert "sys.last_traceback" in str(refused.value)
    del kept  # (the refusal's own traceback replaces a notebook's)
    with Monitor(model, optimizer, tmp_path / "again", check_every=2, repair=True) as monitor:
        train(model, optimizer, monitor, 2)
    assert len(metrics(tmp_path / "again")) == 1


@pytest.mark.parametrize("order", ["whole first", "part first"])
def test_a_monitor_on_a_part_of_a_repairing_monitors_model_is_refused(
    tmp_path: Path, order: str
) -> None:
    # Monitor(net, repair=True) and Monitor(net.block1) were both accepted: a repair of
    # net changed block1's weights without a word in the second record (the hazard the
    # one-Monitor-per-model rule is for), in either order.
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    whole_first = order == "whole first"
    first = tmp_path / "first"
    with (
        Monitor(model, optimizer, first, check_every=2, repair=True)
        if whole_first
        else Monitor(model.block1, optimizer, first, check_every=2)
    ) as monitor:
        train(model, optimizer, monitor, 3)
        with pytest.raises(ArgumentRefused, match="one open Monitor per model") as refused:
            if whole_first:
                Monitor(model.block1, optimizer, tmp_path / "second")
            else:
                Monitor(model, optimizer, tmp_path / "second", repair=True)
        assert not (tmp_path / "second").exists()
        train(model, optimizer, monitor, 1, seed=1)
    where = (
        "a model this one is a part of (as its module 'block1')"
        if whole_first
        else "a part of this model (its module 'block1')"
    )
    assert f"another Monitor is open on {where}" in str(refused.value)
    assert len(metrics(first)) == 2
    # watch-only Monitors on a model and its part are let be (each record is true)
    with (
        Monitor(model, optimizer, tmp_path / "watch_whole", check_every=2) as one,
        Monitor(model.block1, optimizer, tmp_path / "watch_part", check_every=2) as two,
    ):
        train(model, optimizer, one, 2, after_backward=lambda _: two.step())
    for run in ("watch_whole", "watch_part"):
        assert len(metrics(tmp_path / run)) == 1


@pytest.mark.parametrize("check_every", [1, 3, 4])
def test_step_twice_per_optimizer_step_is_warned_once(tmp_path: Path, check_every: int) -> None:
    # Session 12: the warning went to the trainrecord.monitor logger only, so neither
    # pytest.warns nor a warnings filter could catch it; it is a MonitorMisuseWarning now
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = sgd(model)
    with (
        misuse_warnings() as right,
        Monitor(model, optimizer, tmp_path / "right", check_every=check_every) as monitor,
    ):
        train(model, optimizer, monitor, 8)  # once per optimizer step: no word
    assert right == []
    with (
        pytest.warns(MonitorMisuseWarning, match="steps 0 and 1 with nothing between") as seen,
        Monitor(model, optimizer, tmp_path / "twice", check_every=check_every) as monitor,
    ):
        for x, y in batches(8):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            monitor.step(loss)  # the probe: steps and checks doubled without a word
            optimizer.step()
            optimizer.zero_grad()
    [warning] = [w for w in seen if issubclass(w.category, MonitorMisuseWarning)]
    assert "once per optimizer step" in str(warning.message)
    assert warning.filename == __file__  # pointing at the loop's monitor.step() call
    assert events(read_run(tmp_path / "twice"), "run_end")[0]["steps"] == 16  # as called


def test_a_frozen_backbones_stale_gradient_is_no_sign_of_step_twice(tmp_path: Path) -> None:
    # A review: the step-twice test marked the first parameter with a gradient, a frozen
    # backbone's stale one that the head's optimizer never touches, and warned on a loop
    # calling step() once per optimizer step
    torch.manual_seed(0)
    model = TinyMLP()
    full = sgd(model)
    train(model, full, None, 2)  # the whole model trained: every parameter has a gradient
    x, y = batches(1)[0]
    F.cross_entropy(model(x), y).backward()  # gradients left in place, as a loop may
    head = list(model.children())[-1]
    for param in model.parameters():
        param.requires_grad_(False)
    for param in head.parameters():
        param.requires_grad_(True)
    head_only = torch.optim.SGD(head.parameters(), lr=0.05)
    with (
        misuse_warnings() as got,
        Monitor(model, head_only, tmp_path / "run", check_every=3) as monitor,
    ):
        for x, y in batches(9):
            head_only.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            head_only.step()
    assert got == []


def test_a_start_step_that_numbers_recorded_steps_again_is_warned(
    run_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = sgd(model)
    with Monitor(model, optimizer, run_dir, check_every=4) as monitor:
        train(model, optimizer, monitor, 10)  # rows of steps 0, 4, 8
    with Monitor(model, optimizer, run_dir, check_every=4, start_step=10) as monitor:
        train(model, optimizer, monitor, 3)
    assert not said(caplog, "recorded twice")
    with Monitor(model, optimizer, run_dir, check_every=4, start_step=5) as monitor:
        train(model, optimizer, monitor, 4)
    [warning] = said(caplog, "recorded twice")
    assert "start_step=5" in warning and "a row of step 12" in warning
    assert [row["step"] for row in metrics(run_dir)] == [0, 4, 8, 12, 8]


def test_a_signed_record_resumed_by_a_monitor(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The probe: a Monitor resuming a signed record removed record.sig and sealed it
    # unsigned without a word; `verify --key` then failed.
    model, optimizer, run, (priv, pub, print_) = signed_run(tmp_path)
    assert verify(run, public_key=pub).signed
    with Monitor(model, optimizer, run, check_every=2, start_step=2, signing_key=priv) as monitor:
        train(model, optimizer, monitor, 2)  # with its key: signed again, without a word
    assert not said(caplog, "record.sig") and verify(run, public_key=pub).signed
    with Monitor(model, optimizer, run, check_every=2, start_step=4) as monitor:
        train(model, optimizer, monitor, 2)
    resumed, closed = said(caplog, "record.sig")
    assert print_[:16] in resumed and "signing_key=" in resumed
    assert "sealed unsigned" in closed and f"trainrecord seal {run} --key" in closed
    result = verify(run, public_key=pub)
    assert result.failure is not None and result.failure.rule == "seal.signature.missing"
    write_seal(run, signing_key=priv)  # what the warning says to do
    assert verify(run, public_key=pub).signed


@pytest.mark.parametrize("shared", ["module", "tied weight"])
def test_a_monitor_on_a_model_sharing_a_parameter_with_a_repairing_monitors_is_refused(
    tmp_path: Path, shared: str
) -> None:
    # Two models on one encoder (Sequential(enc, head_a), Sequential(enc, head_b)), or two
    # models with a tied conv weight: neither holds the other, and two repairing Monitors
    # were both accepted; each could repair the shared channels, one overwriting the
    # other's new weights.
    torch.manual_seed(0)
    if shared == "module":
        encoder = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
        one = nn.Sequential(encoder, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
        two = nn.Sequential(encoder, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2))
        names = "its '0.0.weight' is the other model's '0.0.weight'"
    else:
        one = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(288, 4))
        two = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(288, 2))
        two[0].weight = one[0].weight
        names = "its '0.weight' is the other model's '0.weight'"
    first = tmp_path / "first"
    with Monitor(one, sgd(one), first, check_every=2, repair=True) as monitor:
        x = torch.randn(4, 3, 8, 8)
        loss = one(x).square().mean()
        loss.backward()
        monitor.step(loss)
        with pytest.raises(ArgumentRefused, match="one open Monitor per model") as refused:
            Monitor(two, sgd(two), tmp_path / "second", repair=True)
        assert not (tmp_path / "second").exists()
        with pytest.raises(ArgumentRefused, match="one open Monitor per model"):
            Monitor(two, sgd(two), tmp_path / "third")  # watch-only, but the other repairs
    assert "another Monitor is open on a model sharing a parameter with this one" in str(
        refused.value
    )
    assert names in str(refused.value)
    # watch-only Monitors on both are let be (each record is true)
    with (
        Monitor(one, sgd(one), tmp_path / "watch_one", check_every=1),
        Monitor(two, sgd(two), tmp_path / "watch_two", check_every=1),
    ):
        pass
