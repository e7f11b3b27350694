"""Foundry run records v1: what the writers leave on disk, judged field by field, each
finding under the rule it breaks.

A written witness is read back and every problem is named by its own rule: a schema rule
of the witness (``witness.fields.missing`` naming the field, ``witness.captured_at.format``
...), ``witness.file.json`` (not one strict JSON document), ``witness.attempt.filename``
(attempt is not the N of its file name), ``canonical.config`` (config_sha is not the hash
of ``json.dumps(config, sort_keys=True)``), ``witness.device.cpu_nulls``, and
``witness.write.fields`` for the rest (where the file is, and the fields the inputs fix:
experiment_id, attempt, device, wall_seconds, cpu_threads). Each of those rules gets a
check through ``write_witness`` here that fails on its own findings only, so a writer that
drops a field fails ``witness.fields.missing``, not the checks of other rules that merely
needed a witness on disk (``witness.path.exists``, ...). The same for metrics.json:
``metrics.write.rows`` (the rows written, in order, unchanged).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed, written_json
from trainrecord_conformance.oracle import schema_problems
from trainrecord_conformance.targets import Target

WITNESS = "https://trainrecord.dev/schemas/foundry/witness.schema.json"
METRICS = "https://trainrecord.dev/schemas/foundry/metrics.schema.json"
FIELDS_RULE = "witness.write.fields"
ROWS_RULE = "metrics.write.rows"
Finding = tuple[str, str]
"""(rule id, message naming the rule, the file, the field and the value)."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr)


def witness_input(folder: Path, env: dict[str, Any], config: Any) -> dict[str, Any]:
    """write_witness's input: the results folder, the environment and the configuration,
    on ``cpu`` with 7 whole seconds."""
    return {"dir": str(folder), "env": env, "config": config, "device": "cpu", "wall_seconds": 7}


