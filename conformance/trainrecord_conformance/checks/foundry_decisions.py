"""Foundry run records v1: decisions of spec/README.md ("Decisions where the seed is
silent") that an implementer working from the docs alone had to guess, each pinned by a
check under the rule it decides:

* a witness without ``run_record_format`` is a version 1 witness missing a field
  (``witness.fields.missing``), not another version (``witness.run_record_format.unsupported``);
* ``witness.env.type`` covers the variables the writer reads; it does not look at the others;
* blank is white space as Python's ``str.isspace`` has it: Unicode's White_Space plus
  U+001C..U+001F, and not U+FEFF, U+200B, U+180E or U+2060 (the blank rules);
* ``observed.attempt<N>.json`` names N without leading zeros: ``observed.attempt05.json``
  is another name, read without the attempt check (``witness.attempt.filename``) and no
  sibling of metrics.json;
* a sibling witness without ``run_record_format`` says nothing about the metrics' version
  (``metrics.read.sibling_version``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.targets import Target

WITNESS = "https://trainrecord.dev/schemas/foundry/witness.schema.json"
METRICS = "https://trainrecord.dev/schemas/foundry/metrics.schema.json"
BASE_WITNESS: dict[str, Any] = {
    "attempt": 0,
    "captured_at": "2025-01-01T00:00:00+00:00",
    "config_sha": "0123456789abcdef",
    "cpu_threads": 1,
    "device": "cpu",
    "device_name": None,
    "experiment_id": 1,
    "peak_vram_mb": None,
    "run_record_format": 1,
    "wall_seconds": 0,
}
BASE_ROW: dict[str, Any] = {"benchmark": "b", "metric": "m", "horizon": 0, "seed": 0, "value": 0}
SPACE_BEYOND_ASCII = [
    "\x1c",
    "\x1d",
    "\x1e",
    "\x1f",
    "\x85",
    "\x0b\x0c",
    "\u1680",
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\x1f \u3000",
]
"""Blank: every character white space for str.isspace (U+001C..U+001F are not Unicode
White_Space, but Python, and so the schemas' \\S, count them)."""
NOT_SPACE = ["\ufeff", "\u200b", "\u180e", "\u2060", " \ufeff "]
"""Not blank: characters that look empty but str.isspace does not count (JavaScript's \\s
counts U+FEFF)."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _file(ctx: Context, name: str, value: Any) -> str:
    folder = ctx.folder(create=True)
    (folder / name).write_text(json.dumps(value), encoding="utf-8")
    return str(folder / name)


# --------------------------------------------------------------------------- version


def absent_version(ctx: Context, witness: dict[str, Any]) -> None:
    """A witness without run_record_format is refused as witness.fields.missing, never as
    witness.run_record_format.unsupported (no version was found to be unsupported)."""
    path = _file(ctx, "observed.attempt0.json", witness)
    result = ctx.run("read_witness", {"path": path})
    rule = "witness.run_record_format.unsupported"
    if result.outcome == "ok":
        raise Failed("[witness.fields.missing] a witness without run_record_format was read")
    if rule in result.rules or "witness.fields.missing" not in result.rules:
        raise Failed(
            f"[{rule}] a witness without run_record_format was refused with {result.rules}: "
            "an absent version is the missing field witness.fields.missing, not another version"
        )


def _without_version(target: Target) -> st.SearchStrategy[dict[str, Any]]:
    return S.valid_instances(WITNESS).map(
        lambda w: {**{k: v for k, v in w.items() if k != "run_record_format"}, "attempt": 0}
    )


# --------------------------------------------------------------------------- environment

UNREAD = ["PATH", "CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID", "HOME", "", "rank", "OMP_PLACES"]
NOT_TEXT: list[Any] = [1, None, 2.5, True, [], {}, ["7"], {"value": "7"}]


def unread_variables(ctx: Context, env: dict[str, Any]) -> None:
    """A variable the writer does not read (another name, or SLURM_PROCID while RANK
    decides) may hold anything: the witness is written."""
    folder = ctx.folder()
    data = {"dir": str(folder), "env": env, "config": {}, "device": "cpu", "wall_seconds": 0}
    result = ctx.run("write_witness", data)
    if result.outcome != "ok" or result.output.get("path") is None:
        raise Failed(
            f"[witness.env.type] the environment {_json(env)} gave {result.describe()}: the "
            "writer reads FOUNDRY_RUN_ID, RANK, SLURM_PROCID (only when RANK is unset), "
            "SLURM_RESTART_COUNT and OMP_NUM_THREADS; a value it does not read is not its "
            "business"
        )


def _unread_env(target: Target) -> st.SearchStrategy[dict[str, Any]]:
    other = st.tuples(st.sampled_from(UNREAD), st.sampled_from(NOT_TEXT)).map(
        lambda t: {"FOUNDRY_RUN_ID": "1", t[0]: t[1]}
    )
    shadowed = st.sampled_from(NOT_TEXT).map(
        lambda v: {"FOUNDRY_RUN_ID": "1", "RANK": "0", "SLURM_PROCID": v}
    )
    return st.one_of(other, shadowed)


UNREAD_EDGES = [
    {"FOUNDRY_RUN_ID": "1", "PATH": None},
    {"FOUNDRY_RUN_ID": "1", "CUDA_VISIBLE_DEVICES": 0, "SLURM_JOB_ID": 4217},
    {"FOUNDRY_RUN_ID": "1", "rank": [1]},
    {"FOUNDRY_RUN_ID": "1", "RANK": "0", "SLURM_PROCID": None},
    {"FOUNDRY_RUN_ID": "1", "RANK": "0", "SLURM_PROCID": 3},
]


# --------------------------------------------------------------------------- blank


def run_id_blank(ctx: Context, value: str) -> None:
    """FOUNDRY_RUN_ID of white space only (str.isspace) is blank; text with a character
    str.isspace does not count is not blank but not an integer either."""
    blank = value.isspace()
    rule = "witness.env.foundry_run_id." + ("blank" if blank else "integer")
    data: dict[str, Any] = {
        "dir": str(ctx.folder()),
        "env": {"FOUNDRY_RUN_ID": value},
        "config": {},
    }
    data.update({"device": "cpu", "wall_seconds": 0})
    result = ctx.run("write_witness", data)
    if result.outcome != "refused" or rule not in result.rules:
        why = "white space for str.isspace" if blank else "not white space for str.isspace"
        raise Failed(
            f"[{rule}] FOUNDRY_RUN_ID={_json(value)} (every character {why}: "
            f"{[hex(ord(c)) for c in value]}) gave {result.describe()}, not {rule}"
        )


def blank_text(rule: str, op: str) -> Callable[[Context, str], None]:
    """The field of ``rule`` (benchmark, metric, device) holding ``value``: refused naming
    ``rule`` when every character is white space for str.isspace, taken otherwise;
    through ``op`` (validate, write_metrics or read_witness)."""
    field = rule.split(".")[1]

    def body(ctx: Context, value: str) -> None:
        blank = value.isspace()
        if rule.startswith("metrics."):
            instance: Any = [{**BASE_ROW, field: value}]
            schema = METRICS
        else:
            instance, schema = {**BASE_WITNESS, field: value}, WITNESS
        if op == "validate":
            out = ctx.ok("validate", {"schema": schema, "instance": instance})
            refused, rules = not out["valid"], out["rules"]
        else:
            if op == "write_metrics":
                data = {"dir": str(ctx.folder()), "rows": instance}
            else:
                data = {"path": _file(ctx, "observed.attempt0.json", instance)}
            result = ctx.run(op, data)
            refused, rules = result.outcome == "refused", result.rules
        if blank and not (refused and rule in rules):
            raise Failed(
                f"[{rule}] {op}: {field} {_json(value)} ({[hex(ord(c)) for c in value]}, every "
                f"character white space for str.isspace) is blank, but it was "
                f"{'refused with ' + str(rules) if refused else 'taken'}"
            )
        if not blank and refused:
            raise Failed(
                f"[{rule}] {op}: {field} {_json(value)} ({[hex(ord(c)) for c in value]}) is "
                f"not blank (str.isspace does not count it as white space), but it was "
                f"refused with {rules}"
            )

    return body


def _blank_values(target: Target) -> st.SearchStrategy[str]:
    blank = st.lists(st.sampled_from(SPACE_BEYOND_ASCII), min_size=1, max_size=3).map("".join)
    return st.one_of(blank, st.sampled_from(NOT_SPACE))


# --------------------------------------------------------------------------- file names


def leading_zeros(ctx: Context, case: tuple[dict[str, Any], int, int]) -> None:
    """observed.attempt<N>.json with N written with leading zeros is another name: the
    witness is read without the attempt check, whatever its attempt."""
    witness, named, zeros = case
    name = f"observed.attempt{'0' * zeros}{named}.json"
    path = _file(ctx, name, witness)
    result = ctx.run("read_witness", {"path": path})
    if result.outcome != "ok":
        raise Failed(
            f"[witness.attempt.filename] {name} holding attempt {witness['attempt']} gave "
            f"{result.describe()}: N is written without leading zeros, so {name} is another "
            "name, read without the attempt check"
        )


def sibling_without_version(ctx: Context, case: tuple[Any, Any, str]) -> None:
    """Beside metrics.json, a witness without run_record_format (a broken version 1
    witness) or a file whose name has leading zeros (no witness's name) says nothing
    about the metrics' version: the metrics read."""
    rows, witness, how = case
    folder = ctx.folder(create=True)
    (folder / "metrics.json").write_text(json.dumps(rows), encoding="utf-8")
    if how == "no version":
        name, sibling = (
            "observed.attempt0.json",
            {k: v for k, v in witness.items() if k != "run_record_format"},
        )
    else:
        name, sibling = "observed.attempt00.json", {**witness, "run_record_format": 2}
    (folder / name).write_text(json.dumps(sibling), encoding="utf-8")
    result = ctx.run("read_metrics", {"path": str(folder / "metrics.json")})
    if result.outcome != "ok":
        said = {
            "no version": "a witness without run_record_format says nothing about the version",
            "leading zeros": "observed.attempt00.json is not a witness's name",
        }[how]
        raise Failed(
            f"[metrics.read.sibling_version] metrics.json beside {name} "
            f"({_json(sibling)[:200]}) gave {result.describe()}: {said}"
        )


def checks() -> list[Check]:
    """The decision checks."""
    blank_rules = [
        ("metrics.benchmark.blank", "write_metrics"),
        ("metrics.metric.blank", "write_metrics"),
        ("metrics.benchmark.blank", "validate"),
        ("metrics.metric.blank", "validate"),
        ("witness.device.blank", "validate"),
        ("witness.device.blank", "read_witness"),
    ]
    return [
        Check(
            "witness.run_record_format.unsupported",
            "an absent run_record_format is a missing field, not another version",
            frozenset({"read_witness"}),
            _without_version,
            absent_version,
            edges=lambda t: [{k: v for k, v in BASE_WITNESS.items() if k != "run_record_format"}],
        ),
        Check(
            "witness.env.type",
            "a variable the writer does not read is not looked at",
            frozenset({"write_witness"}),
            _unread_env,
            unread_variables,
            edges=lambda t: UNREAD_EDGES,
        ),
        Check(
            "witness.env.foundry_run_id.blank",
            "blank is white space as str.isspace has it (U+001C..U+001F too, U+FEFF not)",
            frozenset({"write_witness"}),
            _blank_values,
            run_id_blank,
            edges=lambda t: SPACE_BEYOND_ASCII + NOT_SPACE,
        ),
        *(
            Check(
                rule,
                f"{op}: blank is white space as str.isspace has it (U+001C..U+001F too, "
                "U+FEFF not)",
                frozenset({op}),
                _blank_values,
                blank_text(rule, op),
                edges=lambda t: SPACE_BEYOND_ASCII + NOT_SPACE,
            )
            for rule, op in blank_rules
        ),
        Check(
            "witness.attempt.filename",
            "a name with leading zeros is another name (no attempt check)",
            frozenset({"read_witness"}),
            lambda t: st.tuples(S.valid_instances(WITNESS), st.integers(0, 99), st.integers(1, 3)),
            leading_zeros,
            edges=lambda t: [
                ({**BASE_WITNESS, "attempt": 5}, 5, 1),
                ({**BASE_WITNESS, "attempt": 5}, 1, 1),
                ({**BASE_WITNESS, "attempt": 0}, 0, 1),
                ({**BASE_WITNESS, "attempt": 12}, 12, 2),
            ],
        ),
        Check(
            "metrics.read.sibling_version",
            "a sibling without run_record_format, or not named as a witness, says nothing",
            frozenset({"read_metrics"}),
            lambda t: st.tuples(
                S.valid_instances(METRICS),
                S.valid_instances(WITNESS),
                st.sampled_from(["no version", "leading zeros"]),
            ),
            sibling_without_version,
            edges=lambda t: [
                ([BASE_ROW], BASE_WITNESS, "no version"),
                ([BASE_ROW], BASE_WITNESS, "leading zeros"),
            ],
        ),
    ]
