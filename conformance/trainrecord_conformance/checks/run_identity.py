"""Reporting API v2, a run's identity (§3, §4): ``open_run`` on a run folder.

``report.run_id.stable``: the first start writes a run_id (a canonical UUID) into the
folder's metadata.json with the job's fields; every resume returns the same run_id and
leaves it and the fields in the file; after the suite deletes the folder (a discarded run)
the next start is a new run with a run_id never seen before. A metadata.json the job wrote
without a run_id gets one, its fields kept.

``report.run_id.one_winner``: four harness processes of the target's own command start
one fresh folder at the same moment: all must answer the same run_id, exactly one says it
wrote it, and metadata.json holds it.

``report.metadata.json`` and ``report.metadata.run_id``: a metadata.json that is not one
strict JSON object, or whose run_id is not a canonical lowercase UUID string, is refused
naming the rule, and the folder is left exactly as it was.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from trainrecord.canonical import loads_strict
from trainrecord_conformance.checks.base import Check, Context, Failed, snapshot
from trainrecord_conformance.checks.racing import RACERS, race_all, racers

OPEN = frozenset({"open_run"})
METADATA = "metadata.json"
RESERVED = ("run_id", "started_at")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    _text,
)


def metadata() -> st.SearchStrategy[dict[str, Any]]:
    """The job's own metadata fields (never run_id or started_at)."""
    return st.dictionaries(_text.filter(lambda k: k not in RESERVED), _values, max_size=4)


@st.composite
def lives(draw: Callable[..., Any]) -> tuple[dict[str, Any], bool, list[tuple[str, bool]]]:
    """(metadata, written by the job first, actions): each action is a resume (passing the
    metadata again or none) or a discard (the folder deleted) followed by a new start."""
    fields = draw(metadata())
    first = draw(st.booleans())
    actions = draw(
        st.lists(st.tuples(st.sampled_from(["resume", "discard"]), st.booleans()), max_size=4)
    )
    return fields, first, actions


