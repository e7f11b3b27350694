"""Diary writer behaviour beyond one new file (``append_diary``, ``architecture``).

* ``diary.writer.resume``: a valid run, reopened, gets the new events appended with seq
  and the chain continued (the old bytes untouched, the whole folder verifying); a run
  whose chain is broken is never appended to (refused, the folder left as it was); a run
  without run_end continues with the new session's run_start (any other first event is
  refused, nothing written).
* ``diary.writer.fsync_policy``: always, interval and critical open; anything else is
  refused naming the rule.
* ``diary.architecture.text``: the text and SHA-256 of (name, shape) pairs, computed here
  independently from the rule's words.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from trainrecord_conformance import strategies as S
from trainrecord_conformance.checks.base import Check, Context, Failed, snapshot
from trainrecord_conformance.checks.diary import build_run, runs, verify, write_lines, written_lines
from trainrecord_conformance.targets import Target

APPEND = frozenset({"append_diary", "verify_diary"})
POLICIES = ("always", "interval", "critical")

Case = tuple[tuple[list, list, dict | None], list[dict[str, Any]], int]


def resume(ctx: Context, case: Case) -> None:
    """Appending to a valid diary continues it; a broken one is never appended to."""
    (events, rows, end), more, choice = case
    folder = ctx.folder()
    lines = build_run(folder, events, rows, end)
    before = (folder / "diary.jsonl").read_bytes()
    data = {"dir": str(folder), "events": more, "fsync_policy": POLICIES[choice % 3]}
    ctx.ok("append_diary", data)
    path = folder / "diary.jsonl"
    after = path.read_bytes() if path.is_file() else b""
    if not after.startswith(before):
        raise Failed("reopening the diary changed its existing lines")
    new = written_lines(after[len(before) :], "the lines appended to diary.jsonl")
    if len(new) != len(more):
        raise Failed(f"{len(more)} events appended, {len(new)} lines added")
    if [x.get("seq") for x in new] != list(range(len(lines), len(lines) + len(more))):
        raise Failed(f"seq after {len(lines)} lines: {[x.get('seq') for x in new]}")
    if new and new[0].get("prev") != lines[-1]["hash"]:
        raise Failed(
            f"the first appended prev is {new[0].get('prev')}, the head was {lines[-1]['hash']}"
        )
    out = verify(ctx, folder)
    if not out["ok"]:
        raise Failed(f"the resumed diary does not verify: {out}")
    broken = ctx.folder()
    lines = build_run(broken, events, rows, end)
    index = choice % len(lines)
    flip = "0" * 64 if lines[index]["hash"] != "0" * 64 else "1" * 64
    lines[index] = {**lines[index], "hash": flip}
    write_lines(broken / "diary.jsonl", lines)
    frozen = snapshot(broken)
    ctx.refused("append_diary", {**data, "dir": str(broken)}, "diary.writer.resume")
    if snapshot(broken) != frozen:
        raise Failed("a refused resume changed the run folder")
    # a diary without run_end (a crashed session) continues with the new session's run_start
    crashed = ctx.folder()
    build_run(crashed, events, rows, None)
    before = (crashed / "diary.jsonl").read_bytes()
    late = [*more[1:], {"event": "sink_error", "sink": "diary", "error": "no run_start"}]
    ctx.refused(
        "append_diary", {**data, "dir": str(crashed), "events": late}, "diary.writer.resume"
    )
    if (crashed / "diary.jsonl").read_bytes() != before:
        raise Failed("a resume refused for want of run_start wrote into diary.jsonl")


def fsync_policy(ctx: Context, case: tuple[list[dict[str, Any]], str]) -> None:
    """The three policies open; any other value is refused naming the rule."""
    more, policy = case
    folder = ctx.folder()
    build_run(folder, more, [], None)
    for good in POLICIES:
        ctx.ok("append_diary", {"dir": str(folder), "events": more, "fsync_policy": good})
    folder = ctx.folder()
    build_run(folder, more, [], None)
    data = {"dir": str(folder), "events": more, "fsync_policy": policy}
    ctx.refused("append_diary", data, "diary.writer.fsync_policy")


def expected_text(parameters: list[tuple[str, list[int]]]) -> str:
    """name:shape joined by |, shape written like [16, 3, 3, 3] and [] for a scalar."""
    return "|".join(f"{n}:[{', '.join(str(d) for d in shape)}]" for n, shape in parameters)


def architecture_text(ctx: Context, parameters: list[tuple[str, list[int]]]) -> None:
    """The text and its SHA-256, byte for byte."""
    out = ctx.ok("architecture", {"parameters": [[n, s] for n, s in parameters]})
    text = expected_text(parameters)
    if out["text"] != text:
        raise Failed(f"architecture text {out['text']!r}, expected {text!r}")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if out["sha256"] != digest:
        raise Failed(f"architecture_sha256 {out['sha256']}, expected {digest}")


def checks() -> list[Check]:
    """The writer and architecture checks."""

    def resumes(t: Target) -> st.SearchStrategy[Case]:
        return st.tuples(runs(t), S.diary_events(4), st.integers(0, 100))

    def policies(t: Target) -> st.SearchStrategy[tuple[list[dict[str, Any]], str]]:
        bad = st.one_of(
            st.sampled_from(["", "ALWAYS", "Interval", "never", "always ", "batch", "0"]),
            st.text(max_size=10).filter(lambda s: s not in POLICIES),
        )
        return st.tuples(S.diary_events(2), bad)

    name = st.from_regex(r"[a-z_][a-z0-9_]{0,6}(\.[a-z0-9_]{1,6}){0,3}", fullmatch=True)
    shape = st.lists(st.integers(1, 4096), max_size=4)
    models: Callable[[Target], Any] = lambda t: st.lists(  # noqa: E731
        st.tuples(name, shape), min_size=1, max_size=8, unique_by=lambda p: p[0]
    )
    return [
        Check("diary.writer.resume", "reopen, verify, continue", APPEND, resumes, resume),
        Check(
            "diary.writer.fsync_policy",
            "always, interval or critical",
            frozenset({"append_diary"}),
            policies,
            fsync_policy,
        ),
        Check(
            "diary.architecture.text",
            "name:shape joined by |",
            frozenset({"architecture"}),
            models,
            architecture_text,
        ),
    ]
