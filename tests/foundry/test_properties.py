"""Hypothesis properties of the Foundry writers.

* Any valid input is written, validates against the spec schema (the oracle) and reads
  back equal.
* Any input that breaks exactly one rule is refused with that rule's id and leaves the
  filesystem exactly as it was (a snapshot of the whole tree, before and after).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.foundry.conftest import snapshot
from trainrecord import schemas
from trainrecord.errors import RecordRefused
from trainrecord.foundry import (
    METRICS_SCHEMA,
    WITNESS_SCHEMA,
    config_sha,
    read_metrics,
    read_witness,
    write_metrics,
    write_witness,
)
from trainrecord.foundry.envvars import ASCII_SPACE, INTEGER

INT64 = st.integers(-(2**63), 2**63 - 1)
PAD = st.text(alphabet=ASCII_SPACE, max_size=3)
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
CONFIG = st.dictionaries(
    st.text(max_size=8),
    st.recursive(
        JSON_SCALARS | st.sampled_from([math.nan, math.inf, -math.inf]),  # hashed as json.dumps
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=8,
    ),
    max_size=5,
)
DEVICES = st.sampled_from(["cpu", "cpu:0", "cuda", "cuda:1", "mps", "xpu:0"])


@st.composite
def spelled(draw: st.DrawFn, values: st.SearchStrategy[int]) -> tuple[int, str]:
    """An integer and one of its accepted spellings."""
    value = draw(values)
    sign = "-" if value < 0 else draw(st.sampled_from(["", "+"]))
    zeros = "0" * draw(st.integers(0, 2))
    return value, f"{draw(PAD)}{sign}{zeros}{abs(value)}{draw(PAD)}"


NOT_INTEGER = st.text(max_size=12).filter(lambda s: not INTEGER.fullmatch(s.strip(ASCII_SPACE)))


@st.composite
def witness_inputs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid call of write_witness on rank 0, and what the witness must hold."""
    run_id, run_text = draw(spelled(INT64))
    env = {"FOUNDRY_RUN_ID": run_text}
    expect: dict[str, Any] = {"experiment_id": run_id, "attempt": 0}
    if draw(st.booleans()):
        expect["attempt"], env["SLURM_RESTART_COUNT"] = draw(spelled(st.integers(0, 10**6)))
    if draw(st.booleans()):
        expect["cpu_threads"], env["OMP_NUM_THREADS"] = draw(spelled(st.integers(1, 4096)))
    rank = draw(st.sampled_from(["unset", "RANK", "SLURM_PROCID", "shadowed"]))
    if rank == "RANK":
        env["RANK"] = draw(spelled(st.just(0)))[1]
    elif rank == "SLURM_PROCID":
        env["SLURM_PROCID"] = draw(spelled(st.just(0)))[1]
    elif rank == "shadowed":
        env.update(RANK="0", SLURM_PROCID=draw(NOT_INTEGER))
    args = {
        "config": draw(CONFIG),
        "device": draw(DEVICES),
        "wall_seconds": draw(st.integers(0, 10**9)),
        "env": env,
    }
    return {"args": args, "expect": expect}


@given(witness_inputs())
def test_valid_witness_is_written_and_reads_back(case: dict[str, Any]) -> None:
    args, expect = case["args"], case["expect"]
    with tempfile.TemporaryDirectory() as tmp:
        path = write_witness(Path(tmp) / "res", **args)
        assert path is not None and path.name == f"observed.attempt{expect['attempt']}.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        assert schemas.problems(data, WITNESS_SCHEMA) == []
        assert read_witness(path).model_dump() == data
        for key, value in expect.items():
            assert data[key] == value
        text = json.dumps(args["config"], sort_keys=True)  # the seed's definition, NaN too
        assert data["config_sha"] == config_sha(args["config"])
        assert data["config_sha"] == hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        assert data["device"] == args["device"]
        assert data["wall_seconds"] == args["wall_seconds"]
        assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


WITNESS_MUTATIONS: list[tuple[str, Callable[[st.DrawFn, dict[str, Any]], None]]] = []


def mutation(table: list, rule: str) -> Callable:
    def register(func: Callable) -> Callable:
        table.append((rule, func))
        return func

    return register


def _env(args: dict[str, Any]) -> dict[str, str]:
    return args["env"]


