"""Reporting settings: where reports go, how often, and with which token (§1 of the seed).

Public API:

* :class:`ReportSettings` ``(url, every, token, ca_bundle=None, timeout=10.0,
  ca_environ=None)``: checked on construction; a missing or unsafe setting raises
  :class:`~trainrecord.errors.RecordRefused` at once, before any work starts. The token
  never appears in ``repr`` or in any message. ``timeout`` is the whole exchange's deadline
  (tests give a shorter one). ``ca_environ``: the ``REQUESTS_CA_BUNDLE`` and
  ``CURL_CA_BUNDLE`` variables to use when ``ca_bundle`` is not set (None: ``os.environ``
  when a report is sent).
* :func:`load_settings` ``(paths_toml, env=os.environ)``: reads ``[report] url`` and
  ``every`` (and the optional ``ca_bundle``) from ``paths.toml``, and the token from the
  variable ``CORREAD_REPORT_TOKEN`` of ``env``, never from a file; ``REQUESTS_CA_BUNDLE``
  and ``CURL_CA_BUNDLE`` are read from ``env`` too (the given mapping, not os.environ).
* :func:`check_url` and :func:`is_loopback_host`: the URL rules on their own;
  :func:`check_token_not_in_url`: the token is not in the URL (``ReportSettings`` runs it
  first, so ``load_settings`` and a directly built ``ReportSettings`` refuse alike).
* :func:`redact_url` ``(url) -> str``: a URL as it may be shown in a message: scheme, host,
  port and path as written; a password (or a lone user name) in it, every query value and
  the fragment as ``***``. Every refusal that echoes a URL shows it so.
* :data:`REPORT_KEYS`: the keys ``[report]`` may hold; any other is refused
  (``report.settings.unknown_key``, naming the key and the closest known one; a key named
  like a secret, such as ``api_token``, under ``report.settings.token``), never showing a
  value.

Rules (``spec/rules/reporting.json``): ``report.settings.url_missing``,
``report.settings.token`` (set, and printable ASCII without spaces: ``0x21``-``0x7E``),
``report.settings.url_scheme``, ``report.settings.url_credentials``,
``report.settings.ca_bundle``, ``report.settings.every``, ``report.settings.toml`` (also
a paths.toml that cannot be read: missing, a folder, no permission; a refusal naming the
file, not a bare ``FileNotFoundError``), ``report.settings.unknown_key``.
"""

from __future__ import annotations

import difflib
import ipaddress
import math
import os
import ssl
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast
from urllib.parse import unquote, urlsplit

from trainrecord.errors import Problem, RecordRefused, escaped
from trainrecord.report.privacy import Secrets, scrub_home

TOKEN_ENV = "CORREAD_REPORT_TOKEN"
"""The one place the token comes from."""
CLIENT_TIMEOUT_S = 10.0
"""§2: the client waits at most this long for an answer (the whole exchange)."""
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
"""Environment variables naming CA certificates to trust, first set (non-empty) wins."""
REPORT_KEYS = ("url", "every", "ca_bundle")
"""The keys of ``[report]`` in paths.toml (§1: url and every; ca_bundle, a decision of
spec/README.md). Any other is refused: the seed allows no other, and a misspelt key
(``evry = 5``) would otherwise leave its default in force without a word."""
SECRET_WORDS = ("token", "secret", "password", "passwd", "bearer", "auth", "apikey", "credential")
"""A ``[report]`` key whose name holds one of these (in any case, ``-`` and ``_`` left out:
``api_token``, ``API-Key``, ``auth``) is taken for a token put in the file:
``report.settings.token``, the token comes only from ``CORREAD_REPORT_TOKEN``."""


IPV6_LOOPBACK = ipaddress.IPv6Address("::1")


def is_loopback_host(host: str | None) -> bool:
    """True for ``localhost`` and loopback IPs as written (spec/README.md, Settings):
    ``localhost`` in any case, a dotted-decimal IPv4 address in 127.0.0.0/8 (four decimal
    parts, no leading zeros: ``ipaddress``), an IPv6 address equal to ::1 without a zone.
    Other spellings a resolver also reads as 127.0.0.1 (``127.1``, ``0x7f.0.0.1``,
    ``2130706433``) and ``::ffff:127.0.0.1`` are not loopback. The IPv6 test is equality
    with ::1, not ``is_loopback``: from Python 3.13 that is also true of an IPv4-mapped
    loopback address, and the verdict must not depend on the interpreter."""
    if not host:
        return False
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    if "%" in name:  # a zone (scope id): an obscure spelling, refused as the Node client does
        return False
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if address.version == 6:
        return address == IPV6_LOOPBACK
    return address.is_loopback