def _stored(folder: Path) -> dict[str, Any]:
    try:
        value = loads_strict((folder / METADATA).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise Failed(f"after open_run, {METADATA} is not readable strict JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise Failed(f"after open_run, {METADATA} holds {type(value).__name__}, not an object")
    return value


def _same_value(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _holds(folder: Path, run_id: str, fields: dict[str, Any], when: str) -> None:
    stored = _stored(folder)
    if stored.get("run_id") != run_id:
        raise Failed(f"{when}: {METADATA} holds run_id {stored.get('run_id')!r}, not {run_id!r}")
    lost = sorted(k for k, v in fields.items() if k not in stored or not _same_value(stored[k], v))
    if lost:
        raise Failed(f"{when}: {METADATA} lost or changed the job's fields {lost}")


def _open(ctx: Context, folder: Path, fields: dict[str, Any] | None) -> dict[str, Any]:
    return ctx.ok("open_run", {"dir": str(folder), "metadata": fields})


def _new_run(out: dict[str, Any], seen: set[str], when: str) -> str:
    run_id = out["run_id"]
    if not _UUID.fullmatch(run_id):
        raise Failed(f"{when}: run_id {run_id!r} is not a UUID in canonical lowercase form")
    if not out["created"]:
        raise Failed(f"{when}: a start of a new run answered created: false")
    if run_id in seen:
        raise Failed(f"{when}: run_id {run_id} was used by an earlier run of the folder")
    seen.add(run_id)
    return run_id


def stable(ctx: Context, case: tuple[dict[str, Any], bool, list[tuple[str, bool]]]) -> None:
    """The same run_id on every resume, a new one after the folder was deleted."""
    fields, written_first, actions = case
    folder = ctx.folder(create=True) / "pre" / "run"
    seen: set[str] = set()
    if written_first:
        folder.mkdir(parents=True)
        (folder / METADATA).write_text(json.dumps(fields), encoding="utf-8")
        run_id = _new_run(_open(ctx, folder, None), seen, "metadata.json without run_id")
    else:
        run_id = _new_run(_open(ctx, folder, fields), seen, "first start")
    _holds(folder, run_id, fields, "first start")
    for i, (action, again) in enumerate(actions):
        when = f"action {i} ({action})"
        if action == "discard":
            shutil.rmtree(folder)
            run_id = _new_run(_open(ctx, folder, fields), seen, when)
        else:
            out = _open(ctx, folder, fields if again else None)
            if out["run_id"] != run_id:
                raise Failed(f"{when}: the resumed run got run_id {out['run_id']}, not {run_id}")
            if out["created"]:
                raise Failed(f"{when}: a resume answered created: true")
        _holds(folder, run_id, fields, when)


def race(ctx: Context, case: tuple[dict[str, Any], bool]) -> None:
    """Processes starting one folder at once all use the one run_id written."""
    fields, written_first = case
    group = racers(ctx)
    folder = ctx.folder(create=True) / "pre" / "run"
    if written_first:
        folder.mkdir(parents=True)
        (folder / METADATA).write_text(json.dumps(fields), encoding="utf-8")
    data = {"dir": str(folder), "metadata": None if written_first else fields}
    results = race_all(group, "open_run", data)
    if any(r.outcome != "ok" for r in results):
        raise Failed(f"{len(group)} racers: {[r.describe()[:120] for r in results]}")
    ids = {r.output["run_id"] for r in results}
    created = sum(bool(r.output["created"]) for r in results)
    if len(ids) != 1 or created != 1:
        raise Failed(
            f"{len(group)} processes started one folder: run_ids {sorted(ids)}, "
            f"{created} said they wrote it"
        )
    _holds(folder, ids.pop(), fields, "after the race")


def racing_cases() -> st.SearchStrategy[tuple[dict[str, Any], bool]]:
    """(metadata, written by the job first)."""
    return st.tuples(metadata(), st.booleans())


def _not_strict_object(raw: bytes) -> bool:
    try:
        return not isinstance(loads_strict(raw.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError):
        return True


def bad_files() -> st.SearchStrategy[bytes]:
    """metadata.json contents that are not one strict JSON object."""
    good = str(uuid.UUID(int=0x8C7E1E0E4A574A3C9D361F7D7B2F1B3A))
    known = [
        b"",
        b"not json",
        b'{"mode": NaN}',
        f'{{"run_id": "{good}", "lr": Infinity}}'.encode(),
        f'{{"run_id": "{good}", "lr": -Infinity}}'.encode(),
        f'{{"run_id": "{good}", "mode": "pre", "mode": "lit"}}'.encode(),
        f'{{"run_id": "{good}", "run_id": "{good}"}}'.encode(),
        f'{{"run_id": "{good}"'.encode(),
        f'{{"run_id": "{good}"}} trailing'.encode(),
        f'{{"run_id": "{good}"}}'.encode("utf-16"),
        b'{"mode": "\xff"}',
        b"[]",
        f'["{good}"]'.encode(),
        b'"text"',
        b"42",
        b"null",
    ]
    return st.one_of(st.sampled_from(known), st.binary(max_size=24).filter(_not_strict_object))


def bad_run_ids() -> st.SearchStrategy[tuple[Any, dict[str, Any]]]:
    """(a stored run_id that is not a canonical lowercase UUID string, other fields)."""
    u = str(uuid.UUID(int=0x8C7E1E0E4A574A3C9D361F7D7B2F1B3A))
    known: list[Any] = [
        u.upper(),
        "{" + u + "}",
        "urn:uuid:" + u,
        u.replace("-", ""),
        u + "\n",
        " " + u,
        u[:-1] + "g",
        u[:-1],
        "",
        42,
        None,
        True,
        [u],
        {"id": u},
    ]
    texts = st.text(max_size=40).filter(lambda t: not _UUID.fullmatch(t))
    return st.tuples(st.one_of(st.sampled_from(known), texts), metadata())


def _refused_untouched(ctx: Context, raw: bytes, rule: str) -> None:
    folder = ctx.folder(create=True) / "pre" / "run"
    folder.mkdir(parents=True)
    (folder / METADATA).write_bytes(raw)
    before = snapshot(folder)
    ctx.refused("open_run", {"dir": str(folder), "metadata": None}, rule)
    after = snapshot(folder)
    changed = sorted(set(before.items()) ^ set(after.items()))
    if changed:
        raise Failed(f"a refused open_run changed the folder: {[k for k, _ in changed]}")


def not_strict_json(ctx: Context, raw: bytes) -> None:
    """A metadata.json that is not one strict JSON object is refused, left as it is."""
    _refused_untouched(ctx, raw, "report.metadata.json")


def bad_run_id(ctx: Context, case: tuple[Any, dict[str, Any]]) -> None:
    """A stored run_id that is not a canonical UUID is refused, never replaced."""
    run_id, fields = case
    raw = json.dumps({**fields, "run_id": run_id}).encode("utf-8")
    _refused_untouched(ctx, raw, "report.metadata.run_id")


def checks() -> list[Check]:
    """The run identity checks."""
    return [
        Check(
            "report.run_id.stable",
            "run_id kept across resumes, new after a discard",
            OPEN,
            lambda t: lives(),
            stable,
            scale="io",
        ),
        Check(
            "report.run_id.one_winner",
            f"{RACERS} processes start one folder at once",
            OPEN | {"@race"},
            lambda t: racing_cases(),
            race,
            scale="io",
        ),
        Check(
            "report.metadata.json",
            "a metadata.json that is not strict JSON is refused",
            OPEN,
            lambda t: bad_files(),
            not_strict_json,
        ),
        Check(
            "report.metadata.run_id",
            "a stored run_id that is not a UUID is refused",
            OPEN,
            lambda t: bad_run_ids(),
            bad_run_id,
        ),
    ]
