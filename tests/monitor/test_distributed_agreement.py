"""Under DDP every rank makes the same decisions from the same reduced numbers.

Real gloo process groups on CPU (2 ranks; 3 for the sub-group), tiny models, a 25 s
collective timeout (see ``ddp_agreement_worker``). Found by a probe of the Monitor under
DistributedDataParallel: before, each rank all_reduced the extremes of the producers it
had measured (sizes differed: gloo aborted a process; sizes equal: one producer's channels
paired with another's), counted values as its own times world_size (ranks disagreed on
repairs: one broadcast, the other did not), reduced a loss only when given, let gloo's MAX
drop a NaN, used the default group under a sub-group DDP, and counted a check before its
collective failed (a record that did not verify, and close() raised RecordRefused).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp

from tests.monitor import ddp_agreement_worker as worker
from tests.monitor.conftest import events, metrics, read_run
from trainrecord.diary import verify


def on_ranks(
    scenario: Any, tmp_path: Path, world: int = 2, *, exits: bool = True, existing: bool = False
) -> list[Any]:
    """Run ``scenario`` on ``world`` gloo ranks; what each rank saw (its error, if any).
    ``exits``: every rank must exit normally (else each one's exit code is in its dict);
    ``existing``: the ranks' ``out`` folder is made already."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=existing)
    context = mp.spawn(
        scenario,
        args=(world, str(tmp_path / "init"), str(tmp_path / "run"), str(out)),
        nprocs=world,
        join=False,
    )
    for process in context.processes:
        process.join(60)
        if process.exitcode is None:
            process.kill()
            process.join()
    codes = [p.exitcode for p in context.processes]
    if exits:
        assert codes == [0] * world
    seen = [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]
    if not exits:
        for rank, code in zip(seen, codes, strict=True):
            rank["exitcode"] = code
    return seen


def test_a_producer_one_rank_skipped_is_reduced_in_its_own_slots(tmp_path: Path) -> None:
    # rank 0 runs branch a only (units 0-3 dead), rank 1 branch b only; before, b's live
    # maxima were max-reduced into a's slots (a's dead units reported alive), and at the
    # step where rank 1's batch is one sample (fc1 not measured there) gloo aborted
    seen = on_ranks(worker.swapped_branches, tmp_path)
    assert seen == [{"result": None}, {"result": None}]
    rows = metrics(tmp_path / "run")
    # only rank 0 runs a: its units 0-3 (and any other off on rank 0's batches) are silent
    assert len(rows) == 3 and all(r["stuck"]["a"][2] >= 4 for r in rows)
    first = events(read_run(tmp_path / "run"), "channels")[0]
    assert first["layer"] == "a" and {0, 1, 2, 3} <= set(first["observed"])
    assert verify(tmp_path / "run").ok


def test_values_are_summed_over_ranks_and_repairs_agree(tmp_path: Path) -> None:
    # 16 + 2 = 18 values per channel per check: silent (>= 20 values) from the 2nd check,
    # repaired (>= 64 values over >= 2 checks) at the 4th; before, rank 0 counted 32 and
    # rank 1 4 per check: rank 0 repaired (a broadcast) and rank 1 did not (a hang)
    seen = on_ranks(worker.uneven_batches, tmp_path)
    assert seen == [{"result": None}, {"result": None}]
    rows = metrics(tmp_path / "run")
    assert [r["stuck"]["fc1"][2] for r in rows[:4]] == [0, 2, 2, 2]
    repairs = events(read_run(tmp_path / "run"), "repair")
    assert [(r["step"], r["layer"], r["channels"]) for r in repairs] == [(3, "fc1", [4, 5])]
    zero, one = (torch.load(tmp_path / "out" / f"params{r}.pt") for r in (0, 1))
    for name, value in zero.items():
        assert torch.equal(value, one[name]), name


def test_a_nan_on_one_rank_is_no_verdict_on_every_rank(tmp_path: Path) -> None:
    # before, gloo's MAX dropped rank 1's NaN maxima: units 2-3, alive on rank 1, silent
    seen = on_ranks(worker.nan_on_rank_one, tmp_path)
    assert seen == [{"result": None}, {"result": None}]
    assert [r["stuck"]["fc1"] for r in metrics(tmp_path / "run")] == [[0, 0, 0, 0]] * 2
    assert not events(read_run(tmp_path / "run"), "channels")


def test_a_loss_given_on_one_rank_only(tmp_path: Path) -> None:
    # before, the loss's all_reduce ran on rank 0 alone, paired with the activations' on
    # rank 1: gloo aborted rank 0 (no run_end)
    seen = on_ranks(worker.loss_on_rank_zero, tmp_path)
    assert seen == [{"result": None}, {"result": None}]
    assert [r["loss"] for r in metrics(tmp_path / "run")] == [3.0, 3.0]
    assert verify(tmp_path / "run").ok


def test_ranks_at_other_steps_at_one_check_raise_a_clear_error(tmp_path: Path) -> None:
    # rank 1 resumed with start_step=2, rank 0 with 0: their first checks (steps 0 and 2)
    # were paired without a word. Refused at the Monitors' creation (since the review of
    # session 10: before, at their first check), before any file
    seen = on_ranks(worker.other_start_steps, tmp_path)
    for rank in seen:
        assert rank["error"]["type"] == "RanksDisagree"
        assert "start_step (0 on one rank, 2 on another)" in rank["error"]["message"]
    assert not (tmp_path / "run0").exists() and not (tmp_path / "run1").exists()


def test_a_first_check_that_fails_leaves_a_verified_record_and_its_error(
    tmp_path: Path,
) -> None:
    # rank 1 raised before its first check: rank 0's check failed in its collective;
    # before, run_end said 1 check in 0 steps, the record did not verify and close()
    # raised RecordRefused in place of the gloo error
    seen = on_ranks(worker.raise_on_rank_one, tmp_path, exits=False)
    # (rank 1, which tears gloo down under rank 0's collective, may die in gloo's teardown)
    assert seen[1]["error"] == {"type": "ValueError", "message": "rank 1 stops"}
    assert seen[0]["exitcode"] == 0
    assert seen[0]["error"]["type"] == "RuntimeError"  # gloo's, not RecordRefused
    end = read_run(tmp_path / "run")[-1]
    assert end["event"] == "run_end" and (end["steps"], end["checks"]) == (0, 0)
    assert end["error"]["type"] == "RuntimeError"
    result = verify(tmp_path / "run")
    assert result.ok and result.sealed, result.failure


@pytest.mark.timeout(60)
def test_ddp_over_a_sub_group_uses_its_group(tmp_path: Path) -> None:
    # ranks 1 and 2 train DDP(process_group=new_group([1, 2])); before, the Monitor used
    # the default group: no rank wrote, and its collectives hung
    seen = on_ranks(worker.sub_group, tmp_path, world=3)
    assert seen == [{"result": None}] * 3
    assert not (tmp_path / "run2").exists()
    lines = read_run(tmp_path / "run1")
    distributed = events(lines, "manifest")[0]["distributed"]
    assert distributed["world_size"] == 2 and distributed["writer_rank"] == 1
    assert "[1, 2]" in distributed["process_group"]
    # labels 1 and 2: the loss recorded is the mean over the group's two ranks
    assert len(metrics(tmp_path / "run1")) == 2
    assert verify(tmp_path / "run1").ok


def test_join_for_uneven_inputs_is_refused_on_every_rank_at_the_first_check(
    tmp_path: Path,
) -> None:
    # before, the rank out of inputs shadowed DDP's collectives while the other ran a
    # check's: gloo aborted it (SIGABRT) and rank 0 failed at its next check
    seen = on_ranks(worker.join_uneven, tmp_path)
    for rank in seen:
        assert rank["error"]["type"] == "JoinRefused"
        assert "throw_on_early_termination=True" in rank["error"]["message"]
    end = read_run(tmp_path / "run")[-1]
    assert end["event"] == "run_end" and end["error"]["type"] == "JoinRefused"
    assert verify(tmp_path / "run").ok


def test_join_that_stops_every_rank_together_is_allowed(tmp_path: Path) -> None:
    # throw_on_early_termination=True: every rank stops in DDP's forward, before any check
    seen = on_ranks(worker.join_throwing, tmp_path)
    for rank in seen:
        assert rank["error"]["type"] == "RuntimeError"
        assert "exhausted" in rank["error"]["message"]
    end = read_run(tmp_path / "run")[-1]
    assert (end["steps"], end["checks"]) == (2, 1)
    assert verify(tmp_path / "run").ok


def test_only_the_writing_rank_loads_the_key_and_warns(tmp_path: Path) -> None:
    # before, rank 1 loaded the signing key too (a key on node 0 only: RecordRefused at its
    # start, rank 0 then failed in gloo), and every rank logged the Monitor's warnings
    from trainrecord.diary.keys import generate_keypair

    (tmp_path / "out").mkdir()
    generate_keypair(tmp_path / "out" / "signer")
    seen = on_ranks(worker.key_on_rank_zero, tmp_path, existing=True)
    assert [len([m for m in rank["result"] if "step() was called" in m]) for rank in seen] == [
        1,
        0,
    ]
    result = verify(tmp_path / "run", public_key=tmp_path / "out" / "signer.pub")
    assert result.ok and result.sealed, result.failure
    assert (tmp_path / "run" / "record.sig").exists()


def test_a_model_without_producers_reduces_the_loss_alone(tmp_path: Path) -> None:
    seen = on_ranks(worker.no_producers, tmp_path)
    assert seen == [{"result": None}, {"result": None}]
    rows = metrics(tmp_path / "run")
    assert len(rows) == 2 and all(r["stuck"] == {} and r["loss"] > 0 for r in rows)
