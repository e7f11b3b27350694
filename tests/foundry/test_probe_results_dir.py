"""write_witness and write_metrics on a results_dir that is a file: refused, nothing written
(witness.path.results_dir, metrics.path.results_dir; a bare FileExistsError before)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainrecord.errors import RecordRefused
from trainrecord.foundry import write_metrics, write_witness

ROWS = [{"benchmark": "b", "metric": "m", "horizon": 1, "seed": 0, "value": 0.5}]


@pytest.mark.parametrize("under", [False, True])
def test_write_metrics_refuses_a_results_dir_that_is_a_file(tmp_path: Path, under: bool):
    afile = tmp_path / "afile"
    afile.write_text("keep")
    target = afile / "sub" if under else afile
    with pytest.raises(RecordRefused) as caught:
        write_metrics(target, ROWS)
    assert caught.value.rule == "metrics.path.results_dir"
    assert "not a folder" in str(caught.value) and "results_dir" in str(caught.value)
    assert afile.read_text() == "keep" and sorted(tmp_path.iterdir()) == [afile]


@pytest.mark.parametrize("under", [False, True])
def test_write_witness_refuses_a_results_dir_that_is_a_file(
    tmp_path: Path, under: bool, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("FOUNDRY_RUN_ID", "7")
    for name in ("RANK", "SLURM_PROCID", "SLURM_RESTART_COUNT", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    afile = tmp_path / "afile"
    afile.write_text("keep")
    target = afile / "sub" if under else afile
    with pytest.raises(RecordRefused) as caught:
        write_witness(target, config={"lr": 0.1}, device="cpu", wall_seconds=1)
    assert caught.value.rule == "witness.path.results_dir"
    assert "not a folder" in str(caught.value)
    assert afile.read_text() == "keep" and sorted(tmp_path.iterdir()) == [afile]
