"""The README's Foundry example, run as written: its entry point writes metrics.json and
the witness on success, and the witness still when training raises. The block is read from
README.md (its "## Foundry run records" section), so an example edited into something the
writers refuse fails here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.foundry.conftest import good_row
from trainrecord.foundry import config_sha, read_metrics, read_witness


def _main(train: Any) -> Any:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Foundry run records\n") : readme.index("\n## Reporting\n")]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    names: dict[str, Any] = {"train": train}
    exec(compile(code, "README.md", "exec"), names)  # the README's own code
    return names["main"]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "SLURM_PROCID", "SLURM_RESTART_COUNT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FOUNDRY_RUN_ID", "42")


def test_the_foundry_example_writes_metrics_and_the_witness(tmp_path: Path) -> None:
    rows = [good_row(), good_row(horizon=192, value=0.41)]
    main = _main(lambda config: rows)
    main({"lr": 0.1}, str(tmp_path))
    assert [row.horizon for row in read_metrics(tmp_path)] == [96, 192]
    witness = read_witness(tmp_path / "observed.attempt0.json")
    assert (witness.experiment_id, witness.attempt) == (42, 0)
    assert witness.config_sha == config_sha({"lr": 0.1})


def test_the_foundry_example_witnesses_a_failed_run(tmp_path: Path) -> None:
    def train(config: dict[str, Any]) -> list[dict[str, Any]]:
        raise RuntimeError("diverged")

    with pytest.raises(RuntimeError, match="diverged"):
        _main(train)({"lr": 0.1}, str(tmp_path))
    assert (tmp_path / "observed.attempt0.json").is_file()
    assert not (tmp_path / "metrics.json").exists()
