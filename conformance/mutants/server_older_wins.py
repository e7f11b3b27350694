"""Mutant: a reporting server that stores every report it receives, so an older seq can win.

Run as ``python conformance/mutants/server_older_wins.py TOKEN``: it serves the reference
receiver's protocol on a free loopback port, prints its POST URL on the first line of
stdout, and keeps the last report received per run_id instead of the greatest seq.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from trainrecord.report import ReportStore, make_server

BREAKS = "report.server.newest_wins"


class LastWins(ReportStore):
    """A store whose put ignores seq."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.last: dict[str, Any] = {}

    def put(self, report: Any, *args: Any, **kwargs: Any) -> Any:
        """Remember the report whatever its seq."""
        self.last[report["run_id"]] = report
        return super().put(report, *args, **kwargs)

    def latest(self, run_id: str) -> Any:
        """The last report received."""
        return self.last.get(run_id)


def main() -> None:
    """Serve until killed."""
    folder = Path(tempfile.mkdtemp(prefix="mutant-server-"))
    server = make_server(
        "127.0.0.1", 0, token=sys.argv[1], store=LastWins(str(folder / "r.sqlite"))
    )
    print(json.dumps({"url": server.url + "/api/runs"}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
