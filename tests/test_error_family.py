"""Every deliberate refusal of the runtime is a TrainrecordError and keeps its builtin base.

errors.py promises that ``except TrainrecordError`` catches trainrecord's refusals, while
``except ValueError`` (``TypeError``, ``RuntimeError``, ``OSError``) code written before
still catches them. These refusals were plain builtins, outside the family the docs say to
catch (a typed-API probe and the session notes named them): ``Monitor.step()`` after
``close()`` (RuntimeError), a symbolic link planted in a run folder (OSError), a wrong
loss, a wrong ``close(error)``, a lazy or parameterless model, an optimizer of another
model, a Reporter's wrong settings, state or run, a lesion validation's wrong ``which``,
``run_id`` in ``job_state`` and ``open_run``'s metadata. Each case here is real: a real
Monitor on a small model, real folders and links. Each failed before the change.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from tests.report.conftest import lesion_state, lesion_validation, settings_for, training_state
from trainrecord import (
    ArgumentRefused,
    MetricsWriter,
    Monitor,
    MonitorClosed,
    RecordWriteError,
    Reporter,
    TrainrecordError,
)
from trainrecord.report import open_run


def _refusal(action: Callable[[], object], builtin: type[Exception]) -> TrainrecordError:
    """The exception ``action`` raises: a TrainrecordError that is also a ``builtin``."""
    with pytest.raises(TrainrecordError) as info:
        action()
    assert isinstance(info.value, builtin), type(info.value).__mro__
    return info.value


def _monitor(run_dir: Path, **options: object) -> Monitor:
    model = nn.Linear(3, 2)
    return Monitor(model, torch.optim.SGD(model.parameters(), lr=0.1), run_dir, **options)


def test_step_after_close_is_a_monitor_closed_runtime_error(tmp_path: Path) -> None:
    monitor = _monitor(tmp_path / "run")
    monitor.close()
    error = _refusal(lambda: monitor.step(0.5), RuntimeError)
    assert isinstance(error, MonitorClosed) and "after close()" in str(error)


@pytest.mark.parametrize(
    ("loss", "builtin", "says"),
    [
        ("0.5", TypeError, "loss must be a tensor, a number or None, got '0.5' (of type str)"),
        ([0.5, 0.4], TypeError, "got [0.5, 0.4] (of type list)"),
        (torch.zeros(0), ValueError, "the loss tensor has no elements"),
        (torch.ones((), dtype=torch.complex64), TypeError, "a complex tensor"),
        (10**400, ValueError, "beyond the range of a float"),
    ],
    ids=["str", "list", "empty", "complex", "huge-int"],
)
def test_a_wrong_loss_is_an_argument_refused_naming_it(
    tmp_path: Path, loss: object, builtin: type[Exception], says: str
) -> None:
    # check_every=1: the loss is read at every step (a complex one only at a check)
    with _monitor(tmp_path / "run", check_every=1) as monitor:
        error = _refusal(lambda: monitor.step(loss), builtin)  # type: ignore[arg-type]
    assert isinstance(error, ArgumentRefused) and error.argument == "loss"
    assert str(error).startswith("monitor.step(loss=...): ") and says in str(error)


def test_close_with_a_message_is_an_argument_refused(tmp_path: Path) -> None:
    monitor = _monitor(tmp_path / "run")
    error = _refusal(lambda: monitor.close("it broke"), TypeError)  # type: ignore[arg-type]
    assert isinstance(error, ArgumentRefused) and error.argument == "error"
    assert not monitor.closed  # the run stays open, as the message says
    monitor.close()


def test_a_model_the_monitor_cannot_measure_is_an_argument_refused(tmp_path: Path) -> None:
    lazy = nn.LazyLinear(2)
    error = _refusal(lambda: Monitor(lazy, None, tmp_path / "lazy"), ValueError)
    assert isinstance(error, ArgumentRefused) and "dry run" in str(error)
    error = _refusal(lambda: Monitor(nn.ReLU(), None, tmp_path / "relu"), ValueError)
    assert isinstance(error, ArgumentRefused) and "has no parameters" in str(error)
    other = nn.Linear(3, 2)
    optimizer = torch.optim.SGD(other.parameters(), lr=0.1)
    error = _refusal(lambda: Monitor(nn.Linear(3, 2), optimizer, tmp_path / "o"), ValueError)
    assert isinstance(error, ArgumentRefused) and error.argument == "optimizer"
    assert not any((tmp_path / name).exists() for name in ("lazy", "relu", "o"))


def test_a_reporters_wrong_arguments_are_argument_refused(tmp_path: Path) -> None:
    settings = settings_for("http://127.0.0.1:9/r")
    state = training_state()
    error = _refusal(lambda: Reporter({}, state), TypeError)  # type: ignore[arg-type]
    assert isinstance(error, ArgumentRefused) and error.argument == "settings"
    error = _refusal(lambda: Reporter(settings, None), TypeError)  # type: ignore[arg-type]
    assert isinstance(error, ArgumentRefused) and error.argument == "state"
    run = open_run(tmp_path / "models" / "pre" / "mixed", {"mode": "pre"})
    error = _refusal(lambda: Reporter(settings, state, run=run), ValueError)
    assert isinstance(error, ArgumentRefused) and error.argument == "run"
    reporter = Reporter(settings, lesion_state())
    error = _refusal(lambda: reporter.initial_validation(lesion_validation(), "both"), ValueError)
    assert isinstance(error, ArgumentRefused) and error.argument == "which"


def test_run_id_chosen_by_the_caller_is_an_argument_refused(tmp_path: Path) -> None:
    error = _refusal(lambda: open_run(tmp_path / "a", {"run_id": "mine"}), ValueError)
    assert isinstance(error, ArgumentRefused) and error.argument == "metadata"
    assert not (tmp_path / "a").exists()
    run = open_run(tmp_path / "b")
    error = _refusal(lambda: run.job_state("training", {}, run_id="mine"), ValueError)
    assert isinstance(error, ArgumentRefused) and error.argument == "run_id"


def test_a_planted_link_is_a_record_write_error_with_eloop(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").symlink_to(tmp_path / "victim")
    error = _refusal(lambda: MetricsWriter(run), OSError)
    assert isinstance(error, RecordWriteError) and error.errno == errno.ELOOP
    assert "is a symbolic link" in str(error) and error.filename == str(run / "metrics.jsonl")
    assert not (tmp_path / "victim").exists()
