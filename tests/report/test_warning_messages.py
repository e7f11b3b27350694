"""The reporting client's warnings about an exception give its message, not only its class
("a report could not be built (ValueError)", "the run folder could not be deleted
(OSError)", "the refused start ... could not be undone (OSError)" said neither which file
nor why), and give it safe: the token scrubbed (``<token>``), control and bidirectional
characters escaped. Real threads, real files, and real bind mounts that make a deletion fail
(EBUSY; ``unshare``, skipped where not allowed)."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import UNSHARE
from tests.report.conftest import TOKEN, settings_for
from trainrecord.report import Sender

SCRIPT = """
import json, logging, shutil, subprocess, sys
from pathlib import Path
from tests.report.conftest import TOKEN, training_state
from trainrecord.report import Reporter, ReportSettings, open_run
said = []
class Keep(logging.Handler):
    def emit(self, record):
        said.append(record.getMessage())
logging.getLogger("trainrecord.report").addHandler(Keep())
folder = Path(sys.argv[1])
settings = ReportSettings(url="http://127.0.0.1:9/", every=60.0, token=TOKEN)
kept = open_run(folder / "g" / "kept")
refused = open_run(folder / "g" / "refused")
state = kept.job_state("training", training_state().config, epochs_first=0, epochs_total=3)
reporter = Reporter(settings, state, run=kept)
def pin(source, target):  # a mount point: never deleted (EBUSY)
    subprocess.run(["mount", "--bind", str(source), str(target)], check=True)
(kept.folder / "pinned").mkdir()
(folder / "empty").mkdir()
pin(folder / "empty", kept.folder / "pinned")
shutil.copy(refused.metadata_path, folder / "copy.json")  # the same bytes: its to undo
pin(folder / "copy.json", refused.metadata_path)
reporter.interrupted(discarded=True)  # a new run, no epoch: its folder is to be deleted
reporter.close()
try:
    Reporter(settings, "not a state", run=refused)  # refused: its start is undone
except Exception as exc:
    pass
print(json.dumps(said))
"""


def test_a_report_that_cannot_be_built_is_said_with_its_message_scrubbed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="trainrecord.report")
    sender = Sender(settings_for("http://127.0.0.1:9/"))

    def build() -> bytes:
        raise ValueError(f"no report for token {TOKEN}\x1b[2J\u202e")

    sender.submit(build)
    sender.close()
    said = [r.getMessage() for r in caplog.records]
    assert sender.refused == 1 and len(said) == 1, said
    assert "a report could not be built (ValueError: no report for token <token>" in said[0]
    assert "\\x1b[2J\\u202e)" in said[0] and TOKEN not in said[0], said


def test_a_run_folder_not_deleted_or_undone_is_said_with_its_message_scrubbed(
    tmp_path: Path,
) -> None:
    if shutil.which("unshare") is None:  # pragma: no cover
        pytest.skip("no unshare")
    folder = tmp_path / f"runs-{TOKEN}-\x1b[2J"
    folder.mkdir()
    out = subprocess.run(
        [*UNSHARE, sys.executable, "-c", SCRIPT, str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if "unshare:" in out.stderr or "mount: " in out.stderr:
        pytest.skip(f"no bind mount here: {out.stderr.strip()[:200]}")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stdout + out.stderr[-2000:]
    said = json.loads(out.stdout)
    assert all(TOKEN not in text and "\x1b" not in text for text in said), said
    shown = str(tmp_path / "runs-<token>-\\x1b[2J")
    deleted = [t for t in said if "the run folder could not be deleted" in t]
    assert len(deleted) == 1, said
    # (rmtree names the file relative to the folder it was deleting; from Python 3.13 by
    # its whole path, scrubbed as the rest)
    names = ("'pinned'", f"'{shown}/g/kept/pinned'")
    busy_pinned = "could not be deleted (OSError: [Errno 16] Device or resource busy: "
    assert any(f"{busy_pinned}{name})" in deleted[0] for name in names), deleted
    undone = [t for t in said if "could not be undone" in t]
    assert len(undone) == 1, said
    busy = f"[Errno 16] Device or resource busy: '{shown}/g/refused/metadata.json'"
    assert f"could not be undone (OSError: {busy})" in undone[0], undone
