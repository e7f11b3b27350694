"""The training diary: the verifier against tampered records, and the writer's output.

The suite builds its own diaries (:func:`build_run`: events drawn from the event schemas,
chained with the canonical line hash that the canonical vectors pin), then breaks one
thing (a changed value, a wrong prev, a seq gap, a resumed session numbered from 0 again,
a torn tail, a changed line before a torn tail, a line after run_end, a changed or missing
metrics.jsonl, a metrics row that breaks the row schema, a tampered seal or signature ...)
and asks ``verify_diary`` to find exactly that, on the right line. Seals are written with the reference runtime
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
from trainrecord_conformance.checks.base import Check, Context, Failed, for_any_target
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
    *,
    renumber: bool = True,
) -> list[dict[str, Any]]:
    """Write diary.jsonl and metrics.jsonl (run_end's metrics_sha256 pinned to it), as one
    session writes them: the rows' steps increase (diary.metrics.order; ``renumber=False``:
    the rows as given) and run_end counts one check per row, in at least as many steps
    (diary.metrics.rows, diary.run_end.checks)."""
    folder.mkdir(parents=True, exist_ok=True)
    if renumber:
        rows = session_rows(rows)
    metrics = "".join(canonical_line(r) + "\n" for r in rows).encode("utf-8")
    (folder / "metrics.jsonl").write_bytes(metrics)
    if end is not None:
        checks = len(rows)
        end = {**end, "checks": checks, "steps": max(checks, end.get("steps", 0))}
        events = [*events, {**end, "metrics_sha256": hashlib.sha256(metrics).hexdigest()}]
    lines = chain(events)
    write_lines(folder / "diary.jsonl", lines)
    return lines


def session_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with steps 0, 1, 2, ...: one session's checks run at increasing steps."""
    return [{**r, "step": i} for i, r in enumerate(rows)]


def _event(name: str) -> st.SearchStrategy[dict[str, Any]]:
    return S.valid_instances(f"{EVENTS}{name}.schema.json").map(
        lambda line: {k: v for k, v in line.items() if k not in RESERVED}
    )


def runs(target: Target) -> st.SearchStrategy[tuple[list, list, dict | None]]:
    """(events, metrics rows, run_end or None) of a valid run."""
    rows = st.lists(S.valid_instances(METRICS_ROW), max_size=3)
    end = st.one_of(st.none(), _event("run_end"))
    return st.tuples(S.diary_events(5), rows, end)


EDGE_TEXT = "naïve ✓ 😀 \u2028"
"""Text outside ASCII: the canonical JSON a line hash is computed over writes it escaped
(``\\u00ef``, a surrogate pair for the astral character), as ``json.dumps`` does."""


def edge_events() -> list[dict[str, Any]]:
    """The simplest run_start, then a line whose text is outside ASCII."""
    start = S.simplest(_event("run_start"))
    return [start, {"event": "sink_error", "sink": "diary", "error": EDGE_TEXT}]


def edge_run() -> tuple[list, list, dict | None]:
    """A fixed valid run in the shape of :func:`runs`: :func:`edge_events`, the simplest
    metrics row and run_end (three lines)."""
    row = S.simplest(S.valid_instances(METRICS_ROW))
    return edge_events(), [row], S.simplest(_event("run_end"))


def seal_edges(choices: tuple[int, ...]) -> list[Any]:
    """The fixed cases of a seal check: :func:`edge_run` with each of its ``choices``."""
    return [(edge_run(), c) for c in choices]


def spots(lines: int, variants: int = 1) -> list[int]:
    """The choices that make a tamper (see :func:`_spot`) break each of its ``variants`` on
    the first and on the last line of a run of ``lines`` lines."""
    return sorted({v * lines + k for v in range(variants) for k in (0, lines - 1)})


# --------------------------------------------------------------------------- verifying


def verify(ctx: Context, folder: Path, key: str | None = None) -> dict[str, Any]:
    """Run verify_diary."""
    return ctx.ok("verify_diary", {"dir": str(folder), "key": key})


def expect_ok(ctx: Context, folder: Path, key: str | None = None) -> None:
    """The folder verifies."""
    out = verify(ctx, folder, key)
    if not out["ok"] or out["status"] != "ok":
        raise Failed(f"a valid record failed verification: {out}")