def _is_host(host: str, bracketed: bool) -> bool:
    """Whether ``host`` (from urlsplit) is an IP address or a host name of letters, digits,
    ``-``, ``.`` and ``_``."""
    if bracketed:
        if "%" in host:  # a zone (scope id), which the WHATWG parser refuses too
            return False
        try:
            return ipaddress.ip_address(host).version == 6
        except ValueError:
            return False
    return all(c.isalnum() or c in "-._" for c in host)


def check_url(url: object) -> str:
    """Return ``url`` when it is a safe report URL; raise :class:`RecordRefused` otherwise.

    https:// anywhere; http:// only for localhost or a loopback IP; no user name or password
    in the URL (the token goes only in the Authorization header).
    """
    if not isinstance(url, str) or not url.strip():
        raise RecordRefused.one(
            "report.settings.url_missing",
            ("report", "url"),
            "set [report] url in paths.toml to your endpoint (https://...)",
        )
    try:
        parts = urlsplit(url)
        host = parts.hostname
        has_credentials = parts.username is not None or parts.password is not None
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError:
        raise RecordRefused.one(
            "report.settings.url_scheme",
            ("report", "url"),
            "the URL cannot be parsed; write it as https://host/path",
            show_value=False,
        ) from None
    if has_credentials:
        raise RecordRefused.one(
            "report.settings.url_credentials",
            ("report", "url"),
            "remove the user name and password from the URL; the token "
            f"comes from {TOKEN_ENV} only",
            show_value=False,
        )
    if any(c.isspace() or not c.isprintable() for c in url) or (
        host and not _is_host(host, "[" in parts.netloc)
    ):
        raise RecordRefused.one(
            "report.settings.url_scheme",
            ("report", "url"),
            "the URL's host has a character not allowed in a host name (a space?); "
            "write it as https://host/path",
            show_value=False,
        )
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not host:
        raise RecordRefused.one(
            "report.settings.url_scheme",
            ("report", "url"),
            "the URL must be https://host/... (http:// only for localhost)",
            redact_url(url),
            # shown only as scheme://host...: without them nothing tells where a secret is
            show_value=bool(parts.scheme and host),
        )
    if scheme == "http" and not is_loopback_host(host):
        raise RecordRefused.one(
            "report.settings.url_scheme",
            ("report", "url"),
            "plain http:// is refused unless the host is localhost or a loopback IP; use https://",
            redact_url(url),
        )
    return url


def redact_url(url: str) -> str:
    """``url`` as a message may show it: the scheme, host, port and path as written; a
    password in it as ``user:***@`` (a lone user name, often a token, as ``***@``), each
    query value as ``name=***`` (a part without ``=`` as ``***``) and the fragment as
    ``***``. Plain string rules, the same in every implementation: the fragment follows the
    first ``#``, the query the first ``?`` before it; the authority follows the first
    ``://`` up to the first ``/``, ``?`` or ``#``, and its user info precedes its last
    ``@``."""
    rest, hash_, fragment = url.partition("#")
    rest, mark, query = rest.partition("?")
    if query:
        query = "&".join(
            (part.partition("=")[0] + "=***" if "=" in part else "***") if part else part
            for part in query.split("&")
        )
    start = rest.find("://")
    if start >= 0:
        start += 3
        end = min([i for i in (rest.find("/", start),) if i >= 0] or [len(rest)])
        at = rest.rfind("@", start, end)
        if at >= 0:
            user, colon, _ = rest[start:at].partition(":")
            shown = f"{user}:***" if colon else "***"
            rest = rest[:start] + shown + rest[at:]
    return rest + mark + query + hash_ + ("***" if fragment else "")


MISNAMED_TOKEN_VARIABLES = ("TRAINRECORD_TOKEN", "REPORT_TOKEN")
"""Names a user may export the token under by mistake, besides any other name holding both
REPORT and TOKEN (see :func:`misnamed_token_hint`)."""


def misnamed_token_hint(env: Mapping[str, str] | None) -> str:
    """`` (REPORT_TOKEN is set, but the token is read only from CORREAD_REPORT_TOKEN)`` when
    ``env`` sets a variable named like the token's (one in :data:`MISNAMED_TOKEN_VARIABLES`,
    or any whose name holds REPORT and TOKEN in any case) other than ``CORREAD_REPORT_TOKEN``;
    else ``""``. Names only: no value is ever shown."""
    if not env:
        return ""
    names = sorted(
        escaped(name)  # a variable's name: any text but = and NUL
        for name in env
        if name != TOKEN_ENV
        and (
            name in MISNAMED_TOKEN_VARIABLES
            or ("REPORT" in name.upper() and "TOKEN" in name.upper())
        )
    )
    if not names:
        return ""
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    verb = "is" if len(names) == 1 else "are"
    return f" ({listed} {verb} set, but the token is read only from {TOKEN_ENV})"


