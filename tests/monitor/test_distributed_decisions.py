"""Under DDP every decision that leads to a collective is the writing rank's, and every
rank keeps making the checks' collectives, whatever happens to the writer's record.

Real gloo process groups on CPU (2 ranks, 25 s collective timeout: see
``ddp_agreement_worker``), tiny models. Found by the session-10 review of the DDP rework
(4eb722f): each rank learnt the structure from its own first forward pass (routing that
differs per rank: each repaired another producer, and the broadcasts overwrote one
producer's parameters with another's), the writer stopped making the checks' collectives
once its disk was full (gloo aborted the other rank), the reduced extremes came back as
float32 (a float64 model's 1e-50 outputs judged silent), and ranks whose checks never met
(start steps off by a non-multiple of check_every) hit the collective timeout instead of
RanksDisagree.
"""

from __future__ import annotations

from pathlib import Path

import torch

from tests.monitor import ddp_decisions_worker as worker
from tests.monitor.conftest import events, metrics, read_run
from tests.monitor.test_distributed_agreement import on_ranks
from trainrecord.diary import verify


def _same_parameters(out: Path) -> None:
    zero, one = (torch.load(out / f"params{r}.pt") for r in (0, 1))
    for name, value in zero.items():
        assert torch.equal(value, one[name]), name


def test_ranks_that_routed_differently_repair_the_writers_decision(tmp_path: Path) -> None:
    # before, rank 0 learnt relu_a and repaired a, rank 1 learnt relu_b and repaired b: the
    # broadcasts paired a's tensors with b's, and rank 1's b became rank 0's a (lr=0: the
    # replicas must stay equal)
    seen = on_ranks(worker.routed_repair, tmp_path)
    assert seen == [{"result": None}, {"result": None}]
    _same_parameters(tmp_path / "out")
    repairs = events(read_run(tmp_path / "run"), "repair")
    assert repairs and {r["layer"] for r in repairs} == {"a"}
    assert {0, 1, 2, 3} <= set(repairs[0]["channels"])
    assert verify(tmp_path / "run").ok


def test_a_float64_model_keeps_its_precision_across_ranks(tmp_path: Path) -> None:
    # fc1's units all output 1e-50: flat, alive. Before, the reduced maxima were cast to
    # float32 (0.0) and the units reported silent, as one process does not
    seen = on_ranks(worker.float64_model, tmp_path)
    assert seen == [{"result": None}, {"result": None}]
    assert [r["stuck"]["fc1"] for r in metrics(tmp_path / "run")] == [[0, 6, 0, 0]] * 2


def test_a_full_disk_on_the_writer_stops_every_rank_checking_together(tmp_path: Path) -> None:
    # rank 0's files cannot grow (RLIMIT_FSIZE): recording stops, training goes on on
    # every rank. Before, rank 0 stopped making the checks' collectives while rank 1 went
    # on: gloo aborted rank 1 (SIGABRT; NCCL would hang)
    seen = on_ranks(worker.full_disk_on_writer, tmp_path)
    assert [rank["result"]["done"] for rank in seen] == [8, 8]
    # the checks of steps 0 and 2 (where the record failed, after its collectives); at
    # step 4 every rank learnt so through the check's sums and stopped checking
    assert [rank["result"]["checks"] for rank in seen] == [2, 2]
    assert [m for m in seen[0]["result"]["said"] if "recording stopped at step 2" in m]
    assert not [m for m in seen[1]["result"]["said"] if "recording stopped" in m]
    _same_parameters(tmp_path / "out")
    assert len(metrics(tmp_path / "run")) == 1  # the row of step 0


def test_ranks_whose_checks_never_meet_are_refused_at_creation(tmp_path: Path) -> None:
    # start_step 0 and 1 with check_every=2: before, each rank's check collective paired
    # with the other's DDP gradient bucket: the 25 s gloo timeout on both ranks
    seen = on_ranks(worker.offset_start_steps, tmp_path)
    for rank in seen:
        assert rank["error"]["type"] == "RanksDisagree"
        assert "start_step" in rank["error"]["message"]
    assert not (tmp_path / "run0").exists() and not (tmp_path / "run1").exists()


def test_ranks_with_other_check_every_are_refused_at_creation(tmp_path: Path) -> None:
    seen = on_ranks(worker.other_check_every, tmp_path)
    for rank in seen:
        assert rank["error"]["type"] == "RanksDisagree"
        assert "check_every" in rank["error"]["message"]
