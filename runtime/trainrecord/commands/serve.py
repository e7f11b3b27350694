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
import math
import os
import signal
import sys
from typing import Any

from trainrecord.errors import RecordRefused


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand."""
    parser = subparsers.add_parser(
        "serve",
        help="run the Reporting API v2 reference receiver",
        description="Receive Reporting API v2 reports into SQLite and serve a JSON read API. "
        "The bearer token comes from CORREAD_REPORT_TOKEN.",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (plain HTTP only on loopback; default 127.0.0.1)",
    )
    parser.add_argument("--port", type=int, default=8787, help="port (0: any free one)")
    parser.add_argument(
        "--db", default="reports.sqlite", help="SQLite file (default reports.sqlite)"
    )
    parser.add_argument("--cert", help="TLS certificate chain (PEM) for HTTPS")
    parser.add_argument("--key", help="TLS private key (PEM) for HTTPS")
    parser.add_argument(
        "--every",
        type=float,
        default=60.0,
        help="the clients' [report] every in seconds, a finite number > 0, for 'no "
        "contact' (default 60)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM."""
    from trainrecord.report.receiver import make_server
    from trainrecord.report.settings import TOKEN_ENV
    from trainrecord.report.store import ReportStore

    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        raise RecordRefused.one(
            "report.server.auth",
            (TOKEN_ENV,),
            f"export {TOKEN_ENV}=<token> before starting the receiver",
        )
    if not math.isfinite(args.every) or args.every <= 0:
        raise RecordRefused.one(
            "report.settings.every",
            ("--every",),
            "--every is the clients' [report] every in seconds; give a finite number "
            "greater than 0 (not nan or inf)",
            args.every,
        )
    server = make_server(
        args.host,
        args.port,
        token=token,
        store=ReportStore(args.db),
        every=args.every,
        certfile=args.cert,
        keyfile=args.key,
    )

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(f"serving {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print("stopped", file=sys.stderr)
    return 0
