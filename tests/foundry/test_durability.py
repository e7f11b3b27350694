"""The Foundry writers' steps to a durable record, as spec/README.md lists them: temporary
file written and fsynced, then hard-linked (the witness) or renamed (metrics.json) to the
final name, then the folder fsynced; and no temporary file left when the last step fails.

The real calls run: os.fsync, os.link and os.replace are wrapped only to note what they
were called on, in order (an fsync's file is found from its descriptor in /proc)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from tests.foundry.conftest import good_env, good_row
from trainrecord.errors import RecordWriteError
from trainrecord.foundry import write_metrics, write_witness

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir() or not hasattr(os, "link"),
    reason="the descriptors' paths are read from /proc (Linux)",
)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Every fsync (by path), link and replace the writers make, in order; each still runs."""
    seen: list[tuple[str, ...]] = []
    real_fsync, real_link, real_replace = os.fsync, os.link, os.replace

    def fsync(fd: Any) -> None:
        number = fd if isinstance(fd, int) else fd.fileno()
        seen.append(("fsync", os.readlink(f"/proc/self/fd/{number}")))
        real_fsync(fd)

    def link(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(("link", str(src), str(dst)))
        real_link(src, dst, *args, **kwargs)

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(("replace", str(src), str(dst)))
        real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "link", link)
    monkeypatch.setattr(os, "replace", replace)
    return seen


def _steps(seen: list[tuple[str, ...]], folder: Path, final: str, move: str) -> None:
    """``seen`` is: fsync of the temporary file, ``move`` of it to ``final``, fsync of the
    folder, in this order, and nothing else."""
    assert [c[0] for c in seen] == ["fsync", move, "fsync"], seen
    tmp = Path(seen[0][1])
    assert tmp.parent == folder.resolve()
    assert tmp.name.startswith(f".{final}.") and tmp.name.endswith(".tmp")
    assert seen[1][1:] == (str(folder / tmp.name), str(folder / final))
    assert Path(seen[2][1]) == folder.resolve()


def test_the_witness_is_fsynced_before_its_link_and_its_folder_after(
    results: Path, calls: list[tuple[str, ...]]
) -> None:
    """witness.write.atomic_no_overwrite: the bytes are on disk before the name appears
    (a crash never leaves an empty witness under the final name) and the new name is made
    durable by the folder's fsync."""
    path = write_witness(results, config={"lr": 0.1}, device="cpu", wall_seconds=1, env=good_env())
    assert path == results / "observed.attempt0.json"
    _steps(calls, results, "observed.attempt0.json", "link")
    assert sorted(p.name for p in results.iterdir()) == ["observed.attempt0.json"]


def test_metrics_are_fsynced_before_the_rename_and_the_folder_after(
    results: Path, calls: list[tuple[str, ...]]
) -> None:
    """metrics.write.atomic_replace: temporary file, fsync, os.replace, folder fsync."""
    write_metrics(results, [good_row()])
    _steps(calls, results, "metrics.json", "replace")
    calls.clear()
    write_metrics(results, [good_row(seed=1)])  # replacing an existing file: the same steps
    _steps(calls, results, "metrics.json", "replace")
    assert sorted(p.name for p in results.iterdir()) == ["metrics.json"]


def test_a_failed_rename_leaves_no_temporary_file(results: Path) -> None:
    """metrics.write.atomic_replace: when os.replace fails (a folder stands where
    metrics.json goes), the error names metrics.json (a RecordWriteError, an OSError), not
    the temporary file, and the temporary file is removed."""
    (results / "metrics.json" / "inner").mkdir(parents=True)
    with pytest.raises(RecordWriteError) as info:
        write_metrics(results, [good_row()])
    assert info.value.errno == errno.EISDIR and info.value.filename == str(results / "metrics.json")
    assert "A folder stands where the file goes: move it away" in str(info.value)
    assert sorted(p.name for p in results.iterdir()) == ["metrics.json"]
    assert [p.name for p in (results / "metrics.json").iterdir()] == ["inner"]