def _set_env(name: str, strategy: st.SearchStrategy[str]) -> Callable:
    def apply(draw: st.DrawFn, args: dict[str, Any]) -> None:
        if name == "SLURM_PROCID":
            _env(args).pop("RANK", None)
        _env(args)[name] = draw(strategy)

    return apply


NEGATIVE = st.integers(-(2**63), -1).map(str)
BLANK = st.text(alphabet=ASCII_SPACE, max_size=4)
UNICODE_BLANK = st.text(alphabet=ASCII_SPACE + "\x1c\x85\u00a0\u2003\u2028\u3000", max_size=4)
"""White space as Unicode (str.isspace) defines it: a blank FOUNDRY_RUN_ID."""
for _name, _below, _below_values in [
    ("RANK", "negative", NEGATIVE),
    ("SLURM_PROCID", "negative", NEGATIVE),
    ("SLURM_RESTART_COUNT", "negative", NEGATIVE),
    ("OMP_NUM_THREADS", "range", st.integers(-(2**63), 0).map(str)),
]:
    _prefix = f"witness.env.{_name.lower()}"
    WITNESS_MUTATIONS.append((f"{_prefix}.integer", _set_env(_name, NOT_INTEGER)))
    WITNESS_MUTATIONS.append((f"{_prefix}.{_below}", _set_env(_name, _below_values)))


@mutation(WITNESS_MUTATIONS, "witness.env.foundry_run_id.unset")
def _unset_run_id(draw: st.DrawFn, args: dict[str, Any]) -> None:
    del _env(args)["FOUNDRY_RUN_ID"]


WITNESS_MUTATIONS.append(
    ("witness.env.foundry_run_id.blank", _set_env("FOUNDRY_RUN_ID", UNICODE_BLANK))
)
WITNESS_MUTATIONS.append(
    (
        "witness.env.foundry_run_id.integer",
        _set_env("FOUNDRY_RUN_ID", NOT_INTEGER.filter(lambda s: s.strip())),
    )
)


@mutation(WITNESS_MUTATIONS, "witness.wall_seconds.type")
def _wall_type(draw: st.DrawFn, args: dict[str, Any]) -> None:
    args["wall_seconds"] = draw(st.floats(min_value=0) | st.text() | st.booleans() | st.none())


@mutation(WITNESS_MUTATIONS, "witness.wall_seconds.negative")
def _wall_negative(draw: st.DrawFn, args: dict[str, Any]) -> None:
    args["wall_seconds"] = draw(st.integers(max_value=-1))


@mutation(WITNESS_MUTATIONS, "witness.device.type")
def _device_type(draw: st.DrawFn, args: dict[str, Any]) -> None:
    args["device"] = draw(st.none() | st.integers() | st.lists(st.just("cpu"), max_size=1))


@mutation(WITNESS_MUTATIONS, "witness.device.blank")
def _device_blank(draw: st.DrawFn, args: dict[str, Any]) -> None:
    args["device"] = draw(st.text(alphabet=" \t\n\r\u00a0\u2003\u3000", max_size=4))


@mutation(WITNESS_MUTATIONS, "witness.config.serializable")
def _config_bad(draw: st.DrawFn, args: dict[str, Any]) -> None:
    # json.dumps cannot serialize these; NaN and infinities it writes (and they are hashed)
    bad = draw(st.sampled_from([{1, 2}, object(), b"x", 1j, frozenset()]))
    args["config"] = {**args["config"], draw(st.text(max_size=4)): bad}


@mutation(WITNESS_MUTATIONS, "witness.path.exists")
def _exists(draw: st.DrawFn, args: dict[str, Any]) -> None:
    args["existing"] = draw(st.binary(max_size=64))


@st.composite
def broken_witness(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, Any]]:
    case = draw(witness_inputs())
    rule, apply = draw(st.sampled_from(WITNESS_MUTATIONS))
    args = dict(case["args"], env=dict(case["args"]["env"]))
    apply(draw, args)
    return rule, args, case["expect"]


@given(broken_witness())
def test_witness_breaking_one_rule_is_refused_and_changes_nothing(
    case: tuple[str, dict[str, Any], dict[str, Any]],
) -> None:
    rule, args, expect = case
    existing = args.pop("existing", None)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        results = root / "a" / "b"
        if existing is not None:
            results.mkdir(parents=True)
            (results / f"observed.attempt{expect['attempt']}.json").write_bytes(existing)
        before = snapshot(root)
        try:
            write_witness(results, **args)
        except RecordRefused as exc:
            assert exc.rules == [rule], str(exc)
        else:
            raise AssertionError(f"not refused; expected {rule}")
        assert snapshot(root) == before


