"""Python and the Node implementation (through its harness) agree on the Foundry probe's
findings: integers of any size up to 4300 digits, exact integer values, refusals past 4300
digits, the unsupported version named."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.foundry.conftest import good_row
from trainrecord.errors import RecordRefused
from trainrecord.foundry import read_metrics, read_witness, write_metrics, write_witness

HARNESS = ROOT / "conformance" / "implementations" / "node" / "harness.js"
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def node(*requests: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Answers of the Node harness to ``(op, input)`` requests."""
    sys.set_int_max_str_digits(0)  # the requests may carry integers past 4300 digits
    try:
        lines = ['{"cmd": "start", "version": 1}']
        for seq, (op, given) in enumerate(requests):
            lines.append(json.dumps({"cmd": "run", "seq": seq, "op": op, "input": given}))
        lines.append('{"cmd": "stop"}')
        out = subprocess.run(
            ["node", str(HARNESS)],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        return [json.loads(line) for line in out.stdout.splitlines()[1 : 1 + len(requests)]]
    finally:
        sys.set_int_max_str_digits(4300)


def _rules(answer: dict[str, Any]) -> list[str]:
    assert answer["outcome"] == "refused", answer
    return list(answer["rules"])


def test_integers_past_a_double_are_integers_in_both(tmp_path: Path) -> None:
    big = 10**400 - 1
    py = write_metrics(tmp_path / "py", [good_row(seed=big, horizon=big)])
    assert read_metrics(py)[0].seed == big
    wrote, read, witness = node(
        ("write_metrics", {"dir": str(tmp_path / "nd"), "rows": [good_row(seed=big)]}),
        ("read_metrics", {"path": str(py)}),
        (
            "write_witness",
            {
                "dir": str(tmp_path / "ndw"),
                "env": {"FOUNDRY_RUN_ID": "1"},
                "config": {},
                "device": "cpu",
                "wall_seconds": big,
            },
        ),
    )
    assert wrote["outcome"] == "ok", wrote
    assert read["outcome"] == "ok" and read["output"]["rows"][0]["horizon"] == big
    assert witness["outcome"] == "ok", witness
    assert read_witness(Path(witness["output"]["path"])).wall_seconds == big
    # a value is a number: one too large for a double is refused by both
    with pytest.raises(RecordRefused) as refused:
        write_metrics(tmp_path / "v", [good_row(value=10**400)])
    assert refused.value.rules == ["metrics.value.type"]
    (answer,) = node(
        ("write_metrics", {"dir": str(tmp_path / "nv"), "rows": [good_row(value=10**400)]})
    )
    assert _rules(answer) == ["metrics.value.type"]


def test_an_integer_value_past_2_53_reads_back_exactly(tmp_path: Path) -> None:
    exact = 2**53 + 1
    path = write_metrics(tmp_path, [good_row(value=exact)])
    value = read_metrics(path)[0].value
    assert value == exact and type(value) is int
    (answer,) = node(("read_metrics", {"path": str(path)}))
    assert answer["output"]["rows"][0]["value"] == exact
    assert (
        type(read_metrics(write_metrics(tmp_path / "f", [good_row(value=0.5)]))[0].value) is float
    )


def test_integers_past_4300_digits_are_refused_alike(tmp_path: Path) -> None:
    sys.set_int_max_str_digits(0)
    try:
        huge = int("9" * 5000)
    finally:
        sys.set_int_max_str_digits(4300)
    with pytest.raises(RecordRefused) as refused:
        write_metrics(tmp_path / "py", [good_row(seed=huge)])
    assert refused.value.rules == ["metrics.seed.type"]
    with pytest.raises(RecordRefused) as refused:
        write_witness(
            tmp_path / "pw", config={}, device="cpu", wall_seconds=huge, env={"FOUNDRY_RUN_ID": "1"}
        )
    assert refused.value.rules == ["witness.wall_seconds.type"]
    assert not (tmp_path / "py").exists() and not (tmp_path / "pw").exists()
    text = json.dumps([good_row()]).replace('"seed": 0', '"seed": ' + "9" * 5000)
    (tmp_path / "metrics.json").write_text(text, encoding="utf-8")
    with pytest.raises(RecordRefused, match="more than 4300 digits") as refused:
        read_metrics(tmp_path / "metrics.json")
    assert refused.value.rules == ["metrics.file.json"]
    metrics, witness, read = node(
        ("write_metrics", {"dir": str(tmp_path / "nd"), "rows": [good_row(seed=huge)]}),
        (
            "write_witness",
            {
                "dir": str(tmp_path / "nw"),
                "env": {"FOUNDRY_RUN_ID": "1"},
                "config": {},
                "device": "cpu",
                "wall_seconds": huge,
            },
        ),
        ("read_metrics", {"path": str(tmp_path / "metrics.json")}),
    )
    assert _rules(metrics) == ["metrics.seed.type"]
    assert _rules(witness) == ["witness.wall_seconds.type"]
    assert _rules(read) == ["metrics.file.json"]


@pytest.mark.parametrize(
    ("version", "shown"), [("2", "2"), ("1.0", "1.0"), ('"1"', "'1'"), ("true", "True")]
)
def test_both_readers_name_the_unsupported_version_found(
    tmp_path: Path, version: str, shown: str
) -> None:
    """witness.run_record_format.unsupported: the reader refuses naming the version found
    (the Node reader did not name it)."""
    path = write_witness(
        tmp_path, config={}, device="cpu", wall_seconds=1, env={"FOUNDRY_RUN_ID": "1"}
    )
    text = path.read_text(encoding="utf-8").replace(
        '"run_record_format": 1', f'"run_record_format": {version}'
    )
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RecordRefused) as refused:
        read_witness(path)
    assert refused.value.rules == ["witness.run_record_format.unsupported"]
    assert f"run_record_format {shown} is not supported" in str(refused.value)
    assert f"(got {shown})" in str(refused.value)
    (answer,) = node(("read_witness", {"path": str(path)}))
    assert _rules(answer) == ["witness.run_record_format.unsupported"]
    assert f"run_record_format {shown} is not supported" in answer["message"]
    assert f"(got {shown})" in answer["message"]


def _irregular(folder: Path, name: str, kind: str) -> Path:
    path = folder / name
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:  # a regular file as large as the cap (sparse: cheap); the test adds one byte
        cap = 1 << 20 if name.startswith("observed") else 256 << 20
        with path.open("wb") as f:
            f.truncate(cap)
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
@pytest.mark.parametrize("kind", ["folder", "fifo", "device", "too_large"])
@pytest.mark.parametrize(
    ("name", "op", "rule"),
    [
        ("observed.attempt0.json", "read_witness", "witness.file.regular"),
        ("metrics.json", "read_metrics", "metrics.file.regular"),
    ],
)
def test_readers_refuse_what_is_no_regular_file_or_too_large(
    tmp_path: Path, kind: str, name: str, op: str, rule: str
) -> None:
    """witness.file.regular, metrics.file.regular: a FIFO hung both readers, /dev/zero was
    read until memory ran out (probe F9); a folder raised IsADirectoryError."""
    path = _irregular(tmp_path, name, kind)
    if kind == "too_large":
        with path.open("r+b") as f:  # past the cap by one byte
            f.seek(0, 2)
            f.write(b" ")
    read = read_witness if op == "read_witness" else read_metrics
    with pytest.raises(RecordRefused) as refused:
        read(path)
    assert refused.value.rules == [rule]
    (answer,) = node((op, {"path": str(path)}))
    assert _rules(answer) == [rule]
