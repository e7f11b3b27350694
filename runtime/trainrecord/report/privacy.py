"""What is never sent (§7 of the seed): scrub error messages and check whole payloads.

Public API:

* :func:`scrub_message` ``(text, secrets=None) -> str``: the home folder becomes ``~``,
  other absolute paths keep only their last part (``.../model.pt``; a one-part path such as
  ``/data`` becomes ``.../data``), the user name becomes ``<user>``, the token ``<token>``,
  and process ids ``<pid>``: this process's own pid anywhere, and any number written as a
  process id (``pid 123``, ``pid=123``, ``PID: 123``, ``pid(s) 1, 2``, ``process 123``,
  ``process id 123``, ...); cut to 500 characters.
* :func:`privacy_problems` ``(payload, secrets=None) -> list[Problem]``: every string of a
  payload that holds the token, the home folder or an absolute path, and an error message
  that names the user or holds a process id (rule ``report.privacy.secrets``). What the
  check finds, the scrub removes: a scrubbed message always passes.
* :func:`scrub_token` ``(text, token) -> str``: only the token (as written or
  percent-encoded) becomes ``<token>``, the first step of :func:`scrub_message`; for text
  that is not ours to rewrite, such as the start of a server's answer
  (:class:`~trainrecord.report.transport.Outcome` ``body``, which a server echoing the
  Authorization header would fill with the token).
* :class:`Secrets`: what this process must never send (token, home, user, pid).
* :func:`scrub_home` ``(text, secrets=None) -> str``: only the token and the home folder
  (``~``); for paths in messages shown locally, such as a settings refusal.
* :func:`exception_said` ``(exc, secrets=None) -> str``: an exception for a local warning,
  its class and message (``PermissionError: [Errno 13] Permission denied: '~/runs/x'``),
  scrubbed as :func:`scrub_home` and :func:`~trainrecord.errors.escaped`; never raises.

A ``file:`` URL's path is scrubbed as a plain path, percent-decoded first: ``file://~/x``
for the home folder, ``file://.../x`` for any other (the host is dropped). The token is the
token percent-encoded too, anywhere (``?t=tok%65n``: any of its characters written as the
``%XX`` of its UTF-8 bytes, in either case of hex digit): it is scrubbed and found as
written.

Not paths: a slash after a word character or a number (``3/4``, ``loss/acc``, ``a/b``), and
the path of a URL after its host (``https://host/x`` is sent as it is). A user name of two
characters or more is scrubbed wherever it stands as a whole word; a one-character name only
where it is a whole part of a path (``models/a/x``, ``.../a``), since as a word it would
take every ``a`` of a sentence.
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from trainrecord.errors import Problem, escaped

MAX_MESSAGE = 500
_END = r"(?=$|[/\\\s'\"`:,;()\[\]{}<>])"
_PART = r"[^\s/'\"`:,;()\[\]{}<>]"
_ABS_POSIX = re.compile(rf"(?<![\w.~:/\\-])/(?:(?:{_PART}+/)+({_PART}*)|([\w.]{_PART}*))")
"""``/a/b/c`` (group 1: ``c``) or a one-part ``/data`` (group 2); never after a word
character, a dot, ``~``, ``:`` or another slash (``3/4``, ``~/x``, ``https://host/x``)."""
_ABS_WINDOWS = re.compile(
    r"(?<![\w])[A-Za-z]:[\\/](?:[^\s\\/'\"`:,;()\[\]{}<>]+[\\/])*([^\s\\/'\"`:,;()\[\]{}<>]*)"
)
_FILE_URL = re.compile(
    rf"(?<![\w.+-])(file:)(?://(?:\w[\w.-]*)?)?(/[A-Za-z]:)?((?:/{_PART}+)+)", re.IGNORECASE
)
"""A ``file:`` URL of a local path: ``file:///a/b``, ``file:/a/b``, ``file://localhost/a/b``,
``file:///C:/a/b``, percent-encoded or not (group 2: a Windows drive, group 3: the path).
Its path is a local absolute path, scrubbed as one: ``file://~/b`` or ``file://.../b``."""
_PID_WORD = re.compile(
    r"(?<![\w])(pids?|pid\(s\)|process(?:es)?(?:[ _-]?ids?|[ _-]?id\(s\))?)"
    r"(\s*[=:#]?\s*[\[(]?\s*)"
    r"(\d+(?:(?:\s*[,&]\s*|\s+and\s+)\d+)*)",
    re.IGNORECASE,
)
"""A number written as a process id: ``pid 1``, ``pid=1``, ``PID: 1``, ``pids [1, 2]``,
``pid(s) 1, 2``, ``process 1``, ``process id 1``, ``processes 1 and 2``."""
_DIGITS = re.compile(r"\d+")


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

    def usable_home(self) -> str | None:
        """The home folder when it is worth replacing (not ``/`` or empty), else None."""
        home = self.home
        return home if home and home not in ("/", "~") and len(home) > 1 else None

    def usable_user(self) -> str | None:
        """The user name to look for (any non-empty name; see :func:`_user_pattern`), else
        None."""
        return self.user or None

    def home_usable(self) -> bool:
        """A home folder worth replacing (not ``/`` or empty)."""
        return self.usable_home() is not None

    def user_usable(self) -> bool:
        """A user name to look for (any non-empty name; see :func:`_user_pattern`)."""
        return self.usable_user() is not None


def _home_pattern(home: str) -> re.Pattern[str]:
    return re.compile(re.escape(home.rstrip("/\\")) + _END)


def _word(text: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w])" + re.escape(text) + r"(?![\w])")


