"""``trainrecord validate PATH...``: check record files against the spec, rule by rule.

Each file's format is told from its name (``observed.attempt<N>.json``, ``metrics.json``,
``diary.jsonl``, ...) or else from its content (see :mod:`trainrecord.formats`); a folder
stands for the record files in it (recognised by name, recursively). Every problem is
printed with its rule id, each path :func:`~trainrecord.errors.escaped` (a name found in
a folder may hold ESC or U+202E). ``--json`` prints one JSON object instead. A valid
diary's line says that only its shape was checked and names ``trainrecord verify``, which
checks its hash chain and seal.

Exit status: 0 when every file is valid, 1 when any file has a problem, 2 when a file
cannot be read or its format cannot be told (pass ``--format`` or ``--schema``), 130 when
interrupted (Ctrl+C), 141 when stdout was closed early (``| head``).
"""

from __future__ import annotations

import argparse
import difflib
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from trainrecord import formats
from trainrecord.errors import escaped, printable_tree

DESCRIPTION = """\
Check record files against the trainrecord spec and print every problem with its rule id.

The format of each file is told from its name (observed.attempt<N>.json, metrics.json,
diary.jsonl, metrics.jsonl, record.json, report.json) or else from its content; a folder
stands for the record files in it (by name, recursively).

validate checks each file's shape; verify checks that a diary was not changed (its hash
chain and seal): trainrecord verify RUN_DIR.

exit status: 0 every file is valid, 1 a file has a problem, 2 a file cannot be read or
its format cannot be told (pass --format or --schema), 130 interrupted (Ctrl+C), 141 stdout closed early (| head)."""


def register(subparsers: Any) -> None:
    """Add the ``validate`` subcommand."""
    names = ", ".join(f.name for f in formats.FORMATS)
    parser = subparsers.add_parser(
        "validate",
        help="check record files against the spec; print each problem with its rule id",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        type=Path,
        help="a record file, or a folder of record files",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--format",
        dest="format_name",
        metavar="NAME",
        help=f"treat every file as this format ({names})",
    )
    group.add_argument(
        "--schema",
        metavar="ID",
        help="validate every file as one JSON document against the schema "
        "with this $id (or path under schemas/)",
    )
    parser.set_defaults(func=run)


def _expand(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and any(f.matches_name(p.name) for f in formats.available())
            )
        else:
            out.append(path)
    return out


def _shown(paths: list[Path]) -> str:
    """The paths as a shell would take them back (quoted where they need it)."""
    return " ".join(shlex.quote(str(p)) for p in paths)


def _forced(args: argparse.Namespace) -> formats.Format | None:
    if args.schema:
        return formats.schema_format(args.schema)
    if args.format_name:
        return formats.by_name(args.format_name)
    return None


def _check(path: Path, forced: formats.Format | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "path": str(path),
        "format": None,
        "valid": False,
        "problems": [],
        "error": None,
    }
    try:
        fmt, found = formats.check_file(path, forced)
    except OSError as exc:
        entry["error"] = f"cannot read the file: {exc.strerror or exc}"
        return entry
    if fmt is None:
        entry["error"] = (
            "cannot tell the format from the name or the content; pass --format NAME or --schema ID"
        )
        return entry
    entry.update(
        format=fmt.name,
        valid=not found,
        problems=[p.to_json() for p in found],
        shown=[str(p) for p in found],
    )
    return entry


def _schemas_accepted() -> str:
    """What ``--schema`` takes: every shipped schema's path under schemas/, and its $id."""
    from trainrecord import schemas

    shipped = schemas.all_schemas()
    paths = ", ".join(shipped)
    bases = {
        schema["$id"][: -len(path)]
        for path, schema in shipped.items()
        if schema["$id"].endswith("/" + path)
    }
    if len(bases) == 1 and all(s["$id"].endswith("/" + p) for p, s in shipped.items()):
        return f"--schema takes a path under schemas/ or its $id ({bases.pop()}<path>): {paths}"
    ids = ", ".join(schema["$id"] for schema in shipped.values())
    return f"--schema takes a path under schemas/ ({paths}) or a $id ({ids})"


def _close_schemas(given: str) -> list[str]:
    """The shipped schemas' paths under schemas/ that ``given`` (an unknown --schema) most
    likely meant: those it ends (``alarm``, ``events/alarm``, ``alarm.schema.json``), else
    up to three whose name is close to its last part, else whose path is close to it
    (difflib); ``[]`` when none is."""
    from trainrecord import schemas

    paths = list(schemas.all_schemas())
    tail = given.rsplit("/schemas/", 1)[-1].strip("/")
    ends = [
        p for p in paths if any(("/" + p).endswith("/" + tail + x) for x in ("", ".schema.json"))
    ]
    if ends:
        return ends
    names = {p.rsplit("/", 1)[-1].removesuffix(".schema.json"): p for p in paths}
    last = tail.rsplit("/", 1)[-1].removesuffix(".schema.json")
    close = [names[n] for n in difflib.get_close_matches(last, names, n=3, cutoff=0.75)]
    return close or difflib.get_close_matches(tail, paths, n=3, cutoff=0.85)


def _shape_only(entry: dict[str, Any]) -> str:
    """For a valid diary, the note that validate checked its shape only, and the command
    that checks its hash chain and seal; else nothing."""
    if entry["format"] != "diary":
        return ""
    run_dir = shlex.quote(str(Path(entry["path"]).parent))
    return f" (schema only: trainrecord verify {run_dir} checks the hash chain and seal)"


def run(args: argparse.Namespace) -> int:
    """Validate every path; print the result; return the exit status."""
    try:
        forced = _forced(args)
    except KeyError:
        if args.schema:
            close = _close_schemas(args.schema)
            hint = f"did you mean {' or '.join(close)}?" if close else _schemas_accepted()
            print(f"trainrecord validate: unknown schema {args.schema!r}; {hint}", file=sys.stderr)
            return 2
        known = ", ".join(f.name for f in formats.available())
        print(
            f"trainrecord validate: unknown format {args.format_name!r}; --format takes one of: "
            f"{known}",
            file=sys.stderr,
        )
        return 2
    results = [printable_tree(_check(path, forced)) for path in _expand(args.paths)]
    errors = any(r["error"] for r in results)
    invalid = any(r["problems"] for r in results)
    if args.json:
        doc = {
            "valid": bool(results) and not errors and not invalid,  # no file: nothing valid
            "files": [{k: v for k, v in r.items() if k != "shown"} for r in results],
        }
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        for r in results:
            path = escaped(r["path"])  # names found in a folder: any text a name may hold
            if r["error"]:
                print(f"{path}: error: {r['error']}", file=sys.stderr)
            elif r["valid"]:
                print(f"{path}: valid {r['format']}{escaped(_shape_only(r))}")
            else:
                for line in r["shown"]:
                    print(f"{path}: {line}")
    if not results:  # (stderr: with --json too, whose stdout stays the one JSON object)
        print(
            f"trainrecord validate: no record files found in {escaped(_shown(args.paths))}: a "
            "folder stands for the files in it named observed.attempt<N>.json, metrics.json, "
            "diary.jsonl, metrics.jsonl, record.json or report.json; give a record file itself "
            "to check one named otherwise",
            file=sys.stderr,
        )
    if errors or not results:
        return 2
    return 1 if invalid else 0
