"""One exception base: every error trainrecord raises on purpose is a ``TrainrecordError``,
and keeps its builtin base (so code that catches ``ValueError``, ``OSError``, ... still does).
Each case is a real call."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

import trainrecord
from tests.conftest import ROOT
from trainrecord import ArgumentRefused, TrainrecordError, WriterClosed
from trainrecord.diary import DiaryWriter, MetricsWriter
from trainrecord.errors import RecordRefused, RecordWriteError


def test_the_base_and_argument_refused_are_exported_from_trainrecord() -> None:
    from trainrecord.arguments import ArgumentRefused as where_defined

    assert trainrecord.ArgumentRefused is where_defined is ArgumentRefused
    assert {"TrainrecordError", "ArgumentRefused", "WriterClosed"} <= set(trainrecord.__all__)


def test_a_bad_argument_is_a_trainrecord_error(tmp_path: Path) -> None:
    with pytest.raises(TrainrecordError) as caught:
        DiaryWriter(3)  # type: ignore[arg-type]
    assert isinstance(caught.value, ArgumentRefused)
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, ValueError)
    with pytest.raises(TrainrecordError) as caught:
        DiaryWriter(tmp_path / "run", validate="no")  # type: ignore[arg-type]
    assert isinstance(caught.value, ArgumentRefused)


def test_a_refused_option_is_a_trainrecord_error(tmp_path: Path) -> None:
    with pytest.raises(TrainrecordError) as caught:
        DiaryWriter(tmp_path / "run", fsync_policy="bogus")  # type: ignore[arg-type]
    assert isinstance(caught.value, RecordRefused) and isinstance(caught.value, ValueError)


def test_a_write_after_close_is_a_trainrecord_error_and_a_value_error(tmp_path: Path) -> None:
    from tests.diary.helpers import BODIES

    writer = DiaryWriter(tmp_path / "run")
    writer.append("run_start", BODIES["run_start"])
    writer.close()
    with pytest.raises(TrainrecordError) as caught:
        writer.append("run_start", BODIES["run_start"])
    assert isinstance(caught.value, WriterClosed) and isinstance(caught.value, ValueError)
    assert "closed" in str(caught.value)

    metrics = MetricsWriter(tmp_path / "run2")
    metrics.close()
    with pytest.raises(TrainrecordError) as caught:
        metrics.append({"step": 0, "loss": 1.0, "grad": {}, "stuck": {}})
    assert isinstance(caught.value, WriterClosed) and isinstance(caught.value, ValueError)


WRITE_FAILS = """
import resource, signal, sys
from trainrecord import TrainrecordError
from trainrecord.diary import MetricsWriter
from trainrecord.errors import RecordWriteError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (2048, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
writer = MetricsWriter(sys.argv[1])
try:
    for step in range(1000):
        writer.append({"step": step, "loss": 1.0, "grad": {"conv1": 0.125}, "stuck": {}})
except TrainrecordError as exc:
    assert isinstance(exc, RecordWriteError) and isinstance(exc, OSError), type(exc)
    print("caught")
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file-size limits")
def test_a_failed_write_is_a_trainrecord_error_and_an_oserror(tmp_path: Path) -> None:
    assert issubclass(RecordWriteError, OSError)
    proc = subprocess.run(
        [sys.executable, "-c", WRITE_FAILS, str(tmp_path / "run")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "caught", proc.stdout + proc.stderr


def test_a_report_not_delivered_is_a_trainrecord_error_and_a_runtime_error() -> None:
    from tests.report.conftest import settings_for, training_state
    from trainrecord.report import ReportNotDelivered, report_status

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = settings_for(f"http://127.0.0.1:{port}/api/v2/report", timeout=2.0)
    with pytest.raises(TrainrecordError) as caught:
        report_status(settings, training_state(), "stopped")
    assert isinstance(caught.value, ReportNotDelivered)
    assert isinstance(caught.value, RuntimeError)


def test_an_unsupported_model_is_a_trainrecord_error_and_a_type_error(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from torch import nn

    from trainrecord.monitor import Monitor, UnsupportedModel

    class FullyShardedDataParallel(nn.Module):  # what the monitor sees of an FSDP wrapper
        pass

    with pytest.raises(TrainrecordError) as caught:
        Monitor(FullyShardedDataParallel(), None, tmp_path / "fsdp")
    assert isinstance(caught.value, UnsupportedModel) and isinstance(caught.value, TypeError)


@pytest.mark.parametrize("argument", ["model", "optimizer"])
def test_a_monitor_model_or_optimizer_of_the_wrong_type_is_a_trainrecord_error(
    tmp_path: Path, argument: str
) -> None:
    """Docs review: a wrong model or optimizer raised a plain TypeError, outside the family
    the docs tell callers to catch; it is an ArgumentRefused (still a TypeError) now."""
    torch = pytest.importorskip("torch")
    from trainrecord.monitor import Monitor

    model = torch.nn.Linear(2, 2)
    args = ("not a model", None) if argument == "model" else (model, "not an optimizer")
    with pytest.raises(TrainrecordError) as caught:
        Monitor(*args, run_dir=tmp_path / "run")
    assert isinstance(caught.value, ArgumentRefused) and isinstance(caught.value, TypeError)
    assert caught.value.argument == argument
    assert not (tmp_path / "run").exists()
