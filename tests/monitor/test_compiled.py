"""torch.compile: layer names without ``_orig_mod``, check steps run eagerly with their hooks,
and every other step runs compiled code that never saw a hook (TorchDynamo's eager backend:
the same tracing as inductor, without a C++ compiler)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

from tests.monitor.conftest import TinyCNN, events, read_run, train
from tests.monitor.test_events import sgd, zero_block2
from trainrecord.monitor import Monitor
from trainrecord.monitor.distributed import unwrap

dynamo = pytest.importorskip("torch._dynamo")
counters = pytest.importorskip("torch._dynamo.utils").counters


def stance() -> str:
    """The compiler's stance now."""
    return str(dynamo.eval_frame._stance.stance)


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Iterator[None]:
    dynamo.reset()
    counters.clear()
    yield
    dynamo.reset()


def zeroed_run(run_dir: Path, compile_it: bool) -> list[dict[str, object]]:
    """The zeroed-block scenario, the model compiled (and run once unmonitored) or not."""
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    trained: nn.Module = torch.compile(model, backend="eager") if compile_it else model  # type: ignore[assignment]
    train(trained, optimizer, None, 2)  # compiled with no hook anywhere (as most loops start)
    with Monitor(trained, optimizer, run_dir, check_every=2, warmup=3) as monitor:
        train(trained, optimizer, monitor, 10)
        zero_block2(model, optimizer)
        train(trained, optimizer, monitor, 10, seed=1)
        assert stance() == "force_eager"  # step 20 is a check: armed (TorchDynamo is loaded)
    assert stance() == "default"
    return read_run(run_dir)


def test_a_compiled_model_is_checked_exactly_like_the_uncompiled_one(tmp_path: Path) -> None:
    lines = zeroed_run(tmp_path / "compiled", compile_it=True)
    plain = zeroed_run(tmp_path / "plain", compile_it=False)
    assert lines[0]["layers"] == ["block1.0", "block1.1", "conv2", "bn2", "head"]
    assert events(lines, "structure")[0]["pairs"] == {"block1.0": "block1.1", "conv2": "bn2"}
    assert any("compiled" in note for note in events(lines, "manifest")[0]["notes"])
    # the dead channels were seen by the hooks (certificates examine observed channels only)
    assert events(lines, "certificate")[0]["layer"] == "conv2"
    assert [c["layer"] for c in events(lines, "channels")] == ["conv2", "head"]

    def story(run: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return [(x["event"], x.get("step"), x.get("layer")) for x in run]

    assert story(lines) == story(plain)


def test_steps_between_checks_run_one_compiled_graph_without_breaks(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    compiled = torch.compile(model, backend="eager")
    # the monitor arms step 0's hooks before the model's first (compiling) forward pass
    with Monitor(compiled, optimizer, run_dir, check_every=3) as monitor:
        train(compiled, optimizer, monitor, 12)
    assert counters["stats"]["unique_graphs"] == 1
    assert sum(counters["graph_break"].values()) == 0
    assert {line["event"] for line in read_run(run_dir)} == {
        "run_start",
        "structure",
        "manifest",
        "run_end",
    }


def test_the_stance_is_given_back_when_the_loop_raises(run_dir: Path) -> None:
    compiled = torch.compile(TinyCNN(), backend="eager")
    with pytest.raises(RuntimeError, match="boom"), Monitor(compiled, None, run_dir, check_every=2):
        assert stance() == "force_eager"  # armed for the check at step 0
        raise RuntimeError("boom")
    assert stance() == "default"
    assert read_run(run_dir)[-1]["event"] == "run_end"


def test_a_user_stance_is_restored_not_reset(run_dir: Path) -> None:
    torch.compiler.set_stance("eager_on_recompile")
    try:
        with Monitor(torch.compile(TinyCNN(), backend="eager"), None, run_dir):
            assert stance() == "force_eager"
        assert stance() == "eager_on_recompile"
    finally:
        torch.compiler.set_stance("default")


@pytest.mark.parametrize("order", ["compile(DataParallel)", "DataParallel(compile)"])
def test_unwrap_peels_compile_and_data_parallel_in_any_nesting(order: str) -> None:
    inner = TinyCNN()
    if order == "compile(DataParallel)":
        wrapped: nn.Module = torch.compile(nn.DataParallel(inner), backend="eager")  # type: ignore[assignment]
    else:
        wrapped = nn.DataParallel(torch.compile(inner, backend="eager"))  # type: ignore[arg-type]
    assert unwrap(wrapped) == (inner, "DataParallel", None)


SCRIPT = """
import sys, tempfile, torch
from torch.nn import functional as F
sys.path.insert(0, {root!r})
from tests.monitor.conftest import TinyCNN, batches
from trainrecord.monitor import Monitor
assert "torch._dynamo" not in sys.modules
model = TinyCNN()
with Monitor(model, None, tempfile.mkdtemp(), check_every=2) as monitor:
    compiled = torch.compile(model, backend="eager")  # after the monitor: step 0 is armed
    for x, y in batches(4):
        F.cross_entropy(compiled(x), y).backward()
        monitor.step()
"""


def test_compiling_after_the_monitor_was_created_is_told_once() -> None:
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(root=root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("torch.compile was first used after the monitor was created") == 1


def test_two_monitors_share_the_eager_window(tmp_path: Path) -> None:
    generator, critic = TinyCNN(), TinyCNN()
    a = Monitor(torch.compile(generator, backend="eager"), None, tmp_path / "g", check_every=2)
    b = Monitor(torch.compile(critic, backend="eager"), None, tmp_path / "d", check_every=2)
    assert stance() == "force_eager"
    a.close()  # b is still armed for its check: its window must stay eager
    assert stance() == "force_eager"
    b.close()
    assert stance() == "default"


def test_a_monitor_dropped_unclosed_gives_back_its_hooks_stance_and_model(
    run_dir: Path,
) -> None:
    """A loop that raised at a check step (a notebook cell) leaves its Monitor unclosed and
    armed. Once it is collected: no global hook of it measures later forward passes or
    holds the model, compiled code elsewhere runs compiled again, its sinks' thread ends."""
    import gc
    import threading
    import weakref

    from torch.nn.modules import module as torch_module

    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    compiled = torch.compile(model, backend="eager")
    hooks_before = len(torch_module._global_forward_hooks)
    monitor = Monitor(compiled, optimizer, run_dir, check_every=2)  # logging sink: a thread
    with pytest.raises(RuntimeError, match="a bad batch"):
        for step in range(4):
            if step == 2:
                raise RuntimeError("a bad batch")  # at a check step, its hooks installed
            train(compiled, optimizer, monitor, 1, seed=step)
    assert stance() == "force_eager"
    assert len(torch_module._global_forward_hooks) > hooks_before
    alive = weakref.ref(model.conv2.weight)
    del monitor, model, compiled, optimizer
    gc.collect()
    assert len(torch_module._global_forward_hooks) == hooks_before
    assert stance() == "default"
    assert alive() is None  # nothing of the Monitor's holds the model any more
    sinks = [t for t in threading.enumerate() if t.name == "trainrecord-sinks"]
    for thread in sinks:
        thread.join(5)
    assert not any(t.is_alive() for t in sinks)
