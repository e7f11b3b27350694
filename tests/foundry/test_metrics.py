"""write_metrics and read_metrics: every refusal rule, the number decisions, atomic replace."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, SPEC
from tests.foundry.conftest import good_row, snapshot
from trainrecord import schemas
from trainrecord.errors import RecordRefused
from trainrecord.foundry import METRICS_SCHEMA, read_metrics, write_metrics

REFUSALS: list[tuple[str, Any, str, str]] = [
    # (case, rows, rule, field)
    ("no rows", [], "metrics.empty", "(top level)"),
    ("rows is a dict", good_row(), "metrics.type", "(top level)"),
    ("rows is text", "ETTh1,mse,96,0,0.38", "metrics.type", "(top level)"),
    ("rows is None", None, "metrics.type", "(top level)"),
    ("row is a number", [good_row(), 3], "metrics.row.type", "[1]"),
    ("row is a list", [["ETTh1", "mse", 96, 0, 0.3]], "metrics.row.type", "[0]"),
    ("row is None", [None], "metrics.row.type", "[0]"),
    (
        "missing value",
        [{k: v for k, v in good_row().items() if k != "value"}],
        "metrics.row.missing",
        "[0].value",
    ),
    (
        "missing benchmark",
        [{k: v for k, v in good_row().items() if k != "benchmark"}],
        "metrics.row.missing",
        "[0].benchmark",
    ),
    ("extra field", [good_row(split="test")], "metrics.row.extra", "[0].split"),
    ("benchmark blank", [good_row(benchmark="")], "metrics.benchmark.blank", "[0].benchmark"),
    ("benchmark spaces", [good_row(benchmark=" \t\n")], "metrics.benchmark.blank", "[0].benchmark"),
    ("benchmark not text", [good_row(benchmark=7)], "metrics.benchmark.type", "[0].benchmark"),
    (
        "benchmark lone surrogate",
        [good_row(benchmark="a\udc80")],
        "metrics.benchmark.type",
        "[0].benchmark",
    ),
    ("metric blank", [good_row(metric="  ")], "metrics.metric.blank", "[0].metric"),
    ("metric not text", [good_row(metric=b"mse")], "metrics.metric.type", "[0].metric"),
    ("horizon bool", [good_row(horizon=True)], "metrics.horizon.type", "[0].horizon"),
    ("horizon 1.0", [good_row(horizon=1.0)], "metrics.horizon.type", "[0].horizon"),
    ("horizon text", [good_row(horizon="96")], "metrics.horizon.type", "[0].horizon"),
    ("horizon negative", [good_row(horizon=-1)], "metrics.horizon.negative", "[0].horizon"),
    ("seed bool", [good_row(seed=False)], "metrics.seed.type", "[0].seed"),
    ("seed 0.0", [good_row(seed=0.0)], "metrics.seed.type", "[0].seed"),
    ("seed negative", [good_row(seed=-5)], "metrics.seed.negative", "[0].seed"),
    ("value bool", [good_row(value=True)], "metrics.value.type", "[0].value"),
    ("value text", [good_row(value="0.38")], "metrics.value.type", "[0].value"),
    ("value None", [good_row(value=None)], "metrics.value.type", "[0].value"),
    ("value NaN", [good_row(value=math.nan)], "metrics.value.type", "[0].value"),
    ("value inf", [good_row(value=math.inf)], "metrics.value.type", "[0].value"),
    ("value -inf", [good_row(value=-math.inf)], "metrics.value.type", "[0].value"),
    ("second row bad", [good_row(), good_row(value=math.nan)], "metrics.value.type", "[1].value"),
    ("value 10**400", [good_row(value=10**400)], "metrics.value.type", "[0].value"),
    ("value -(10**400)", [good_row(value=-(10**400))], "metrics.value.type", "[0].value"),
    ("value 2**1024", [good_row(value=2**1024)], "metrics.value.type", "[0].value"),
]


@pytest.mark.parametrize(("case", "rows", "rule", "field"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusal(results: Path, case: str, rows: Any, rule: str, field: str) -> None:
    """metrics.write.nothing_on_refusal: refused with the rule, field named, nothing created."""
    before = snapshot(results.parent.parent)
    with pytest.raises(RecordRefused) as info:
        write_metrics(results, rows)
    assert set(info.value.rules) == {rule}
    assert info.value.field == field
    assert rule in str(info.value)
    assert snapshot(results.parent.parent) == before
    assert not results.exists()


def test_an_extra_field_is_refused_listing_the_fields_a_row_holds(results: Path) -> None:
    # A newcomer probe: "[0].split: field 'split' is not allowed here; remove it" did not say
    # which fields are.
    with pytest.raises(RecordRefused) as info:
        write_metrics(results, [good_row(split="test")])
    assert str(info.value) == (
        "[metrics.row.extra] [0].split: field 'split' is not allowed here; remove it (a row "
        "holds only benchmark, metric, horizon, seed, value)"
    )


def test_a_refused_call_keeps_the_previous_file(results: Path) -> None:
    write_metrics(results, [good_row()])
    before = snapshot(results)
    with pytest.raises(RecordRefused):
        write_metrics(results, [good_row(), good_row(horizon=-1)])
    assert snapshot(results) == before


def test_written_file_matches_the_oracle_and_reads_back(results: Path) -> None:
    """metrics.write.rows: exactly the rows given, in their order, as strict JSON; and
    metrics.write.non_ascii: text outside ASCII as its UTF-8 bytes, never \\uXXXX."""
    rows = [
        good_row(),
        good_row(benchmark="Wetter – München", horizon=0, seed=2**40, value=-0.0),
        good_row(value=3),
        good_row(value=1e-300),
    ]
    path = write_metrics(results, rows)
    assert path == results / "metrics.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert schemas.problems(data, METRICS_SCHEMA) == []
    assert data == rows
    assert [list(row) for row in data] == [["benchmark", "metric", "horizon", "seed", "value"]] * 4
    assert [m.model_dump() for m in read_metrics(path)] == rows
    raw = path.read_bytes()
    assert "Wetter – München".encode() in raw and b"\\u" not in raw


def test_integers_up_to_the_largest_float_are_numbers(results: Path) -> None:
    """An int is a number when a float64 holds it (rounded): 2**1024 - 2**971 is the largest
    double; 2**1024 - 2**970 already rounds to infinity."""
    rows = [good_row(value=2**1024 - 2**971), good_row(value=-(2**1023)), good_row(value=2**64)]
    path = write_metrics(results, rows)
    assert [r.value for r in read_metrics(path)] == [float(r["value"]) for r in rows]
    with pytest.raises(RecordRefused) as info:
        write_metrics(results, [good_row(value=2**1024 - 2**970)])
    assert info.value.rules == ["metrics.value.type"]


@pytest.mark.parametrize("value", [10**400, -(10**400), 2**1024])
def test_reader_refuses_an_integer_no_float_can_hold(tmp_path: Path, value: int) -> None:
    """Not a finite number for any float reader: metrics.value.type, never a model crash."""
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps([good_row(value=value)]), encoding="utf-8")
    assert schemas.problems(json.loads(path.read_text()), METRICS_SCHEMA)[0].rule == (
        "metrics.value.type"
    )
    with pytest.raises(RecordRefused) as info:
        read_metrics(path)
    assert info.value.rules == ["metrics.value.type"]
    assert info.value.field == "[0].value"


def test_rows_may_come_from_any_iterable(results: Path) -> None:
    path = write_metrics(results, (good_row(seed=s) for s in range(3)))
    assert [r.seed for r in read_metrics(path)] == [0, 1, 2]


def test_metrics_are_replaced(results: Path) -> None:
    write_metrics(results, [good_row(value=1.0)])
    write_metrics(results, [good_row(value=2.0), good_row(value=3.0)])
    assert [r.value for r in read_metrics(results / "metrics.json")] == [2.0, 3.0]
    assert sorted(p.name for p in results.iterdir()) == ["metrics.json"]


# numpy and torch scalars: the decision in spec/README.md ------------------------------------


def test_numpy_numbers_are_taken_as_the_number_they_hold(results: Path) -> None:
    np = pytest.importorskip("numpy")
    rows = [
        good_row(horizon=np.int64(96), seed=np.uint8(3), value=np.float32(0.5)),
        good_row(value=np.float64(0.25)),
        good_row(value=np.int32(-2)),
    ]
    data = json.loads(write_metrics(results, rows).read_text(encoding="utf-8"))
    assert [(r["horizon"], r["seed"], r["value"]) for r in data] == [
        (96, 3, 0.5),
        (96, 0, 0.25),
        (96, 0, -2),
    ]


def test_the_value_rule_states_what_is_done_with_numpy_scalars() -> None:
    """The registry says what the writer does: numpy numbers are taken as the number they
    hold (an int is a number too), and only tensors, booleans and non-finite values are
    refused; it must not claim that every scalar other than a Python float is refused."""
    registry = json.loads((SPEC / "rules" / "foundry.json").read_text(encoding="utf-8"))
    [rule] = [r for r in registry["rules"] if r["id"] == "metrics.value.type"]
    statement = rule["statement"]
    assert "that are not Python floats are refused" not in statement
    assert "numpy" in statement and "as the number it holds" in statement
    assert "tensor" in statement and "integer" in statement


@pytest.mark.parametrize(
    ("field", "make", "rule"),
    [
        ("value", lambda np: np.float32("nan"), "metrics.value.type"),
        ("value", lambda np: np.float64("inf"), "metrics.value.type"),
        ("value", lambda np: np.bool_(True), "metrics.value.type"),
        ("horizon", lambda np: np.float64(1.0), "metrics.horizon.type"),
        ("seed", lambda np: np.int64(-1), "metrics.seed.negative"),
        ("value", lambda np: np.array([0.5]), "metrics.value.type"),
    ],
)
def test_numpy_values_that_are_not_valid_are_refused(
    results: Path, field: str, make: Any, rule: str
) -> None:
    np = pytest.importorskip("numpy")
    with pytest.raises(RecordRefused) as info:
        write_metrics(results, [good_row(**{field: make(np)})])
    assert info.value.rules == [rule]
    assert not results.exists()


def test_torch_tensors_are_refused_with_a_hint(results: Path) -> None:
    torch = pytest.importorskip("torch")
    for value in (torch.tensor(0.5), torch.tensor([0.5])):
        with pytest.raises(RecordRefused) as info:
            write_metrics(results, [good_row(value=value)])
        assert info.value.rules == ["metrics.value.type"]
        assert ".item()" in str(info.value)
    assert write_metrics(results, [good_row(value=torch.tensor(0.5).item())]).exists()


# Reading -----------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [b'[{"value": NaN}]', b'[{"value": Infinity}]', b"[", b"\xff", b""])
def test_reader_refuses_non_json(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "metrics.json"
    path.write_bytes(raw)
    with pytest.raises(RecordRefused) as info:
        read_metrics(path)
    assert info.value.rules == ["metrics.file.json"]


def test_reader_refuses_invalid_rows(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps([good_row(horizon=1.0)]), encoding="utf-8")
    with pytest.raises(RecordRefused) as info:
        read_metrics(path)
    assert info.value.rules == ["metrics.horizon.type"]


@pytest.mark.parametrize("version", [2, 0, "2", None, True, 1.0])
def test_reader_refuses_metrics_beside_another_version(results: Path, version: Any) -> None:
    """metrics.read.sibling_version: only the integer 1 is version 1; true and 1.0 (equal
    to 1 in Python, not integers in JSON) are another version, and so is 0 (below 1)."""
    path = write_metrics(results, [good_row()])
    (results / "observed.attempt1.json").write_text(
        json.dumps({"run_record_format": version}), encoding="utf-8"
    )
    with pytest.raises(RecordRefused) as info:
        read_metrics(path)
    assert info.value.rules == ["metrics.read.sibling_version"]
    assert "observed.attempt1.json" in str(info.value)


def test_reader_reads_metrics_beside_a_version_1_witness(results: Path) -> None:
    path = write_metrics(results, [good_row()])
    (results / "observed.attempt0.json").write_text('{"run_record_format": 1}', encoding="utf-8")
    (results / "observed.attempt1.json").write_text("not json", encoding="utf-8")
    assert len(read_metrics(path)) == 1


def test_a_broken_witness_does_not_hide_a_later_one_of_another_version(results: Path) -> None:
    """metrics.read.sibling_version: a witness that is not strict JSON says nothing about the
    version, and the witnesses after it are still looked at: a version 2 witness of
    attempt 1 beside a broken attempt 0 refuses the metrics."""
    path = write_metrics(results, [good_row()])
    (results / "observed.attempt0.json").write_text("not json", encoding="utf-8")
    (results / "observed.attempt1.json").write_text('{"run_record_format": 2}', encoding="utf-8")
    with pytest.raises(RecordRefused) as info:
        read_metrics(path)
    assert info.value.rules == ["metrics.read.sibling_version"]
    assert "observed.attempt1.json" in str(info.value)


def test_a_name_with_leading_zeros_is_no_sibling_witness(results: Path) -> None:
    """metrics.read.sibling_version looks only at witness names the writer writes (N without
    leading zeros): a version 2 document in observed.attempt01.json refuses nothing."""
    path = write_metrics(results, [good_row()])
    (results / "observed.attempt01.json").write_text('{"run_record_format": 2}', encoding="utf-8")
    assert len(read_metrics(path)) == 1
    assert len(read_metrics(results)) == 1


# Atomic replace, with real processes -------------------------------------------------------

REWRITER = """
import sys
from trainrecord.foundry import write_metrics
i = 0
while True:
    i += 1
    rows = [{"benchmark": "b" * (1 + i % 500), "metric": "m", "horizon": i, "seed": 0,
             "value": float(i)} for _ in range(1 + i % 40)]
    write_metrics(sys.argv[1], rows)
    if i == 1:
        print("ready", flush=True)
