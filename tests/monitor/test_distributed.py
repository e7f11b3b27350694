"""DistributedDataParallel with two real gloo processes on CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.multiprocessing as mp
from torch.nn import functional as F

from tests.monitor import ddp_worker
from tests.monitor.conftest import TinyMLP, events, metrics, read_run
from trainrecord.monitor import Monitor


def on_two_ranks(worker: Any, tmp_path: Path, *dirs: Path) -> None:
    """Run ``worker(rank, 2, init_file, *dirs)`` in two processes (gloo, file init)."""
    mp.spawn(worker, args=(2, str(tmp_path / "init"), *map(str, dirs)), nprocs=2, join=True)


def test_ddp_two_ranks_one_writer_identical_repair(tmp_path: Path) -> None:
    run_dir, out_dir = tmp_path / "run", tmp_path / "out"
    out_dir.mkdir()
    on_two_ranks(ddp_worker.main, tmp_path, run_dir, out_dir)
    lines = read_run(run_dir)
    assert len(events(lines, "run_start")) == 1 and len(events(lines, "run_end")) == 1
    assert lines[0]["layers"] == ["block1.0", "block1.1", "conv2", "bn2", "head"]
    manifest = events(lines, "manifest")[0]
    assert manifest["distributed"]["world_size"] == 2
    assert manifest["distributed"]["backend"] == "gloo"
    assert manifest["distributed"]["wrapper"] == "DistributedDataParallel"
    repair = events(lines, "repair")
    assert [(r["step"], r["layer"]) for r in repair] == [(8, "conv2")]
    assert repair[0]["rng"] == "global torch RNG"
    assert lines[-1]["steps"] == 16
    rank0 = torch.load(out_dir / "rank0.pt")
    rank1 = torch.load(out_dir / "rank1.pt")
    # BatchNorm running statistics are local between forwards (DDP broadcasts rank 0's at
    # the start of each forward), so parameters and optimizer state are what must agree.
    for kind in ("params", "momentum"):
        assert rank0[kind].keys() == rank1[kind].keys()
        for name, value in rank0[kind].items():
            assert torch.equal(value, rank1[kind][name]), (kind, name)


def test_observations_are_reduced_across_ranks(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    on_two_ranks(ddp_worker.opposite_inputs, tmp_path, run_dir)
    rows = metrics(run_dir)
    # each unit is silent (and constant) on one rank's batch, but not over both ranks
    assert [r["stuck"]["fc1"] for r in rows] == [[0, 0, 0, 0]] * 3
    assert not events(read_run(run_dir), "channels")
    # the control: rank 0's batch alone shows about half the units silent
    torch.manual_seed(0)
    model = TinyMLP()
    with torch.no_grad():
        model.fc1.bias.zero_()
    with Monitor(model, None, tmp_path / "alone", check_every=1, silent_min_values=1) as monitor:
        loss = F.cross_entropy(
            model(torch.full((8, 3, 8, 8), 1.0)), torch.zeros(8, dtype=torch.long)
        )
        loss.backward()
        monitor.step(loss)
    silent = metrics(tmp_path / "alone")[0]["stuck"]["fc1"][2]
    assert 0 < silent < 16


def test_a_loss_given_as_a_number_is_the_mean_over_ranks(tmp_path: Path) -> None:
    # An integration probe: monitor.step(loss.item()) under DDP recorded rank 0's loss
    # (0.8068; the mean of the two ranks was 0.6195), and a NaN on rank 1 went unseen.
    run_dir = tmp_path / "run"
    on_two_ranks(ddp_worker.number_loss, tmp_path, run_dir)
    assert [r["loss"] for r in metrics(run_dir)] == [2.0, 2.0]
