"""Foundry run records v1: the witness and metrics writers and the witness reader.

Through ``write_witness``, ``write_metrics`` and ``read_witness``: every environment
refusal, no overwrite, nothing left behind by a refused call, a results folder that is (or
sits under) a file, the nonzero-rank, rank precedence and CPU guarantees, the configuration
hash of what json.dumps writes (NaN included), text with a lone surrogate, and every schema
rule of the two files once more through the writer (metrics) and the reader (witness).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import (
    Check,
    Context,
    Failed,
    for_any_target,
    snapshot,
    written_json,
)
from trainrecord_conformance.checks.foundry_written import (
    metrics_rows_findings,
    witness_findings,
    write_judged_witness,
)
from trainrecord_conformance.checks.racing import RACERS, STAGGERS, race_all, racers
from trainrecord_conformance.targets import Target

WITNESS = "https://trainrecord.dev/schemas/foundry/witness.schema.json"
METRICS = "https://trainrecord.dev/schemas/foundry/metrics.schema.json"
INPROCESS = "@nonfinite"
"""A pseudo-operation: the target takes Python values JSON cannot carry (NaN, non-text)."""

NOT_INTEGERS = ["abc", "1.5", "1e3", "0x10", "1_000", "١٢", "--1", "1 2", "4.0", "8,4", "nan"]
OUT_OF_RANGE = [str(2**63), str(-(2**63) - 1), "1" + "0" * 400, "-" + "9" * 40]
"""Integers outside the signed 64-bit range: not integers for the environment variables
(spec/README.md, "An integer" in an environment variable)."""
ASCII_SPACE = " \t\n\r\f\v"
BLANKS = ["", " ", "\t", "  \n", "\u00a0", "\u3000", " \u2003\t"]
"""Blank: empty or only white space as Unicode defines it (spec/README.md, Blank)."""


def _witness_input(
    ctx: Context, env: dict[str, str], config: dict[str, Any] | None = None, folder: Any = None
) -> dict[str, Any]:
    return {
        "dir": str(folder or ctx.folder()),
        "env": env,
        "config": {"lr": 0.1} if config is None else config,
        "device": "cpu",
        "wall_seconds": 7,
    }


# --------------------------------------------------------------------------- environment


def _env_case(rule: str) -> st.SearchStrategy[dict[str, str]]:
    """A valid environment changed to break exactly the environment rule ``rule``."""
    base = S.foundry_env().map(lambda e: {k: v for k, v in e.items() if k != "RANK"})
    bad = st.sampled_from(NOT_INTEGERS + OUT_OF_RANGE)
    negative = st.integers(-(10**6), -1).map(str)
    variants: dict[str, Callable[[dict[str, str]], st.SearchStrategy[dict[str, str]]]] = {
        "witness.env.foundry_run_id.unset": lambda e: st.just(
            {k: v for k, v in e.items() if k != "FOUNDRY_RUN_ID"}
        ),
        "witness.env.foundry_run_id.blank": lambda e: st.sampled_from(BLANKS).map(
            lambda v: {**e, "FOUNDRY_RUN_ID": v}
        ),
        "witness.env.foundry_run_id.integer": lambda e: bad.map(
            lambda v: {**e, "FOUNDRY_RUN_ID": v}
        ),
        "witness.env.rank.integer": lambda e: bad.map(lambda v: {**e, "RANK": v}),
        "witness.env.rank.negative": lambda e: negative.map(lambda v: {**e, "RANK": v}),
        "witness.env.slurm_procid.integer": lambda e: bad.map(lambda v: {**e, "SLURM_PROCID": v}),
        "witness.env.slurm_procid.negative": lambda e: negative.map(
            lambda v: {**e, "SLURM_PROCID": v}
        ),
        "witness.env.slurm_restart_count.integer": lambda e: bad.map(
            lambda v: {**e, "SLURM_RESTART_COUNT": v}
        ),
        "witness.env.slurm_restart_count.negative": lambda e: negative.map(
            lambda v: {**e, "SLURM_RESTART_COUNT": v}
        ),
        "witness.env.omp_num_threads.integer": lambda e: bad.map(
            lambda v: {**e, "OMP_NUM_THREADS": v}
        ),
        "witness.env.omp_num_threads.range": lambda e: st.integers(-50, 0).map(
            lambda v: {**e, "OMP_NUM_THREADS": str(v)}
        ),
    }
    return base.flatmap(variants[rule])


def _env_edges(rule: str) -> list[dict[str, str]]:
    """The values that define the environment rule ``rule``, each in the environment
    ``FOUNDRY_RUN_ID=1`` otherwise (run first, on every run)."""
    variable = rule.split(".")[2].upper()
    last = rule.rsplit(".", 1)[1]
    if last == "unset":
        return [{}]
    values = {
        "blank": BLANKS,
        "integer": NOT_INTEGERS + OUT_OF_RANGE,
        "negative": ["-1", "-1000000", str(-(2**63))],
    }.get(last, ["0", "-1", str(-(2**63))])
    return [{"FOUNDRY_RUN_ID": "1", variable: v} for v in values]


ENV_RULES = (
    "witness.env.foundry_run_id.unset",
    "witness.env.foundry_run_id.blank",
    "witness.env.foundry_run_id.integer",
    "witness.env.rank.integer",
    "witness.env.rank.negative",
    "witness.env.slurm_procid.integer",
    "witness.env.slurm_procid.negative",
    "witness.env.slurm_restart_count.integer",
    "witness.env.slurm_restart_count.negative",
    "witness.env.omp_num_threads.integer",
    "witness.env.omp_num_threads.range",
)


def env_refused(rule: str) -> Callable[[Context, dict[str, str]], None]:
    """The writer refuses the environment naming ``rule`` (what a refusal leaves behind is
    witness.write.nothing_on_refusal's check)."""

    def body(ctx: Context, env: dict[str, str]) -> None:
        ctx.refused("write_witness", _witness_input(ctx, env), rule)

    return body


def nothing_on_refusal(ctx: Context, case: tuple[str, dict[str, str], Any, bool]) -> None:
    """Any refused witness leaves no folder, no witness, no temporary file: a results
    folder that did not exist is not created, one that did is left as it was."""
    rule, env, config, existing = case
    folder = ctx.folder(create=existing)
    if existing:
        (folder / "keep.txt").write_text("x")
    before = snapshot(folder)
    ctx.refused("write_witness", _witness_input(ctx, env, config, folder), rule)
    after = snapshot(folder)
    if after != before:
        raise Failed(_left_behind("witness.write.nothing_on_refusal", rule, folder, before, after))


def _left_behind(
    rule: str, refused: str, folder: Any, before: dict[str, Any], after: dict[str, Any]
) -> str:
    """What a refused call changed on disk, named by the refusal rule ``rule``."""
    if not before:
        made = sorted(k for k in after if k != ".")
        return (
            f"[{rule}] a call refused with {refused} created the results folder {folder.name}"
            + (f" and {made} in it" if made else " (empty)")
        )
    added = sorted(set(after) - set(before))
    changed = sorted(k for k in before if k in after and after[k] != before[k])
    gone = sorted(set(before) - set(after))
    parts = [f"added {added}" if added else "", f"changed {changed}" if changed else ""]
    parts.append(f"removed {gone}" if gone else "")
    return (
        f"[{rule}] a call refused with {refused} changed the existing results folder: "
        + ", ".join(p for p in parts if p)
    )


ENV_RANGES = {
    "FOUNDRY_RUN_ID": -(2**63),
    "RANK": 0,
    "SLURM_PROCID": 0,
    "SLURM_RESTART_COUNT": 0,
    "OMP_NUM_THREADS": 1,
}
"""The smallest value of each integer variable; the largest is 2**63 - 1 for all."""


def _spelled(value: int, zeros: int, plus: bool, before: str, after: str) -> str:
    sign = "-" if value < 0 else ("+" if plus else "")
    return f"{before}{sign}{'0' * zeros}{abs(value)}{after}"


def _env_integers(variable: str) -> st.SearchStrategy[str]:
    """Spellings of an integer in the variable's range: leading zeros, a + sign,
    surrounding ASCII white space (spec/README.md: all are the integer)."""
    space = st.text(alphabet=ASCII_SPACE, max_size=2)
    values = st.one_of(
        st.integers(ENV_RANGES[variable], 2**63 - 1),
        st.sampled_from([ENV_RANGES[variable], 2**63 - 1]),
    )
    return st.builds(_spelled, values, st.integers(0, 3), st.booleans(), space, space)


def _env_integer_edges(variable: str) -> list[str]:
    low = ENV_RANGES[variable]
    return [
        str(2**63 - 1),
        str(low),
        "0" * 30 + str(2**63 - 1),
        _spelled(max(low, 0), 2, True, " \t", "\n"),
        f"+{2**63 - 1}",
    ]


ENV_FIELDS = {"FOUNDRY_RUN_ID": "experiment_id", "OMP_NUM_THREADS": "cpu_threads"}
"""The witness field each of these integer variables fixes."""


def env_integer_read(variable: str) -> Callable[[Context, str], None]:
    """The variable spelled as an integer the spec allows, at the bounds of the signed
    64-bit range too, is taken as that integer: not refused; a rank of 0 writes the witness
    and any other writes nothing; SLURM_RESTART_COUNT names the file
    observed.attempt<value>.json. (The fields written from it are witness.write.fields'
    check: :func:`env_integer_written`.)"""

    def body(ctx: Context, spelled: str) -> None:
        value = int(spelled.strip(ASCII_SPACE))
        env = {"FOUNDRY_RUN_ID": "1", variable: spelled}
        if variable in ("RANK", "SLURM_PROCID") and value != 0:
            folder = ctx.folder()
            result = ctx.run("write_witness", _witness_input(ctx, env, folder=folder))
            if result.outcome != "ok" or result.output.get("path") or snapshot(folder):
                raise Failed(
                    f"{variable}={spelled!r} (rank {value}) gave {result.describe()} and left "
                    f"{sorted(snapshot(folder))}: a nonzero rank writes nothing"
                )
            return
        placed_witness(ctx, env, {"lr": 0.1})  # the count: at observed.attempt<value>.json

    return body


def env_integer_written(ctx: Context, case: tuple[str, str]) -> None:
    """FOUNDRY_RUN_ID and OMP_NUM_THREADS spelled as the spec allows, at the 64-bit bounds
    too, are written exactly as experiment_id and cpu_threads (a reader of doubles would
    write 9223372036854775808 for 2**63 - 1)."""
    variable, spelled = case
    rule, field = "witness.write.fields", ENV_FIELDS[variable]
    value = int(spelled.strip(ASCII_SPACE))
    _, path = placed_witness(ctx, {"FOUNDRY_RUN_ID": "1", variable: spelled}, {"lr": 0.1})
    data = written_json(path, rule)
    found = data.get(field) if isinstance(data, dict) else None
    if type(found) is not int or found != value:
        raise Failed(
            f"[{rule}] {variable}={spelled!r} is the integer {value}, but the witness "
            f"{path.name} holds {field}: {json.dumps(found)}"
        )


# --------------------------------------------------------------------------- writing


def expected_sha(config: Any) -> str:
    """The seed's definition: sha256 over json.dumps(config, sort_keys=True), 16 hex."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def written_witness(ctx: Context, env: dict[str, str], config: dict[str, Any]) -> Any:
    """Write a valid witness; check every field against what the writer was given (each
    finding names its rule: :func:`.foundry_written.witness_findings`)."""
    folder, expected, data, found = write_judged_witness(ctx, env, config)
    if found:
        raise Failed("; ".join(message for _, message in found))
    return folder, expected, data


def placed_witness(ctx: Context, env: dict[str, str], config: Any) -> Any:
    """Write a valid witness and find its file, nothing more: the checks of the rules that
    only need a witness on disk (its fields are the writer checks' business)."""
    folder = ctx.folder()
    data = _witness_input(ctx, env, config, folder)
    out = ctx.ok("write_witness", data)
    attempt = int(env.get("SLURM_RESTART_COUNT", "0"))
    path = folder / f"observed.attempt{attempt}.json"
    if out["path"] is None or not path.is_file():
        _, _, found = witness_findings(out, data)
        raise Failed("; ".join(m for _, m in found))
    return folder, path


def no_overwrite(ctx: Context, case: tuple[dict[str, str], dict[str, Any]]) -> None:
    """A second witness for the same attempt is refused; the first stays byte for byte."""
    env, config = case
    folder, _path = placed_witness(ctx, env, config)
    before = snapshot(folder)
    ctx.refused(
        "write_witness", _witness_input(ctx, env, {"other": 1}, folder), "witness.path.exists"
    )
    if snapshot(folder) != before:
        raise Failed("the refused second witness changed the results folder")


def atomic_no_overwrite(ctx: Context, case: tuple[dict[str, str], dict[str, Any]]) -> None:
    """The folder holds the witness alone (no temporary file) and a rewrite is refused."""
    env, config = case
    folder, path = placed_witness(ctx, env, config)
    others = sorted(p.name for p in folder.iterdir() if p != path)
    if others:
        raise Failed(f"the writer left other files beside the witness: {others}")
    result = ctx.run("write_witness", _witness_input(ctx, env, config, folder))
    if result.outcome == "ok":
        raise Failed("a second witness for the same attempt was written over the first")


RACE_ROUNDS = 16
"""Races per drawn example, each in a fresh folder, their starts cycling through
:data:`.racing.STAGGERS`. A writer that checks for the witness and then creates it without
an exclusive create loses some rounds only (about 3 to 40 % of them on 2 shared cores,
depending on the writer and the load), so a verdict needs many: the ci profile's 6 examples
run 96 races. Measured on 2 shared cores, 20 ci runs of the race check alone each: the
independent implementer's exists-check-then-write writer and the mutant
witness_check_then_replace (temporary file, exists-check, rename) were killed 20 of 20
times each (with 8 rounds: 17 of 20; with one race per example as before: 19 of 20 and 10
of 20). Cost: about 1.2 s per run on a correct harness, 0.8 s before."""


def race(ctx: Context, case: tuple[dict[str, str], dict[str, Any]]) -> None:
    """Processes racing to write the same witness, :data:`RACE_ROUNDS` times: each time
    exactly one wins, the rest are refused with witness.path.exists, and the witness is
    complete."""
    env, config = case
    group = racers(ctx)
    attempt = int(env.get("SLURM_RESTART_COUNT", "0"))
    for round_ in range(RACE_ROUNDS):
        stagger = STAGGERS[round_ % len(STAGGERS)]
        folder = ctx.folder()
        data = _witness_input(ctx, env, config, folder)
        results = race_all(group, "write_witness", data, stagger)
        how = "released together" if stagger is None else f"started {stagger * 1e6:g} µs apart"
        where = f"race {round_ + 1} of {RACE_ROUNDS} ({len(group)} processes {how})"
        wins = [r for r in results if r.outcome == "ok"]
        refused = [
            r for r in results if r.outcome == "refused" and "witness.path.exists" in r.rules
        ]
        if len(wins) != 1 or len(refused) != len(group) - 1:
            raise Failed(
                f"{where}: {len(wins)} wrote the witness, where exactly one may (the others "
                "refused with witness.path.exists; create the name exclusively: link, or "
                f"O_EXCL): {[r.describe()[:120] for r in results]}"
            )
        files = sorted(p.name for p in folder.iterdir())
        if files != [f"observed.attempt{attempt}.json"]:
            raise Failed(f"after {where} the folder holds {files}")
        written_json(  # complete: one strict JSON document (its fields: the writer checks)
            folder / files[0], "witness.write.atomic_no_overwrite", f"after {where} {files[0]}"
        )


def rank_nonzero(ctx: Context, case: tuple[dict[str, str], int, str]) -> None:
    """A nonzero rank writes nothing and is not an error."""
    env, rank, variable = case
    folder = ctx.folder()
    env = {**env, variable: str(rank)}
    if variable == "SLURM_PROCID":
        env.pop("RANK", None)
    out = ctx.ok("write_witness", _witness_input(ctx, env, folder=folder))
    if out["path"] is not None or snapshot(folder):
        raise Failed(f"rank {rank} ({variable}) wrote {out['path']!r} / {sorted(snapshot(folder))}")


def rank_precedence(ctx: Context, case: tuple[dict[str, str], int, str]) -> None:
    """With RANK and SLURM_PROCID both set to different values, RANK alone decides: the
    witness is written exactly when RANK is 0."""
    env, rank, procid = case
    env = {**env, "RANK": str(rank), "SLURM_PROCID": procid}
    folder = ctx.folder()
    result = ctx.run("write_witness", _witness_input(ctx, env, folder=folder))
    written = sorted(snapshot(folder))
    if rank == 0 and (result.outcome != "ok" or not result.output.get("path")):
        raise Failed(
            f"RANK=0 with SLURM_PROCID={procid!r} gave {result.describe()}: RANK takes "
            "precedence, so rank 0 writes its witness"
        )
    if rank != 0 and (result.outcome != "ok" or result.output.get("path") or written):
        raise Failed(
            f"RANK={rank} with SLURM_PROCID={procid!r} gave {result.describe()} and left "
            f"{written}: RANK takes precedence, so this nonzero rank writes nothing"
        )


def _rank_and_procid(target: Target) -> st.SearchStrategy[tuple[dict[str, str], int, str]]:
    """RANK 0 with another SLURM_PROCID (a nonzero one, or one that is no rank at all and
    must not be read), or a nonzero RANK with SLURM_PROCID 0."""
    env = S.foundry_env().map(lambda e: {k: v for k, v in e.items() if k != "RANK"})
    shadowed = st.one_of(st.integers(1, 512).map(str), st.sampled_from(["-1", "x", "", "1.0"]))
    return st.one_of(
        st.tuples(env, st.just(0), shadowed),
        st.tuples(env, st.integers(1, 512), st.just("0")),
    )


def cpu_nulls(ctx: Context, case: tuple[dict[str, str], dict[str, Any]]) -> None:
    """On cpu, device_name and peak_vram_mb are null."""
    env, config = case
    _, path = placed_witness(ctx, env, config)
    try:
        data = written_json(path, "witness.file.json")
    except Failed:
        return  # not JSON: witness.file.json's writer check says so
    if not isinstance(data, dict):
        return
    if data.get("device_name") is not None or data.get("peak_vram_mb") is not None:
        raise Failed(
            f"cpu witness has device_name={data.get('device_name')!r}, "
            f"peak_vram_mb={data.get('peak_vram_mb')!r}"
        )


def config_serializable(ctx: Context, config: dict[str, Any]) -> None:
    """A configuration json.dumps(config, sort_keys=True) cannot serialize is refused."""
    ctx.refused(
        "write_witness",
        _witness_input(ctx, {"FOUNDRY_RUN_ID": "1"}, config),
        "witness.config.serializable",
    )


def _unserializable(target: Target) -> st.SearchStrategy[dict[str, Any]]:
    """Configurations json.dumps refuses: a set, bytes, an object, a complex number, keys
    of mixed types under sort_keys, a circular reference."""

    def circular() -> dict[str, Any]:
        config: dict[str, Any] = {"lr": 0.1}
        config["self"] = config
        return config

    values = st.sampled_from([{1, 2}, b"lr", object(), 1 + 2j, frozenset()])
    return st.one_of(
        values.map(lambda v: {"opt": v}),
        st.builds(circular),
        st.just({1: "a", "b": 2}),
    )


def config_nonfinite_hashed(ctx: Context, case: tuple[dict[str, str], dict[str, Any]]) -> None:
    """NaN and infinities in the configuration are hashed as json.dumps writes them (NaN,
    Infinity, -Infinity): the witness is written, not refused."""
    env, config = case
    written_witness(ctx, env, config)


def _nonfinite_configs(target: Target) -> st.SearchStrategy[tuple[dict[str, str], Any]]:
    bad = st.sampled_from([math.nan, math.inf, -math.inf])
    extra = st.tuples(st.text(max_size=6), bad, st.booleans()).map(
        lambda t: {t[0]: [1.0, t[1]] if t[2] else t[1]}
    )
    configs = st.tuples(S.configs(nonfinite=True), extra).map(lambda t: {**t[0], **t[1]})
    return st.tuples(S.foundry_env(), configs)


def _file_in_the_way(ctx: Context, depth: int, content: bytes) -> tuple[Any, str]:
    """A fresh folder holding the file ``results``; the results_dir is that file
    (``depth`` 0) or a path ``depth`` levels under it. Returns the folder and the path."""
    folder = ctx.folder(create=True)
    (folder / "results").write_bytes(content)
    return folder, str(folder.joinpath("results", *["sub"] * depth))


def witness_results_dir(ctx: Context, case: tuple[dict[str, str], Any, int, bytes]) -> None:
    """A results_dir that is, or sits under, a file is refused; the file stays as it was."""
    env, config, depth, content = case
    folder, results_dir = _file_in_the_way(ctx, depth, content)
    before = snapshot(folder)
    data = {**_witness_input(ctx, env, config), "dir": results_dir}
    ctx.refused("write_witness", data, "witness.path.results_dir")
    if snapshot(folder) != before:
        raise Failed("the refused witness changed the file in the way or its folder")


def metrics_results_dir(ctx: Context, case: tuple[list[Any], int, bytes]) -> None:
    """write_metrics refuses a results_dir that is, or sits under, a file; nothing changes."""
    rows, depth, content = case
    folder, results_dir = _file_in_the_way(ctx, depth, content)
    before = snapshot(folder)
    ctx.refused("write_metrics", {"dir": results_dir, "rows": rows}, "metrics.path.results_dir")
    if snapshot(folder) != before:
        raise Failed("the refused metrics changed the file in the way or its folder")


def env_type(ctx: Context, env: dict[str, Any]) -> None:
    """An environment that is not text to text is refused."""
    ctx.refused("write_witness", _witness_input(ctx, env), "witness.env.type")


ENV_INTEGERS = ["FOUNDRY_RUN_ID", "RANK", "SLURM_PROCID", "SLURM_RESTART_COUNT", "OMP_NUM_THREADS"]
NOT_TEXT: list[Any] = [1, None, 2.5, True, [], {}, ["7"], {"value": "7"}]
"""Environment values that are not text and that JSON carries (every target gets them)."""


def _non_text_env(target: Target) -> st.SearchStrategy[dict[str, Any]]:
    """A valid environment with one variable the writer reads set to a value that is not
    text; in-process also bytes, which JSON cannot carry."""
    values = NOT_TEXT + ([b"7"] if INPROCESS in target.capabilities else [])
    return st.tuples(st.sampled_from(ENV_INTEGERS), st.sampled_from(values)).map(
        lambda t: {"FOUNDRY_RUN_ID": "1", t[0]: t[1]}
    )


# --------------------------------------------------------------------------- reading


def _write_file(ctx: Context, name: str, text: str) -> str:
    folder = ctx.folder(create=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def reader_refuses_lone_surrogate(rule: str) -> Callable[[Context, Any], None]:
    """The reader refuses a witness whose text field holds a lone surrogate (not text:
    UTF-8 cannot encode it) with the field's ``*.type`` rule."""
    field = rule.split(".")[1]

    def body(ctx: Context, case: tuple[Any, str]) -> None:
        valid, text = case
        path = _write_file(ctx, _witness_name(valid), json.dumps({**valid, field: text}))
        ctx.refused("read_witness", {"path": path}, rule)

    return body


def _lone_surrogates(target: Target) -> st.SearchStrategy[tuple[Any, str]]:
    lone = st.one_of(st.integers(0xD800, 0xDBFF), st.integers(0xDC00, 0xDFFF)).map(chr)
    text = st.tuples(st.text(max_size=4), lone, st.text(max_size=4)).map("".join)
    return st.tuples(S.valid_instances(WITNESS), text)


def _witness_name(data: Any) -> str:
    attempt = data.get("attempt") if isinstance(data, dict) else None
    ok = isinstance(attempt, int) and not isinstance(attempt, bool) and attempt >= 0
    return f"observed.attempt{attempt if ok else 0}.json"


def reader_refuses(rule: str) -> Callable[[Context, Any], None]:
    """The reader accepts a valid witness and refuses a broken one naming ``rule``."""

    def body(ctx: Context, case: tuple[Any, S.Broken]) -> None:
        valid, broken = case
        path = _write_file(ctx, _witness_name(valid), json.dumps(valid))
        ctx.ok("read_witness", {"path": path})
        path = _write_file(ctx, _witness_name(broken.instance), json.dumps(broken.instance))
        ctx.refused("read_witness", {"path": path}, rule)

    return body


def attempt_filename(ctx: Context, case: tuple[Any, int]) -> None:
    """A witness whose attempt differs from its file name is refused."""
    valid, other = case
    if other == valid["attempt"]:
        other += 1
    path = _write_file(ctx, f"observed.attempt{other}.json", json.dumps(valid))
    ctx.refused("read_witness", {"path": path}, "witness.attempt.filename")


BOM = "\ufeff"
"""A UTF-8 byte order mark: not JSON text (RFC 8259 §8.1: a writer must not add one;
spec/README.md, Strict JSON: every reader of this package refuses it)."""
WITNESS_JUNK = ["NaN", "Infinity", "-Infinity", "{", "'x'", BOM]


def file_json(ctx: Context, case: tuple[Any, str]) -> None:
    """A witness file that is not strict JSON is refused: a NaN or Infinity token, broken
    JSON, or a valid witness after a byte order mark."""
    valid, token = case
    if token == BOM:
        text = BOM + json.dumps(valid)
    else:
        text = json.dumps({**valid, "wall_seconds": "@@"}).replace('"@@"', token)
    path = _write_file(ctx, _witness_name(valid), text)
    ctx.refused("read_witness", {"path": path}, "witness.file.json")


def version_first(ctx: Context, case: tuple[Any, int]) -> None:
    """A witness of another version is refused for its version alone."""
    valid, version = case
    data = {**valid, "run_record_format": version, "attempt": "not checked", "extra": 1}
    path = _write_file(ctx, "observed.attempt0.json", json.dumps(data))
    result = ctx.refused("read_witness", {"path": path}, "witness.run_record_format.unsupported")
    if set(result.rules) != {"witness.run_record_format.unsupported"}:
        raise Failed(
            f"a version {version} witness was refused with {result.rules}: the "
            "version must be inspected before anything else"
        )


# --------------------------------------------------------------------------- metrics


def metrics_writer_refuses(rule: str) -> Callable[[Context, Any], None]:
    """write_metrics takes valid rows and refuses broken ones naming ``rule`` (what it
    writes is metrics.write.rows' check, what a refusal leaves behind
    metrics.write.nothing_on_refusal's)."""

    def body(ctx: Context, case: tuple[Any, S.Broken]) -> None:
        valid, broken = case
        ctx.ok("write_metrics", {"dir": str(ctx.folder()), "rows": valid})
        ctx.refused("write_metrics", {"dir": str(ctx.folder()), "rows": broken.instance}, rule)

    return body


def metrics_written(
    ctx: Context, rows: list[Any], folder: Any = None, rule: str = "metrics.write.rows"
) -> Any:
    """Write rows; the file holds exactly them (else a failure naming ``rule``)."""
    folder = folder or ctx.folder()
    ctx.ok("write_metrics", {"dir": str(folder), "rows": rows})
    what = "metrics.json after the rewrite" if rule != "metrics.write.rows" else None
    found = metrics_rows_findings(
        folder / "metrics.json", rows, rule, what or "metrics.json after the write"
    )
    if found:
        raise Failed("; ".join(m for _, m in found))
    return folder


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: same types (1 is not 1.0, True is not 1), floats bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b) and a == b
    return bool(a == b)


def metrics_reader_refuses(rule: str) -> Callable[[Context, Any], None]:
    """read_metrics reads a valid file and refuses a broken one naming ``rule``: the rows
    as strict JSON of any size (``10**400`` is an integer token, not a number)."""

    def body(ctx: Context, case: tuple[Any, S.Broken]) -> None:
        valid, broken = case
        folder = ctx.folder(create=True)
        path = folder / "metrics.json"
        path.write_text(json.dumps(valid), encoding="utf-8")
        out = ctx.ok("read_metrics", {"path": str(path)})
        if not _same_numbers(out["rows"], valid):
            raise Failed(f"read_metrics read {out['rows']!r} from a file holding {valid!r}")
        path.write_text(json.dumps(broken.instance), encoding="utf-8")
        ctx.refused("read_metrics", {"path": str(path)}, rule)

    return body


def _same_numbers(a: Any, b: Any) -> bool:
    """Equal as a reader may give them: a number as the double it reads as (2**53 + 1 may
    come back as 2**53, 0 as 0.0), everything else exactly."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_numbers(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_numbers(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers):
        if isinstance(a, bool) or isinstance(b, bool):
            return a is b
        return float(a) == float(b)
    return bool(type(a) is type(b) and a == b)


def metrics_nothing_on_refusal(ctx: Context, case: tuple[S.Broken, bool]) -> None:
    """Refused rows create neither the folder nor any file: a results folder that did not
    exist is not created, one that did is left as it was."""
    broken, existing = case
    folder = ctx.folder(create=existing)
    if existing:
        (folder / "keep.txt").write_text("x")
    before = snapshot(folder)
    result = ctx.run("write_metrics", {"dir": str(folder), "rows": broken.instance})
    if result.outcome != "refused":
        raise Failed(f"broken rows ({broken.site}) gave {result.describe()}")
    after = snapshot(folder)
    if after != before:
        refused = ", ".join(result.rules) or "no rule"
        raise Failed(
            _left_behind("metrics.write.nothing_on_refusal", refused, folder, before, after)
        )


LONG_ROWS = [
    {"benchmark": "imagenet", "metric": "top1", "horizon": h, "seed": 0, "value": 0.5 + h / 100}
    for h in range(4)
]
"""Rows of a long file, then of a short one: a rewrite in place keeps the long one's tail."""


def metrics_replace(ctx: Context, case: tuple[list[Any], list[Any]]) -> None:
    """A second write replaces metrics.json whole and leaves no other file."""
    first, second = case
    folder = ctx.folder()
    ctx.ok("write_metrics", {"dir": str(folder), "rows": first})
    if metrics_rows_findings(folder / "metrics.json", first, "metrics.write.rows", ""):
        return  # the first write is already wrong: metrics.write.rows' check says how
    metrics_written(ctx, second, folder, "metrics.write.atomic_replace")
    others = sorted(p.name for p in folder.iterdir() if p.name != "metrics.json")
    if others:
        raise Failed(f"the writer left other files beside metrics.json: {others}")


# --------------------------------------------------------------------------- registry


def _pairs(
    rule: str, schema_id: str, *, in_file: bool = False
) -> Callable[[Target], st.SearchStrategy[Any]]:
    """(valid, broken) instances of ``schema_id``; ``in_file``: for a reader, which gets
    them as files of strict JSON (NaN and infinities only where the target takes Python
    values: a file holding a NaN token is not JSON, the ``*.file.json`` rules' case)."""

    def build(target: Target) -> st.SearchStrategy[Any]:
        nonfinite = target.nonfinite and not in_file
        broken = S.breaking_instances(rule, nonfinite=nonfinite, schema_id=schema_id)
        return st.tuples(S.valid_instances(schema_id), broken)

    return build


def _edge_pairs(rule: str, schema_id: str, *, in_file: bool = False) -> Callable[[Target], Any]:
    """The fixed cases of :func:`_pairs`."""

    def build(target: Target) -> Any:
        nonfinite = target.nonfinite and not in_file
        return S.edge_cases(rule, nonfinite=nonfinite, schema_id=schema_id)

    return build


def _metrics_rules() -> list[str]:
    return sorted(
        r for r in S.schema_rules() if any(s.schema_id == METRICS for s in S.rule_sites(r))
    )


def _refused_witnesses(target: Target) -> st.SearchStrategy[tuple[str, Any, Any, bool]]:
    """(rule, environment, configuration, results folder exists) of a refused witness:
    every environment rule, and in-process a configuration json.dumps cannot serialize."""
    env = st.sampled_from(ENV_RULES).flatmap(
        lambda r: st.tuples(st.just(r), _env_case(r), st.just({"lr": 0.1}))
    )
    if INPROCESS in target.capabilities:
        config = _unserializable(target).map(
            lambda c: ("witness.config.serializable", {"FOUNDRY_RUN_ID": "1"}, c)
        )
        env = st.one_of(env, config)
    return st.tuples(env, st.booleans()).map(lambda t: (*t[0], t[1]))


def _env_and_config(target: Target) -> st.SearchStrategy[tuple[dict[str, str], dict[str, Any]]]:
    return st.tuples(S.foundry_env(), S.configs())


def _valid_witness(target: Target) -> st.SearchStrategy[Any]:
    return S.valid_instances(WITNESS)


def _vector_witness() -> dict[str, Any]:
    """The first valid witness of the spec's vectors (the fixed cases' witness)."""
    from importlib import resources

    entry = resources.files("trainrecord_spec").joinpath("vectors", "foundry", "witness.json")
    for group in json.loads(entry.read_text(encoding="utf-8")):
        for case in group["tests"]:
            if case["valid"] and isinstance(case["data"], dict):
                return dict(case["data"])
    raise LookupError("no valid witness vector")


def checks() -> list[Check]:
    """Every Foundry check."""
    out = [
        Check(
            rule,
            "write_witness refuses the environment",
            frozenset({"write_witness"}),
            for_any_target(_env_case, rule),
            env_refused(rule),
            edges=for_any_target(_env_edges, rule),
        )
        for rule in ENV_RULES
    ]
    out += [
        Check(
            "witness.write.nothing_on_refusal",
            "a refused witness leaves nothing behind",
            frozenset({"write_witness"}),
            _refused_witnesses,
            nothing_on_refusal,
            edges=lambda t: [
                (r, _env_edges(r)[0], {"lr": 0.1}, existing)
                for r in ENV_RULES
                for existing in (False, True)
            ],
        ),
        Check(
            "witness.path.exists",
            "a second witness for an attempt is refused",
            frozenset({"write_witness"}),
            _env_and_config,
            no_overwrite,
        ),
        Check(
            "witness.write.atomic_no_overwrite",
            "one file, no temporary left, no rewrite",
            frozenset({"write_witness"}),
            _env_and_config,
            atomic_no_overwrite,
        ),
        Check(
            "witness.write.atomic_no_overwrite",
            f"{RACERS} processes race for one witness, {RACE_ROUNDS} times",
            frozenset({"write_witness", "@race"}),
            _env_and_config,
            race,
            scale="io",
        ),
        Check(
            "witness.path.results_dir",
            "a results_dir that is, or sits under, a file is refused",
            frozenset({"write_witness"}),
            lambda t: st.tuples(S.foundry_env(), S.configs(), st.integers(0, 2), st.binary()),
            witness_results_dir,
        ),
        Check(
            "witness.rank.nonzero",
            "a nonzero rank writes nothing",
            frozenset({"write_witness"}),
            lambda t: st.tuples(
                S.foundry_env(), st.integers(1, 512), st.sampled_from(["RANK", "SLURM_PROCID"])
            ),
            rank_nonzero,
        ),
        Check(
            "witness.rank.precedence",
            "RANK decides over SLURM_PROCID",
            frozenset({"write_witness"}),
            _rank_and_procid,
            rank_precedence,
        ),
        Check(
            "witness.device.cpu_nulls",
            "cpu witnesses have null accelerator fields",
            frozenset({"write_witness"}),
            _env_and_config,
            cpu_nulls,
        ),
        Check(
            "witness.config.serializable",
            "a configuration json.dumps cannot serialize is refused",
            frozenset({"write_witness", INPROCESS}),
            _unserializable,
            config_serializable,
        ),
        Check(
            "witness.config.serializable",
            "a NaN configuration is hashed as json.dumps writes it, not refused",
            frozenset({"write_witness", INPROCESS}),
            _nonfinite_configs,
            config_nonfinite_hashed,
        ),
        *(
            Check(
                rule,
                "read_witness refuses a lone surrogate as not text",
                frozenset({"read_witness"}),
                _lone_surrogates,
                reader_refuses_lone_surrogate(rule),
            )
            for rule in ("witness.device.type", "witness.device_name.type")
        ),
        Check(
            "witness.env.type",
            "a non-text environment is refused",
            frozenset({"write_witness"}),
            _non_text_env,
            env_type,
            edges=lambda t: [
                {"FOUNDRY_RUN_ID": "1", ENV_INTEGERS[i % len(ENV_INTEGERS)]: v}
                for i, v in enumerate(NOT_TEXT)
            ],
        ),
        Check(
            "witness.attempt.filename",
            "the reader checks attempt against the file name",
            frozenset({"read_witness"}),
            lambda t: st.tuples(_valid_witness(t), st.integers(0, 99)),
            attempt_filename,
        ),
        Check(
            "witness.file.json",
            "the reader refuses NaN and Infinity tokens, broken JSON and a BOM",
            frozenset({"read_witness"}),
            lambda t: st.tuples(_valid_witness(t), st.sampled_from(WITNESS_JUNK)),
            file_json,
            edges=lambda t: [(_vector_witness(), junk) for junk in WITNESS_JUNK],
        ),
        Check(
            "witness.read.version_first",
            "another version is refused for its version alone",
            frozenset({"read_witness"}),
            lambda t: st.tuples(_valid_witness(t), st.sampled_from([0, 2, 3, 99])),
            version_first,
        ),
        Check(
            "metrics.write.nothing_on_refusal",
            "refused rows leave the folder as it was",
            frozenset({"write_metrics"}),
            lambda t: st.tuples(
                st.sampled_from(_metrics_rules()).flatmap(
                    lambda r: S.breaking_instances(r, schema_id=METRICS, nonfinite=t.nonfinite)
                ),
                st.booleans(),
            ),
            metrics_nothing_on_refusal,
            edges=lambda t: [
                (b, existing)
                for r in _metrics_rules()
                for _, b in S.edge_cases(r, schema_id=METRICS, nonfinite=t.nonfinite)[:1]
                for existing in (False, True)
            ],
        ),
        Check(
            "metrics.path.results_dir",
            "a results_dir that is, or sits under, a file is refused",
            frozenset({"write_metrics"}),
            lambda t: st.tuples(S.valid_instances(METRICS), st.integers(0, 2), st.binary()),
            metrics_results_dir,
        ),
        Check(
            "metrics.write.atomic_replace",
            "a rewrite replaces metrics.json whole",
            frozenset({"write_metrics"}),
            lambda t: st.tuples(S.valid_instances(METRICS), S.valid_instances(METRICS)),
            metrics_replace,
            edges=lambda t: [(LONG_ROWS, LONG_ROWS[:1]), (LONG_ROWS[:1], LONG_ROWS)],
        ),
    ]
    out += [
        Check(
            f"witness.env.{variable.lower()}.integer",
            "an integer spelled as allowed, at the 64-bit bounds too, is read as it",
            frozenset({"write_witness"}),
            for_any_target(_env_integers, variable),
            env_integer_read(variable),
            edges=for_any_target(_env_integer_edges, variable),
        )
        for variable in ENV_RANGES
    ]
    out.append(
        Check(
            "witness.write.fields",
            "run id and thread count at the 64-bit bounds are written exactly",
            frozenset({"write_witness"}),
            lambda t: st.sampled_from(sorted(ENV_FIELDS)).flatmap(
                lambda v: st.tuples(st.just(v), _env_integers(v))
            ),
            env_integer_written,
            edges=lambda t: [(v, e) for v in sorted(ENV_FIELDS) for e in _env_integer_edges(v)],
        )
    )
    for rule in sorted(S.schema_rules()):
        sites = {s.schema_id for s in S.rule_sites(rule)}
        if METRICS in sites:
            out.append(
                Check(
                    rule,
                    "write_metrics refuses the rows, creating nothing",
                    frozenset({"write_metrics"}),
                    _pairs(rule, METRICS),
                    metrics_writer_refuses(rule),
                    scale="schema",
                    edges=_edge_pairs(rule, METRICS),
                )
            )
            out.append(
                Check(
                    rule,
                    "read_metrics refuses the file",
                    frozenset({"read_metrics"}),
                    _pairs(rule, METRICS, in_file=True),
                    metrics_reader_refuses(rule),
                    scale="schema",
                    edges=_edge_pairs(rule, METRICS, in_file=True),
                )
            )
        if WITNESS in sites:
            out.append(
                Check(
                    rule,
                    "read_witness refuses the file",
                    frozenset({"read_witness"}),
                    _pairs(rule, WITNESS, in_file=True),
                    reader_refuses(rule),
                    scale="schema",
                    edges=_edge_pairs(rule, WITNESS, in_file=True),
                )
            )
    return out
