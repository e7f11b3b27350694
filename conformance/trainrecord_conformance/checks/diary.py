"""The training diary: the verifier against tampered records, and the writer's output.

The suite builds its own diaries (:func:`build_run`: events drawn from the event schemas,
chained with the canonical line hash that the canonical vectors pin), then breaks one
thing (a changed value, a wrong prev, a seq gap, a torn tail, a line after run_end, a
changed metrics.jsonl, a tampered seal or signature ...) and asks ``verify_diary`` to find
exactly that, on the right line. Seals are written with the reference runtime
(``trainrecord.diary.write_seal``): a seal is data any verifier must read.

The writer (``write_diary``) is checked by reading what it wrote with the suite's own
chain check, independent of any verifier.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from trainrecord.canonical import GENESIS, canonical_line, line_hash, loads_strict
from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.targets import Target

EVENTS = "https://trainrecord.dev/schemas/diary/events/"
METRICS_ROW = "https://trainrecord.dev/schemas/diary/metrics-row.schema.json"
RESERVED = ("seq", "time", "prev", "hash")


# --------------------------------------------------------------------------- building


def chain(events: list[dict[str, Any]], t0: float = 1_767_000_000.0) -> list[dict[str, Any]]:
    """Diary lines for ``events`` (each with its ``event``): seq, time, prev and hash added."""
    prev, out = GENESIS, []
    for seq, event in enumerate(events):
        body = {
            **{k: v for k, v in event.items() if k not in (*RESERVED, "prev")},
            "seq": seq,
            "time": round(t0 + seq * 0.25, 3),
        }
        digest = line_hash(prev, body)
        out.append({**body, "prev": prev, "hash": digest})
        prev = digest
    return out


def rechain(lines: list[dict[str, Any]], start: int) -> list[dict[str, Any]]:
    """Recompute prev and hash from line ``start`` on (seq left as it is)."""
    prev = lines[start - 1]["hash"] if start > 0 else GENESIS
    out = [dict(x) for x in lines]
    for line in out[start:]:
        body = {k: v for k, v in line.items() if k not in ("prev", "hash")}
        line["prev"], line["hash"] = prev, line_hash(prev, body)
        prev = line["hash"]
    return out


def write_lines(path: Path, lines: list[Any]) -> None:
    """One canonical JSON object per line."""
    path.write_text("".join(canonical_line(x) + "\n" for x in lines), encoding="utf-8")


def build_run(
    folder: Path,
    events: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    end: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """Write diary.jsonl and metrics.jsonl (run_end's metrics_sha256 pinned to it)."""
    folder.mkdir(parents=True, exist_ok=True)
    metrics = "".join(canonical_line(r) + "\n" for r in rows).encode("utf-8")
    (folder / "metrics.jsonl").write_bytes(metrics)
    if end is not None:
        events = [*events, {**end, "metrics_sha256": hashlib.sha256(metrics).hexdigest()}]
    lines = chain(events)
    write_lines(folder / "diary.jsonl", lines)
    return lines


def _event(name: str) -> st.SearchStrategy[dict[str, Any]]:
    return S.valid_instances(f"{EVENTS}{name}.schema.json").map(
        lambda line: {k: v for k, v in line.items() if k not in RESERVED}
    )


def runs(target: Target) -> st.SearchStrategy[tuple[list, list, dict | None]]:
    """(events, metrics rows, run_end or None) of a valid run."""
    rows = st.lists(S.valid_instances(METRICS_ROW), max_size=3)
    end = st.one_of(st.none(), _event("run_end"))
    return st.tuples(S.diary_events(5), rows, end)


# --------------------------------------------------------------------------- verifying


def verify(ctx: Context, folder: Path, key: str | None = None) -> dict[str, Any]:
    """Run verify_diary."""
    return ctx.ok("verify_diary", {"dir": str(folder), "key": key})


def expect_ok(ctx: Context, folder: Path, key: str | None = None) -> None:
    """The folder verifies."""
    out = verify(ctx, folder, key)
    if not out["ok"]:
        raise Failed(f"a valid record failed verification: {out}")


def expect_failure(
    ctx: Context, folder: Path, rule: str, line: int | None, key: str | None = None
) -> None:
    """The folder fails verification naming ``rule`` (on ``line`` when given)."""
    out = verify(ctx, folder, key)
    if out["ok"]:
        raise Failed(f"a record breaking {rule} verified")
    if rule not in out["rules"]:
        raise Failed(f"a record breaking {rule} failed with {out['rules']} instead")
    if line is not None and out["line"] != line:
        raise Failed(f"the first failing line is {line}; the verifier named {out['line']}")


Tamper = Callable[[Path, list[dict[str, Any]], int], int | None]
"""Break one thing in a valid run folder; return the first bad line (or None)."""


def _pick(lines: list[Any], choice: int, low: int = 0) -> int:
    return low + choice % max(1, len(lines) - low)


def t_hash(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    k = _pick(lines, choice)
    lines = [dict(x) for x in lines]
    lines[k]["time"] = lines[k]["time"] + 1
    write_lines(folder / "diary.jsonl", lines)
    return k


def t_prev(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    k = _pick(lines, choice)
    lines = [dict(x) for x in lines]
    lines[k]["prev"] = hashlib.sha256(b"elsewhere").hexdigest()
    body = {key: v for key, v in lines[k].items() if key not in ("prev", "hash")}
    lines[k]["hash"] = line_hash(lines[k]["prev"], body)
    write_lines(folder / "diary.jsonl", rechain(lines, k + 1) if k + 1 < len(lines) else lines)
    return k


def t_seq(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    k = _pick(lines, choice, 1) if len(lines) > 1 else 0
    lines = [dict(x) for x in lines]
    lines[k]["seq"] = lines[k]["seq"] + 1 + choice % 3
    write_lines(folder / "diary.jsonl", rechain(lines, k))
    return k


def t_json(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    k = _pick(lines, choice)
    texts = [canonical_line(x) for x in lines]
    texts[k] = ['{"seq": NaN}', "{not json", "[1, 2]", '"text"'][choice % 4]
    (folder / "diary.jsonl").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    return k


def t_torn(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    data = (folder / "diary.jsonl").read_bytes()
    last = canonical_line(lines[-1]).encode("utf-8") + b"\n"
    cut = 1 + choice % (len(last) - 2)
    (folder / "diary.jsonl").write_bytes(data[: len(data) - len(last) + cut])
    return None


def t_empty(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    (folder / "diary.jsonl").write_bytes(b"")
    return None


def t_run_start(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    events = [{k: v for k, v in x.items() if k not in RESERVED} for x in lines]
    events = events[1:] or [{"event": "sink_error", "sink": "x", "error": "y"}]
    if choice % 2:
        events.insert(0, {"event": "sink_error", "sink": "diary", "error": "before run_start"})
    write_lines(folder / "diary.jsonl", chain(events))
    return 0


def t_run_end(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    events = [{k: v for k, v in x.items() if k not in RESERVED} for x in lines]
    extra = {"event": "sink_error", "sink": "metrics", "error": "late"}
    write_lines(folder / "diary.jsonl", chain([*events, extra]))
    return len(events)


def t_metrics_sha(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    with (folder / "metrics.jsonl").open("a", encoding="utf-8") as f:
        f.write(
            canonical_line({"step": 10**6 + choice, "loss": 1.0, "grad": {}, "stuck": {}}) + "\n"
        )
    return None


def t_metrics_json(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    bad = ['{"step": NaN}', "{oops", '{"step": 1, "loss": Infinity}'][choice % 3]
    metrics = (folder / "metrics.jsonl").read_bytes() + bad.encode() + b"\n"
    (folder / "metrics.jsonl").write_bytes(metrics)
    events = [{k: v for k, v in x.items() if k not in RESERVED} for x in lines]
    if events[-1]["event"] == "run_end":
        events[-1]["metrics_sha256"] = hashlib.sha256(metrics).hexdigest()
    write_lines(folder / "diary.jsonl", chain(events))
    return None


TAMPERS: dict[str, tuple[Tamper, bool, bool]] = {
    "diary.chain.hash": (t_hash, True, False),
    "diary.chain.prev": (t_prev, True, False),
    "diary.chain.seq": (t_seq, True, False),
    "diary.file.json": (t_json, True, False),
    "diary.file.torn": (t_torn, False, False),
    "diary.file.empty": (t_empty, False, False),
    "diary.order.run_start": (t_run_start, True, False),
    "diary.order.run_end": (t_run_end, True, True),
    "diary.metrics.sha256": (t_metrics_sha, False, True),
    "diary.metrics.json": (t_metrics_json, False, False),
}
"""rule -> (tamper, whether it names a line, whether the run must end with run_end)."""


def tamper_check(rule: str) -> Callable[[Context, Any], None]:
    """The valid run verifies; the tampered copy fails on ``rule``, on the right line."""
    tamper, names_line, needs_end = TAMPERS[rule]

    def body(ctx: Context, case: tuple[tuple[list, list, dict | None], int]) -> None:
        (events, rows, end), choice = case
        if needs_end and end is None:
            end = {"event": "run_end", "steps": 1, "checks": 1, "counts": {}}
        folder = ctx.folder()
        lines = build_run(folder, events, rows, end)
        expect_ok(ctx, folder)
        line = tamper(folder, lines, choice)
        expect_failure(ctx, folder, rule, line if names_line else None)

    return body


# --------------------------------------------------------------------------- seals


def _keys(ctx: Context) -> tuple[str, str, str]:
    """(private, public, other public) key files, made once per run."""

    def make() -> tuple[str, str, str]:
        from trainrecord.diary import generate_keypair

        folder = ctx.folder(create=True)
        private, public, _ = generate_keypair(folder / "k.pem", folder / "k.pub")
        _, other, _ = generate_keypair(folder / "o.pem", folder / "o.pub")
        return str(private), str(public), str(other)

    return ctx.service("diary-keys", make)


def _sealed(ctx: Context, case: Any, signed: bool, end: bool = True) -> tuple[Path, list]:
    from trainrecord.diary import write_seal

    (events, rows, run_end), _ = case
    folder = ctx.folder()
    lines = build_run(folder, events, rows, run_end if end else None)
    write_seal(folder, signing_key=_keys(ctx)[0] if signed else None)
    return folder, lines


def seal_check(
    rule: str,
    signed: bool,
    tamper: Callable[[Context, Path, list, int], str | None],
    end: bool = True,
) -> Callable[[Context, Any], None]:
    """A sealed run verifies; after ``tamper`` it fails naming ``rule``."""

    def body(ctx: Context, case: Any) -> None:
        folder, lines = _sealed(ctx, case, signed, end)
        key = _keys(ctx)[1] if signed else None
        expect_ok(ctx, folder, key)
        key = tamper(ctx, folder, lines, case[1])
        expect_failure(ctx, folder, rule, None, key)

    return body


def s_append(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    events = [{k: v for k, v in x.items() if k not in RESERVED} for x in lines]
    if choice % 2 and len(lines) > 1:
        write_lines(folder / "diary.jsonl", lines[:-1])
    else:
        write_lines(
            folder / "diary.jsonl",
            chain([*events, {"event": "sink_error", "sink": "a", "error": "b"}]),
        )
    return None


def s_spacing(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    text = "".join(json.dumps(x, sort_keys=True) + "\n" for x in lines)
    (folder / "diary.jsonl").write_text(text, encoding="utf-8")
    return None


def s_head(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    path = folder / "record.json"
    text = path.read_text(encoding="utf-8")
    head = lines[-1]["hash"]
    path.write_text(text.replace(head, hashlib.sha256(head.encode()).hexdigest()), "utf-8")
    return None


def s_metrics(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    with (folder / "metrics.jsonl").open("a", encoding="utf-8") as f:
        f.write(canonical_line({"step": 7, "loss": 0.5, "grad": {}, "stuck": {}}) + "\n")
    return None


def s_json(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    (folder / "record.json").write_text(["{", "NaN", '{"a": NaN}'][choice % 3], "utf-8")
    return None


def s_missing(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    (folder / "record.sig").write_text(base64.b64encode(bytes(64)).decode() + "\n")
    (folder / "record.json").unlink()
    return None


def s_sig_invalid(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    raw = bytearray(base64.b64decode((folder / "record.sig").read_text().strip()))
    raw[choice % 64] ^= 1 << (choice % 8)
    (folder / "record.sig").write_text(base64.b64encode(bytes(raw)).decode() + "\n")
    return _keys(ctx)[1]


def s_sig_key(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    return _keys(ctx)[2]


def s_sig_gone(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    (folder / "record.sig").unlink()
    return _keys(ctx)[1]


def s_sig_unexpected(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    (folder / "record.sig").write_text(base64.b64encode(bytes(64)).decode() + "\n")
    return None


def s_sig_format(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    (folder / "record.sig").write_text(["not base64!", "AAAA\n", "", "QUJD\nQUJD\n"][choice % 4])
    return _keys(ctx)[1]


SEALS: dict[str, tuple[Callable[[Context, Path, list, int], str | None], bool, bool]] = {
    "seal.diary.lines": (s_append, False, False),
    "seal.diary.sha256": (s_spacing, False, True),
    "seal.diary.head": (s_head, False, True),
    "seal.metrics.sha256": (s_metrics, False, False),
    "seal.file.json": (s_json, False, True),
    "seal.missing": (s_missing, False, True),
    "seal.signature.invalid": (s_sig_invalid, True, True),
    "seal.signature.key": (s_sig_key, True, True),
    "seal.signature.missing": (s_sig_gone, True, True),
    "seal.signature.unexpected": (s_sig_unexpected, False, True),
    "seal.signature.format": (s_sig_format, True, True),
}
"""rule -> (tamper, signed seal, with run_end)."""


# --------------------------------------------------------------------------- writing


def read_written(folder: Path) -> list[dict[str, Any]]:
    """The lines of a written diary, each strict JSON."""
    path = folder / "diary.jsonl"
    if not path.is_file():
        raise Failed("write_diary wrote no diary.jsonl")
    text = path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        raise Failed("diary.jsonl does not end with a newline")
    try:
        return [loads_strict(x) for x in text.splitlines()]
    except ValueError as exc:
        raise Failed(f"a written line is not strict JSON: {exc}") from exc


def chain_problem(
    lines: list[dict[str, Any]], events: list[dict[str, Any]], window: tuple[float, float]
) -> tuple[str, str] | None:
    """The first broken writer guarantee in written ``lines``, as (rule, why)."""
    if len(lines) != len(events):
        return "diary.chain.seq", f"{len(events)} events gave {len(lines)} lines"
    prev = GENESIS
    for i, (line, event) in enumerate(zip(lines, events, strict=True)):
        if line.get("seq") != i:
            return "diary.chain.seq", f"line {i} has seq {line.get('seq')!r}"
        if line.get("prev") != prev:
            return "diary.chain.prev", f"line {i} has prev {line.get('prev')!r}, expected {prev}"
        body = {k: v for k, v in line.items() if k not in ("prev", "hash")}
        if line.get("hash") != line_hash(prev, body):
            return "diary.chain.hash", f"line {i}'s hash is not sha256(prev + canonical body)"
        t = line.get("time")
        if (
            not isinstance(t, (int, float))
            or round(t, 3) != t
            or not (window[0] - 0.002 <= t <= window[1] + 0.002)
        ):
            return (
                "diary.writer.time",
                f"line {i} has time {t!r}, not round(time.time(), 3) "
                f"within the call ({window[0]:.3f}..{window[1]:.3f})",
            )
        fields = {k: v for k, v in line.items() if k not in (*RESERVED, "hash")}
        if fields != event:
            return "diary.chain.hash", f"line {i} does not carry its event's fields: {fields}"
        prev = line["hash"]
    return None


def writer_check(rule: str) -> Callable[[Context, Any], None]:
    """What write_diary writes keeps the guarantee ``rule`` (checked by the suite itself)."""

    def body(ctx: Context, events: list[dict[str, Any]]) -> None:
        folder = ctx.folder()
        start = time.time()
        ctx.ok("write_diary", {"dir": str(folder), "events": events})
        window = (start, time.time())
        problem = chain_problem(read_written(folder), events, window)
        if problem is not None and problem[0] == rule:
            raise Failed(problem[1])

    return body


def writer_refuses(ctx: Context, case: tuple[list[dict[str, Any]], S.Broken, int]) -> None:
    """An invalid event is refused with its rule and never written; the ones before are."""
    events, broken, where = case
    k = 1 + where % len(events)
    bad = {k2: v for k2, v in broken.instance.items() if k2 not in RESERVED}
    folder = ctx.folder()
    result = ctx.run("write_diary", {"dir": str(folder), "events": [*events[:k], bad]})
    if result.outcome != "refused":
        raise Failed(f"an event breaking {broken.site} gave {result.describe()}")
    lines = read_written(folder) if (folder / "diary.jsonl").exists() else []
    if len(lines) != k:
        raise Failed(f"{k} valid events then an invalid one left {len(lines)} lines")


def writer_reserved(ctx: Context, case: tuple[list[dict[str, Any]], str, Any]) -> None:
    """An event that sets seq, time, prev or hash itself is refused."""
    events, field, value = case
    events = [dict(e) for e in events]
    events[-1][field] = value
    ctx.refused(
        "write_diary", {"dir": str(ctx.folder()), "events": events}, "diary.writer.reserved"
    )


def _event_rules() -> list[str]:
    return sorted(
        r
        for r in S.schema_rules()
        if any(
            s.schema_id.startswith(EVENTS) and not s.schema_id.endswith("run_start.schema.json")
            for s in S.rule_sites(r)
        )
    )


def _broken_event(target: Target) -> st.SearchStrategy[S.Broken]:
    def one(rule: str) -> st.SearchStrategy[S.Broken]:
        ids = sorted(
            {
                s.schema_id
                for s in S.rule_sites(rule)
                if s.schema_id.startswith(EVENTS)
                and not s.schema_id.endswith("run_start.schema.json")
            }
        )
        return st.sampled_from(ids).flatmap(
            lambda i: S.breaking_instances(rule, schema_id=i, nonfinite=target.nonfinite)
        )

    eligible = [
        r
        for r in _event_rules()
        if not r.startswith(
            ("diary.seq", "diary.time", "diary.prev", "diary.hash", "diary.event", "diary.line")
        )
    ]
    return st.sampled_from(eligible).flatmap(one)


def checks() -> list[Check]:
    """Every diary check."""
    choice = st.integers(0, 1000)
    with_choice = lambda t: st.tuples(runs(t), choice)  # noqa: E731
    out = [
        Check(
            rule,
            "verify_diary finds the tampering",
            frozenset({"verify_diary"}),
            with_choice,
            tamper_check(rule),
            scale="io",
        )
        for rule in TAMPERS
    ]
    out += [
        Check(
            rule,
            "verify_diary finds the tampered seal",
            frozenset({"verify_diary"}),
            with_choice,
            seal_check(rule, signed, tamper, end),
            scale="io",
        )
        for rule, (tamper, signed, end) in SEALS.items()
    ]
    written = lambda t: S.diary_events(5)  # noqa: E731
    out += [
        Check(
            rule,
            "write_diary writes the chain right",
            frozenset({"write_diary"}),
            written,
            writer_check(rule),
            scale="io",
        )
        for rule in ("diary.chain.seq", "diary.chain.prev", "diary.chain.hash", "diary.writer.time")
    ]
    out += [
        Check(
            "diary.writer.refuse",
            "write_diary refuses an invalid event, writing none of it",
            frozenset({"write_diary"}),
            lambda t: st.tuples(S.diary_events(4), _broken_event(t), choice),
            writer_refuses,
            scale="io",
        ),
        Check(
            "diary.writer.reserved",
            "write_diary refuses events that set seq, time, prev or hash",
            frozenset({"write_diary"}),
            lambda t: st.tuples(
                S.diary_events(3), st.sampled_from(RESERVED), st.sampled_from([0, 1.5, "0" * 64])
            ),
            writer_reserved,
            scale="io",
        ),
    ]
    return out
