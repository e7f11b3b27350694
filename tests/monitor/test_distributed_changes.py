"""The Monitor's session-11 changes under DDP (real gloo groups on CPU, 2 ranks, tiny
models; ranks in ``ddp_changes_worker``): an optimizer replaced alike on every rank is
adopted at one check everywhere and a later repair keeps parameters and optimizer state
identical; the one-repairing-Monitor rule refuses on every rank together; a forward pass
that raised on one rank at the first check leaves every rank deciding alike; a head
replaced alike on every rank is learnt again at one check, without a collective mismatch;
a record the writing rank cannot open (one it will not continue) is refused on every rank.

Found by the session-11 DDP check: the rule's refusal came before the ranks' agreement
collective at creation, so a rank whose process still held another repairing Monitor
raised alone and the others waited in that collective (gloo: its 25 s timeout here, or
"Connection closed by peer" once the refusing process ended; NCCL: a hang). Likewise the
writer's opening of its record, after that collective: rank 0 raised alone and the other
ranks trained on into the first check's collective.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.nn import functional as F

from tests.monitor import ddp_changes_worker as worker
from tests.monitor.conftest import events, read_run
from tests.monitor.ddp_agreement_worker import Mlp
from tests.monitor.test_distributed_agreement import on_ranks
from trainrecord.diary import verify
from trainrecord.monitor import Monitor


def _same_on_ranks(out: Path) -> None:
    """Parameters and optimizer state are equal on both ranks."""
    for kind in ("params", "state"):
        zero, one = (torch.load(out / f"{kind}{r}.pt") for r in (0, 1))
        assert sorted(zero) == sorted(one), kind
        assert zero or kind == "state"  # (plain SGD keeps none)
        for name, value in zero.items():
            assert torch.equal(value, one[name]), f"{kind} {name}"


def test_an_optimizer_replaced_on_every_rank_is_adopted_at_one_check(tmp_path: Path) -> None:
    seen = on_ranks(worker.replaced_optimizer, tmp_path)
    # the new Adam steps from step 2 on: the check of step 4 (step 3 before it) adopts it
    expected = ["old"] * 4 + ["new"] * 6
    assert [rank["result"]["followed"] for rank in seen] == [expected, expected]
    lines = read_run(tmp_path / "run")
    repairs = events(lines, "repair")
    assert [r["step"] for r in repairs] == [4] and repairs[0]["channels"] == [4, 5]
    assert repairs[0]["optimizer_slices_reset"] > 0  # the new Adam's moments, on every rank
    _same_on_ranks(tmp_path / "out")


def test_a_refusal_of_one_ranks_own_is_every_ranks(tmp_path: Path) -> None:
    # rank 0 still holds an open repairing Monitor on the model, rank 1 closed its own.
    # Before, rank 0 refused before the agreement collective and rank 1 waited in it: the
    # 25 s gloo timeout (RuntimeError) instead of a refusal
    seen = on_ranks(worker.stale_on_rank_zero, tmp_path)
    zero, one = (rank["result"] for rank in seen)
    assert zero["type"] == one["type"] == "ArgumentRefused"
    assert "another Monitor is open on this model" in zero["message"]
    assert "rank 0 of the process group refused its Monitor" in one["message"]
    assert "close() the other Monitor on that rank" in one["message"]
    assert zero["seconds"] < 10 and one["seconds"] < 10
    assert not (tmp_path / "run").exists()


def test_a_record_the_writer_will_not_continue_is_refused_on_every_rank(tmp_path: Path) -> None:
    # a re-run on a run_dir whose finished record was edited after it ended: the writer
    # (rank 0) refuses to continue it. Before, only rank 0 raised, after the ranks' creation
    # agreement; rank 1 trained on into the first check's collective and waited there for
    # it (the 25 s gloo timeout, or "Connection closed by peer"; NCCL: a hang)
    run = tmp_path / "run"
    model = Mlp()
    with Monitor(model, torch.optim.SGD(model.parameters(), lr=0.01), run, log=False) as monitor:
        loss = F.cross_entropy(model(torch.rand(4, 3, 8, 8)), torch.zeros(4, dtype=torch.long))
        loss.backward()
        monitor.step(loss)
    diary = run / "diary.jsonl"
    diary.write_bytes(diary.read_bytes().replace(b'"steps":1', b'"steps":2', 1))
    assert not verify(run).ok
    before = {path.name: path.read_bytes() for path in run.iterdir()}
    seen = on_ranks(worker.refused_record_on_writer, tmp_path, exits=False)
    zero, one = (rank["result"] for rank in seen)
    assert zero["type"] == "RecordRefused"
    assert "fails verification and is never appended to" in zero["message"]
    assert one["type"] == "ArgumentRefused"
    assert "rank 0 of the process group, which writes the record, could not" in one["message"]
    assert "its error says why" in one["message"]
    assert zero["seconds"] < 10 and one["seconds"] < 10
    assert [rank["exitcode"] for rank in seen] == [0, 0]
    assert {path.name: path.read_bytes() for path in run.iterdir()} == before  # untouched


def _decided_alike(tmp_path: Path, scenario: object, who: int) -> None:
    seen = on_ranks(scenario, tmp_path)
    assert [rank["result"]["raised"] for rank in seen] == [int(who == 0), int(who == 1)]
    zero, one = (rank["result"]["decisions"] for rank in seen)
    assert zero == one
    assert zero[0]["producers"]["fc1"][0] == "relu"  # learnt whole, from the pass that ran
    lines = read_run(tmp_path / "run")
    assert len(events(lines, "structure")) == 1
    repairs = events(lines, "repair")
    assert [r["channels"] for r in repairs] == [[4, 5]]
    _same_on_ranks(tmp_path / "out")


def test_a_forward_pass_that_raised_on_the_writer_at_the_first_check(tmp_path: Path) -> None:
    _decided_alike(tmp_path, worker.raised_on_writer, 0)


def test_a_forward_pass_that_raised_on_another_rank_at_the_first_check(tmp_path: Path) -> None:
    _decided_alike(tmp_path, worker.raised_on_other, 1)


def test_a_head_replaced_on_every_rank_is_learnt_again_at_one_check(tmp_path: Path) -> None:
    seen = on_ranks(worker.replaced_head, tmp_path)
    zero, one = (rank["result"]["decisions"] for rank in seen)
    assert zero == one
    lines = read_run(tmp_path / "run")
    assert [s["step"] for s in events(lines, "structure")] == [0, 4]
    repairs = events(lines, "repair")
    assert [(r["step"], r["channels"]) for r in repairs] == [(4, [4, 5])]
    _same_on_ranks(tmp_path / "out")
