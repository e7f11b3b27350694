"""``trainrecord validate`` flags every invalid vector of the spec (every format present)
with the vector's rule id, accepts every valid one, and tells formats apart by name and
content."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, SPEC
from tests.foundry.conftest import good_env, good_row
from trainrecord import formats
from trainrecord.cli import main
from trainrecord.foundry import write_metrics, write_witness

VECTOR_FILES = sorted(p for p in (SPEC / "vectors").rglob("*.json") if p.parent.name != "canonical")


def _groups() -> list[tuple[str, str, list[dict[str, Any]]]]:
    out = []
    for path in VECTOR_FILES:
        for number, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            out.append(
                (
                    f"{path.relative_to(SPEC / 'vectors').as_posix()}#{number}",
                    group["schema"],
                    group["tests"],
                )
            )
    return out


GROUPS = _groups()


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    status = main(argv)
    out = capsys.readouterr().out
    return status, json.loads(out) if "--json" in argv else out


@pytest.mark.parametrize(("where", "schema_id", "tests"), GROUPS, ids=[g[0] for g in GROUPS])
def test_validate_flags_every_vector(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    where: str,
    schema_id: str,
    tests: list[dict],
) -> None:
    fmt = formats.by_schema(schema_id)
    flag = ["--format", fmt.name] if fmt else ["--schema", schema_id]
    suffix = ".jsonl" if fmt and fmt.layout == "jsonl" else ".json"
    paths = []
    for number, case in enumerate(tests):
        path = tmp_path / f"case-{number}{suffix}"
        path.write_text(
            json.dumps(case["data"]) + ("\n" if suffix == ".jsonl" else ""), encoding="utf-8"
        )
        paths.append(str(path))
    status, doc = _run(["validate", "--json", *flag, *paths], capsys)
    by_path = {entry["path"]: entry for entry in doc["files"]}
    for path, case in zip(paths, tests, strict=True):
        entry = by_path[path]
        assert entry["error"] is None
        rules = [p["rule"] for p in entry["problems"]]
        if case["valid"]:
            assert entry["valid"], f"{case['description']}: {rules}"
        else:
            assert case["rule"] in rules, (
                f"{case['description']}: expected {case['rule']}, got {rules}"
            )
    assert status == (0 if all(c["valid"] for c in tests) else 1)


def test_every_format_of_the_table_is_checked_by_the_vectors() -> None:
    covered = {schema_id for _, schema_id, _ in GROUPS}
    assert {f.schema_id for f in formats.available()} <= covered
    assert {"foundry-witness", "foundry-metrics"} <= {f.name for f in formats.available()}


def test_console_script_detects_foundry_files_by_name(tmp_path: Path) -> None:
    results = tmp_path / "run"
    write_witness(results, config={}, device="cpu", wall_seconds=1, env=good_env())
    write_metrics(results, [good_row()])
    exe = Path(sys.executable).with_name("trainrecord")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "trainrecord.cli"]
    ok = subprocess.run(
        [*command, "validate", str(results)], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert ok.returncode == 0, ok.stderr
    assert "valid foundry-witness" in ok.stdout and "valid foundry-metrics" in ok.stdout
    (results / "metrics.json").write_text(json.dumps([good_row(seed=-1)]), encoding="utf-8")
    bad = subprocess.run(
        [*command, "validate", str(results / "metrics.json")],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert bad.returncode == 1
    assert "[metrics.seed.negative] [0].seed" in bad.stdout


def test_detection_by_content_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    witness = write_witness(tmp_path / "r", config={}, device="cpu", wall_seconds=1, env=good_env())
    renamed = tmp_path / "w.json"
    renamed.write_bytes(witness.read_bytes())
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([good_row()]), encoding="utf-8")
    status, doc = _run(["validate", "--json", str(renamed), str(rows)], capsys)
    assert status == 0
    assert [f["format"] for f in doc["files"]] == ["foundry-witness", "foundry-metrics"]
    unknown = tmp_path / "other.json"
    unknown.write_text("{}", encoding="utf-8")
    status, _ = _run(["validate", str(unknown)], capsys)
    assert status == 2
    status, _ = _run(["validate", str(tmp_path / "missing.json")], capsys)
    assert status == 2
    status, _ = _run(["validate", "--format", "nonsense", str(rows)], capsys)
    assert status == 2


def test_text_output_names_rule_field_and_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "observed.attempt0.json"
    path.write_text(json.dumps({"run_record_format": 2}), encoding="utf-8")
    status, out = _run(["validate", str(path)], capsys)
    assert status == 1
    assert out.strip() == (
        f"{path}: [witness.run_record_format.unsupported] run_record_format: "
        "run_record_format 2 is not supported: this reader understands "
        "version 1 only; read the file with a reader for that version (got 2)"
    )
    path.write_text('{"attempt": NaN}', encoding="utf-8")
    status, out = _run(["validate", str(path)], capsys)
    assert status == 1 and "[witness.file.json]" in out


def test_folder_validation_checks_metrics_against_sibling_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "run"
    write_metrics(results, [good_row()])
    (results / "notes.json").write_text("not a record", encoding="utf-8")
    status, doc = _run(["validate", "--json", str(results)], capsys)
    assert status == 0 and [Path(f["path"]).name for f in doc["files"]] == ["metrics.json"]
    (results / "observed.attempt0.json").write_text('{"run_record_format": 2}', encoding="utf-8")
    status, doc = _run(["validate", "--json", str(results)], capsys)
    assert status == 1
    rules = {Path(f["path"]).name: [p["rule"] for p in f["problems"]] for f in doc["files"]}
    assert rules == {
        "metrics.json": ["metrics.read.sibling_version"],
        "observed.attempt0.json": ["witness.run_record_format.unsupported"],
    }


def test_exit_status_and_json_verdict_when_a_file_cannot_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 when a file cannot be read, also beside a valid file and beside an invalid one
    (2 outranks 1); --json says valid: false then, though no file has a problem; and a
    folder without record files is exit 2, "no record files found", not a silent 0."""
    results = tmp_path / "run"
    good = write_metrics(results, [good_row()])
    bad = tmp_path / "bad" / "metrics.json"
    write_metrics(bad.parent, [good_row()])
    bad.write_text(json.dumps([good_row(seed=-1)]), encoding="utf-8")
    missing = tmp_path / "missing.json"
    status, doc = _run(["validate", "--json", str(good), str(missing)], capsys)
    assert status == 2
    assert doc["valid"] is False
    assert [(f["valid"], f["error"] is None) for f in doc["files"]] == [
        (True, True),
        (False, False),
    ]
    status, out = _run(["validate", str(bad), str(missing)], capsys)
    assert status == 2
    assert "[metrics.seed.negative]" in out
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "sub" / "notes.json").write_text("{}", encoding="utf-8")
    assert main(["validate", str(empty)]) == 2
    assert "no record files found" in capsys.readouterr().err