def _no_token(env: Mapping[str, str] | None) -> RecordRefused:
    """The refusal of a missing token, naming any variable of ``env`` that looks meant to
    hold it (:func:`misnamed_token_hint`)."""
    return RecordRefused.one(
        "report.settings.token",
        (TOKEN_ENV,),
        f"export {TOKEN_ENV}=<token> before turning reporting on "
        f"(the token is never read from a file){misnamed_token_hint(env)}",
    )


def check_token(token: object) -> str:
    """Return the token when it is usable in a Bearer header; never shows its value."""
    if not isinstance(token, str) or not token:
        raise _no_token(None)
    if any(not (0x21 <= ord(c) <= 0x7E) for c in token):
        raise RecordRefused.one(
            "report.settings.token",
            (TOKEN_ENV,),
            f"{TOKEN_ENV} must be printable ASCII without spaces or line breaks",
            show_value=False,
        )
    return token


def check_token_not_in_url(url: object, token: object) -> None:
    """Refuse a URL that holds the token (in its user info, path, query or fragment), as
    written or percent-decoded; never shows either. Runs before the other URL checks, so a
    token given as the URL's user name is refused by this rule, not as a credential. An
    occurrence that lies wholly inside the scheme or the host and port is no leak (a short
    token may be part of a host name by chance): see :func:`token_outside_host`."""
    if not (isinstance(url, str) and isinstance(token, str) and token):
        return
    if token_outside_host(url, token) or token_outside_host(unquote(url), token):
        raise RecordRefused.one(
            "report.settings.token",
            ("report", "url"),
            f"the URL holds the value of {TOKEN_ENV}; remove it from the URL ([report] url "
            f"in paths.toml): the token is sent only in the Authorization header, from "
            f"{TOKEN_ENV}",
            show_value=False,
        )


def token_outside_host(text: str, token: str) -> bool:
    """Whether ``token`` occurs in the URL ``text`` anywhere but wholly inside its scheme
    or its host and port. Plain string rules, the same in every implementation: the
    scheme is what precedes the first ``://``; the authority follows it up to the first
    ``/``, ``?`` or ``#``; the host and port are what follows the authority's last ``@``.
    Without ``://`` every occurrence counts."""
    scheme_end = text.find("://")
    spans: list[tuple[int, int]] = []
    if scheme_end >= 0:
        start = scheme_end + 3
        stops = [i for i in (text.find(c, start) for c in "/?#") if i >= 0]
        end = min(stops, default=len(text))
        host_start = text.rfind("@", start, end) + 1 or start
        spans = [(0, scheme_end), (max(host_start, start), end)]
    at = text.find(token)
    while at >= 0:
        if not any(a <= at and at + len(token) <= b for a, b in spans):
            return True
        at = text.find(token, at + 1)
    return False


def check_every(every: object) -> float:
    """Return ``every`` as seconds when it is a finite number greater than 0."""
    if (
        isinstance(every, int | float)
        and not isinstance(every, bool)
        and math.isfinite(every)
        and every > 0
    ):
        return float(every)
    raise RecordRefused.one(
        "report.settings.every",
        ("report", "every"),
        "every is the number of seconds between progress reports; "
        "set it to a number greater than 0",
        every,
    )


def _is_ca_file(path: str) -> bool:
    """Whether ``path`` is a readable PEM file holding at least one CA certificate."""
    if not Path(path).is_file():
        return False
    try:
        context = ssl.create_default_context(cafile=path)
    except (ssl.SSLError, OSError, ValueError):
        return False
    return bool(context.get_ca_certs())


