"""16 real processes race to write the same witness: one wins, 15 are refused, no reader
ever sees a partial file, no temporary file is left."""

from __future__ import annotations

import json
import multiprocessing as mp
import time
from pathlib import Path
from typing import Any

import pytest

from trainrecord import schemas
from trainrecord.errors import RecordRefused
from trainrecord.foundry import WITNESS_SCHEMA, write_witness

WRITERS = 16


def _writer(folder: str, index: int, barrier: Any, out: Any) -> None:
    barrier.wait()
    env = {"FOUNDRY_RUN_ID": str(1000 + index), "SLURM_RESTART_COUNT": "4"}
    try:
        path = write_witness(
            folder, config={"writer": index}, device="cpu", wall_seconds=index, env=env
        )
        out.put(("won", index, str(path)))
    except RecordRefused as exc:
        out.put(("refused", index, exc.rules))
    except BaseException as exc:  # anything else is a failure of the test
        out.put(("error", index, repr(exc)))


def _reader(folder: str, barrier: Any, out: Any) -> None:
    path = Path(folder) / "observed.attempt4.json"
    barrier.wait()
    seen, bad = 0, []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and seen < 200:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        seen += 1
        try:
            doc = json.loads(data)
            if schemas.problems(doc, WITNESS_SCHEMA):
                bad.append(data[:80])
        except ValueError:
            bad.append(data[:80])
    out.put(("reader", seen, bad))


@pytest.mark.parametrize("round_", range(3))
def test_sixteen_processes_one_witness(tmp_path: Path, round_: int) -> None:
    """witness.write.atomic_no_overwrite, with the results folder created in the race."""
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    folder = tmp_path / "not-yet" / "results"
    barrier = ctx.Barrier(WRITERS + 1)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(str(folder), i, barrier, out)) for i in range(WRITERS)
    ]
    procs.append(ctx.Process(target=_reader, args=(str(folder), barrier, out)))
    for proc in procs:
        proc.start()
    results = [out.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    writers = [r for r in results if r[0] != "reader"]
    (reader,) = [r for r in results if r[0] == "reader"]
    won = [r for r in writers if r[0] == "won"]
    refused = [r for r in writers if r[0] == "refused"]
    assert not [r for r in writers if r[0] == "error"], writers
    assert len(won) == 1 and len(refused) == WRITERS - 1
    assert all(r[2] == ["witness.path.exists"] for r in refused)
    assert [p.name for p in folder.iterdir()] == ["observed.attempt4.json"]
    doc = json.loads((folder / "observed.attempt4.json").read_text(encoding="utf-8"))
    assert schemas.problems(doc, WITNESS_SCHEMA) == []
    winner = won[0][1]
    assert doc["experiment_id"] == 1000 + winner and doc["wall_seconds"] == winner
    assert reader[2] == [], f"a reader saw a partial witness: {reader[2]}"