def test_validate_checks_the_attempt_against_the_witness_file_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """witness.attempt.filename, as read_witness checks it: a witness of attempt 0 renamed
    observed.attempt2.json is invalid, given as a file or found in a folder."""
    written = write_witness(tmp_path / "r", config={}, device="cpu", wall_seconds=1, env=good_env())
    renamed = tmp_path / "run" / "observed.attempt2.json"
    renamed.parent.mkdir()
    renamed.write_bytes(written.read_bytes())
    for argv in (["validate", "--json", str(renamed)], ["validate", "--json", str(renamed.parent)]):
        status, doc = _run(argv, capsys)
        assert status == 1
        assert [p["rule"] for p in doc["files"][0]["problems"]] == ["witness.attempt.filename"]


@pytest.mark.parametrize(
    ("field", "rule"),
    [("device", "witness.device.type"), ("device_name", "witness.device_name.type")],
)
def test_validate_refuses_a_witness_whose_text_has_a_lone_surrogate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, rule: str
) -> None:
    """Text with a lone surrogate is not text (spec/README.md): refused with the field's
    *.type rule, as read_witness refuses it."""
    results = tmp_path / "run"
    witness = write_witness(results, config={}, device="cpu", wall_seconds=1, env=good_env())
    doc = json.loads(witness.read_text(encoding="utf-8"))
    witness.write_text(json.dumps({**doc, field: "cuda\ud800"}), encoding="utf-8")
    status, out = _run(["validate", str(witness)], capsys)
    assert status == 1
    assert f"[{rule}] {field}: " in out


@pytest.mark.parametrize("name", ["\ud800", "\udc80"])
def test_validate_reports_a_surrogate_field_name_printably_in_a_real_process(
    tmp_path: Path, name: str
) -> None:
    """A field name holding a lone surrogate (``"\\ud800"`` in the JSON text) in a metrics row
    or a witness is reported as its escape: no UnicodeEncodeError stops the folder's report,
    plain output and --json are UTF-8, --json is JSON text (probe F1). The library's refusal
    prints too."""
    results = tmp_path / "run"
    witness = write_witness(results, config={}, device="cpu", wall_seconds=1, env=good_env())
    doc = json.loads(witness.read_text(encoding="utf-8"))
    witness.write_text(json.dumps({**doc, name: 1}), encoding="utf-8")
    (results / "metrics.json").write_text(json.dumps([{**good_row(), name: 2}]), encoding="utf-8")
    (tmp_path / "z").mkdir()
    write_metrics(tmp_path / "z", [good_row()])
    exe = Path(sys.executable).with_name("trainrecord")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "trainrecord.cli"]
    escaped = name.encode("utf-8", "backslashreplace").decode("ascii")
    plain = subprocess.run(
        [*command, "validate", str(tmp_path)], capture_output=True, check=False, cwd=ROOT
    )
    assert plain.returncode == 1, plain.stderr
    assert b"Traceback" not in plain.stderr
    out = plain.stdout.decode("utf-8")
    assert f"[metrics.row.extra] [0].{escaped}: " in out
    assert f"[witness.fields.extra] {escaped}: " in out
    assert f"{tmp_path / 'z' / 'metrics.json'}: valid foundry-metrics" in out
    machine = subprocess.run(
        [*command, "validate", "--json", str(tmp_path)], capture_output=True, check=False, cwd=ROOT
    )
    assert machine.returncode == 1, machine.stderr
    report = json.loads(machine.stdout.decode("utf-8"))
    paths = [p["path"] for f in report["files"] for p in f["problems"]]
    assert [0, escaped] in paths and [escaped] in paths
    library = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom trainrecord.foundry import read_metrics, read_witness\n"
            "for read, p in ((read_metrics, sys.argv[1]), (read_witness, sys.argv[2])):\n"
            "    try:\n        read(p)\n    except ValueError as e:\n        print(e)\n",
            str(results / "metrics.json"),
            str(witness),
        ],
        capture_output=True,
        check=False,
        cwd=ROOT,
    )
    assert library.returncode == 0, library.stderr
    assert f"[0].{escaped}" in library.stdout.decode("utf-8")
