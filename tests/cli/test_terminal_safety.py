"""Text the trainrecord commands read from a file, a link or a folder listing reaches the
terminal escaped (:func:`trainrecord.errors.escaped`): a record, a file name or a link
holding ESC [2J, U+202E or a C1 control could clear the terminal or turn a verdict round.
Each case is a real process on real files; each failed before the fix (a sweep of the
commands found them: verify's order and JSON-quoted values and a dangling link's text,
the names of Foundry records in verify's and show's usage error, validate's paths, seal's
signer from record.json, serve's planted link, plot's layer names in matplotlib's
warnings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.diary.helpers import cli, rechain, write_run

BAD = "\x1b[2J\u202e\x85"
"""ESC [2J (clear the screen), RIGHT-TO-LEFT OVERRIDE, NEL (a C1 control)."""
SHOWN = "\\x1b[2J\\u202e\\x85"
"""``BAD`` as escaped shows it."""
RAW = ("\x1b", "\u202e", "\x85")


def no_raw(*texts: str) -> None:
    for text in texts:
        for raw in RAW:
            assert raw not in text, (raw, text[-2000:])


def test_verify_and_seal_show_a_first_event_from_the_file_escaped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run(run, seal=False)
    rechain(run, lambda number, line: line.update(event=BAD) if number == 1 else None)
    out = cli("verify", run)
    assert out.returncode == 1, out.stderr[-2000:]
    assert out.stdout.startswith(
        f"FAILED: diary.jsonl line 1 (seq 0): [diary.order.run_start] the first line is {SHOWN}, "
        "not run_start"
    ), out.stdout
    sealed = cli("seal", run)
    assert sealed.returncode == 2 and f"the first line is {SHOWN}, not run_start" in sealed.stderr
    no_raw(out.stdout, out.stderr, sealed.stdout, sealed.stderr)


def test_verify_shows_the_event_after_run_end_escaped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run(run, seal=False)
    diary = run / "diary.jsonl"
    lines = [json.loads(x) for x in diary.read_text(encoding="utf-8").splitlines()]
    lines.append({**lines[1], "seq": len(lines), "event": BAD})
    diary.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    rechain(run)
    out = cli("verify", run)
    assert out.returncode == 1, out.stderr[-2000:]
    assert f"[diary.order.run_end] a {SHOWN} line follows run_end" in out.stdout, out.stdout
    no_raw(out.stdout, out.stderr)


def test_verify_quotes_a_value_as_json_with_its_escapes(tmp_path: Path) -> None:
    # the value is quoted as JSON spells it: C0 controls were \u escapes already, U+202E and
    # NEL were written as they are
    run = tmp_path / "run"
    write_run(run, seal=False)
    row = {"step": BAD, "loss": 1.0, "grad": {}, "stuck": {}}
    with (run / "metrics.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    out = cli("verify", run)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "step: \"\\u001b[2J\\u202e\\u0085\" is not of type 'integer'" in out.stdout, out.stdout
    no_raw(out.stdout, out.stderr)


def test_verify_shows_a_dangling_links_text_escaped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(str(tmp_path / f"gone{BAD}"), run / "diary.jsonl")
    out = cli("verify", run)
    assert out.returncode == 1, out.stderr[-2000:]
    assert f"is a link to {tmp_path}/gone{SHOWN}, which does not exist" in out.stdout, out.stdout
    no_raw(out.stdout, out.stderr)


def test_foundry_record_names_found_in_the_folder_are_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "foundry"
    folder.mkdir()
    (folder / f"observed.attempt{BAD}.json").write_text("{}", encoding="utf-8")
    for command in ("verify", "show"):
        out = cli(command, folder)
        assert out.returncode == 2, out.stderr[-2000:]
        assert f"(observed.attempt{SHOWN}.json), not a training diary" in out.stderr, out.stderr
        no_raw(out.stdout, out.stderr)
    out = cli("validate", folder)
    assert out.returncode == 1, out.stderr[-2000:]
    assert f"{folder}/observed.attempt{SHOWN}.json: [witness.fields.missing]" in out.stdout
    no_raw(out.stdout, out.stderr)
    out = cli("validate", "--json", folder)  # JSON escapes them itself: the name as it is
    assert json.loads(out.stdout)["files"][0]["path"] == f"{folder}/observed.attempt{BAD}.json"


def test_validate_shows_a_folder_name_found_in_the_folder_escaped(tmp_path: Path) -> None:
    inner = tmp_path / f"run{BAD}"
    write_run(inner, seal=False)
    out = cli("validate", tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"{tmp_path}/run{SHOWN}/diary.jsonl: valid diary (schema only:" in out.stdout
    no_raw(out.stdout, out.stderr)


def test_seal_shows_the_signer_named_in_record_json_escaped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run(run)
    seal = json.loads((run / "record.json").read_text(encoding="utf-8"))
    seal["signature"] = {"algorithm": "ed25519", "public_key_sha256": BAD * 6}
    (run / "record.json").write_text(json.dumps(seal), encoding="utf-8")
    out = cli("seal", run)
    assert out.returncode == 2, out.stderr[-2000:]
    assert f"is already signed by key {SHOWN * 2}\\x1b[2J...;" in out.stderr, out.stderr
    no_raw(out.stdout, out.stderr)


def test_serve_shows_the_text_of_a_link_planted_at_the_database_escaped(tmp_path: Path) -> None:
    db = tmp_path / "reports.sqlite"
    os.symlink(f"elsewhere{BAD}", db)
    done = subprocess.run(
        [sys.executable, "-m", "trainrecord.cli", "serve", "--port", "0", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CORREAD_REPORT_TOKEN": "terminal-safety-token-0123456789"},
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"{db} is a symbolic link (to elsewhere{SHOWN}); trainrecord never" in done.stderr
    no_raw(done.stdout, done.stderr)


def test_plot_draws_a_layer_name_from_the_file_escaped(tmp_path: Path) -> None:
    # matplotlib warned "Glyph 27 (\x1b) missing from font(s)" on stderr, the ESC as it is
    pytest.importorskip("matplotlib")
    run = tmp_path / "run"
    write_run(run, seal=False)
    row = {"step": 5, "loss": 1.0, "grad": {BAD: 0.5}, "stuck": {BAD: [0, 1, 0, 0]}}
    with (run / "metrics.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    out = cli("plot", run, "-o", tmp_path / "plot.png")
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "plot.png").stat().st_size > 0
    no_raw(out.stdout, out.stderr)


def test_plot_titles_the_figure_with_the_folder_s_name_escaped(tmp_path: Path) -> None:
    # The title was run_dir.name as it is: ESC and U+202E went into the image (the font has
    # no glyph for ESC: a warning on stderr and an empty box), and into an SVG's text, where
    # ESC is no XML character: the SVG was not well-formed XML
    pytest.importorskip("matplotlib")
    run = tmp_path / f"run{BAD}"
    write_run(run, seal=False)
    image = tmp_path / "plot.svg"
    out = cli("plot", run, "-o", image)
    assert out.returncode == 0 and not out.stderr, out.stderr[-2000:]
    svg = image.read_text(encoding="utf-8")
    ElementTree.fromstring(svg)  # well-formed
    assert f"run{SHOWN}: gradient norm per layer" in svg
    no_raw(svg, out.stdout)