def expect_failure(
    ctx: Context, folder: Path, rule: str, line: int | None, key: str | None = None
) -> None:
    """The folder fails verification naming ``rule`` (on ``line`` when given), with the
    status ``torn`` for a torn tail (``diary.file.torn``, even with no complete line before
    it) and ``failed`` for anything else."""
    out = verify(ctx, folder, key)
    if out["ok"]:
        raise Failed(f"a record breaking {rule} verified")
    if rule not in out["rules"]:
        raise Failed(f"a record breaking {rule} failed with {out['rules']} instead")
    if line is not None and out["line"] != line:
        raise Failed(f"the first failing line is {line}; the verifier named {out['line']}")
    status = "torn" if rule == "diary.file.torn" else "failed"
    if out["status"] != status:
        raise Failed(f"a record breaking {rule} has the status {out['status']!r}, not {status!r}")


Tamper = Callable[[Path, list[dict[str, Any]], int], int | None]
"""Break one thing in a valid run folder; return the first bad line (or None)."""


def _spot(lines: list[Any], choice: int, variants: int = 1) -> tuple[int, int]:
    """The line and the variant a tamper's ``choice`` picks (see :func:`spots`)."""
    return choice % len(lines), choice // len(lines) % variants


def _one_off(digest: str) -> str:
    """The hex digest with its last digit changed."""
    return digest[:-1] + ("1" if digest[-1] == "0" else "0")