def config_sha(config: Any) -> str:
    """The seed's definition: sha256 over json.dumps(config, sort_keys=True), 16 hex."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def witness_findings(out: dict[str, Any], data: dict[str, Any]) -> tuple[Path, Any, list[Finding]]:
    """Judge what a rank-0 write_witness with input ``data`` left (its answer ``out``):
    (the file it should be, the parsed witness or None, every finding)."""
    env = data["env"]
    folder = Path(data["dir"])
    attempt = int(env.get("SLURM_RESTART_COUNT", "0"))
    path = folder / f"observed.attempt{attempt}.json"
    name = path.name
    if not path.is_file():
        held = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else None
        where = f"the results folder holds {held}" if held is not None else "no results folder"
        return (
            path,
            None,
            [
                (
                    FIELDS_RULE,
                    f"[{FIELDS_RULE}] no {name} was written for attempt {attempt} ({where}; "
                    f"the answer's path is {_json(out.get('path'))})",
                )
            ],
        )
    found: list[Finding] = []
    answered = out.get("path")
    if answered is None or Path(answered).resolve() != path.resolve():
        found.append(
            (FIELDS_RULE, f"[{FIELDS_RULE}] the answer's path is {_json(answered)}, not {path}")
        )
    try:
        witness = written_json(path, "witness.file.json")
    except Failed as exc:
        return path, None, [*found, ("witness.file.json", str(exc))]
    for problem in schema_problems(witness, WITNESS):
        found.append((problem.rule, f"{name}: {problem}"))
    if not isinstance(witness, dict):
        return path, witness, found

    def differs(field: str, want: Any) -> bool:
        """Of the right type (a wrong type is the schema's finding) but another value."""
        have = witness.get(field)
        return field in witness and type(have) is type(want) and have != want

    if differs("attempt", attempt):
        found.append(
            (
                "witness.attempt.filename",
                f"[witness.attempt.filename] {name} attempt: {_json(witness['attempt'])}, but "
                f"the file is the witness of attempt {attempt} (SLURM_RESTART_COUNT="
                f"{_json(env.get('SLURM_RESTART_COUNT'))})",
            )
        )
    sha = config_sha(data["config"])
    if differs("config_sha", sha):
        found.append(
            (
                "canonical.config",
                f"[canonical.config] {name} config_sha: {_json(witness['config_sha'])}, but "
                f"the sha256 of json.dumps(config, sort_keys=True) starts {sha}",
            )
        )
    wanted: dict[str, tuple[Any, str]] = {
        "experiment_id": (
            int(env["FOUNDRY_RUN_ID"]),
            f"FOUNDRY_RUN_ID={_json(env['FOUNDRY_RUN_ID'])}",
        ),
        "device": (data["device"], "the device given"),
        "wall_seconds": (data["wall_seconds"], "the wall_seconds given"),
    }
    if "OMP_NUM_THREADS" in env:
        wanted["cpu_threads"] = (
            int(env["OMP_NUM_THREADS"]),
            f"OMP_NUM_THREADS={_json(env['OMP_NUM_THREADS'])}",
        )
    for field, (want, source) in wanted.items():
        if differs(field, want):
            found.append(
                (
                    FIELDS_RULE,
                    f"[{FIELDS_RULE}] {name} {field}: {_json(witness[field])}, but {source} "
                    f"makes it {_json(want)}",
                )
            )
    if str(data["device"]).startswith("cpu"):
        for field in ("device_name", "peak_vram_mb"):
            if witness.get(field) is not None:
                found.append(
                    (
                        "witness.device.cpu_nulls",
                        f"[witness.device.cpu_nulls] {name} {field}: "
                        f"{_json(witness[field])}, but on cpu it is null",
                    )
                )
    return path, witness, found


def write_judged_witness(
    ctx: Context, env: dict[str, Any], config: Any, folder: Path | None = None
) -> tuple[Path, Path, Any, list[Finding]]:
    """Write a witness with valid inputs (rank 0): (folder, file, witness, findings)."""
    folder = folder or ctx.folder()
    data = witness_input(folder, env, config)
    out = ctx.ok("write_witness", data)
    path, witness, found = witness_findings(out, data)
    return folder, path, witness, found


def _writer_keeps(rule: str) -> Callable[[Context, Any], None]:
    """write_witness writes a witness that keeps ``rule`` (findings of other rules are
    their own checks' business)."""

    def body(ctx: Context, case: tuple[dict[str, str], Any]) -> None:
        env, config = case
        _, _, _, found = write_judged_witness(ctx, env, config)
        mine = [message for r, message in found if r == rule]
        if mine:
            raise Failed("; ".join(mine))

    return body


WITNESS_EDGES: list[tuple[dict[str, str], Any]] = [
    ({"FOUNDRY_RUN_ID": "1"}, {"lr": 0.1}),
    ({"FOUNDRY_RUN_ID": "0", "SLURM_RESTART_COUNT": "1"}, {}),
    (
        {"FOUNDRY_RUN_ID": "-5", "SLURM_RESTART_COUNT": "12", "OMP_NUM_THREADS": "3", "RANK": "0"},
        {"b": [1, 2.0, None, True], "a": {"\u00e9": "\u00fc"}},
    ),
    ({"FOUNDRY_RUN_ID": "4217", "SLURM_PROCID": "0", "OMP_NUM_THREADS": "1"}, {"": None}),
]
"""Every environment variable the writer reads, a resumed attempt (1, and 12: two digits in
the file name), a configuration with nesting, floats, null and non-ASCII keys."""


def witness_writer_rules() -> list[str]:
    """The rules a written witness is judged by here (witness.device.cpu_nulls has its own
    check in :mod:`.foundry`)."""
    schema = sorted(
        r for r in S.schema_rules() if any(s.schema_id == WITNESS for s in S.rule_sites(r))
    )
    return [*schema, "witness.file.json", "witness.attempt.filename", "canonical.config"]


# --------------------------------------------------------------------------- metrics


def metrics_rows_findings(path: Path, rows: Any, rule: str, what: str) -> list[Finding]:
    """metrics.json at ``path`` holds exactly ``rows`` (same types, same order)?"""
    from trainrecord_conformance.checks.foundry import _same

    try:
        data = written_json(path, rule, what)
    except Failed as exc:
        return [(rule, str(exc))]
    if _same(data, rows):
        return []
    if isinstance(data, list) and isinstance(rows, list) and len(data) == len(rows):
        for i, (have, want) in enumerate(zip(data, rows, strict=True)):
            if not _same(have, want):
                return [(rule, f"[{rule}] {what} [{i}]: {_json(have)}, the row was {_json(want)}")]
    return [(rule, f"[{rule}] {what} holds {_json(data)[:400]}, the rows were {_json(rows)[:400]}")]


def metrics_rows(ctx: Context, rows: Any) -> None:
    """write_metrics writes metrics.json in the results folder holding exactly the rows."""
    folder = ctx.folder()
    out = ctx.ok("write_metrics", {"dir": str(folder), "rows": rows})
    path = folder / "metrics.json"
    found = metrics_rows_findings(path, rows, ROWS_RULE, "metrics.json after the write")
    if not found and Path(out["path"]).resolve() != path.resolve():
        found = [
            (ROWS_RULE, f"[{ROWS_RULE}] the answer's path is {_json(out['path'])}, not {path}")
        ]
    if found:
        raise Failed("; ".join(m for _, m in found))


def checks() -> list[Check]:
    """The writer checks, one per rule a written witness can break, and metrics rows."""

    def cases(target: Target) -> st.SearchStrategy[tuple[dict[str, str], Any]]:
        return st.tuples(S.foundry_env(), S.configs())

    out = [
        Check(
            rule,
            "write_witness writes a witness that keeps it",
            frozenset({"write_witness"}),
            cases,
            _writer_keeps(rule),
            scale="schema",
            edges=lambda t: WITNESS_EDGES,
        )
        for rule in witness_writer_rules()
    ]
    out.append(
        Check(
            FIELDS_RULE,
            "write_witness writes observed.attempt<N>.json with the fields its inputs fix",
            frozenset({"write_witness"}),
            cases,
            _writer_keeps(FIELDS_RULE),
            edges=lambda t: WITNESS_EDGES,
        )
    )
    out.append(
        Check(
            ROWS_RULE,
            "write_metrics writes the rows as given",
            frozenset({"write_metrics"}),
            lambda t: S.valid_instances(METRICS),
            metrics_rows,
            edges=lambda t: [
                [{"benchmark": "b\u00e9", "metric": "m", "horizon": 0, "seed": 0, "value": 0}],
                [
                    {"benchmark": "a", "metric": "acc", "horizon": 3, "seed": 1, "value": 0.5},
                    {"benchmark": "a", "metric": "acc", "horizon": 3, "seed": 2, "value": -1},
                    {
                        "benchmark": "z",
                        "metric": "loss",
                        "horizon": 2**70,
                        "seed": 0,
                        "value": 1e300,
                    },
                ],
            ],
        )
    )
    return out
