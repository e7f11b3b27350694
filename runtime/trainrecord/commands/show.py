"""``trainrecord show RUN_DIR [--key PUBLIC_KEY]``: a human summary of a training record.

The run, its layers, the loss at the checks (first, lowest and last, from metrics.jsonl),
alarms with their steps, stuck channels, certificates, repairs, loss spikes, non-finite
events and event counts. It verifies the record first, as ``trainrecord
verify`` does (``--key`` checks the signature of a signed record, as there), and its first
line is that verdict: ``integrity: OK: 16 lines verified (ended with run_end, sealed ..., not
signed)``, or ``integrity: FAILED: <file, line, rule>`` followed by which of the values
shown are not trustworthy (from the failing line on, or all of them when the seal or
metrics.jsonl fails); the summary is shown either way.
``--no-verify`` skips that for a huge record (``integrity: not checked``). Text in the
record is shown with control characters, bidirectional formatting characters and
surrogates escaped (``\\x1b``, ``\\u202e``, ``\\ud800``).
After the verdict comes a ``findings:`` headline, the most important facts first (how a
run failed, non-finite values, channels proven dead and repaired, channels stuck without a
proof, layers that lost their gradient, loss spikes; ``findings: none`` for a quiet
record). Alarms of layers with the same diagnosis and steps share a line; a certificate's
statement is wrapped at 100 columns and its assumptions listed one a line.

exit status: as trainrecord verify: 0 the record verifies, 1 it fails verification, 3 its
last line is torn (a crash while writing; the summary covers the lines before it), 2 usage
error (no run directory, no diary.jsonl, a --key that is not a public key, --key with
--no-verify, or with --no-verify a line that is not a JSON object, named with its file,
line and rule); --no-verify: 0; any: 130 interrupted (Ctrl+C), 141 stdout closed early
(| head).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from trainrecord.canonical import loads_strict
from trainrecord.commands import load_key_option, no_diary, plain, run_dir_problem
from trainrecord.diary.events import not_an_object
from trainrecord.diary.read import DIARY, METRICS, Summary, summarize
from trainrecord.diary.verifier import VerifyResult, verify
from trainrecord.errors import Problem, escaped
from trainrecord.formats import syntax_problem
from trainrecord.schemas import finite_number
from trainrecord.wording import counted

EXIT = {"ok": 0, "failed": 1, "torn": 3}
"""Exit status by verdict, as trainrecord verify's."""