# Metrics ---------------------------------------------------------------------------------

NONBLANK = st.text(min_size=1, max_size=12).filter(lambda s: re.search(r"\S", s))
VALUES = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**53), 2**53)
ROW = st.fixed_dictionaries(
    {
        "benchmark": NONBLANK,
        "metric": NONBLANK,
        "horizon": st.integers(0, 2**64),
        "seed": st.integers(0, 2**64),
        "value": VALUES,
    }
)
ROWS = st.lists(ROW, min_size=1, max_size=5)


@given(ROWS)
def test_valid_metrics_are_written_and_read_back(rows: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_metrics(Path(tmp) / "x" / "res", rows)
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data == rows
        assert schemas.problems(data, METRICS_SCHEMA) == []
        assert [row.model_dump() for row in read_metrics(path)] == rows


ROW_MUTATIONS: list[tuple[str, Callable[[st.DrawFn, dict[str, Any]], None]]] = []


def _field(name: str, strategy: st.SearchStrategy[Any]) -> Callable:
    def apply(draw: st.DrawFn, row: dict[str, Any]) -> None:
        row[name] = draw(strategy)

    return apply


NOT_TEXT = st.none() | st.integers() | st.booleans() | st.lists(st.text(max_size=2), max_size=2)
BLANK_TEXT = st.text(alphabet=" \t\n\r\u00a0\u2003", max_size=5)
NOT_INT = (
    st.floats(min_value=0) | st.booleans() | st.none() | st.integers(0).map(str) | st.just([1])
)
for _name in ("benchmark", "metric"):
    ROW_MUTATIONS.append((f"metrics.{_name}.type", _field(_name, NOT_TEXT)))
    ROW_MUTATIONS.append((f"metrics.{_name}.blank", _field(_name, BLANK_TEXT)))
for _name in ("horizon", "seed"):
    ROW_MUTATIONS.append((f"metrics.{_name}.type", _field(_name, NOT_INT)))
    ROW_MUTATIONS.append((f"metrics.{_name}.negative", _field(_name, st.integers(max_value=-1))))
ROW_MUTATIONS.append(
    (
        "metrics.value.type",
        _field(
            "value",
            st.booleans()
            | st.none()
            | st.text(max_size=4)
            | st.sampled_from([math.nan, math.inf, -math.inf])
            | st.just({"mean": 1.0}),
        ),
    )
)


@mutation(ROW_MUTATIONS, "metrics.row.missing")
def _missing(draw: st.DrawFn, row: dict[str, Any]) -> None:
    for key in draw(st.sets(st.sampled_from(sorted(row)), min_size=1)):
        del row[key]


@mutation(ROW_MUTATIONS, "metrics.row.extra")
def _extra(draw: st.DrawFn, row: dict[str, Any]) -> None:
    key = draw(st.text(max_size=6).filter(lambda k: k not in row))
    row[key] = draw(JSON_SCALARS)


@st.composite
def broken_rows(draw: st.DrawFn) -> tuple[str, Any]:
    rows = [dict(r) for r in draw(ROWS)]
    kind = draw(st.sampled_from(["row", "row", "row", "not a row", "empty", "not a list"]))
    if kind == "empty":
        return "metrics.empty", []
    if kind == "not a list":
        return "metrics.type", draw(st.none() | st.text() | st.integers() | st.just(rows[0]))
    index = draw(st.integers(0, len(rows) - 1))
    if kind == "not a row":
        rows[index] = draw(st.none() | st.integers() | st.text() | st.lists(st.integers()))
        return "metrics.row.type", rows
    rule, apply = draw(st.sampled_from(ROW_MUTATIONS))
    apply(draw, rows[index])
    return rule, rows


@given(broken_rows())
def test_metrics_breaking_one_rule_are_refused_and_change_nothing(case: tuple[str, Any]) -> None:
    rule, rows = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        before = snapshot(root)
        try:
            write_metrics(root / "a" / "b", rows)
        except RecordRefused as exc:
            assert set(exc.rules) == {rule}, str(exc)
        else:
            raise AssertionError(f"not refused; expected {rule}")
        assert snapshot(root) == before
