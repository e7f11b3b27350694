"""The monitor on a CUDA device (runs where a GPU is present) and the TensorBoard sink
(runs where tensorboard is installed)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from tests.monitor.conftest import TinyCNN, batches, events, metrics, read_run
from tests.monitor.test_events import zero_block2
from trainrecord.monitor import Monitor

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@cuda
def test_zeroed_layer_certified_and_repaired_on_cuda(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with Monitor(
        model, optimizer, run_dir, check_every=2, repair=True, repair_seed=1, warmup=3
    ) as monitor:
        for step, (x, y) in enumerate(batches(30)):
            if step == 10:
                zero_block2(model, optimizer)
            loss = F.cross_entropy(model(x.cuda()), y.cuda())
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    assert [(c["step"], c["layer"], c["count"]) for c in events(lines, "certificate")] == [
        (10, "conv2", 8)
    ]
    assert [(r["step"], r["layer"]) for r in events(lines, "repair")] == [(10, "conv2")]
    assert metrics(run_dir)[-1]["grad"]["conv2"] > 0


@cuda
def test_fp16_grad_scaler_skipped_step_on_cuda(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0**16)
    with Monitor(model, optimizer, run_dir, check_every=1, scaler=scaler) as monitor:
        for step, (x, y) in enumerate(batches(6)):
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(model(x.cuda()), y.cuda())
            scaler.scale(loss).backward()
            if step == 3:
                model.conv2.weight.grad[0, 0, 0, 0] = float("inf")
            monitor.step(loss)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    skipped = events(read_run(run_dir), "skipped_step")
    assert [(s["step"], s["layers"]) for s in skipped] == [(3, ["conv2"])]
    assert skipped[0]["scale"] == 2.0**16


@cuda
@pytest.mark.parametrize("shape", [(4, 3, 1, 1), (4, 3, 2, 5), (2, 3, 12, 12), (5, 3)])
def test_channel_extremes_on_cuda_match_the_cpu(shape: tuple[int, ...]) -> None:
    from trainrecord.monitor.channels import channel_extremes

    torch.manual_seed(0)
    x = torch.randn(shape)
    x[0, 1] = float("nan")
    for dim in (1, -1):
        cpu = channel_extremes(x, dim)
        gpu = channel_extremes(x.cuda(), dim)
        for a, b in zip(cpu, gpu, strict=True):
            assert torch.equal(a.isnan(), b.cpu().isnan())
            assert torch.equal(a.nan_to_num(7.0), b.cpu().nan_to_num(7.0))


def test_tensorboard_sink_writes_event_files(run_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    board = tmp_path / "tb"
    with Monitor(
        model, optimizer, run_dir, check_every=2, tensorboard=str(board), warmup=3
    ) as monitor:
        for step, (x, y) in enumerate(batches(16)):
            if step == 8:
                zero_block2(model, optimizer)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    assert not events(lines, "sink_error")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = list(board.glob("events.out.tfevents.*"))
    assert files
    accumulator = EventAccumulator(str(board))
    accumulator.Reload()
    assert len(accumulator.Scalars("trainrecord/loss")) == 8
    assert "trainrecord/grad/conv2" in accumulator.Tags()["scalars"]
