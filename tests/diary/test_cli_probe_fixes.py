"""Usability probe fixes for plot, demo and verify (each failed before its fix)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.diary.helpers import cli, write_run


def usage_error(out: subprocess.CompletedProcess[str]) -> str:
    err = out.stderr.strip()
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in err and "\n" not in err, err
    return err


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("probe") / "run"
    write_run(root, repeat=1, seal=False)
    return root


def test_plot_refuses_an_unsupported_format_as_an_argument_error(run: Path, tmp_path: Path):
    err = usage_error(cli("plot", run, "-o", tmp_path / "plot.txt"))
    assert "-o" in err and "'txt'" in err and ".png" in err and ".svg" in err
    assert "verify" not in err and "not readable" not in err
    assert not (tmp_path / "plot.txt").exists()


def test_plot_without_an_extension_says_the_path_it_wrote(run: Path, tmp_path: Path) -> None:
    out = cli("plot", run, "-o", tmp_path / "myplot")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"wrote {tmp_path / 'myplot.png'}"
    assert (tmp_path / "myplot.png").is_file()


def test_plot_into_an_existing_folder_writes_plot_png_inside_it(run: Path, tmp_path: Path):
    folder = tmp_path / "emptydir"
    folder.mkdir()
    out = cli("plot", run, "-o", folder)
    assert out.returncode == 0, out.stderr
    assert f"wrote {folder / 'plot.png'}" in out.stdout and "folder" in out.stdout
    assert (folder / "plot.png").is_file() and not (tmp_path / "emptydir.png").exists()


def test_demo_out_naming_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("keep")
    err = usage_error(cli("demo", "--tiny", "--out", tmp_path / "afile"))
    assert "--out" in err and "afile" in err and "not a folder" in err
    assert (tmp_path / "afile").read_text() == "keep"


@pytest.mark.parametrize("workers", ["0", "-3", "x"])
def test_verify_refuses_workers_below_1(run: Path, workers: str) -> None:
    out = cli("verify", run, f"--workers={workers}")
    assert out.returncode == 2 and "--workers" in out.stderr and "Traceback" not in out.stderr


def test_verify_workers_1_still_works(run: Path) -> None:
    assert cli("verify", run, "--workers", "1").returncode == 0


def test_verify_a_folder_without_a_diary_is_a_usage_error(tmp_path: Path) -> None:
    err = usage_error(cli("verify", tmp_path))
    assert "no diary.jsonl" in err
