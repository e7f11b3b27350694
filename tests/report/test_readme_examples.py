"""The README's Reporting example, run as written against the reference receiver on
loopback: its paths.toml (with the receiver's URL) and its training loop, once to the end
and once interrupted by Ctrl+C and resumed. The blocks are read from README.md (its
"## Reporting" section), so an example edited into something the client refuses, or a
loop that would report an epoch twice on a resume, fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.report.conftest import TOKEN
from trainrecord.report import ReportServer


def _blocks(language: str) -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Reporting\n") : readme.index("\n## Conformance\n")]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


def _paths_toml(url: str) -> str:
    """The README's paths.toml with the receiver's URL in place of example.org."""
    (block,) = _blocks("toml")
    assert 'url = "https://example.org/api/runs"' in block
    return block.replace("https://example.org/api/runs", url)


def _run_example(stop_at_epoch: int | None = None) -> dict[str, Any]:
    """Run the README's Python block; Ctrl+C in the first batch of ``stop_at_epoch``."""
    (code,) = _blocks("python")
    epochs = []

    def train_step(batch: int) -> None:
        if batch == 0:
            epochs.append(None)
            if stop_at_epoch is not None and len(epochs) - 1 == stop_at_epoch:
                raise KeyboardInterrupt

    names: dict[str, Any] = {
        "loader": [0, 1, 2],
        "train_step": train_step,
        "train_loss": 2.5,
        "val_loss": 2.75,
    }
    exec(compile(code, "README.md", "exec"), names)  # the README's own code
    return names


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: ReportServer) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CORREAD_REPORT_TOKEN", TOKEN)
    (tmp_path / "paths.toml").write_text(_paths_toml(receiver.url), encoding="utf-8")
    return tmp_path


def test_the_reporting_example_reports_every_epoch_and_completes(
    in_tmp: Path, receiver: ReportServer
) -> None:
    names = _run_example()
    report = receiver.store.latest(names["run"].run_id)
    assert report is not None
    assert report["status"] == "complete"
    assert [entry["epoch"] for entry in report["history"]] == list(range(50))
    assert (in_tmp / "models" / "pre" / "pre_s_49" / "metadata.json").is_file()


def test_the_reporting_example_resumed_after_ctrl_c_reports_each_epoch_once(
    in_tmp: Path, receiver: ReportServer
) -> None:
    with pytest.raises(KeyboardInterrupt):
        _run_example(stop_at_epoch=3)
    metadata = in_tmp / "models" / "pre" / "pre_s_49" / "metadata.json"
    run_id = json.loads(metadata.read_text(encoding="utf-8"))["run_id"]
    report = receiver.store.latest(run_id)
    assert report is not None
    assert report["status"] == "interrupted"
    assert [entry["epoch"] for entry in report["history"]] == [0, 1, 2]
    names = _run_example()
    assert names["run"].resumed and names["run"].run_id == run_id
    report = receiver.store.latest(run_id)
    assert report is not None
    assert report["status"] == "complete"
    assert [entry["epoch"] for entry in report["history"]] == list(range(50))
