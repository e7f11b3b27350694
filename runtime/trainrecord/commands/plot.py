"""``trainrecord plot RUN_DIR -o FILE.png``: gradient norms and stuck channels over steps.

Top: the gradient norm of every layer per check (log scale) from metrics.jsonl. Bottom:
stuck channels per producer (certified + flat + silent + decayed). Alarm steps are
marked with dotted red lines and repair steps with dashed green lines. Uses matplotlib's
Agg backend (no display needed).

A gradient norm that is no number (NaN, infinite, ``10**400``, a string) is no point. A
line it cannot draw (not strict JSON, not a JSON object, a metrics row the row schema
refuses otherwise, an alarm or repair line without an integer step, a step or stuck count
past a 64-bit float) is named with its file, line and rule, and nothing is written.
An -o that is a symbolic link writes the file it leads to (the link is kept), as shell
redirection does. matplotlib's warnings while drawing (a character no font has, a value
near the largest double) are one line each on stderr.

exit status: 0 the plot is written; 2 usage error (no run directory, no metrics.jsonl in
it, an image format matplotlib cannot write) or a line it cannot draw; 130 interrupted
(Ctrl+C); 141 stdout closed early (| head; the plot is written).
"""

from __future__ import annotations

import argparse
import errno
import io
import os
import re
import stat
import sys
import warnings
from pathlib import Path
from typing import Any

from trainrecord.commands import plain, run_dir_problem
from trainrecord.diary.read import DIARY, METRICS, read_diary, read_metrics
from trainrecord.errors import escaped
from trainrecord.folders import not_regular
from trainrecord.schemas import finite_number

DRAWN = {"alarm": ("step",), "repair": ("step",)}
"""The diary events plot marks, and what it reads of them (their step)."""


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

    output = _through_link(output_path(output))
    rows, lines = _records(run_dir)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    image = io.BytesIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # each caught, even under -W error (said below)
        warnings.simplefilter("ignore", DeprecationWarning)  # (a developer's, not the plot's)
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        try:
            _draw(run_dir, rows, lines, fig, top, bottom)
            fig.savefig(image, dpi=100, format=output.suffix[1:].lower())
        finally:
            plt.close(fig)
    output.parent.mkdir(parents=True, exist_ok=True)
    _write(output, image.getvalue())
    for said in drawing_warnings(caught):
        print(said, file=sys.stderr)
    return output


GLYPH = re.compile(r"Glyph (\d+) \(.*\) missing from (?:font\(s\) (.+?)|current font)\.?$")
"""matplotlib's warning of a character its fonts cannot draw."""


def drawing_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """The warnings matplotlib (and numpy under it) gave while drawing, one line per kind,
    saying what each means for the image, escaped: characters its fonts have no glyph
    for, arithmetic past a double, and any other warning by its category (its first
    message and how many more)."""
    glyphs: dict[str, None] = {}
    fonts: dict[str, None] = {}
    numeric: dict[str, None] = {}
    other: dict[str, list[str]] = {}
    for warning in caught:
        text = str(warning.message)
        glyph = GLYPH.match(text)
        if glyph:
            glyphs[f"U+{int(glyph[1]):04X}"] = None
            fonts[glyph[2] or "the current font"] = None
        elif issubclass(warning.category, RuntimeWarning) and " encountered in " in text:
            numeric[text] = None  # numpy's: overflow, invalid value, divide by zero
        else:
            other.setdefault(warning.category.__name__, []).append(text)
    said = []
    if glyphs:
        shown = ", ".join(list(glyphs)[:8]) + (
            f" and {len(glyphs) - 8} more" if len(glyphs) > 8 else ""
        )
        said.append(
            f"the font ({', '.join(fonts)}) has no glyph for {shown} in the names drawn; they "
            "are drawn as empty boxes"
        )
    if numeric:
        said.append(
            f"matplotlib's arithmetic on the values drawn went past a double ({'; '.join(numeric)}), "
            "as values near the largest one (about 1.8e308) do: an axis may not span its values"
        )
    for category, texts in other.items():
        more = f" ({len(texts) - 1} more like it)" if len(texts) > 1 else ""
        first = texts[0].splitlines()[0] if texts[0].strip() else category
        said.append(f"matplotlib warned: {first[:300]}{more}")
    return [escaped(f"trainrecord plot: warning: {line}") for line in said]


