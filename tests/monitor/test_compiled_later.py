"""A model the loop compiles after the Monitor was created (``torch.compile(model)`` called
in the loop on the module the Monitor holds, or ``model.compile()``): the manifest says it
is compiled once a check sees it run compiled; and ``check_every=1`` with a compiled model,
where no step runs the compiled code, is said (TorchDynamo's eager backend)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tests.monitor.conftest import TinyCNN, events, read_run, train
from tests.monitor.test_events import sgd
from trainrecord.monitor import Monitor

dynamo = pytest.importorskip("torch._dynamo")
counters = pytest.importorskip("torch._dynamo.utils").counters

COMPILED_NOTE = "the model is compiled (torch.compile)"


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Iterator[None]:
    dynamo.reset()
    counters.clear()
    yield
    dynamo.reset()


def compiled_notes(run_dir: Path) -> list[tuple[int, list[str]]]:
    """(step, the compiled notes) of every manifest."""
    return [
        (m["step"], [n for n in m["notes"] if n.startswith(COMPILED_NOTE)])
        for m in events(read_run(run_dir), "manifest")
    ]


# torch's own warning, once, when a module is compiled while global module hooks exist (the
# Monitor's check hooks; README, torch.compile): expected here, not the Monitor's
@pytest.mark.filterwarnings("ignore:Using `torch.compile\\(module\\)` when there are global hooks")
def test_a_model_compiled_in_the_loop_after_the_monitor_is_noted(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)  # (creating it loads TorchDynamo: every check runs eagerly)
    with Monitor(model, optimizer, run_dir, check_every=3) as monitor:
        compiled = torch.compile(model, backend="eager")
        train(compiled, optimizer, monitor, 8)  # type: ignore[arg-type]
    assert counters["stats"]["unique_graphs"] == 1  # compiled code ran between checks
    assert sum(counters["graph_break"].values()) == 0
    notes = compiled_notes(run_dir)
    assert len(notes) == 1 and notes[0][0] == 0  # was: no compiled note
    assert "other steps run the compiled code" in notes[0][1][0]


def test_model_compile_in_place_later_writes_a_manifest_saying_so(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    with Monitor(model, optimizer, run_dir, check_every=2) as monitor:
        train(model, optimizer, monitor, 2)
        model.compile(backend="eager")
        train(model, optimizer, monitor, 4)
    notes = compiled_notes(run_dir)
    assert [(step, len(n)) for step, n in notes] == [(0, 0), (2, 1)]


def test_check_every_one_with_a_compiled_model_is_said(
    run_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    compiled = torch.compile(model, backend="eager")
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord.monitor"),
        Monitor(compiled, optimizer, run_dir, check_every=1) as monitor,
    ):
        train(compiled, optimizer, monitor, 4)  # type: ignore[arg-type]
    assert counters["stats"]["unique_graphs"] == 0  # every step ran eagerly
    said = [r for r in caplog.records if "check_every=1 with a compiled model" in r.message]
    assert len(said) == 1
    assert "the compiled code never runs" in compiled_notes(run_dir)[0][1][0]