def register(subparsers: Any) -> None:
    """Add the ``show`` subcommand."""
    parser = subparsers.add_parser(
        "show",
        help="print a human summary of a training record",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    parser.add_argument(
        "--key", metavar="PUBLIC_KEY", type=Path, help="the signer's public key (PEM)"
    )
    parser.add_argument(
        "--no-verify",
        action="store_true",
        help="do not verify the record first (for a huge one: verify reads every line)",
    )
    parser.set_defaults(func=run)


def _num(value: Any) -> str:
    """A number as people read it: a float to 4 significant digits (2.411, 0.05275, 1.2e-07),
    anything else (an int, "NaN", None) as it is."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _known(value: Any) -> str:
    """A field as it is, or ``unknown`` where the line leaves it out or gives null."""
    return "unknown" if value is None else str(value)


def _model(run: dict[str, Any]) -> str:
    """``Net with 1,234 parameters``; the count is left out where the line has none (a
    hand-written diary read without verifying)."""
    count = run.get("parameters")
    if isinstance(count, int) and not isinstance(count, bool):
        return f"{_known(run.get('model'))} with {count:,} parameters"
    return _known(run.get("model"))


def _alarm_episodes(s: Summary) -> dict[tuple[str, str], list[str]]:
    """Per (layer, diagnosis), each alarm's span: ``100-120`` (cleared at 120) or
    ``400 (open)``; an alarm ends at its layer's next alarm_cleared or next alarm."""

    def seq(line: dict[str, Any]) -> int:
        value = line.get("seq")
        return value if isinstance(value, int) else 0

    lines = sorted([*s.alarms, *s.cleared], key=seq)
    open_: dict[str, tuple[str, Any]] = {}
    spans: dict[tuple[str, str], list[str]] = defaultdict(list)

    def close(layer: str, end: str) -> None:
        diagnosis, step = open_.pop(layer)
        spans[(layer, diagnosis)].append(f"{step}{end}")

    for line in lines:
        layer = str(line.get("layer"))
        if layer in open_:
            close(layer, f"-{line.get('step')}" if line.get("event") == "alarm_cleared" else "")
        if line.get("event") == "alarm":
            open_[layer] = (str(line.get("diagnosis")), line.get("step"))
    for layer in list(open_):
        close(layer, " (open)")
    return spans


WIDTH = 100
"""The column long text (a certificate's statement, the findings) is wrapped at."""


def _wrap(text: str, first: str, indent: str) -> list[str]:
    """``text`` after ``first``, wrapped at :data:`WIDTH` columns, the lines after the first
    indented by ``indent``; escaped first (:func:`~trainrecord.errors.escaped`), so a
    newline or tab in the record is shown as ``\\n`` and never taken for a place to
    break."""
    return textwrap.wrap(
        escaped(text),
        WIDTH,
        initial_indent=first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _int(value: Any) -> int | None:
    """``value`` where it is an integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _names(names: list[str], most: int = 4) -> str:
    """``a, b, c``; past ``most``: ``a, b, c, d and 3 more``."""
    if len(names) <= most:
        return ", ".join(names)
    return f"{', '.join(names[:most])} and {len(names) - most} more"


def _steps(steps: list[Any], most: int = 3) -> str:
    """``step 200``, ``steps 200, 300``; past ``most``: ``steps 200, 300, 400, ...``."""
    unique = list(dict.fromkeys(map(str, steps)))  # (as text: a step may be a list)
    if len(unique) == 1:
        return f"step {unique[0]}"
    shown = ", ".join(map(str, unique[:most]))
    return f"steps {shown}" + (", ..." if len(unique) > most else "")


def _sum(lines: list[dict[str, Any]], key: str) -> int:
    return sum(_int(line.get(key)) or 0 for line in lines)


_LOST = {
    "no_gradient": ("lost its gradient", "lost their gradient"),
    "vanishing": ("has a vanishing gradient", "have a vanishing gradient"),
    "exploding": ("has an exploding gradient", "have an exploding gradient"),
}
"""What a headline says of the layers alarmed with a diagnosis."""

_UNPROVEN = {"n_flat": "flat", "n_observed": "silent", "n_decayed": "decayed"}
"""The counts of stuck channels a channels event gives besides the certified ones."""


def findings(s: Summary) -> list[str]:
    """The headline: the most important facts of the record first (how a run failed, non-
    finite values, channels proven dead and their repairs, channels stuck but not proven,
    gradient alarms, loss spikes), or ``findings: none`` for a quiet record."""
    facts: list[str] = []
    error = (s.end or {}).get("error")
    if isinstance(error, dict):
        facts.append(f"the run ended by {error.get('type')}")
    if s.nonfinite:
        kinds = list(dict.fromkeys(str(c.get("event")) for c in s.nonfinite))
        facts.append(
            f"{counted(len(s.nonfinite), 'non-finite event')} ({', '.join(kinds)}) from step "
            f"{s.nonfinite[0].get('step')}"
        )
    for lines, verb in ((s.certificates, "proven dead"), (s.repairs, "repaired")):
        if not lines:
            continue
        layers = list(dict.fromkeys(str(c.get("layer")) for c in lines))
        steps = _steps([c.get("step") for c in lines])
        if len(layers) < len(lines):  # the same layer again: its counts do not add up
            what = "certificate" if verb == "proven dead" else "repair"
            facts.append(f"{counted(len(lines), what)} of {_names(layers)} ({steps})")
        elif (
            verb == "repaired"
            and facts
            and facts[-1].startswith(
                f"{counted(_sum(lines, 'count'), 'channel')} proven dead in {_names(layers)} ("
            )
        ):
            facts[-1] += f", repaired ({steps})"  # the same channels
        else:
            facts.append(
                f"{counted(_sum(lines, 'count'), 'channel')} {verb} in {_names(layers)} ({steps})"
            )
    unproven = {  # stuck for a reason no certificate proves
        layer: c
        for layer, c in s.channels.items()
        if c.get("level") != "none" and any(_int(c.get(k)) for k in _UNPROVEN)
    }
    if unproven:
        totals = {word: _sum(list(unproven.values()), key) for key, word in _UNPROVEN.items()}
        kinds = [f"{total} {word}" for word, total in totals.items() if total]
        noun = "channel" if sum(totals.values()) == 1 else "channels"
        facts.append(f"{', '.join(kinds)} {noun} in {_names(list(unproven))}")
    episodes = _alarm_episodes(s)
    for diagnosis in dict.fromkeys(d for _, d in episodes):
        mine = {layer: spans for (layer, d), spans in episodes.items() if d == diagnosis}
        one, many = _LOST.get(diagnosis, (f"has {diagnosis} alarms", f"have {diagnosis} alarms"))
        opened = [
            str(a.get("step"))
            for a in s.alarms
            if str(a.get("diagnosis")) == diagnosis and str(a.get("layer")) in mine
        ]
        still = sum(1 for spans in mine.values() if spans[-1].endswith(" (open)"))
        state = "cleared" if not still else "open" if still == len(mine) else f"{still} open"
        facts.append(
            f"{counted(len(mine), 'layer')} {one if len(mine) == 1 else many} at "
            f"{_steps(opened)} ({state})"
        )
    rises = [c for c in s.spikes if c.get("event") == "loss_spike"]
    if rises:
        said = (
            f"a loss spike at step {rises[0].get('step')}"
            if len(rises) == 1
            else f"{len(rises)} loss spikes ({_steps([c.get('step') for c in rises])})"
        )
        if s.spikes[-1].get("event") == "loss_recovered":
            said += f", recovered at step {s.spikes[-1].get('step')}"
        facts.append(said)
    return _wrap("; ".join(facts) or "none", "findings: ", "  ")


def _without_relu(manifest: dict[str, Any] | None) -> list[str]:
    """The manifest's producers that no ReLU follows."""
    producers = (manifest or {}).get("producers")
    if not isinstance(producers, list):
        return []
    return [str(p.get("layer")) for p in producers if isinstance(p, dict) and p.get("relu") is None]


def loss_line(rows: Iterable[dict[str, Any]]) -> str | None:
    """What metrics.jsonl's rows say of the loss: its first, lowest and last value at the
    checks, with their steps, and the checks without a finite one (a NaN or infinite loss
    is written as null, as is a loss not given to ``step()``); None without rows. One pass
    over ``rows``, none of them kept (a long run's metrics.jsonl need not fit in memory)."""
    first: tuple[Any, Any] | None = None  # (step, loss)
    low: tuple[Any, Any] | None = None
    last: tuple[Any, Any] | None = None
    missing = 0
    for row in rows:
        value: Any = row.get("loss")
        if not finite_number(value):  # (an int past a double's range: none, not a crash)
            missing += 1
            continue
        last = (row.get("step"), value)
        if first is None:
            first = last
        if low is None or value < low[1]:  # (the first of equal lows)
            low = last
    if first is None or low is None or last is None:
        if not missing:
            return None
        return f"loss at the checks: none ({counted(missing, 'row')} without a finite loss)"
    return (
        f"loss at the checks: first {_num(first[1])} (step {first[0]}), lowest "
        f"{_num(low[1])} (step {low[0]}), last {_num(last[1])} (step {last[0]})"
        + (f"; {counted(missing, 'check')} without a finite loss" if missing else "")
    )


def render(s: Summary, loss: str | None = None) -> list[str]:
    """The summary as lines of text (``loss``: :func:`loss_line` of metrics.jsonl)."""
    out: list[str] = []
    if s.run:
        r = s.run
        name = r.get("name")
        optimizer = r.get("optimizer")
        out.append(
            f"run {repr(name) if name is not None else '(unnamed)'}: {_model(r)}"
            + (f", optimizer {optimizer}" if optimizer is not None else "")
        )
        made = [f"{k} {r[k]}" for k in ("python", "torch") if r.get(k) is not None]
        made += [str(r["platform"])] if r.get("platform") is not None else []
        out.append(
            f"  written by {_known(r.get('tool'))}" + (f"; {', '.join(made)}" if made else "")
        )
        checked = (s.manifest or {}).get("layers")  # the layers checked last (they change)
        layers = checked if isinstance(checked, list) else r.get("layers")
        if not isinstance(layers, list):  # (none, or a line verify refuses)
            layers = []
        out.append(
            f"  layers ({len(layers)}): {', '.join(map(str, layers[:16]))}"
            + (" ..." if len(layers) > 16 else "")
        )
        if s.sessions > 1:
            out.append(f"  resumed: {s.sessions} sessions")
        last = s.last_run or {}
        if last.get("architecture_sha256") != r.get("architecture_sha256"):
            out.append(
                f"  the last session's model is another: {_model(last)} (other parameter "
                "names or shapes)"
            )
        start = (s.last_run or {}).get("start_step")
        if isinstance(start, int) and not isinstance(start, bool) and start > 0:
            out.append(f"  the last session continued from step {start}")
    if s.manifest:
        m = s.manifest
        out.append(
            f"checks every {counted(m.get('check_every'), 'step')}; precision {m.get('precision')}; "
            f"repair {'on' if m.get('repair') else 'off'}"
        )
        unchecked = _without_relu(s.manifest)
        if unchecked:
            them = "its" if len(unchecked) == 1 else "their"
            out += _wrap(
                f"{_names(unchecked, 8)}: no ReLU takes {them} output (or a norm other than "
                "BatchNorm, or a different activation, comes first), so only flat and decayed "
                "channels are checked there (no silent ones, no certificates)",
                "  ",
                "    ",
            )
    if s.end:
        e = s.end
        error = e.get("error")
        how = ""
        if isinstance(error, dict):
            message = str(error.get("message") or "")
            how = f" by {error.get('type')}" + (f" ({message[:120]})" if message else "")
        start = (s.last_run or {}).get("start_step")
        steps = e.get("steps")
        span = ""
        if isinstance(start, int) and not isinstance(start, bool) and start > 0:
            if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0:
                span = f" of the last session (steps {start}-{start + steps - 1})"
            else:
                span = " of the last session"
        out.append(
            f"ended{how} after {counted(steps, 'step')}{span} and {counted(e.get('checks'), 'check')}"
        )
    else:
        out.append("no run_end: the run is still going, or it crashed")
    if loss is not None:
        out.append(loss)
    out.append(f"alarms ({len(s.alarms)}):" if s.alarms else "alarms: none")
    together: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (layer, diagnosis), spans in _alarm_episodes(s).items():
        together.setdefault((diagnosis, tuple(spans)), []).append(layer)
    for (diagnosis, shared), layers in together.items():  # the same spans: one line
        shown = ", ".join(shared[:12]) + (
            f", ... ({len(shared)} in all)" if len(shared) > 12 else ""
        )
        if len(layers) == 1:
            out.append(f"  {layers[0]}: {diagnosis} at step {shown}")
        else:
            out += _wrap(
                f"{diagnosis} at step {shown} in {len(layers)} layers: {', '.join(layers)}",
                "  ",
                "    ",
            )
    stuck = {k: v for k, v in s.channels.items() if v.get("level") != "none"}
    out.append(
        f"stuck channels ({counted(len(stuck), 'layer')}):" if stuck else "stuck channels: none"
    )
    for layer, c in stuck.items():
        history = s.channel_events.get(layer, [c])
        start = len(history)
        while start > 0 and history[start - 1].get("event") == "channels":
            start -= 1  # back to the first channels event after the last channels_cleared
        start = min(start, len(history) - 1)  # (the last a channels_cleared with a level)
        changes = f" ({counted(len(history), 'channel event')} in all)" if len(history) > 1 else ""
        pruned = _int(c.get("n_pruned")) or 0  # (removed on purpose: not stuck)
        out.append(
            f"  {layer}: {c.get('level')} of {c.get('channels')} "
            f"(certified {c.get('n_certified')}, flat {c.get('n_flat')}, silent "
            f"{c.get('n_observed')}, decayed {c.get('n_decayed')}"
            + (f"; {pruned} pruned, not stuck" if pruned else "")
            + f") since step {history[start].get('step')}{changes}"
        )
    out.append(f"certificates ({len(s.certificates)}):" if s.certificates else "certificates: none")
    for c in s.certificates:
        out.append(
            f"  step {c.get('step')} {c.get('layer')}: {counted(c.get('count'), 'channel')} dead"
        )
        out += _wrap(str(c.get("statement")), "    ", "    ")
        assumes = c.get("assumes")
        if isinstance(assumes, list) and assumes:
            out.append("    assumes:")
            for item in assumes:
                out += _wrap(str(item), "      - ", "        ")
        else:
            out.append(f"    assumes: {assumes if assumes else 'none'}")
    for c in s.refusals:
        out.append(
            f"  not certified at step {c.get('step')} {c.get('layer')}: "
            f"{counted(c.get('count'), 'channel')}; {c.get('reason')}"
        )
    out.append(f"repairs ({len(s.repairs)}):" if s.repairs else "repairs: none")
    for c in s.repairs:
        out.append(
            f"  step {c.get('step')} {c.get('layer')}: {counted(c.get('count'), 'channel')} by "
            f"{c.get('method')}, |dW| {_num(c.get('delta_norm'))}, rng {c.get('rng')}"
        )
    out.append(f"loss events ({len(s.spikes)}):" if s.spikes else "loss spikes: none")
    for c in s.spikes:
        out.append(
            f"  step {c.get('step')}: {c.get('event')} {_num(c.get('value'))} "
            f"(baseline {_num(c.get('baseline'))})"
        )
    out.append(f"non-finite ({len(s.nonfinite)}):" if s.nonfinite else "non-finite: none")
    for c in s.nonfinite:
        what = c.get("value") if c.get("event") == "nonfinite_loss" else c.get("layers")
        out.append(f"  step {c.get('step')}: {c.get('event')} {_num(what)}")
    if s.other:
        out.append(f"other events ({len(s.other)}):")
    for c in s.other:
        out.append(
            f"  {c.get('event')}: "
            + ", ".join(
                f"{k}={_num(v)}"
                for k, v in c.items()
                if k not in ("seq", "time", "event", "prev", "hash")
            )
        )
    out.append("events: " + ", ".join(f"{k} {v}" for k, v in sorted(s.counts.items())))
    return out


def integrity(result: VerifyResult | None) -> list[str]:
    """The lines that head the summary: the verdict, and on a failure which of the values
    shown are not trustworthy."""
    if result is None:
        return ["integrity: not checked (--no-verify); trainrecord verify RUN_DIR checks it"]
    out = [f"integrity: {result.summary()}"]
    failure = result.failure
    if result.status != "failed" or failure is None:
        return out
    if failure.file == DIARY and failure.line > result.lines:
        where = f"line {failure.line}" + (
            f" (seq {failure.seq})" if failure.seq is not None else ""
        )
        out.append(
            f"  NOT TRUSTWORTHY from {where} on: the values below from that line on may not be "
            "the ones written (the lines before it pass the chain)"
        )
    elif failure.rule in _SIGNATURE and result.lines > 0:
        out.append(
            "  NOT TRUSTWORTHY: the lines hold together, but without a valid signature of "
            "--key's holder anyone could have written them (an edit re-chained and re-sealed "
            "passes the chain), so none of the values below is vouched for"
        )
    else:
        out.append(
            "  NOT TRUSTWORTHY: the record fails verification as a whole, so none of the "
            "values below can be taken for the ones written"
        )
    return out


_SIGNATURE = {
    "seal.signature.missing",
    "seal.signature.key",
    "seal.signature.invalid",
    "seal.signature.format",
}
"""Failures of the signature alone (``--key``): the chain and seal hold, but nothing says who
made them."""


def _read(path: Path) -> tuple[list[dict[str, Any]], Problem | None]:
    """The complete lines of diary.jsonl up to the first one that is not a JSON object (a
    torn last line left out), and that one's problem (its field led by the line, ``line
    3``), as :func:`trainrecord.diary.read.read_diary` refuses it, or None."""
    data = path.read_bytes()
    lines: list[dict[str, Any]] = []
    for number, raw in enumerate(data[: data.rfind(b"\n") + 1].split(b"\n")[:-1], 1):
        where = f"line {number}"
        try:
            line = loads_strict(raw)
        except ValueError as exc:
            return lines, syntax_problem("diary.file.json", (where,), exc)
        if not isinstance(line, dict):
            problem = not_an_object(line)
            return lines, Problem(problem.rule, (where,), problem.message, problem.value)
        lines.append(line)
    return lines, None


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    """The complete lines of a JSON-lines file (metrics.jsonl), one at a time, up to the
    first one that is not a JSON object (a torn last line left out): as :func:`_read`
    takes them, without holding them all."""
    with path.open("rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                return  # torn
            try:
                line = loads_strict(raw[:-1])
            except ValueError:
                return
            if not isinstance(line, dict):
                return
            yield line


def run(args: argparse.Namespace) -> int:
    """Verify, then print the summary."""
    problem = run_dir_problem(args.run_dir)
    if problem:
        print(f"trainrecord show: {problem}", file=sys.stderr)
        return 2
    if not (args.run_dir / DIARY).is_file():
        print(no_diary("show", args.run_dir), file=sys.stderr)
        return 2
    if args.no_verify and args.key is not None:
        print(
            "trainrecord show: --key checks the signature while verifying, which --no-verify "
            "skips; give one of them",
            file=sys.stderr,
        )
        return 2
    key, key_problem = load_key_option("show", args.key)
    if key_problem:
        print(key_problem, file=sys.stderr)
        return 2
    result = (
        None
        if args.no_verify
        else verify(args.run_dir, public_key=key, progress=sys.stderr.isatty())
    )
    lines, unreadable = _read(args.run_dir / DIARY)
    if unreadable and result is None:
        print(
            f"trainrecord show: the record is not readable: {escaped(str(args.run_dir / DIARY))}: "
            f"{escaped(str(unreadable))}; trainrecord verify {escaped(str(args.run_dir))} checks the whole "
            "record",
            file=sys.stderr,
        )
        return 2
    summary = summarize(lines)
    try:  # (the loss line only: verify has judged metrics.jsonl already)
        metrics = args.run_dir / METRICS
        loss = loss_line(_rows(metrics)) if metrics.is_file() else None
    except OSError:
        loss = None
    out = integrity(result) + findings(summary) + render(summary, loss)
    if unreadable:
        out.append(
            f"the summary stops before {unreadable.path[0]}, which is not readable: {unreadable}"
        )
    text = "\n".join(escaped(line) for line in out) + "\n"
    encoding = sys.stdout.encoding or "utf-8"  # (an ASCII terminal gets \u escapes)
    sys.stdout.write(text.encode(encoding, "backslashreplace").decode(encoding))
    return 0 if result is None else EXIT[result.status]
