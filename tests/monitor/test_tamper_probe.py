"""The Monitor and the tamper probe: text that is not Unicode (a surrogate code point in the
run's name or the config) is refused when the Monitor is made, before any file (F3/F6);
resuming with a signing key a record whose seal is gone says so at the resume and at close,
and ``require_seal=True`` refuses it (F1: the Monitor signed forged history)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.diary.helpers import rechain
from tests.monitor.conftest import TinyMLP, signed_run, train
from tests.monitor.test_events import sgd
from trainrecord.diary import verify
from trainrecord.errors import RecordRefused
from trainrecord.monitor import Monitor


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"data": "/data/caf\udce9.bin"}, "config.data"),  # os.fsdecode of a Latin-1 name
        ({"\ud83d\udc80": 1, "\uff41": 2}, "config.\\ud83d\\udc80"),  # the probe's pair key
        ({"layers": [{"name": "x\ud800"}]}, "config.layers[0].name"),
    ],
)
def test_a_config_with_a_surrogate_is_refused_before_any_file(
    tmp_path: Path, config: dict, path: str
) -> None:
    model = TinyMLP()
    run = tmp_path / "run"
    with pytest.raises(RecordRefused) as err:
        Monitor(model, sgd(model), run, config=config)
    assert err.value.rule == "diary.text.surrogate" and err.value.field == path
    assert not run.exists()


def test_a_run_name_with_a_surrogate_is_refused_before_any_file(tmp_path: Path) -> None:
    model = TinyMLP()
    with pytest.raises(RecordRefused, match=r"\[diary\.text\.surrogate\] name: "):
        Monitor(model, sgd(model), tmp_path / "run", name="exp-\udc80")
    assert not (tmp_path / "run").exists()


def _forge(run: Path) -> None:
    """Change the recorded steps, recompute the chain, remove the seal and its signature."""

    def more_steps(_: int, line: dict[str, Any]) -> None:
        if line["event"] == "run_end":
            line["steps"] = 99

    rechain(run, more_steps)
    for name in ("record.json", "record.sig"):
        (run / name).unlink()


def test_a_signing_monitor_resuming_a_record_whose_seal_is_gone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model, optimizer, run, (priv, pub, print_) = signed_run(tmp_path)
    _forge(run)
    before = (run / "diary.jsonl").read_bytes()
    with pytest.raises(RecordRefused, match="require_seal=True, and the record has no seal"):
        Monitor(model, optimizer, run, start_step=2, signing_key=priv, require_seal=True)
    assert (run / "diary.jsonl").read_bytes() == before
    with pytest.raises(TypeError, match="require_seal"):
        Monitor(model, optimizer, run, require_seal=1)  # type: ignore[arg-type]
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord.diary"),
        Monitor(model, optimizer, run, check_every=2, start_step=2, signing_key=priv) as monitor,
    ):
        train(model, optimizer, monitor, 2)
    said = [r.getMessage() for r in caplog.records if "ended (run_end)" in r.getMessage()]
    assert len(said) == 2, said  # at the resume and at close
    assert "a seal that is gone can mean the history was edited" in said[0]
    assert f"sealed and signed (key {print_[:16]}...) now" in said[1]
    assert verify(run, public_key=pub).signed  # signed, as the warnings said it would be
