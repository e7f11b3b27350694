"""``trainrecord-conformance``: run the conformance suite against an implementation.

    trainrecord-conformance run --target python
    trainrecord-conformance run --target harness --rules 'witness.*'
    trainrecord-conformance run --target "exec:node harness.js" --examples 50 --json
    trainrecord-conformance run --target https://example.org/api/runs --ca-file ca.pem
    trainrecord-conformance rules            # the registry and how each rule is checked

Exit status: 0 when every selected rule passed (or was skipped or is not covered), 1 on
any failure or error, 2 on a usage problem (an unknown target, a harness that cannot
start, no rule matching ``--rules``); also 130 on Ctrl+C and 141 when stdout is closed
early (``| head``; see ``trainrecord.cli``). ``run --help`` and ``rules --help`` say the same.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence

from trainrecord.cli import INTERRUPTED, missing_dependency, run_parser
from trainrecord.commands import whole_number
from trainrecord.errors import escaped

# The suite's modules (hypothesis, jsonschema, requests...) are imported in the functions
# below, so that an install without the conformance extra gets one line naming it.

RUN_DESCRIPTION = """\
Run the conformance suite against one or more targets: every check of each selected rule,
with examples drawn by Hypothesis, then one summary per target (or one JSON object with
--json). A failing rule shows the smallest counterexample found."""

RUN_EPILOG = """\
exit status: 0 every selected rule passed on every target (or was skipped, or has no
check), 1 a rule failed or a check erred on a target, 2 usage error (an unknown option
or target, no rule matching --rules, a target that cannot start: the targets after it
are not run), 130 interrupted (Ctrl+C), 141 stdout closed early (| head)."""

RULES_DESCRIPTION = """\
List the rules of the registry (and any checked rule outside it), one a line: the checks
that cover each, with the target operations they need in brackets, or NOT COVERED and
why. Nothing is run."""

RULES_EPILOG = """\
exit status: 0 listed, 2 usage error (an unknown option, no rule matching --rules),
141 stdout closed early (| head)."""


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    from trainrecord import __version__
    from trainrecord_conformance.targets import DEFAULT_TIMEOUT

    parser = argparse.ArgumentParser(
        prog="trainrecord-conformance", description="Check an implementation, rule by rule."
    )
    parser.add_argument(
        "--version", action="version", version=f"trainrecord-conformance {__version__}"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser(
        "run",
        help="run the suite against one or more targets",
        description=RUN_DESCRIPTION,
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--target",
        action="append",
        required=True,
        metavar="TARGET",
        help="python, harness, node, exec:<command> or an http(s):// URL; repeat for several, "
        "or join the simple ones with commas (python,harness)",
    )
    run.add_argument(
        "--rules",
        action="append",
        metavar="PATTERN",
        help="only rules matching this glob (e.g. 'witness.*'); repeatable",
    )
    run.add_argument(
        "--examples",
        type=whole_number(1, what="examples"),
        metavar="N",
        help="examples per check (default: from HYPOTHESIS_PROFILE)",
    )
    run.add_argument(
        "--profile",
        choices=["ci", "dev", "thorough"],
        help="Hypothesis profile (default: HYPOTHESIS_PROFILE, else dev)",
    )
    run.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    run.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds a harness may take per operation (default {DEFAULT_TIMEOUT:g})",
    )
    run.add_argument(
        "--token", help="bearer token for an http(s) target (default: CORREAD_REPORT_TOKEN)"
    )
    run.add_argument("--ca-file", help="CA certificates to trust for an https target")
    run.add_argument(
        "--read-url",
        help="read API of an http(s) target: GET <read-url>/<run_id> "
        "gives the stored report (enables the ordering check)",
    )
    run.set_defaults(func=cmd_run)
    listing = sub.add_parser(
        "rules",
        help="list the rules and their checks",
        description=RULES_DESCRIPTION,
        epilog=RULES_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    listing.add_argument(
        "--rules",
        action="append",
        metavar="PATTERN",
        help="only rules matching this glob (e.g. 'report.settings.*'); repeatable",
    )
    listing.set_defaults(func=cmd_rules)
    return parser


def no_rule_matches(patterns: Sequence[str]) -> str:
    """Why ``--rules PATTERN...`` selected nothing: the patterns as written, the rule family
    a pattern most likely meant (``'witnes.*'``: ``'witness.*'``), every family, and the
    command that lists the rules."""
    from trainrecord_conformance.runner import select

    families = sorted({rule.split(".")[0] for rule in select(None)})
    shown = ", ".join(repr(p) for p in patterns)
    meant = []
    for pattern in patterns:
        head, dot, rest = pattern.partition(".")
        close = difflib.get_close_matches(head, families, n=1, cutoff=0.6)
        if head not in families and close:
            meant.append(repr(close[0] + dot + rest))
    guess = f"did you mean {' or '.join(meant)}? " if meant else ""
    return (
        f"no rule matches {shown} ({guess}rule families: {', '.join(families)}; "
        "list them with trainrecord-conformance rules)"
    )


def cmd_run(args: argparse.Namespace) -> int:
    """Run the suite once per target; the worst exit status wins."""
    import trustme  # noqa: F401  (checks import it late: a missing one is named here, at once)

    from trainrecord_conformance import report
    from trainrecord_conformance.runner import run_rules, select
    from trainrecord_conformance.targets import TargetError, make_target, shown_target

    worst = 0
    rule_ids = select(args.rules)
    if not rule_ids:
        print(no_rule_matches(args.rules), file=sys.stderr)
        return 2
    specs = [
        part
        for spec in args.target
        for part in (
            spec.split(",") if not spec.startswith(("exec:", "http://", "https://")) else [spec]
        )
    ]
    for spec in specs:
        shown = shown_target(spec)  # a URL's password or query values never printed
        try:
            target = make_target(
                spec,
                timeout=args.timeout,
                token=args.token,
                ca_file=args.ca_file,
                read_url=args.read_url,
            )
        except (ValueError, TargetError, OSError) as exc:
            # escaped: the reason may quote the stderr of the program that failed to start
            why = escaped(str(exc))
            print(f"trainrecord-conformance: cannot start target {shown}: {why}", file=sys.stderr)
            return 2
        with target, _runtime_quiet():
            outcomes = run_rules(
                target,
                rule_ids,
                examples=args.examples,
                profile=args.profile,
                progress=None if args.json else report.Progress(),
            )
            if args.json:
                print(report.to_json(outcomes, shown, target.implementation))
            else:
                print(report.summary(outcomes, shown, target.implementation))
        worst = max(worst, report.exit_status(outcomes))
    return worst


@contextlib.contextmanager
def _runtime_quiet() -> Iterator[None]:
    """The runtime's own warnings kept off the report: the in-process target's checks make
    the situations they warn of on purpose (a resumed record no seal vouches for, ...), and
    with no logging configured Python printed each on stderr between the progress and the
    summary. A handler the caller configured still gets them."""
    quiet = logging.NullHandler()
    logger = logging.getLogger("trainrecord")
    logger.addHandler(quiet)
    try:
        yield
    finally:
        logger.removeHandler(quiet)


def cmd_rules(args: argparse.Namespace) -> int:
    """List rules with their checks (or why they are not covered)."""
    from trainrecord_conformance.checks import all_checks
    from trainrecord_conformance.coverage import NOT_COVERED
    from trainrecord_conformance.runner import select

    checks = all_checks()
    rule_ids = select(args.rules)
    if not rule_ids:
        print(no_rule_matches(args.rules), file=sys.stderr)
        return 2
    for rule in rule_ids:
        found = checks.get(rule, ())
        how = "; ".join(f"{c.name} [{', '.join(sorted(c.ops))}]" for c in found)
        print(f"{rule}: {how or 'NOT COVERED: ' + NOT_COVERED.get(rule, 'no check')}")
    return 0


def _hypothesis_home() -> None:
    """Keep Hypothesis's cache (its ``constants`` folder) out of the folder the suite is run
    from (``./.hypothesis`` by default): in ``$XDG_CACHE_HOME`` or ``~/.cache`` (or, with no
    absolute one of those, the temporary folder), under ``trainrecord-conformance/hypothesis``.
    ``HYPOTHESIS_STORAGE_DIRECTORY`` still decides when it is set."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return
    # a relative XDG_CACHE_HOME is to be ignored (XDG); "~" stays "~" (and an empty HOME
    # gives "") with no home: either would put the cache in the working folder
    bases = (os.environ.get("XDG_CACHE_HOME", ""), os.path.join(os.path.expanduser("~"), ".cache"))
    base = next((b for b in bases if os.path.isabs(b)), tempfile.gettempdir())
    where = os.path.join(base, "trainrecord-conformance", "hypothesis")
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = where  # read at Hypothesis's first use


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    prog = "trainrecord-conformance"
    try:
        _hypothesis_home()
        try:
            parser = build_parser()
        except ModuleNotFoundError as exc:
            return missing_dependency(exc, prog, "conformance")
        return run_parser(parser, argv, prog, "conformance")
    except KeyboardInterrupt:  # (while the suite's modules load: before run_parser's own)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
