"""What is never sent (§7 of the seed): scrub error messages and check whole payloads.

Public API:

* :func:`scrub_message` ``(text, secrets=None) -> str``: the home folder becomes ``~``,
  other absolute paths keep only their last part (``.../model.pt``), the user name becomes
  ``<user>``, the token ``<token>``, process ids ``<pid>``; cut to 500 characters.
* :func:`privacy_problems` ``(payload, secrets=None) -> list[Problem]``: every string of a
  payload that holds the token, the home folder or an absolute path, and an error message
  that names the user or the process id (rule ``report.privacy.secrets``).
* :class:`Secrets`: what this process must never send (token, home, user, pid).
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from trainrecord.errors import Problem

MAX_MESSAGE = 500
_END = r"(?=$|[/\\\s'\"`:,;()\[\]{}<>])"
_ABS_POSIX = re.compile(
    r"(?<![\w.~:/\\-])/(?:[^\s/'\"`:,;()\[\]{}<>]+/)+([^\s/'\"`:,;()\[\]{}<>]*)"
)
_ABS_WINDOWS = re.compile(
    r"(?<![\w])[A-Za-z]:\\(?:[^\s\\'\"`:,;()\[\]{}<>]+\\)*([^\s\\'\"`:,;()\[\]{}<>]*)"
)
_PID_WORD = re.compile(r"\b(pid|process id|process)(\s*[=:#]?\s*)\d+", re.IGNORECASE)


def _current_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):
        return None


@dataclass(frozen=True)
class Secrets:
    """What must never appear in a report: defaults are this process's own."""

    token: str | None = field(default=None, repr=False)
    home: str | None = field(default_factory=lambda: os.path.expanduser("~"))
    user: str | None = field(default_factory=_current_user)
    pid: int | None = field(default_factory=os.getpid)

    def home_usable(self) -> bool:
        """A home folder worth replacing (not ``/`` or empty)."""
        return bool(self.home) and self.home not in ("/", "~") and len(self.home) > 1

    def user_usable(self) -> bool:
        """A user name long enough to look for as a whole word."""
        return bool(self.user) and len(self.user or "") >= 3


def _home_pattern(home: str) -> re.Pattern[str]:
    return re.compile(re.escape(home.rstrip("/\\")) + _END)


def _word(text: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w])" + re.escape(text) + r"(?![\w])")


def scrub_message(text: str, secrets: Secrets | None = None) -> str:
    """An error message safe to send: no token, home, absolute path, user name or pid."""
    s = secrets or Secrets()
    out = str(text)
    if s.token:
        out = out.replace(s.token, "<token>")
    if s.home_usable():
        out = _home_pattern(s.home).sub("~", out)  # type: ignore[arg-type]
    out = _ABS_POSIX.sub(lambda m: ".../" + m.group(1), out)
    out = _ABS_WINDOWS.sub(lambda m: "...\\" + m.group(1), out)
    if s.user_usable():
        out = _word(s.user).sub("<user>", out)  # type: ignore[arg-type]
    out = _PID_WORD.sub(lambda m: m.group(1) + m.group(2) + "<pid>", out)
    if s.pid:
        out = re.sub(r"(?<![\d.])" + str(s.pid) + r"(?![\d.])", "<pid>", out)
    if len(out) > MAX_MESSAGE:
        out = out[: MAX_MESSAGE - 1] + "…"
    return out


def _strings(
    node: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, (*path, i))


def privacy_problems(payload: Any, secrets: Secrets | None = None) -> list[Problem]:
    """Every place in ``payload`` that would send something §7 forbids."""
    s = secrets or Secrets()
    rule = "report.privacy.secrets"
    found: list[Problem] = []
    home = _home_pattern(s.home) if s.home_usable() else None  # type: ignore[arg-type]
    for path, text in _strings(payload):
        if s.token and s.token in text:
            found.append(Problem(rule, path, "holds the report token; never send it"))
        if home and home.search(text):
            found.append(Problem(rule, path, "holds the home folder; write ~ instead"))
        elif _ABS_POSIX.search(text) or _ABS_WINDOWS.search(text):
            found.append(Problem(rule, path, "holds an absolute path; send names, not paths"))
        if path[:1] == ("error",):
            if s.user_usable() and _word(s.user).search(text):  # type: ignore[arg-type]
                found.append(Problem(rule, path, "names the user; scrub the message"))
            if s.pid and re.search(r"(?<![\d.])" + str(s.pid) + r"(?![\d.])", text):
                found.append(Problem(rule, path, "holds the process id; scrub the message"))
    return found
