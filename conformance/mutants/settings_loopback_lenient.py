"""Mutant: settings that judge a plain http:// host the way a resolver (inet_aton) or a
WHATWG URL parser reads it: ``127.1``, ``0x7f.0.0.1``, ``2130706433`` and ``0177.0.0.1``
count as loopback, a backslash as ``/``. spec/README.md judges the host as written."""

from __future__ import annotations

import os
import socket
import sys
import tomllib
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import load_settings

BREAKS = "report.settings.url_scheme"


def _resolved(url: str) -> str:
    """``url`` with a backslash read as / and a host inet_aton reads as 127.x as 127.0.0.1."""
    url = url.replace("\\", "/")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if socket.inet_aton(host)[0] == 127:
            return url.replace(host, "127.0.0.1", 1)
    except (OSError, ValueError):
        pass
    return url


def lenient(data: dict[str, Any]) -> dict[str, Any]:
    """Load the settings with the URL as a lenient parser reads it; answer the URL as
    written."""
    with open(data["path"], "rb") as f:
        try:
            url = tomllib.load(f).get("report", {}).get("url")
        except (tomllib.TOMLDecodeError, AttributeError):
            url = None
    if not isinstance(url, str) or _resolved(url) == url:
        return load_settings(data)
    with open(data["path"], encoding="utf-8") as f:
        text = f.read()
    path = data["path"] + ".lenient.toml"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(url.replace("\\", "\\\\"), _resolved(url)))
    return {**load_settings({**data, "path": path}), "url": url}


if __name__ == "__main__":
    run_mutant("settings_loopback_lenient", {"load_settings": lenient})