def _user_pattern(user: str) -> re.Pattern[str]:
    """The user name as a whole word; a one-character name only as a whole path part."""
    if len(user) >= 2:
        return _word(user)
    return re.compile(r"(?<=[/\\])" + re.escape(user) + _END)


def _token_pattern(token: str) -> re.Pattern[str]:
    """The token as written or with any of its characters percent-encoded."""

    def hexes(char: str) -> str:
        return "".join(
            "%" + "".join(f"[{d}{d.lower()}]" if d.isalpha() else d for d in f"{b:02X}")
            for b in char.encode("utf-8", "surrogatepass")
        )

    return re.compile("".join(f"(?:{re.escape(c)}|{hexes(c)})" for c in token))


def _pid_pattern(pid: int) -> re.Pattern[str]:
    return re.compile(r"(?<![\d.])" + str(pid) + r"(?![\d.])")


def _scrub_pids(match: re.Match[str]) -> str:
    return match.group(1) + match.group(2) + _DIGITS.sub("<pid>", match.group(3))


def _scrub_file_url(match: re.Match[str], s: Secrets) -> str:
    """A ``file:`` URL with its path scrubbed as a plain path: the home folder becomes
    ``~``, any other path keeps its last part. Percent-encoding is decoded first, so an
    encoded home folder or user name (``/home/zo%C3%AB``) is found too; the host goes."""
    path = unquote(match.group(3))
    local = (match.group(2)[1:] + path) if match.group(2) else path
    usable_home = s.usable_home()
    if usable_home is not None:
        home = usable_home.replace("\\", "/")
        at_home = _home_pattern(home).match(local.replace("\\", "/"))
        if at_home:
            return f"{match.group(1)}//~{local[at_home.end() :]}"
    last = local.rstrip("/").rsplit("/", 1)[-1]
    return f"{match.group(1)}//.../{last}"


def scrub_token(text: str, token: str | None) -> str:
    """``text`` with ``token``, as written or percent-encoded, replaced by ``<token>``; the
    rest as it was (for text that is no message of ours, such as a server's answer)."""
    return _token_pattern(token).sub("<token>", text) if token else text


def scrub_message(text: str, secrets: Secrets | None = None) -> str:
    """An error message safe to send: no token, home, absolute path, user name or pid."""
    s = secrets or Secrets()
    out = scrub_token(str(text), s.token)
    out = _FILE_URL.sub(lambda m: _scrub_file_url(m, s), out)  # before the home folder
    if s.token:
        out = out.replace(s.token, "<token>")  # a token percent-encoded in a file URL
    home = s.usable_home()
    if home is not None:
        out = _home_pattern(home).sub("~", out)
    out = _ABS_POSIX.sub(lambda m: ".../" + (m.group(1) or m.group(2) or ""), out)
    out = _ABS_WINDOWS.sub(lambda m: "...\\" + m.group(1), out)
    user = s.usable_user()
    if user is not None:
        out = _user_pattern(user).sub("<user>", out)
    out = _PID_WORD.sub(_scrub_pids, out)
    if s.pid:
        out = _pid_pattern(s.pid).sub("<pid>", out)
    if len(out) > MAX_MESSAGE:
        out = out[: MAX_MESSAGE - 1] + "…"
    return out


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, or ``<str() of the exception failed: ...>`` where a user's ``__str__``
    raises or gives no ``str``: never raises."""
    try:
        text = str(exc)
        if not isinstance(text, str):
            raise TypeError(f"__str__ returned {type(text).__name__}")
    except Exception as broken:  # any error of a user's __str__
        text = f"<str() of the exception failed: {type(broken).__name__}>"
    return text


def exception_said(exc: BaseException, secrets: Secrets | None = None) -> str:
    """``exc`` for a warning on this machine: ``Class: message`` (the class alone for an
    empty message), the token and home folder scrubbed (:func:`scrub_home`), control and
    bidirectional characters :func:`~trainrecord.errors.escaped`, cut to 500 characters."""
    text = scrub_home(exception_text(exc), secrets)
    said = escaped(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
    return said if len(said) <= MAX_MESSAGE else said[: MAX_MESSAGE - 1] + "…"


def scrub_home(text: str, secrets: Secrets | None = None) -> str:
    """``text`` with the token (as written or percent-encoded) as ``<token>`` and the home
    folder as ``~``, and nothing else changed: for a path in a message shown on this machine
    (a settings refusal), where the whole path is what the user must fix."""
    s = secrets or Secrets()
    out = str(text)
    if s.token:
        out = _token_pattern(s.token).sub("<token>", out)
    home = s.usable_home()
    if home is not None:
        out = _home_pattern(home).sub("~", out)
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
    usable_home, usable_user = s.usable_home(), s.usable_user()
    home = _home_pattern(usable_home) if usable_home is not None else None
    user = _user_pattern(usable_user) if usable_user is not None else None
    pid = _pid_pattern(s.pid) if s.pid else None
    token = _token_pattern(s.token) if s.token else None
    for path, text in _strings(payload):
        if token and token.search(text):
            found.append(Problem(rule, path, "holds the report token; never send it"))
        if home and home.search(text):
            found.append(Problem(rule, path, "holds the home folder; write ~ instead"))
        elif _ABS_POSIX.search(text) or _ABS_WINDOWS.search(text) or _FILE_URL.search(text):
            found.append(Problem(rule, path, "holds an absolute path; send names, not paths"))
        if path[:1] == ("error",):
            if user and user.search(text):
                found.append(Problem(rule, path, "names the user; scrub the message"))
            if (pid and pid.search(text)) or _PID_WORD.search(text):
                found.append(Problem(rule, path, "holds a process id; scrub the message"))
    return found