@dataclass(frozen=True)
class ReportSettings:
    """Checked reporting settings. Construction raises on anything missing or unsafe.

    Every problem of ``url``, ``every`` and ``token`` is raised at once, as one
    :class:`~trainrecord.errors.RecordRefused`; the token never appears in ``repr`` or in
    a message. :func:`load_settings` builds one from paths.toml and the environment.

    Args:
        url: the endpoint reports are POSTed to: https:// anywhere, http:// only for
            localhost or a loopback IP; no user name or password, nor the token, in it
            (``report.settings.url_missing``, ``report.settings.url_scheme``,
            ``report.settings.url_credentials``, ``report.settings.token``).
        every: seconds between progress reports, a finite number > 0
            (``report.settings.every``); kept as a float.
        token: the bearer token, printable ASCII without spaces (``0x21``-``0x7E``),
            not empty (``report.settings.token``).
        ca_bundle: a PEM file of CA certificates to trust instead of the system's (default
            None); one that is not an existing PEM file with a certificate is refused
            (``report.settings.ca_bundle``).
        timeout: the deadline of one whole exchange, in seconds (default 10.0, §2).
        ca_environ: where ``REQUESTS_CA_BUNDLE`` and ``CURL_CA_BUNDLE`` are read when
            ``ca_bundle`` is not set (default None: ``os.environ`` when a report is sent);
            a variable naming a path that does not exist is refused
            (``report.settings.ca_bundle``).

    Example (from the package's docstring)::

        settings = ReportSettings(url="https://127.0.0.1:8443/api/runs", every=60,
                                  token=token, ca_bundle="ca.pem")
        outcome = post_report(settings, encode_report(report))
    """

    url: str
    every: float
    token: str = field(repr=False)
    ca_bundle: str | None = None
    """A PEM file of CA certificates to trust instead of the system's (optional)."""
    timeout: float = CLIENT_TIMEOUT_S
    """The deadline of one exchange, in seconds (§2: 10)."""
    ca_environ: Mapping[str, str] | None = field(default=None, repr=False, compare=False)
    """Where ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE`` are read (None: ``os.environ``)."""

    def __post_init__(self) -> None:
        # a token in the url is said alone (other messages show the url); then every
        # problem of url, every and token at once, as the writers say theirs (they came one
        # a try); the CA checks below need a usable url and token first
        check_token_not_in_url(self.url, self.token)
        found: list[Problem] = []
        checks: list[Callable[[], object]] = [
            lambda: check_url(self.url),
            lambda: object.__setattr__(self, "every", check_every(self.every)),
            lambda: check_token(self.token),
        ]
        for run_check in checks:
            try:
                run_check()
            except RecordRefused as exc:
                found.extend(exc.problems)
        if found:
            raise RecordRefused(found)
        if self.ca_bundle is not None and not _is_ca_file(self.ca_bundle):
            raise _ca_refused(
                ("report", "ca_bundle"),
                "ca_bundle must name an existing PEM file of CA certificates",
                self.ca_bundle,
                self.token,
            )
        if self.ca_environ is not None:
            kept = {k: str(self.ca_environ[k]) for k in CA_VARIABLES if self.ca_environ.get(k)}
            object.__setattr__(self, "ca_environ", kept)
            name, path = _ca_variable(kept)
            unused = self.ca_bundle is not None
            if name is not None and not unused and not Path(path).exists():  # file or folder
                raise _ca_refused(
                    (name,),
                    f"{name} must name an existing file (or folder) of CA certificates; "
                    "fix it or unset it",
                    path,
                    self.token,
                )

    @property
    def verify(self) -> str | bool:
        """What ``requests`` gets as ``verify``: the CA bundle, else the system's trust.

        When no ``ca_bundle`` is set, ``REQUESTS_CA_BUNDLE``, else ``CURL_CA_BUNDLE``, is
        honoured, from ``ca_environ`` (what :func:`load_settings` was given) or else
        ``os.environ`` (the client runs ``requests`` with ``trust_env`` off, so that .netrc
        can never replace the token, and reads these two itself).
        """
        if self.ca_bundle:
            return self.ca_bundle
        _, path = _ca_variable(os.environ if self.ca_environ is None else self.ca_environ)
        return path or True


def _ca_refused(field: tuple[str, ...], message: str, path: str, token: str) -> RecordRefused:
    """A ``report.settings.ca_bundle`` refusal showing the path as it was given (the token and
    the home folder scrubbed, as in every message: ``~/certs/ca.pem``), whole, since the
    folder is often what is wrong; a path past 200 characters keeps its end."""
    shown = scrub_home(path, Secrets(token=token or None))
    if len(shown) > 200:
        shown = "..." + shown[-197:]
    return RecordRefused([Problem("report.settings.ca_bundle", field, message, repr(shown))])


def _ca_variable(env: Mapping[str, str]) -> tuple[str | None, str]:
    """The first CA variable set in ``env`` (non-empty), and its value."""
    for name in CA_VARIABLES:
        value = env.get(name)
        if value:
            return name, value
    return None, ""