"""


def _rewriter(folder: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", REWRITER, str(folder)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _consistent(path: Path) -> int:
    rows = json.loads(path.read_bytes())
    assert schemas.problems(rows, METRICS_SCHEMA) == []
    horizons = {r["horizon"] for r in rows}
    assert len(horizons) == 1 and len(rows) == 1 + next(iter(horizons)) % 40
    return next(iter(horizons))


def test_readers_never_see_a_mix_while_metrics_are_replaced(results: Path) -> None:
    """metrics.write.atomic_replace: a reader sees the old rows or the new ones."""
    proc = _rewriter(results)
    try:
        seen = set()
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            seen.add(_consistent(results / "metrics.json"))
    finally:
        proc.kill()
        proc.wait()
    assert len(seen) > 1, "the writer never replaced the file while we read"


def test_a_killed_writer_leaves_a_complete_file(results: Path) -> None:
    """metrics.write.atomic_replace: SIGKILL at any moment leaves a complete file."""
    for delay in (0.05, 0.2, 0.4):
        proc = _rewriter(results)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        _consistent(results / "metrics.json")
    leftovers = [p.name for p in results.iterdir() if p.name != "metrics.json"]
    assert all(name.startswith(".metrics.json.") and name.endswith(".tmp") for name in leftovers)


def test_read_metrics_takes_the_folder_write_metrics_took(results: Path) -> None:
    """API probe F9: write_metrics(results_dir, rows) but read_metrics(results_dir) was
    refused ('is a folder, not a regular file')."""
    write_metrics(results, [good_row()])
    assert read_metrics(results) == read_metrics(results / "metrics.json")
    assert len(read_metrics(results)) == 1
