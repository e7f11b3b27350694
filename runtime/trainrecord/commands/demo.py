"""``trainrecord demo``: train a small CNN, break two layers, watch the monitor catch it.

The data is generated in-process (no downloads) and the run takes about a minute on a CPU.
Part-way through, two conv blocks are zeroed together with their optimizer state; the
monitor's alarms, stuck-channel reports and certificates are printed as they happen, and
with ``--repair`` the repair and the recovery. Then the record is verified and plotted.
The output directory is the demo's own: a previous demo record in it is replaced.

exit status: 0 the record verifies; 1 it does not (the verify: line names the failing
line and rule); 2 nothing trained: --steps under 20, an --out that is a file or cannot be
written (read-only, no permission), or torch not installed; 130 interrupted (Ctrl+C); 141
stdout closed early (| head).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict

from trainrecord.commands import plain
from trainrecord.extras import install_hint, missing_module

RECORD_FILES = ("diary.jsonl", "metrics.jsonl", "record.json", "record.sig", "plot.png")
SHOWN = {
    "alarm",
    "alarm_cleared",
    "channels",
    "channels_cleared",
    "certificate",
    "certificate_refused",
    "repair",
    "loss_spike",
    "loss_recovered",
    "nonfinite_loss",
    "nonfinite_gradient",
    "skipped_step",
    "no_gradients",
    "sink_error",
}


class _Size(TypedDict, total=False):
    """The model and data size of ``run_demo`` (``--tiny``: smaller than its defaults)."""

    width: int
    size: int
    samples: int


def register(subparsers: Any) -> None:
    """Add the demo subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="train a small CNN, break it, watch the monitor catch it",
        description=_description(plain(__doc__)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--repair",
        action="store_true",
        help="let the monitor repair the dead channels (function-preserving)",
    )
    parser.add_argument("--out", default="runs/demo", help="run directory (default runs/demo)")
    parser.add_argument(
        "--steps",
        type=int,
        default=400,
        help="training steps (default 400; the layers break at half-way)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of data and model (default 0)")
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="a quicker version on a smaller model and 8x8 images (a little faster)",
    )
    parser.set_defaults(func=run)


def _description(doc: str) -> str:
    """``--help``'s description: the docstring's first paragraph and its exit statuses."""
    paragraphs = doc.strip().split("\n\n")
    return f"{paragraphs[0]}\n\n{paragraphs[-1]}"


def _line(line: dict[str, Any]) -> str:
    from trainrecord.monitor.sinks import describe

    step = line.get("step")
    event = line["event"]
    if event == "alarm_cleared":
        text = (
            f"step {step}: {line['layer']} gradient back in its band ({line['diagnosis']} cleared)"
        )
    elif event == "channels_cleared":
        text = f"step {step}: {line['layer']}: no stuck channels any more"
    elif event == "loss_recovered":
        text = f"step {step}: loss recovered to {line['value']:.3g}"
    elif event == "certificate_refused":
        text = f"step {step}: {line['layer']}: no certificate for {line['count']} channels: {line['reason']}"
    else:
        text = describe(line)
    return f"  [{event}] {text}"


def _clear(out: Path) -> None:
    for name in RECORD_FILES:
        (out / name).unlink(missing_ok=True)


def _plot(out: Path) -> str:
    """Plot with ``trainrecord plot`` when this build has it; a sentence on what happened."""
    try:
        from trainrecord.commands.plot import plot
    except ImportError:
        return "plot: `trainrecord plot` is not available in this build"
    try:
        written = plot(out, out / "plot.png")
    except ModuleNotFoundError as exc:
        module = missing_module(exc)
        if module is None:
            raise
        return f"plot: skipped (it {install_hint(module)})"
    return f"plot: {written} (trainrecord plot {out} -o {out / 'plot.png'})"


def run(args: argparse.Namespace) -> int:
    """Run the demo; exit status 0 when the record verifies."""
    from trainrecord.diary import verify
    from trainrecord.monitor.demo import run_demo

    out = Path(args.out)
    if args.steps < 20:
        print("trainrecord demo: --steps must be at least 20", file=sys.stderr)
        return 2
    if out.exists() and not out.is_dir():
        print(
            f"trainrecord demo: --out {out}: is a file, not a folder; give a folder for the "
            "demo record (default runs/demo)",
            file=sys.stderr,
        )
        return 2
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        print(
            f"trainrecord demo: --out {out}: a parent of it is a file, not a folder; give a "
            "folder for the demo record (default runs/demo)",
            file=sys.stderr,
        )
        return 2
    _clear(out)
    size: _Size = {"width": 4, "size": 8, "samples": 512} if args.tiny else {}
    break_at = args.steps // 2
    mode = "watch and repair" if args.repair else "watch only"
    print(
        f"trainrecord demo ({mode}): a 3-block CNN with BatchNorm and ReLU on generated "
        f"images, {args.steps} steps; conv2 and conv3 are zeroed at step {break_at}."
    )
    print(f"record: {out}/diary.jsonl, {out}/metrics.jsonl\n")

    def show(line: dict[str, Any]) -> None:
        if line["event"] in SHOWN:
            print(_line(line), flush=True)

    result = run_demo(
        out,
        repair=args.repair,
        steps=args.steps,
        break_at=break_at,
        seed=args.seed,
        callback=show,
        **size,
    )
    verdict = verify(out)
    counts = Counter(verdict.events)
    losses = dict(result.losses)
    before = [v for s, v in result.losses if s < break_at][-1]
    after_break = min((s for s in losses if s >= break_at), default=break_at)
    print(f"\ntrained {result.steps} steps in {result.seconds:.0f} s")
    print(
        f"loss: {before:.3f} before the break, {losses.get(after_break, float('nan')):.3f} "
        f"just after, {result.losses[-1][1]:.3f} at the end"
    )
    print(
        f"test accuracy: {result.accuracy_before:.1%} before the break, "
        f"{result.accuracy_after:.1%} at the end"
    )
    caught = ", ".join(f"{counts[e]} {e}" for e in sorted(SHOWN) if counts.get(e))
    print(f"events: {caught or 'none'}")
    if not args.repair and counts.get("certificate"):
        print("the dead channels stay dead: run `trainrecord demo --repair` to see them repaired")
    print(f"verify: {verdict.summary()}")
    print(_plot(out))
    return 0 if verdict.ok else 1