def _rehash(lines: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """Line ``k``'s hash recomputed over its (changed) prev and body, the lines after it
    chained on: only what was changed on line ``k`` is wrong."""
    lines = [dict(x) for x in lines]
    body = {key: v for key, v in lines[k].items() if key not in ("prev", "hash")}
    lines[k]["hash"] = line_hash(lines[k]["prev"], body)
    return rechain(lines, k + 1) if k + 1 < len(lines) else lines


def t_hash(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """A line's body changed; its hash off in the last hex digit; or a field outside ASCII
    added and the hash taken over it unescaped (``ensure_ascii=False``)."""
    k, variant = _spot(lines, choice, 3)
    lines = [dict(x) for x in lines]
    if variant == 0:
        lines[k]["time"] = lines[k]["time"] + 1
    elif variant == 1:
        lines[k]["hash"] = _one_off(lines[k]["hash"])
    else:
        lines[k]["note"] = EDGE_TEXT
        body = {key: v for key, v in lines[k].items() if key not in ("prev", "hash")}
        raw = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        lines[k]["hash"] = hashlib.sha256((lines[k]["prev"] + raw).encode("utf-8")).hexdigest()
        lines = rechain(lines, k + 1) if k + 1 < len(lines) else lines
    write_lines(folder / "diary.jsonl", lines)
    return k


def t_prev(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """A line's prev another hash, or the right one (64 zeros on the first line) off in
    its last hex digit; its hash recomputed."""
    k, variant = _spot(lines, choice, 2)
    lines = [dict(x) for x in lines]
    right = lines[k]["prev"]
    lines[k]["prev"] = _one_off(right) if variant else hashlib.sha256(b"elsewhere").hexdigest()
    write_lines(folder / "diary.jsonl", _rehash(lines, k))
    return k


SEQ_CHANGES = (1, 2, 3, -1, None)
"""How a tamper moves a seq: a gap of one, two or three, a repeat of the line before; or
(None) a resumed session that counts from 0 again (:func:`_seq_restart`)."""


def t_seq(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """A line's seq off by one of :data:`SEQ_CHANGES` (the first line's: starting at 1 for
    a repeat), or a resumed session numbered from 0 after the run's lines."""
    k, variant = _spot(lines, choice, len(SEQ_CHANGES))
    step = SEQ_CHANGES[variant]
    if step is None:
        return _seq_restart(folder, lines, k)
    lines = [dict(x) for x in lines]
    change = step if k > 0 else abs(step)
    lines[k]["seq"] = lines[k]["seq"] + change
    write_lines(folder / "diary.jsonl", rechain(lines, k))
    return k


def _seq_restart(folder: Path, lines: list[dict[str, Any]], k: int) -> int:
    """After the run's lines, a resumed session (the run's run_start, then its next ``k``
    events) chained on from the last hash, as a resume appends it, but with seq counting
    from 0 again: the seed's seq runs "from 0, contiguous" over the whole file, so its
    run_start is the first bad line. With seq continued, the same diary verifies."""
    events = [{key: v for key, v in x.items() if key not in RESERVED} for x in lines]
    t = lines[-1]["time"]
    resumed = [
        {**event, "seq": i, "time": round(t + (i + 1) * 0.25, 3)}
        for i, event in enumerate(events[: k + 1])
    ]
    write_lines(folder / "diary.jsonl", rechain([*lines, *resumed], len(lines)))
    return len(lines)


BAD_LINES: tuple[bytes | None, ...] = (
    b'{"seq": NaN}',
    b'{"a": -Infinity}',
    b"{not json",
    b"[1, 2]",
    b'"text"',
    b"",
    None,  # the line with its seq given twice
    b"\xe9",  # the line with a Latin-1 byte in its event (not UTF-8)
    b"\xef\xbb\xbf",  # the line after a UTF-8 byte order mark (refused, spec/README)
)


def t_json(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """A line replaced by one of :data:`BAD_LINES`."""
    k, variant = _spot(lines, choice, len(BAD_LINES))
    texts = [canonical_line(x).encode("utf-8") for x in lines]
    bad = BAD_LINES[variant]
    if bad is None:
        texts[k] = b'{"seq":%d,' % lines[k]["seq"] + texts[k][1:]
    elif bad == b"\xe9":
        texts[k] = texts[k].replace(b'"event":"', b'"event":"\xe9', 1)
    elif bad == b"\xef\xbb\xbf":
        texts[k] = bad + texts[k]
    else:
        texts[k] = bad
    (folder / "diary.jsonl").write_bytes(b"".join(t + b"\n" for t in texts))
    return k


def t_torn(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """The last line cut after 1 to all of its bytes but the newline (a negative choice
    counts from the end: -1 keeps the whole line without its newline)."""
    data = (folder / "diary.jsonl").read_bytes()
    last = canonical_line(lines[-1]).encode("utf-8") + b"\n"
    cut = 1 + choice % (len(last) - 1)
    (folder / "diary.jsonl").write_bytes(data[: len(data) - len(last) + cut])
    return None


def t_empty(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """diary.jsonl empty, or missing."""
    if choice % 2:
        (folder / "diary.jsonl").unlink()
    else:
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
    """A line after run_end; or, after a resumed run's run_start and its run_end (allowed),
    a line after that run_end."""
    events = [{k: v for k, v in x.items() if k not in RESERVED} for x in lines]
    if choice % 2:
        events += [events[0], events[-1]]
    extra = {"event": "sink_error", "sink": "metrics", "error": "late"}
    write_lines(folder / "diary.jsonl", chain([*events, extra]))
    return len(events)


def t_metrics_sha(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """A row appended to metrics.jsonl, one space added inside its last row (still the
    same JSON, one byte more), or metrics.jsonl removed: a run_end names the digest of a
    file that is not there, even when that digest is the SHA-256 of no bytes (a run that
    wrote no row) -- a missing file is not an empty one."""
    path = folder / "metrics.jsonl"
    if choice % 3 == 2:
        path.unlink()
        return None
    data = path.read_bytes()
    if choice % 3 == 1 and data:
        path.write_bytes(data[:-2] + b" }\n")
        return None
    row = {"step": 10**6 + choice, "loss": 1.0, "grad": {}, "stuck": {}}
    path.write_bytes(data + canonical_line(row).encode("utf-8") + b"\n")
    return None


def t_metrics_json(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    bad = [
        '{"step": NaN}',
        "{oops",
        '{"step": 1, "loss": Infinity}',
        '{"step":1,"step":1,"loss":1.0,"grad":{},"stuck":{}}',
    ][choice % 4]
    metrics = (folder / "metrics.jsonl").read_bytes() + bad.encode() + b"\n"
    (folder / "metrics.jsonl").write_bytes(metrics)
    events = [{k: v for k, v in x.items() if k not in RESERVED} for x in lines]
    if events[-1]["event"] == "run_end":
        events[-1]["metrics_sha256"] = hashlib.sha256(metrics).hexdigest()
    write_lines(folder / "diary.jsonl", chain(events))
    return None


def _pinned(folder: Path, lines: list[dict[str, Any]], rows: list[bytes], **end: Any) -> None:
    """metrics.jsonl made of ``rows``; the run_end (the last line) given ``end`` and the
    new file's digest, every hash recomputed: only the rows against the diary are wrong."""
    metrics = b"".join(rows)
    (folder / "metrics.jsonl").write_bytes(metrics)
    events = [{k: v for k, v in x.items() if k not in RESERVED} for x in lines]
    if events[-1]["event"] == "run_end":
        events[-1].update(end, metrics_sha256=hashlib.sha256(metrics).hexdigest())
    write_lines(folder / "diary.jsonl", chain(events))


def _row(step: int) -> bytes:
    return canonical_line({"step": step, "loss": 1.0, "grad": {}, "stuck": {}}).encode() + b"\n"


def t_metrics_rows(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """One row more than the run_end's checks, or one fewer (its digest pinned to the new
    file): a session has one metrics row per check."""
    rows = (folder / "metrics.jsonl").read_bytes().splitlines(keepends=True)
    if choice % 2 == 0 or not rows:
        rows.append(_row(10**6))
    else:
        rows.pop()
    checks = lines[-1]["checks"]
    _pinned(folder, lines, rows, checks=checks, steps=max(checks, lines[-1]["steps"]), error=None)
    return len(lines) - 1


def t_metrics_order(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """Two rows whose steps do not increase (the same step twice, or a step going down),
    the run_end (if any) counting them: one session's checks run at increasing steps."""
    first, second = [(5, 5), (9, 3)][choice % 2]
    _pinned(folder, lines, [_row(first), _row(second)], checks=2, steps=10)
    return None


def t_checks_steps(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """A run_end with more checks than steps."""
    events = [{k: v for k, v in x.items() if k not in RESERVED} for x in lines]
    end = events[-1]
    end["steps"] = end["checks"] + choice % 3
    end["checks"] = end["steps"] + 1
    write_lines(folder / "diary.jsonl", chain(events))
    return len(lines) - 1


RELATIVE_CHANGES: tuple[tuple[float, Any], ...] = (
    (2.0, 7.0),
    (2.0, None),
    (2.0, 0.5 * (1 + 1e-5)),
    (0.0, 0.5),
)
"""(weight_norm_before, relative_change) of a repair of delta_norm 1.0 that breaks the
relation: a wrong ratio, null for a weight that was not 0, a ratio off by a relative 1e-5,
a ratio for a weight norm of 0."""


def repair_line(before: float, relative: Any) -> dict[str, Any]:
    """A repair event with delta_norm 1.0 and these values."""
    return {
        "event": "repair",
        "step": 3,
        "severity": "action",
        "layer": "conv1",
        "batchnorm": None,
        "channels": [0],
        "count": 1,
        "method": "kaiming_uniform",
        "optimizer_slices_reset": 0,
        "modification_class": "discrete",
        "bound": None,
        "delta_norm": 1.0,
        "weight_norm_before": before,
        "weight_norm_after": 1.0,
        "relative_change": relative,
        "rng": "global",
    }


def t_relative_change(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """A repair line put after run_start whose relative_change is not delta_norm /
    weight_norm_before (one of :data:`RELATIVE_CHANGES`)."""
    events = [{k: v for k, v in x.items() if k not in RESERVED} for x in lines]
    before, relative = RELATIVE_CHANGES[choice % len(RELATIVE_CHANGES)]
    events.insert(1, repair_line(before, relative))
    write_lines(folder / "diary.jsonl", chain(events))
    return 1


TIME_CHANGES: tuple[Callable[[float], float | int], ...] = (
    int,
    lambda t: round(t, 3) + 0.0004,
    lambda t: round(int(t) + 0.123456, 6),
)
"""How a tamper spoils a line's time: an integer token, four decimals, six decimals."""


def t_time(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """A line's time written as one of :data:`TIME_CHANGES` (not a float rounded to
    milliseconds), its hash recomputed: only diary.time.precision is broken."""
    k, variant = _spot(lines, choice, len(TIME_CHANGES))
    lines = [dict(x) for x in lines]
    lines[k]["time"] = TIME_CHANGES[variant](lines[k]["time"])
    write_lines(folder / "diary.jsonl", _rehash(lines, k))
    return k


IRREGULAR = (("metrics.jsonl", "folder"), ("diary.jsonl", "folder"), ("metrics.jsonl", "fifo"))
"""What a tamper puts in place of a record's file: a folder, or a FIFO (named pipe, where
the system has them: a verifier that reads it blocks until the harness times out)."""


def t_irregular(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """metrics.jsonl or diary.jsonl replaced by one of :data:`IRREGULAR`."""
    import os

    name, kind = IRREGULAR[choice % len(IRREGULAR)]
    if kind == "fifo" and not hasattr(os, "mkfifo"):
        kind = "folder"
    path = folder / name
    path.unlink(missing_ok=True)
    if kind == "folder":
        path.mkdir()
        (path / "inside.txt").write_text("not the record's file\n", encoding="utf-8")
    else:
        os.mkfifo(path)
    return None


FORMAT_CHANGES = (str.upper, lambda h: h[:-1], lambda h: h + "0", lambda h: h + "\n")
"""A hex digest in upper case, one digit short, one digit long, with a line break after it
(``$`` in a Python regex matches before it)."""


def t_hash_format(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """A line's hash written as one of :data:`FORMAT_CHANGES`."""
    k, variant = _spot(lines, choice, len(FORMAT_CHANGES))
    lines = [dict(x) for x in lines]
    lines[k]["hash"] = FORMAT_CHANGES[variant](lines[k]["hash"])
    write_lines(folder / "diary.jsonl", lines)
    return k


def t_prev_format(folder: Path, lines: list[dict[str, Any]], choice: int) -> int | None:
    """A line's prev written as one of :data:`FORMAT_CHANGES`, its hash recomputed (the
    first line's too: a reader checks its format before comparing it with 64 zeros; in
    upper case on the second line, since 64 zeros have no upper case)."""
    k, variant = _spot(lines, choice, len(FORMAT_CHANGES))
    if k == 0 and variant == 0:
        k = 1
    lines = [dict(x) for x in lines]
    lines[k]["prev"] = FORMAT_CHANGES[variant](lines[k]["prev"])
    write_lines(folder / "diary.jsonl", _rehash(lines, k))
    return k


TAMPERS: dict[str, tuple[Tamper, bool, bool, int]] = {
    "diary.chain.hash": (t_hash, True, False, 3),
    "diary.chain.prev": (t_prev, True, False, 2),
    "diary.chain.seq": (t_seq, True, False, len(SEQ_CHANGES)),
    "diary.file.json": (t_json, True, False, len(BAD_LINES)),
    "diary.file.torn": (t_torn, False, False, 1),
    "diary.file.empty": (t_empty, False, False, 2),
    "diary.order.run_start": (t_run_start, True, False, 2),
    "diary.order.run_end": (t_run_end, True, True, 2),
    "diary.metrics.sha256": (t_metrics_sha, False, True, 3),
    "diary.metrics.json": (t_metrics_json, False, False, 4),
    "diary.hash.format": (t_hash_format, True, False, len(FORMAT_CHANGES)),
    "diary.time.precision": (t_time, True, False, len(TIME_CHANGES)),
    "diary.file.regular": (t_irregular, False, False, len(IRREGULAR)),
    "diary.prev.format": (t_prev_format, True, True, len(FORMAT_CHANGES)),
    "diary.metrics.rows": (t_metrics_rows, True, True, 2),
    "diary.metrics.order": (t_metrics_order, False, False, 2),
    "diary.run_end.checks": (t_checks_steps, True, True, 3),
    "diary.repair.relative_change.value": (
        t_relative_change,
        True,
        False,
        len(RELATIVE_CHANGES),
    ),
}
"""rule -> (tamper, whether it names a line, whether the run must end with run_end, how
many variants it has)."""
BY_LINE = (t_hash, t_prev, t_seq, t_json, t_hash_format, t_prev_format, t_time)
"""The tampers that pick a line and a variant from their choice (:func:`_spot`); the others
take the variant ``choice % variants``."""


def tamper_edges(rule: str) -> Callable[[Target], list[Any]]:
    """The fixed cases of a tamper check: :func:`edge_run` with each variant of the tamper,
    on the first and the last line where it picks a line (a torn tail: one byte of the last
    line, all of it but its newline, all but its last character; of a run's third line, and
    of a run of one line, which leaves no complete line; a removed metrics.jsonl also after
    a run with no metrics row, whose run_end names the SHA-256 of no bytes)."""
    tamper, _, _, variants = TAMPERS[rule]

    def edges(target: Target) -> list[Any]:
        run = edge_run()
        if tamper is t_torn:  # the last line; also the only one (no complete line before it)
            alone: tuple[list[Any], list[Any], dict[str, Any] | None] = (
                edge_events()[:1],
                [],
                None,
            )
            return [(r, c) for r in (run, alone) for c in (0, -1, -2)]
        if tamper in BY_LINE:
            return [(run, c) for c in spots(len(run[0]) + 1, variants)]
        if tamper is t_metrics_sha:  # metrics.jsonl removed after a run that wrote no row
            return [(run, c) for c in range(variants)] + [((run[0], [], run[2]), 2)]
        return [(run, c) for c in range(variants)]

    return edges


def tamper_check(rule: str) -> Callable[[Context, Any], None]:
    """The valid run verifies; the tampered copy fails on ``rule``, on the right line."""
    tamper, names_line, needs_end, _ = TAMPERS[rule]

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


HIDDEN: tuple[tuple[Tamper, str, int], ...] = (
    (t_hash, "diary.chain.hash", 3),
    (t_prev, "diary.chain.prev", 2),
    (t_json, "diary.file.json", len(BAD_LINES)),
)
"""What a torn tail must not hide: a complete line before it changed (tamper, the rule it
breaks, its variants)."""


def _tear(path: Path, cut: int) -> None:
    """Cut the file's last line after 1 to all of its bytes but the newline (as
    :func:`t_torn`: a negative ``cut`` counts from the end)."""
    data = path.read_bytes()
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    path.write_bytes(data[: start + 1 + cut % (len(data) - 1 - start)])


def torn_after_bad_line(ctx: Context, case: tuple[tuple[list, list, dict | None], Any]) -> None:
    """A complete line changed (one of :data:`HIDDEN`), then the last line torn: a torn
    tail is reported only when "the lines before it still verify", so the verdict is the
    changed line's failure (status failed, on that line), never torn. A verifier that calls
    any diary with an unterminated last line torn, unread, lets a tampered record pass as
    a crash."""
    (events, rows, end), (which, variant, spot, cut) = case
    if len(events) + (end is not None) < 2:
        end = {"event": "run_end", "steps": 1, "checks": 1, "counts": {}}
    folder = ctx.folder()
    lines = build_run(folder, events, rows, end)
    expect_ok(ctx, folder)
    tamper, rule, variants = HIDDEN[which % len(HIDDEN)]
    k = spot % (len(lines) - 1)
    tamper(folder, lines, variant % variants * len(lines) + k)
    _tear(folder / "diary.jsonl", cut)
    expect_failure(ctx, folder, rule, k)


def hidden_cases(target: Target) -> st.SearchStrategy[Any]:
    """(run, (tamper, variant, line, cut)) for :func:`torn_after_bad_line`."""
    how = st.tuples(
        st.integers(0, len(HIDDEN) - 1),
        st.integers(0, len(BAD_LINES) - 1),
        st.integers(0, 100),
        st.integers(-100, 100),
    )
    return st.tuples(runs(target), how)


def hidden_edges(target: Target) -> list[Any]:
    """Each variant of each :data:`HIDDEN` tamper once, on :func:`edge_run`'s first and
    second line in turn (its third is torn), cut to one byte or to all but its newline."""
    return [
        (edge_run(), (which, v, v % 2, -(v % 2)))
        for which, (_, _, variants) in enumerate(HIDDEN)
        for v in range(variants)
    ]


def row_rules() -> list[str]:
    """The rules of the metrics row schema (a site in it, or a hand-written breaking
    strategy)."""
    from trainrecord_conformance.checks.schema import HAND_BROKEN

    found = {
        r for r in S.schema_rules() if any(s.schema_id == METRICS_ROW for s in S.rule_sites(r))
    }
    return sorted(found | {r for r in HAND_BROKEN if r.startswith("diary_metrics.")})


def _broken_rows(rule: str) -> st.SearchStrategy[S.Broken]:
    from trainrecord_conformance.checks.schema import HAND_BROKEN

    if rule in HAND_BROKEN:
        return HAND_BROKEN[rule](rule)
    return S.breaking_instances(rule, schema_id=METRICS_ROW)


def bad_row(rule: str) -> Callable[[Context, Any], None]:
    """A run verifies; with a row that breaks ``rule`` of the metrics row schema put among
    its rows (run_end's metrics_sha256 pinned to the new file) it fails naming ``rule``:
    the verifier checks every row against the row schema, not only that it is JSON."""

    def body(ctx: Context, case: tuple[tuple[list, list, dict | None], S.Broken, int]) -> None:
        (events, rows, end), broken, where = case
        folder = ctx.folder()
        build_run(folder, events, rows, end)
        expect_ok(ctx, folder)
        k = where % (len(rows) + 1)
        rows = session_rows(rows)
        build_run(folder, events, [*rows[:k], broken.instance, *rows[k:]], end, renumber=False)
        expect_failure(ctx, folder, rule, None)

    return body


def bad_row_cases(rule: str) -> Callable[[Target], st.SearchStrategy[Any]]:
    """(run, a row breaking ``rule``, where among the run's rows it goes)."""
    return lambda target: st.tuples(runs(target), _broken_rows(rule), st.integers(0, 1000))


def bad_row_edges(rule: str) -> Callable[[Target], list[Any]]:
    """:func:`edge_run` with each of the rule's edge instances (or the simplest hand-written
    one) before its row."""

    def edges(target: Target) -> list[Any]:
        found = [b for _, b in S.edge_cases(rule, schema_id=METRICS_ROW)]
        return [(edge_run(), b, 0) for b in found or [S.simplest(_broken_rows(rule))]]

    return edges


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


def sig_formats(b64: str) -> list[str]:
    """record.sig texts that are not the base64 of a 64-byte signature and one newline:
    not base64, too short, empty, two lines; the right signature with a CR before its
    newline, or a space or tab before or after it."""
    return [
        "not base64!",
        "AAAA\n",
        "",
        "QUJD\nQUJD\n",
        b64 + "\r\n",
        " " + b64 + "\n",
        b64 + " \n",
        "\t" + b64 + "\n",
    ]


def s_sig_format(ctx: Context, folder: Path, lines: list, choice: int) -> str | None:
    path = folder / "record.sig"
    variants = sig_formats(path.read_bytes().decode("ascii").rstrip("\n"))
    path.write_bytes(variants[choice % len(variants)].encode("ascii"))
    return _keys(ctx)[1]


SealTamper = Callable[[Context, Path, list, int], str | None]
SEALS: dict[str, tuple[SealTamper, bool, bool, tuple[int, ...]]] = {
    "seal.diary.lines": (s_append, False, False, (0, 1)),
    "seal.diary.sha256": (s_spacing, False, True, (0,)),
    "seal.diary.head": (s_head, False, True, (0,)),
    "seal.metrics.sha256": (s_metrics, False, False, (0,)),
    "seal.file.json": (s_json, False, True, (0, 1, 2)),
    "seal.missing": (s_missing, False, True, (0,)),
    "seal.signature.invalid": (s_sig_invalid, True, True, (0, 511)),  # first and last bit
    "seal.signature.key": (s_sig_key, True, True, (0,)),
    "seal.signature.missing": (s_sig_gone, True, True, (0,)),
    "seal.signature.unexpected": (s_sig_unexpected, False, True, (0,)),
    "seal.signature.format": (s_sig_format, True, True, tuple(range(8))),
}
"""rule -> (tamper, signed seal, with run_end, the choices that make each of its variants:
the fixed cases, in :func:`edge_run`)."""


# --------------------------------------------------------------------------- writing


def read_written(folder: Path) -> list[dict[str, Any]]:
    """The lines of a written diary, each strict JSON (anything else is a failure naming
    what was found, never a crash of the check)."""
    path = folder / "diary.jsonl"
    if not path.is_file():
        raise Failed("write_diary wrote no diary.jsonl")
    return written_lines(path.read_bytes(), "diary.jsonl")


def written_lines(data: bytes, what: str, rule: str = "diary.file.json") -> list[Any]:
    """Lines an implementation wrote, each one strict JSON object ending in a newline;
    anything else is a failure naming ``rule`` and the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Failed(
            f"[{rule}] {what} is not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}"
        ) from None
    if text and not text.endswith("\n"):
        raise Failed(f"[{rule}] {what} does not end with a newline")
    out = []
    for i, line in enumerate(text.splitlines()):
        try:
            value = loads_strict(line)
        except (ValueError, RecursionError) as exc:
            raise Failed(
                f"[{rule}] {what} line {i} is not strict JSON ({exc}): {json.dumps(line[:200])}"
            ) from None
        if not isinstance(value, dict):
            raise Failed(f"[{rule}] {what} line {i} is not a JSON object: {json.dumps(line[:200])}")
        out.append(value)
    return out


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


RESERVED_VALUES = (0, 1.5, "0" * 64)
"""What an event sets a reserved field to: the first seq, a time, the first prev."""


def writer_reserved(ctx: Context, case: tuple[list[dict[str, Any]], str, Any]) -> None:
    """An event that sets seq, time, prev or hash itself is refused."""
    events, field, value = case
    events = [dict(e) for e in events]
    events[-1][field] = value
    ctx.refused(
        "write_diary", {"dir": str(ctx.folder()), "events": events}, "diary.writer.reserved"
    )


RULE_TEXT = "diary.text.surrogate"

NOT_TEXT = ("\ud800", "\udfff", "a\udc80", "\udc80\ud83d", "x\ud83dy")
"""Strings that are not Unicode text in any reader: a lone high or low surrogate, alone or
among text, and a low one before a high one (two lone surrogates, not a pair)."""

SURROGATE_PLACES = ("value", "key", "nested value", "nested key")


def with_text(event: dict[str, Any], place: str, text: str) -> dict[str, Any]:
    """``event`` with ``text`` added at ``place``, in fields of its own (a line may carry
    more fields than its event's): a value, an object key, or either deeper in."""
    out = dict(event)
    if place == "value":
        out["x_note"] = text
    elif place == "key":
        out["x_extra"] = {text: 1}
    elif place == "nested value":
        out["x_extra"] = {"a": [1, {"b": text}]}
    else:
        out["x_extra"] = [{"ok": {text: None}}]
    return out


def writer_surrogate(ctx: Context, case: tuple[list[dict[str, Any]], str, str, int]) -> None:
    """An event holding a string with a surrogate code point (a key or a value, at any
    depth) is refused with diary.text.surrogate and none of it written; the same event with
    a character beyond U+FFFF there (a surrogate pair in the JSON) is written."""
    events, place, text, where = case
    k = where % len(events)
    folder = ctx.folder()
    bad = with_text(events[k], place, text)
    ctx.refused("write_diary", {"dir": str(folder), "events": [*events[:k], bad]}, RULE_TEXT)
    lines = read_written(folder) if (folder / "diary.jsonl").exists() else []
    if len(lines) != k:
        raise Failed(f"{k} valid events then a refused one left {len(lines)} lines")
    good = with_text(events[k], place, "x\U0001f480y")
    ctx.ok("write_diary", {"dir": str(ctx.folder()), "events": [*events[:k], good]})


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
            edges=tamper_edges(rule),
        )
        for rule in TAMPERS
    ]
    out.append(
        Check(
            "diary.file.torn",
            "a torn tail does not hide a bad line before it",
            frozenset({"verify_diary"}),
            hidden_cases,
            torn_after_bad_line,
            scale="io",
            edges=hidden_edges,
        )
    )
    out += [
        Check(
            rule,
            "verify_diary checks metrics.jsonl's rows against the row schema",
            frozenset({"verify_diary"}),
            bad_row_cases(rule),
            bad_row(rule),
            scale="io",
            edges=bad_row_edges(rule),
        )
        for rule in row_rules()
    ]
    out += [
        Check(
            rule,
            "verify_diary finds the tampered seal",
            frozenset({"verify_diary"}),
            with_choice,
            seal_check(rule, signed, tamper, end),
            scale="io",
            edges=for_any_target(seal_edges, choices),
        )
        for rule, (tamper, signed, end, choices) in SEALS.items()
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
            edges=lambda t: [edge_events()[:1], edge_events()],  # one line; text beyond ASCII
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
            RULE_TEXT,
            "write_diary refuses text with a surrogate code point, writing none of its event",
            frozenset({"write_diary"}),
            lambda t: st.tuples(
                S.diary_events(3),
                st.sampled_from(SURROGATE_PLACES),
                st.sampled_from(NOT_TEXT),
                choice,
            ),
            writer_surrogate,
            scale="io",
            edges=lambda t: [
                (edge_events(), place, text, where)
                for place in SURROGATE_PLACES
                for text, where in zip(NOT_TEXT, (0, 1, 0, 1, 1), strict=False)
            ],
        ),
        Check(
            "diary.writer.reserved",
            "write_diary refuses events that set seq, time, prev or hash",
            frozenset({"write_diary"}),
            lambda t: st.tuples(
                S.diary_events(3), st.sampled_from(RESERVED), st.sampled_from(RESERVED_VALUES)
            ),
            writer_reserved,
            scale="io",
            edges=lambda t: [(edge_events(), f, v) for f in RESERVED for v in RESERVED_VALUES],
        ),
    ]
    return out
