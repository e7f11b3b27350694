"""``trainrecord plot -o``: where the image goes. Real records (the runtime's writers), real
links, real ``python -m trainrecord.cli`` processes."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.diary.helpers import BODIES, cli, write_run
from trainrecord.diary import DiaryWriter, MetricsWriter

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None, reason="trainrecord plot needs matplotlib"
)

PNG_START, PNG_END = b"\x89PNG\r\n\x1a\n", b"IEND\xaeB`\x82"


@pytest.fixture
def record(tmp_path: Path) -> Path:
    """A complete sealed record (every event type once, one metrics row)."""
    write_run(tmp_path / "run")
    return tmp_path / "run"


def whole_png(path: Path) -> bool:
    data = path.read_bytes()
    return data.startswith(PNG_START) and data.endswith(PNG_END)


@pytest.mark.parametrize("existing", [True, False], ids=["to-a-file", "dangling"])
def test_plot_to_a_link_writes_the_file_it_points_to_and_keeps_the_link(
    record: Path, tmp_path: Path, existing: bool
) -> None:
    # Before: the temporary file was renamed over the link itself: out.png became a plain
    # file and the file it pointed to was left as it was (shell redirection and
    # matplotlib's savefig write to the link's target)
    images = tmp_path / "images"
    images.mkdir()
    target = images / "latest.png"
    if existing:
        target.write_bytes(b"an older plot")
    link = tmp_path / "out.png"
    link.symlink_to(os.path.relpath(target, link.parent))  # (relative: as ln -s writes it)
    done = cli("plot", record, "-o", link)
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert whole_png(target)
    assert done.stdout == f"wrote {target} (through the link {link})\n"
    assert sorted(p.name for p in images.iterdir()) == ["latest.png"]  # no temporary left


def test_plot_to_a_link_to_a_link_writes_the_last_one_s_target(
    record: Path, tmp_path: Path
) -> None:
    target = tmp_path / "latest.png"
    (tmp_path / "middle.png").symlink_to(target)
    link = tmp_path / "out.png"
    link.symlink_to(tmp_path / "middle.png")
    assert cli("plot", record, "-o", link).returncode == 0
    assert link.is_symlink() and (tmp_path / "middle.png").is_symlink()
    assert whole_png(target)


def test_plot_to_a_dangling_link_into_no_folder_writes_nothing(
    record: Path, tmp_path: Path
) -> None:
    link = tmp_path / "out.png"
    link.symlink_to(tmp_path / "gone" / "latest.png")
    done = cli("plot", record, "-o", link)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == (
        f"trainrecord plot: -o {link} is a link to {tmp_path / 'gone' / 'latest.png'}, whose "
        "folder does not exist; make it, or give another -o (nothing was written)\n"
    )
    assert link.is_symlink() and not (tmp_path / "gone").exists()


def test_plot_to_a_link_loop_writes_nothing(record: Path, tmp_path: Path) -> None:
    link = tmp_path / "out.png"
    link.symlink_to(tmp_path / "other.png")
    (tmp_path / "other.png").symlink_to(link)
    done = cli("plot", record, "-o", link)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == (
        f"trainrecord plot: -o {link} is a link loop (Too many levels of symbolic links); "
        "give another -o (nothing was written)\n"
    )
    assert link.is_symlink() and (tmp_path / "other.png").is_symlink()


def test_plot_to_a_link_to_a_fifo_replaces_nothing(record: Path, tmp_path: Path) -> None:
    # the temporary file renamed over the link's target would replace the FIFO (or, run
    # as root through a link to /dev/null, the device) with a plain file
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "out.png"
    link.symlink_to(fifo)
    done = cli("plot", record, "-o", link)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == (
        f"trainrecord plot: -o {link} is a link to {fifo}, which is a FIFO (named pipe); give "
        "a file (nothing was written)\n"
    )
    assert link.is_symlink() and fifo.is_fifo()


def _record(run_dir: Path, grads: list[dict[str, float]], stuck: dict[str, list[int]]) -> Path:
    """A sealed record of one metrics row per ``grads`` entry (steps 0, 1, ...), written by
    the runtime's writers."""
    with DiaryWriter(run_dir) as diary, MetricsWriter(run_dir) as metrics:
        diary.append("run_start", BODIES["run_start"])
        for step, grad in enumerate(grads):
            metrics.append({"step": step, "loss": 1.0, "grad": grad, "stuck": stuck})
        end = {**BODIES["run_end"], "checks": len(grads), "metrics_sha256": metrics.sha256()}
        diary.append("run_end", end)
    return run_dir


@pytest.mark.parametrize("python_warnings", ["", "error"])
def test_matplotlib_s_warnings_are_one_line_each_saying_what_they_mean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, python_warnings: str
) -> None:
    # Before: matplotlib's and numpy's warnings went to stderr as they are, a source line
    # of matplotlib's (or plot.py's) under each, once per drawing pass:
    #   .../matplotlib/scale.py:375: RuntimeWarning: overflow encountered in exp
    #     return np.exp(values * np.log(self.base))
    #   .../trainrecord/commands/plot.py:253: UserWarning: Glyph 57344 (\ue000) missing
    #   from font(s) DejaVu Sans.
    #     fig.tight_layout()
    # and under PYTHONWARNINGS=error, the first of them a traceback, exit 1, no image
    monkeypatch.setenv("PYTHONWARNINGS", python_warnings)
    run = _record(
        tmp_path / "run",
        [{"conv\ue000": 1.7e308, "fc\uf8ff": 1e-300}, {"conv\ue000": 1.0, "fc\uf8ff": 2.0}],
        {"block\ue000": [0, 1, 0, 0]},
    )
    image = tmp_path / "plot.png"
    done = cli("plot", run, "-o", image)
    assert done.returncode == 0 and done.stdout == f"wrote {image}\n", done.stderr
    assert whole_png(image)
    assert done.stderr.splitlines() == [
        "trainrecord plot: warning: the font (DejaVu Sans) has no glyph for U+E000, U+F8FF "
        "in the names drawn; they are drawn as empty boxes",
        "trainrecord plot: warning: matplotlib's arithmetic on the values drawn went past a "
        "double (overflow encountered in exp), as values near the largest one (about "
        "1.8e308) do: an axis may not span its values",
    ], done.stderr


def test_a_plain_record_plots_without_a_word_on_stderr(record: Path, tmp_path: Path) -> None:
    done = cli("plot", record, "-o", tmp_path / "plot.svg")
    assert done.returncode == 0 and not done.stderr, done.stderr


def test_a_record_without_a_point_to_draw_plots_without_a_warning(tmp_path: Path) -> None:
    # Before: "UserWarning: No artists with labels found to put in legend." (a legend was
    # asked for the layers, none of which had a finite norm to draw)
    run = _record(tmp_path / "run", [{"conv": None}, {"conv": None}], {})
    done = cli("plot", run, "-o", tmp_path / "plot.png")
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert whole_png(tmp_path / "plot.png")
