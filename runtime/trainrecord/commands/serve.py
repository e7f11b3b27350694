"""``trainrecord serve``: run the reference receiver of the Reporting API v2.

    export CORREAD_REPORT_TOKEN=<token>
    trainrecord serve --db reports.sqlite --port 8787                    # http, loopback
    trainrecord serve --host 0.0.0.0 --port 8443 --cert c.pem --key k.pem  # https

Clients POST to any path of it; read with ``GET /api/runs`` and ``GET /api/runs/<run_id>``
(same bearer token). The token comes from ``CORREAD_REPORT_TOKEN`` only. Prints one line,
``serving <url>``, once it listens (``--port 0`` picks a free port).
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import signal
import sqlite3
import ssl
import sys
from pathlib import Path
from typing import Any

from trainrecord.commands import whole_number
from trainrecord.errors import RecordRefused

DESCRIPTION = """\
Receive Reporting API v2 reports into SQLite and serve a JSON read API. The bearer token
comes from CORREAD_REPORT_TOKEN (16 characters or more).

exit status: 0 stopped (Ctrl+C or SIGTERM); 2 not started: no CORREAD_REPORT_TOKEN or
one too short, a bad --every, --cert/--key that cannot be loaded (or plain HTTP off a
loopback address), a --port in use or a --host it cannot listen on, or a --db that cannot
be opened; 130 interrupted (Ctrl+C) while starting, before it serves; 141 stdout closed
before it could say where it serves (not started)."""


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand."""
    parser = subparsers.add_parser(
        "serve",
        help="run the Reporting API v2 reference receiver",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (plain HTTP only on loopback; default 127.0.0.1)",
    )
    parser.add_argument(
        "--port",
        type=whole_number(0, 65535, hint="0: any free one"),
        default=8787,
        help="port (default 8787; 0: any free one)",
    )
    parser.add_argument(
        "--db",
        default="reports.sqlite",
        help="SQLite file (default reports.sqlite; a new one is made mode 0600, never through "
        "a symbolic link)",
    )
    parser.add_argument("--cert", metavar="TLS_CERT", help="TLS certificate chain (PEM) for HTTPS")
    parser.add_argument("--key", metavar="TLS_KEY", help="TLS private key (PEM) for HTTPS")
    parser.add_argument(
        "--every",
        type=float,
        default=60.0,
        help="the clients' [report] every in seconds, a finite number > 0, for 'no "
        "contact' (default 60)",
    )
    parser.set_defaults(func=run)


def _usage(message: str) -> int:
    """One line on stderr; exit status 2 (a setup error the user can fix)."""
    print(f"trainrecord serve: {message}", file=sys.stderr)
    return 2


def _tls_problem(args: argparse.Namespace, exc: Exception) -> str:
    """What is wrong with --cert/--key, for a load_cert_chain error (never the file content)."""
    for option, name in (("--cert", args.cert), ("--key", args.key)):
        if not os.path.exists(name):
            return f"{option} {name}: no such file; give the path of the PEM file"
        if os.path.isdir(name):
            return f"{option} {name}: is a folder; give the path of the PEM file"
        if not os.access(name, os.R_OK):
            return f"{option} {name}: permission denied; make it readable"
    why = getattr(exc, "reason", None) or type(exc).__name__
    return (
        f"--cert {args.cert} / --key {args.key}: cannot load the certificate and key ({why}); "
        "--cert must be the PEM certificate chain and --key its PEM private key "
        "(were they swapped?)"
    )


def _db_problem(db: Path) -> str | None:
    """Why ``--db`` cannot be a SQLite file, or None; creates nothing."""
    if db.is_dir():
        return f"--db {db}: is a folder; give the path of a SQLite file (e.g. {db}/reports.sqlite)"
    parent = db.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        return f"--db {db}: the folder {parent} {what}; create it or choose another --db"
    return None


MIN_TOKEN = 16
"""The shortest token ``serve`` takes (the clients take any the seed allows)."""


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM. Every argument is checked before anything is created:
    the database file is opened only once the address is bound."""
    from trainrecord.report.receiver import ReportServer, server_tls
    from trainrecord.report.settings import TOKEN_ENV, check_token
    from trainrecord.report.store import ReportStore

    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        raise RecordRefused.one(
            "report.server.auth",
            (TOKEN_ENV,),
            f"export {TOKEN_ENV}=<token> before starting the receiver",
        )
    check_token(token)
    if len(token) < MIN_TOKEN:  # the token is all that keeps others out: one of a few
        raise RecordRefused.one(  # characters is guessed online in a fraction of a second
            "report.server.auth",
            (TOKEN_ENV,),
            f"the token has {len(token)} characters; a receiver needs one hard to guess, "
            f"at least {MIN_TOKEN} (make one with: python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))') and give the clients the same",
        )
    if not math.isfinite(args.every) or args.every <= 0:
        raise RecordRefused.one(
            "report.settings.every",
            ("--every",),
            "--every is the clients' [report] every in seconds; give a finite number "
            "greater than 0 (not nan or inf)",
            args.every,
        )
    try:
        tls = server_tls(args.host, args.cert, args.key)
    except (OSError, ssl.SSLError) as exc:
        return _usage(_tls_problem(args, exc))
    db = Path(args.db)
    problem = _db_problem(db)
    if problem:
        return _usage(problem)
    try:
        server = ReportServer(
            (args.host, args.port),
            token=token,
            store=None,  # type: ignore[arg-type]  # opened once the address is bound
            every=args.every,
            tls=tls,
        )
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return _usage(
                f"--port {args.port}: address already in use on {args.host}; stop the "
                "other server or choose another --port (0: any free one)"
            )
        why = exc.strerror or type(exc).__name__
        return _usage(
            f"--host {args.host} --port {args.port}: cannot listen there ({why}); "
            "check the address and port"
        )
    try:
        server.store = ReportStore(db)
    except sqlite3.Error as exc:
        server.server_close()
        return _usage(f"--db {db}: cannot open the SQLite database ({exc}); choose another --db")

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:  # the line is said inside: a SIGTERM the moment it is read still ends with 0
        print(f"serving {server.url}", flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print("stopped", file=sys.stderr)
    return 0
