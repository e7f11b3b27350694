"""``trainrecord plot RUN_DIR -o FILE.png``: gradient norms and stuck channels over steps.

Top: the gradient norm of every layer per check (log scale) from metrics.jsonl. Bottom:
stuck channels per producer (certified + flat + silent + decayed). Alarm steps are
marked with dotted red lines and repair steps with dashed green lines. Uses matplotlib's
Agg backend (no display needed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from trainrecord.commands import plain, run_dir_problem
from trainrecord.diary.read import read_diary, read_metrics
from trainrecord.errors import escaped
from trainrecord.schemas import finite_number


def register(subparsers: Any) -> None:
    """Add the ``plot`` subcommand."""
    parser = subparsers.add_parser(
        "plot",
        help="plot gradient norms per layer and stuck channels per producer",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    parser.add_argument("-o", "--output", metavar="FILE.png", type=Path, required=True)
    parser.set_defaults(func=run)


class OutputError(Exception):
    """``-o`` names no file matplotlib can write (an argument error, not a record problem)."""


def image_formats() -> list[str]:
    """The file extensions matplotlib can write, sorted."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backend_bases import FigureCanvasBase

    return sorted(FigureCanvasBase.get_supported_filetypes())


def output_path(output: Path) -> Path:
    """The file the plot goes to: ``output`` itself, ``output/plot.png`` for an existing
    folder, ``output.png`` without an extension. Raises :class:`OutputError` for an
    extension matplotlib cannot write."""
    if output.is_dir():
        return output / "plot.png"
    if not output.suffix:
        return output.with_name(output.name + ".png")
    ext = output.suffix[1:].lower()
    formats = image_formats()
    if ext not in formats:
        raise OutputError(
            f"-o {output}: unsupported image format {ext!r}; end the name with one of "
            + ", ".join(f".{f}" for f in formats)
            + " (e.g. .png, .svg or .pdf)"
        )
    return output


def plot(run_dir: Path, output: Path) -> Path:
    """Draw the figure into :func:`output_path` of ``output``; return the path written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    output = output_path(output)

    rows = read_metrics(run_dir)
    lines = read_diary(run_dir)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    layers = list(dict.fromkeys(k for r in rows for k in r["grad"]))
    positive = [v for r in rows for v in r["grad"].values() if finite_number(v) and v > 0]
    floor = min(positive) / 10 if positive else 1e-12  # where zero norms are drawn
    for layer in layers:
        pts = [(r["step"], r["grad"].get(layer)) for r in rows]
        pts = [(s, v) for s, v in pts if finite_number(v)]
        if not pts:
            continue
        (line,) = top.plot(
            [s for s, _ in pts],
            [v if v > 0 else floor for _, v in pts],
            label=escaped(layer),
            linewidth=1,
        )
        zeros = [s for s, v in pts if v <= 0]
        if zeros:
            top.plot(zeros, [floor] * len(zeros), "v", color=line.get_color(), markersize=4)
    top.set_yscale("log")
    if any(finite_number(v) and v == 0 for r in rows for v in r["grad"].values()):
        top.text(
            0.01,
            0.02,
            "v: zero gradient norm (drawn at the bottom)",
            fontsize="x-small",
            transform=top.transAxes,
        )
    top.set_ylabel("gradient norm")
    top.set_title(f"{run_dir.name}: gradient norm per layer")
    producers = list(dict.fromkeys(k for r in rows for k in r.get("stuck", {})))
    for layer in producers:
        steps = [r["step"] for r in rows if layer in r.get("stuck", {})]
        stuck = [sum(r["stuck"][layer]) for r in rows if layer in r.get("stuck", {})]
        bottom.plot(steps, stuck, label=escaped(layer), linewidth=1, drawstyle="steps-post")
    bottom.set_ylabel("stuck channels")
    bottom.set_xlabel("step")
    for ax in (top, bottom):
        for i, line in enumerate(x for x in lines if x.get("event") == "alarm"):
            ax.axvline(
                line["step"],
                color="red",
                linestyle=":",
                linewidth=0.8,
                label="alarm" if i == 0 and ax is top else None,
            )
        for i, line in enumerate(x for x in lines if x.get("event") == "repair"):
            ax.axvline(
                line["step"],
                color="green",
                linestyle="--",
                linewidth=0.8,
                label="repair" if i == 0 and ax is top else None,
            )
    if layers:
        top.legend(fontsize="x-small", ncol=2, loc="best")
    if producers:
        bottom.legend(fontsize="x-small", ncol=2, loc="best")
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=100, format=output.suffix[1:].lower())
    plt.close(fig)
    return output


def run(args: argparse.Namespace) -> int:
    """Write the plot."""
    try:
        target = output_path(args.output)
    except OutputError as exc:
        print(f"trainrecord plot: {exc}", file=sys.stderr)
        return 2
    problem = run_dir_problem(args.run_dir)
    if problem or not (args.run_dir / "metrics.jsonl").is_file():
        print(
            f"trainrecord plot: {problem or f'no metrics.jsonl in {args.run_dir}'}", file=sys.stderr
        )
        return 2
    try:
        out = plot(args.run_dir, target)
    except ValueError as exc:
        print(
            f"trainrecord plot: the record is not readable ({exc}); run trainrecord verify",
            file=sys.stderr,
        )
        return 2
    if args.output.is_dir():
        print(f"wrote {out} ({args.output} is a folder, so the plot went inside it)")
    else:
        print(f"wrote {out}")
    return 0
