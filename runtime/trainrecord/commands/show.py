"""``trainrecord show RUN_DIR``: a human summary of a training record.

The run, its layers, alarms with their steps, stuck channels, certificates, repairs, loss
spikes, non-finite events and event counts. It reads without verifying: run ``trainrecord
verify`` to know the record is intact.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from trainrecord.commands import plain
from trainrecord.diary.read import Summary, read_diary, summarize


def register(subparsers: Any) -> None:
    """Add the ``show`` subcommand."""
    parser = subparsers.add_parser(
        "show",
        help="print a human summary of a training record",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    parser.set_defaults(func=run)


def _steps(lines: list[dict[str, Any]]) -> str:
    steps = [str(line.get("step")) for line in lines]
    return ", ".join(steps[:12]) + (f", ... ({len(steps)} in all)" if len(steps) > 12 else "")


def _num(value: Any) -> str:
    """A number as people read it: a float to 4 significant digits (2.411, 0.05275, 1.2e-07),
    anything else (an int, "NaN", None) as it is."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _n(count: Any, word: str, plural: str | None = None) -> str:
    """``1 step``, ``2 steps``; a count that is not a number is shown as it is."""
    one = isinstance(count, int) and not isinstance(count, bool) and count == 1
    return f"{count} {word if one else plural or word + 's'}"


def render(s: Summary) -> list[str]:
    """The summary as lines of text."""
    out: list[str] = []
    if s.run:
        r = s.run
        out.append(
            f"run {r.get('name')!r}: {r.get('model')} with {r.get('parameters'):,} "
            f"parameters, optimizer {r.get('optimizer')}"
        )
        out.append(
            f"  written by {r.get('tool')}; python {r.get('python')}, torch "
            f"{r.get('torch')}, {r.get('platform')}"
        )
        layers = r.get("layers") or []
        out.append(
            f"  layers ({len(layers)}): {', '.join(map(str, layers[:16]))}"
            + (" ..." if len(layers) > 16 else "")
        )
        if s.sessions > 1:
            out.append(f"  resumed: {s.sessions} sessions")
        start = (s.last_run or {}).get("start_step")
        if isinstance(start, int) and not isinstance(start, bool) and start > 0:
            out.append(f"  the last session continued from step {start}")
    if s.manifest:
        m = s.manifest
        out.append(
            f"checks every {_n(m.get('check_every'), 'step')}; precision {m.get('precision')}; "
            f"repair {'on' if m.get('repair') else 'off'}"
        )
    if s.end:
        e = s.end
        error = e.get("error")
        how = ""
        if isinstance(error, dict):
            message = str(error.get("message") or "")
            how = f" by {error.get('type')}" + (f" ({message[:120]})" if message else "")
        out.append(
            f"ended{how} after {_n(e.get('steps'), 'step')} and {_n(e.get('checks'), 'check')}"
        )
    else:
        out.append("no run_end: the run is still going, or it crashed")
    by_layer: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for a in s.alarms:
        by_layer[(str(a.get("layer")), str(a.get("diagnosis")))].append(a)
    out.append(f"alarms ({len(s.alarms)}):" if s.alarms else "alarms: none")
    for (layer, diagnosis), items in by_layer.items():
        cleared = [c for c in s.cleared if c.get("layer") == layer]
        tail = f"; cleared at step {cleared[-1].get('step')}" if cleared else ""
        out.append(f"  {layer}: {diagnosis} at step {_steps(items)}{tail}")
    stuck = {k: v for k, v in s.channels.items() if v.get("level") != "none"}
    out.append(f"stuck channels ({_n(len(stuck), 'layer')}):" if stuck else "stuck channels: none")
    for layer, c in stuck.items():
        out.append(
            f"  {layer}: {c.get('level')} of {c.get('channels')} (certified "
            f"{c.get('n_certified')}, flat {c.get('n_flat')}, silent {c.get('n_observed')}"
            f", decayed {c.get('n_decayed')}) since step {c.get('step')}"
        )
    out.append(f"certificates ({len(s.certificates)}):" if s.certificates else "certificates: none")
    for c in s.certificates:
        out.append(
            f"  step {c.get('step')} {c.get('layer')}: {_n(c.get('count'), 'channel')} dead; "
            f"{c.get('statement')}"
        )
        out.append(f"    assumes: {'; '.join(map(str, c.get('assumes') or []))}")
    for c in s.refusals:
        out.append(
            f"  not certified at step {c.get('step')} {c.get('layer')}: "
            f"{_n(c.get('count'), 'channel')}; {c.get('reason')}"
        )
    out.append(f"repairs ({len(s.repairs)}):" if s.repairs else "repairs: none")
    for c in s.repairs:
        out.append(
            f"  step {c.get('step')} {c.get('layer')}: {_n(c.get('count'), 'channel')} by "
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


def run(args: argparse.Namespace) -> int:
    """Print the summary."""
    if not (args.run_dir / "diary.jsonl").is_file():
        print(f"trainrecord show: no diary.jsonl in {args.run_dir}", file=sys.stderr)
        return 2
    try:
        lines = read_diary(args.run_dir)
    except ValueError as exc:
        print(
            f"trainrecord show: diary.jsonl is not readable JSON lines ({exc}); run "
            "trainrecord verify",
            file=sys.stderr,
        )
        return 2
    print("\n".join(render(summarize(lines))))
    return 0