def _through_link(output: Path) -> Path:
    """The file writing to ``output`` writes: ``output`` itself, or, for a symbolic link, the
    file it leads to (through every link on the way; for a dangling link, the path it names),
    which is replaced and the link kept, as shell redirection and matplotlib's ``savefig``
    write. ``-o`` is the user's choice; the record's own files are never written through a
    link (:func:`trainrecord.folders.open_no_link`). Raises ``OSError`` for a link loop, a
    dangling link into a folder that does not exist and a link to no regular file (a
    device: the temporary file renamed over it would replace the device itself)."""
    if not output.is_symlink():
        return output
    shown = escaped(str(output))
    try:
        target = Path(os.path.realpath(output, strict=True))
    except FileNotFoundError:
        target = Path(os.path.realpath(output))
        if target.parent.is_dir():
            return target
        problem = f"is a link to {escaped(str(target))}, whose folder does not exist; make it, or"
        raise OSError(errno.ENOENT, f"-o {shown} {problem} give another -o{NOTHING}") from None
    except OSError as exc:
        problem = f"is a link loop ({exc.strerror});"
        raise OSError(exc.errno, f"-o {shown} {problem} give another -o{NOTHING}") from None
    mode = target.stat().st_mode
    if not stat.S_ISREG(mode):
        problem = f"is a link to {escaped(str(target))}, which is {not_regular(mode)};"
        raise OSError(errno.EINVAL, f"-o {shown} {problem} give a file{NOTHING}")
    return target


NOTHING = " (nothing was written)"


def _write(output: Path, data: bytes) -> None:
    """Write the image whole or not at all: a temporary file beside ``output``, renamed over
    it (a full disk left half an .svg, and an empty .pdf with a traceback from matplotlib's
    PDF backend). Raises ``OSError`` naming ``output``."""
    from trainrecord.foundry import files

    try:
        files.replace(output, data)
    except OSError as exc:
        raise OSError(
            exc.errno,
            f"cannot write the plot ({exc.strerror or exc}); nothing was written",
            str(output),
        ) from None


def _records(run_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of metrics.jsonl and the alarm and repair lines of diary.jsonl. Raises
    ``ValueError`` naming the file, the line and the rule of the first line plot cannot
    draw: one :func:`read_metrics` or :func:`read_diary` (of the steps of :data:`DRAWN`)
    refuses, or a step or a sum of stuck counts past a 64-bit float (the schemas allow any
    integer; no axis holds it)."""
    path = run_dir / METRICS
    try:
        rows = read_metrics(run_dir)
        for number, row in enumerate(rows, 1):
            _plottable(number, "step", row["step"])
            for layer, counts in row["stuck"].items():
                _plottable(number, f"stuck.{escaped(layer)}", sum(counts))
        path = run_dir / DIARY
        lines = []
        for number, line in enumerate(read_diary(run_dir, DRAWN), 1):
            if line.get("event") in ("alarm", "repair"):  # (== only: it may be a list)
                _plottable(number, "step", line["step"])
                lines.append(line)
    except ValueError as exc:  # (a RecordRefused too)
        raise ValueError(f"{escaped(str(path))}: {exc}") from None
    return rows, lines


def _plottable(number: int, name: str, value: int) -> None:
    """Raise ``ValueError`` for an integer no 64-bit float holds (``10**400``)."""
    if not finite_number(value):
        raise ValueError(
            f"line {number}.{name}: an integer of about {int(value.bit_length() * 0.30103)} "
            "digits is too large to plot (past a 64-bit float)"
        )


def _draw(
    run_dir: Path,
    rows: list[dict[str, Any]],
    lines: list[dict[str, Any]],
    fig: Any,
    top: Any,
    bottom: Any,
) -> None:
    """Draw the two panels of :func:`plot`."""
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
    top.set_title(f"{escaped(run_dir.name)}: gradient norm per layer")
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
    for ax in (top, bottom):
        if ax.get_legend_handles_labels()[0]:  # (a layer without a point has no line)
            ax.legend(fontsize="x-small", ncol=2, loc="best")
    fig.tight_layout()


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
            f"trainrecord plot: the record is not readable: {exc}; trainrecord verify "
            f"{escaped(str(args.run_dir))} checks the whole record",
            file=sys.stderr,
        )
        return 2
    if args.output.is_dir():
        print(f"wrote {out} ({args.output} is a folder, so the plot went inside it)")
    elif target.is_symlink():
        print(f"wrote {out} (through the link {escaped(str(target))})")
    else:
        print(f"wrote {out}")
    return 0