def _key_problem(key: str, value: object, token: str) -> Problem | None:
    """Why ``key`` may not stand in ``[report]``, or None for one of :data:`REPORT_KEYS`.
    A key named like a secret (:data:`SECRET_WORDS`), or holding the token's value, is a
    token in the file (``report.settings.token``); any other unknown key is
    ``report.settings.unknown_key``, naming the closest known key (difflib, case
    ignored). Never shows the value."""
    if key in REPORT_KEYS and not (token and value == token):
        return None
    folded = key.lower().replace("_", "").replace("-", "")
    if any(word in folded for word in SECRET_WORDS) or (token and value == token):
        return Problem(
            "report.settings.token",
            ("report", key),
            f"remove {key!r} from paths.toml: the token is never read from a file; "
            f"export {TOKEN_ENV}=<token> instead",
        )
    close = difflib.get_close_matches(key.lower(), REPORT_KEYS, n=1)
    known = ", ".join(REPORT_KEYS)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return Problem(
        "report.settings.unknown_key",
        ("report", key),
        f"[report] has no key {key!r}; {hint}the keys are {known} (an unknown key is "
        "refused, not ignored: a misspelt one would leave its default in force); "
        "rename or remove it",
    )


def _unreadable(path: Path, exc: OSError) -> str:
    """Why paths.toml could not be read, naming the file (its absolute path, so a name
    taken against the wrong working directory shows where it was looked for), and what to
    do."""
    where = path if path.is_absolute() else Path.cwd() / path
    if isinstance(exc, FileNotFoundError):
        why = "does not exist"
    elif isinstance(exc, IsADirectoryError) or path.is_dir():
        why = "is a folder, not a file"
    else:
        why = f"cannot be read ({exc.strerror or type(exc).__name__})"
    return (
        f"paths.toml {where} {why}; give the path of your paths.toml (the file with the "
        "[report] section; a relative path is taken from the current directory)"
    )


def load_settings(
    paths_toml: str | os.PathLike[str], env: Mapping[str, str] | None = None
) -> ReportSettings:
    """Read ``[report]`` from ``paths.toml``, and the token (``CORREAD_REPORT_TOKEN``) and the
    CA variables (``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``) from ``env`` (default
    ``os.environ``).

    Args:
        paths_toml: the paths.toml file. Its ``[report]`` section holds ``url``, ``every``
            (seconds; 60 when left out) and optionally ``ca_bundle`` (relative to the
            file's folder); any other key is refused (``report.settings.unknown_key``). A
            file that cannot be read or is not UTF-8 TOML is refused
            (``report.settings.toml``); one without ``[report]``
            (``report.settings.url_missing``).
        env: the mapping the token and the CA variables are read from (default None:
            ``os.environ``); the token is never read from a file.

    Every refusal is a :class:`~trainrecord.errors.RecordRefused`, raised at once, before
    any work starts; the values are then checked as :class:`ReportSettings` checks them::

        # paths.toml: [report] url = "https://example.org/api/runs", every = 60
        settings = load_settings("paths.toml")  # token: export CORREAD_REPORT_TOKEN=...
    """
    env = os.environ if env is None else env
    path = Path(paths_toml)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RecordRefused.one(
            "report.settings.toml", (path.name,), _unreadable(path, exc)
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        why = (
            f"not UTF-8 text (byte {exc.start})"
            if isinstance(exc, UnicodeDecodeError)
            else f"not valid TOML ({exc})"
        )
        raise RecordRefused.one(
            "report.settings.toml", (path.name,), f"paths.toml is {why}; fix it"
        ) from None
    section = data.get("report")
    if not isinstance(section, dict):
        raise RecordRefused.one(
            "report.settings.url_missing",
            ("report",),
            "add a [report] section with url and every to paths.toml",
        )
    token = env.get(TOKEN_ENV, "")
    problems = [_key_problem(key, value, token) for key, value in section.items()]
    if any(problems):
        raise RecordRefused([p for p in problems if p is not None])
    # url and every go in as written: ReportSettings.__post_init__ checks them (a missing
    # url or a string every is refused there, with the rule that names it)
    url = cast(str, section.get("url"))
    ca = section.get("ca_bundle")
    if ca is not None:
        ca = str((path.parent / str(ca)).resolve())
    try:
        return ReportSettings(
            url=url,
            every=section.get("every", 60),
            token=token,
            ca_bundle=ca,
            ca_environ={k: env[k] for k in CA_VARIABLES if k in env},
        )
    except RecordRefused as exc:
        if not token and exc.problems[0].path == (TOKEN_ENV,):
            raise _no_token(env) from None  # the same refusal, naming a misnamed variable
        raise
