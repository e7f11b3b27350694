"""Reporting API v2, §1: the settings (``load_settings``).

The suite writes a ``paths.toml`` and gives the environment; a valid one loads with its
url and every, and each broken variant is refused naming its rule: no url
(``report.settings.url_missing``), a ca_bundle that names no file
(``report.settings.ca_bundle``), an every that is not a finite number above 0
(``report.settings.every``), a token missing from the environment or put in the file, as
``token`` or under any key named like a secret (``api_token``, ``Auth``) or holding its
value (``report.settings.token``), a paths.toml that is not valid TOML
(``report.settings.toml``), a key ``[report]`` does not have (``evry``, ``URL``:
``report.settings.unknown_key``, the message naming the key and never its value). A refused
URL's query values and fragment (``?api_key=...``) are never in the message, nor is the
token in any settings refusal.
A URL holding the token (as its user name or password, in its path, query or fragment, as
written or percent-encoded) is refused with ``report.settings.token`` and a message that
never shows the token; a short token that is only part of the host name by chance is no
leak, and that URL loads (see ``outside_host``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from hypothesis import strategies as st

from trainrecord_conformance.checks.base import Check, Context, Failed
from trainrecord_conformance.targets import Target

LOAD = frozenset({"load_settings"})
TOKEN_ENV = "CORREAD_REPORT_TOKEN"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value)


def toml_text(tables: dict[str, dict[str, Any] | Any]) -> str:
    """A paths.toml for ``tables`` (a non-dict value is written as a plain key)."""
    out = []
    for name, table in tables.items():
        if isinstance(table, dict):
            out.append(f"[{name}]")
            out.extend(f"{k} = {_value(v)}" for k, v in table.items())
        else:
            out.insert(0, f"{name} = {_value(table)}")
    return "\n".join(out) + "\n"


URLS = st.sampled_from(
    [
        "https://reports.example.org/api/runs",
        "https://10.1.2.3:8443/api/runs",
        "http://127.0.0.1:8080/api/runs",
        "http://localhost/api/runs",
        "http://[::1]:9000/r",
        "http://LocalHost:8080/r",
        "http://127.255.255.254/r",
        "http://[0:0:0:0:0:0:0:1]/r",
    ]
)
EVERY = st.one_of(st.integers(1, 86_400), st.floats(0.001, 86_400.0))


def valid_settings(t: Target) -> st.SearchStrategy[tuple[str, float, str]]:
    """(url, every, token)."""
    return st.tuples(URLS, EVERY, st.text("0123456789abcdef", min_size=8, max_size=32))


EDGE_SETTINGS = (
    ("https://reports.example.org/api/runs", 60, "0123456789abcdef"),
    ("http://[::1]:9000/r", 5e-324, "!edge~token!"),  # the smallest every, 0x21 and 0x7E
)
"""Valid settings the fixed cases of the settings checks run in: the first with each
broken variant, the second with the first variant only (its boundary values are valid)."""


def _fixed(variants: list[Any]) -> Callable[[Target], list[Any]]:
    """The edge cases of a settings check: every variant in the plain valid settings, then
    the first one in the valid settings at their boundaries."""
    return lambda t: [(EDGE_SETTINGS[0], v) for v in variants] + [(EDGE_SETTINGS[1], variants[0])]


def _load(folder: Path, tables: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Write paths.toml into ``folder``; the load_settings input for it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "paths.toml"
    path.write_text(toml_text(tables), encoding="utf-8")
    return {"path": str(path), "env": env}


Shown = Callable[[str, str, Any], str | None]
"""What a refusal's message must not show: ``shown(message, token, variant)`` says what it
showed, or None."""


def settings_check(
    rule: str,
    broken: Callable[[dict[str, Any], dict[str, str], Any], tuple[dict, dict]],
    shown: Shown | None = None,
) -> Callable[[Context, Any], None]:
    """The valid settings load as written; ``broken`` of them is refused naming ``rule``
    (and, with ``shown``, without showing what it must not)."""

    def body(ctx: Context, case: tuple[tuple[str, float, str], Any]) -> None:
        (url, every, tok), variant = case
        folder = ctx.folder(create=True)
        (folder / "ca.pem").write_text(ctx.service("settings-ca", _ca_pem), encoding="ascii")
        tables: dict[str, dict[str, Any]] = {
            "paths": {"data": "data"},
            "report": {"url": url, "every": every},
        }
        env = {TOKEN_ENV: tok, "HOME": "/nonexistent"}
        out = ctx.ok("load_settings", _load(folder, tables, env))
        if out["url"] != url or out["every"] != every or out["ca_bundle"]:
            raise Failed(f"loaded {out}, wrote url {url!r}, every {every!r}, no ca_bundle")
        with_ca = {**tables, "report": {**tables["report"], "ca_bundle": "ca.pem"}}
        out = ctx.ok("load_settings", _load(folder, with_ca, env))
        if not out["ca_bundle"]:
            raise Failed("a ca_bundle naming an existing PEM file was not loaded")
        bad_tables, bad_env = broken(tables, env, variant)
        result = ctx.refused("load_settings", _load(folder, bad_tables, bad_env), rule)
        leak = shown(result.message, tok, variant) if shown is not None else None
        if leak:
            raise Failed(f"the refusal shows {leak}: {result.message[:300]!r}")

    return body


def _ca_pem() -> str:
    import trustme

    return trustme.CA().cert_pem.bytes().decode("ascii")


def _no_url(tables: dict, env: dict, variant: Any) -> tuple[dict, dict]:
    report = {k: v for k, v in tables["report"].items() if k != "url"}
    if variant == "no table":
        return {"paths": tables["paths"]}, env
    if variant == "not a table":
        return {"paths": tables["paths"], "report": "https://reports.example.org/"}, env
    if variant == "no url":
        return {**tables, "report": report}, env
    return {**tables, "report": {**report, "url": variant}}, env


def _ca(tables: dict, env: dict, variant: Any) -> tuple[dict, dict]:
    if variant.startswith("$"):  # a CA variable of the environment naming no file
        return tables, {**env, variant[1:]: "/nonexistent/ca.pem"}
    return {**tables, "report": {**tables["report"], "ca_bundle": variant}}, env


def _url(tables: dict, env: dict, variant: Any) -> tuple[dict, dict]:
    return {**tables, "report": {**tables["report"], "url": variant}}, env


def _every(tables: dict, env: dict, variant: Any) -> tuple[dict, dict]:
    return {**tables, "report": {**tables["report"], "every": variant}}, env


def _token(tables: dict, env: dict, variant: Any) -> tuple[dict, dict]:
    if variant.endswith("in the file"):  # "<key> in the file" (the key token when bare)
        key = variant[: -len(" in the file")] or "token"
        report = {**tables["report"], key: env[TOKEN_ENV]}
        return {**tables, "report": report}, {k: v for k, v in env.items() if k != TOKEN_ENV}
    if variant == "held by another key":  # its value, whatever the key's name
        return {**tables, "report": {**tables["report"], "note": env[TOKEN_ENV]}}, env
    if variant == "unset":
        return tables, {k: v for k, v in env.items() if k != TOKEN_ENV}
    return tables, {**env, TOKEN_ENV: variant}


def _toml_body(ctx: Context, case: tuple[tuple[str, float, str], str]) -> None:
    """Valid settings load; the same file broken as TOML is refused naming its rule."""
    (url, every, tok), junk = case
    folder = ctx.folder(create=True)
    tables = {"paths": {"data": "data"}, "report": {"url": url, "every": every}}
    env = {TOKEN_ENV: tok, "HOME": "/nonexistent"}
    good = _load(folder, tables, env)
    ctx.ok("load_settings", good)
    Path(good["path"]).write_text(toml_text(tables) + junk, encoding="utf-8")
    ctx.refused("load_settings", good, "report.settings.toml")


TOKEN_CHARS = [chr(c) for c in range(0x21, 0x7F)]
PLACES = ("user", "password", "path", "query", "fragment")


def _in_url_cases(t: Target) -> st.SearchStrategy[tuple[Any, ...]]:
    """(base url, every, token, place, encoded, mask, upper): the token drawn character by
    character (printable ASCII, as the token rule allows; never a constant from the code,
    which could also occur in a message), not already in the base URL; for ``host``, a
    slice of the base URL's host name as the token (outside its host only by chance)."""
    token = st.lists(st.sampled_from(TOKEN_CHARS), min_size=8, max_size=32).map("".join)
    placed = st.tuples(
        URLS,
        EVERY,
        token,
        st.sampled_from(PLACES),
        st.booleans(),
        st.integers(0, 2**32 - 1),
        st.booleans(),
    ).filter(lambda c: c[2] not in c[0] and c[2] not in unquote(c[0]))
    host = st.tuples(URLS, EVERY, st.integers(0, 40), st.integers(1, 4)).map(
        lambda c: (c[0], c[1], _host_slice(c[0], c[2], c[3]), "host", False, 0, False)
    )
    return st.one_of(placed, host)


def _host_slice(url: str, start: int, size: int) -> str:
    """``size`` characters of the URL's host name from ``start`` (wrapped)."""
    host = urlsplit(url).hostname or ""
    start %= len(host)
    return host[start : start + size]


def _encode(token: str, mask: int, upper: bool) -> str:
    """The token with the characters picked by ``mask`` (and every ``%``) percent-encoded;
    at least one is."""
    picked = [c == "%" or bool(mask >> (i % 32) & 1) for i, c in enumerate(token)]
    if not any(picked):
        picked[0] = True
    hexes = "%{:02X}" if upper else "%{:02x}"
    return "".join(hexes.format(ord(c)) if p else c for c, p in zip(token, picked, strict=True))


def url_with_token(url: str, token: str, place: str) -> str:
    """``url`` with ``token`` as its user name or password, or in its path, query or
    fragment."""
    parts = urlsplit(url)
    if place == "user":
        return urlunsplit(parts._replace(netloc=f"{token}@{parts.netloc}"))
    if place == "password":
        return urlunsplit(parts._replace(netloc=f"reporter:{token}@{parts.netloc}"))
    if place == "path":
        return f"{url}/{token}"
    if place == "query":
        return f"{url}?token={token}"
    return f"{url}#{token}"


def outside_host(text: str, token: str) -> bool:
    """Whether ``token`` occurs in the URL ``text`` anywhere but wholly inside its scheme
    or host and port (the rule's plain string reading, written here apart from any
    implementation): the scheme precedes the first ``://``; the authority follows it up to
    the first ``/``, ``?`` or ``#``; host and port follow the authority's last ``@``."""
    spans: list[tuple[int, int]] = []
    scheme_end = text.find("://")
    if scheme_end >= 0:
        start = scheme_end + 3
        end = min([i for i in (text.find(c, start) for c in "/?#") if i >= 0] or [len(text)])
        at = text.rfind("@", start, end)
        spans = [(0, scheme_end), (at + 1 if at >= 0 else start, end)]
    return any(
        not any(a <= i and i + len(token) <= b for a, b in spans)
        for i in range(len(text) - len(token) + 1)
        if text.startswith(token, i)
    )


def _in_url_body(ctx: Context, case: tuple[Any, ...]) -> None:
    """The base URL loads (with the drawn token; for ``host``, with a long token it does not
    hold); the URL holding the token is refused naming report.settings.token, and the
    message shows neither the token (as set or as encoded) nor the URL. For ``host``, the
    base URL with a slice of its host name as the token loads, unless the slice also
    occurs outside the scheme and host (then it is refused like any token in the URL)."""
    base, every, tok, place, encoded, mask, upper = case
    folder = ctx.folder(create=True)
    env = {TOKEN_ENV: tok, "HOME": "/nonexistent"}
    tables = {"paths": {"data": "data"}, "report": {"url": base, "every": every}}
    other = {**env, TOKEN_ENV: "0123456789abcdef-conformance"}  # not in any base URL
    out = ctx.ok("load_settings", _load(folder, tables, other if place == "host" else env))
    if out["url"] != base:
        raise Failed(f"loaded url {out['url']!r}, wrote {base!r}")
    if place == "host" and not (outside_host(base, tok) or outside_host(unquote(base), tok)):
        out = ctx.ok("load_settings", _load(folder, tables, env))  # part of the host: no leak
        if out["url"] != base:
            raise Failed(f"loaded url {out['url']!r}, wrote {base!r}")
        return
    shown = _encode(tok, mask, upper) if encoded else tok
    url = base if place == "host" else url_with_token(base, shown, place)
    tables = {"paths": {"data": "data"}, "report": {"url": url, "every": every}}
    result = ctx.refused("load_settings", _load(folder, tables, env), "report.settings.token")
    leaked = [
        name for name, text in (("the URL", url), ("the token", tok)) if text in result.message
    ]
    if place == "host":  # a short token may be part of any word of the message
        leaked = [name for name in leaked if name == "the URL"]
    elif encoded and shown in result.message:
        leaked.append("the encoded token")
    if leaked:
        raise Failed(f"the refusal shows {' and '.join(leaked)}: {result.message[:300]!r}")


URL_MISSING = ["no table", "not a table", "no url", "", "   "]
CA_MISSING = [
    "missing.pem",
    "/nonexistent/ca.pem",
    ".",
    "sub/ca.pem",
    "$REQUESTS_CA_BUNDLE",
    "$CURL_CA_BUNDLE",
]
"""A ca_bundle naming no PEM file; ``$NAME``: that CA variable in the environment given to
load_settings names no file or folder (spec/README.md, Settings)."""
BAD_EVERY = [0, 0.0, -0.0, True, False, "60", math.inf, -math.inf, math.nan, -1, -5e-324]
"""every at and below its bound, of the wrong type, not finite."""
BAD_TOML = ["[report\n", "url = \n", "= 1\n", "[report]\nx = 'a\n"]
BAD_TOKENS = [
    "unset",
    "in the file",
    "api_token in the file",
    "Auth in the file",
    "API-Key in the file",
    "held by another key",
    "",
    " ",
    "tok en",
    "tok\nen",
    "\ttok",
    "tök",
    "tok\x7f",
]
"""No token, one in the file (as token, under a key named like a secret, or as the value of
another key), and tokens with a character outside 0x21-0x7E."""


def _no_token(message: str, tok: str, variant: Any) -> str | None:
    """A token refusal never shows the token."""
    return "the token" if tok in message else None


UNKNOWN_KEYS = ["evry", "URL", "Every", "ca-bundle", "urls", "every_seconds", "colour", "report"]
"""Keys ``[report]`` does not have: misspelt, in another case, another separator, unknown."""
UNKNOWN_VALUE = "v4lue-of-an-unknown-key"


def _unknown(tables: dict, env: dict, variant: Any) -> tuple[dict, dict]:
    return {**tables, "report": {**tables["report"], variant: UNKNOWN_VALUE}}, env


def _unknown_shown(message: str, tok: str, variant: Any) -> str | None:
    """The refusal names the key, and shows neither its value nor the token."""
    if variant not in message:
        return f"no name of the key {variant!r} (it must name it)"
    if UNKNOWN_VALUE in message:
        return "the unknown key's value"
    return _no_token(message, tok, variant)


def _url_secrets(message: str, tok: str, variant: Any) -> str | None:
    """A refused URL is shown without its query values or fragment (``?api_key=***``)."""
    rest, _, fragment = variant.partition("#")
    query = rest.partition("?")[2]
    secrets = [part.partition("=")[2] or part for part in query.split("&")] + [fragment]
    leaked = [s for s in secrets if len(s) >= 4 and s in message]
    return f"the URL's query value or fragment {leaked[0]!r}" if leaked else None


BAD_URLS = [
    "http://example.org/api/runs",
    "http://10.1.2.3:8080/r",
    "http://128.0.0.1/r",
    "http://[::2]/r",
    "http://localhost.example.org/r",
    "reports.example.org/api/runs",
    "//reports.example.org/r",
    "ftp://reports.example.org/r",
    "https:///r",
    "https:/reports.example.org/r",
    " https://reports.example.org/r",
    "http://127.1/r",
    "http://0x7f.0.0.1/r",
    "http://2130706433/r",
    "http://0177.0.0.1/r",
    "http://127.0.0.%31/r",
    "http://[::ffff:127.0.0.1]/r",
    "http://[::1%25lo]/r",
    "https://reports.example.org\\api/runs",
    "https://reports%2Eexample.org/r",
    "http://example.org/api/runs?api_key=Q7s3cr3tQ&v=2#F7s3cr3tF",
    "ftp://reports.example.org/r?sig=Q7s3cr3tQ",
    "http://10.1.2.3:8080/r?Q7s3cr3tQ",
]
"""Plain http:// to a host that is not loopback (just past 127.0.0.0/8 and ::1), no scheme,
another scheme, no host written after "scheme://" (a WHATWG parser would find one), white
space around the URL; a loopback address written as only a resolver or a WHATWG parser
reads it (127.1, hexadecimal, one number, octal, a percent-escape, IPv4-mapped, with a
zone), a backslash (a WHATWG parser reads it as /) and an escape in the host: the host is
judged as written (spec/README.md, Settings). The last three carry a secret in their query
and fragment, which the refusal must not show."""


def _in_url_edges(t: Target) -> list[tuple[Any, ...]]:
    """The token in each place of the URL, as written, percent-encoded (lower and upper
    case); a slice of the host name alone (loads) and one that also occurs in the path."""
    base, tok = "https://reports.example.org/api/runs", "s3cr%t-T0k!"
    out: list[tuple[Any, ...]] = [(base, 60, tok, place, False, 0, False) for place in PLACES]
    out += [
        (base, 60, tok, place, True, 0b101, upper) for place in PLACES for upper in (False, True)
    ]
    out += [
        (base, 60, "example", "host", False, 0, False),
        (base, 60, "r", "host", False, 0, False),
    ]
    return out


def listed(
    rule: str, what: str, variants: list[Any], vary: Any, shown: Shown | None = None
) -> Check:
    """A check of ``rule`` through load_settings: valid settings changed by ``vary`` with
    each of ``variants`` are refused (showing nothing ``shown`` finds); every variant is
    tried first, then random draws."""
    return Check(
        rule,
        what,
        LOAD,
        lambda t: st.tuples(valid_settings(t), st.sampled_from(variants)),
        settings_check(rule, vary, shown),
        edges=_fixed(variants),
    )


def checks() -> list[Check]:
    """The settings checks."""

    def cases(variants: st.SearchStrategy[Any]) -> Callable[[Target], st.SearchStrategy[Any]]:
        return lambda t: st.tuples(valid_settings(t), variants)

    every = st.one_of(
        st.sampled_from(BAD_EVERY),
        st.integers(-(10**6), -1),
        st.floats(max_value=-1e-9, allow_nan=False, allow_infinity=False),
    )
    return [
        listed("report.settings.url_missing", "no url in paths.toml", URL_MISSING, _no_url),
        listed(
            "report.settings.url_scheme",
            "https://, or http:// only to localhost or a loopback IP",
            BAD_URLS,
            _url,
            _url_secrets,
        ),
        listed("report.settings.ca_bundle", "a ca_bundle that names no file", CA_MISSING, _ca),
        Check(
            "report.settings.every",
            "every is a finite number above 0",
            LOAD,
            cases(every),
            settings_check("report.settings.every", _every),
            edges=_fixed(BAD_EVERY),
        ),
        Check(
            "report.settings.toml",
            "paths.toml that is not valid TOML",
            LOAD,
            cases(st.sampled_from(BAD_TOML)),
            _toml_body,
            edges=_fixed(BAD_TOML),
        ),
        listed(
            "report.settings.token",
            "the token only from CORREAD_REPORT_TOKEN, printable ASCII without spaces",
            BAD_TOKENS,
            _token,
            _no_token,
        ),
        listed(
            "report.settings.unknown_key",
            "no key in [report] but url, every and ca_bundle",
            UNKNOWN_KEYS,
            _unknown,
            _unknown_shown,
        ),
        Check(
            "report.settings.token",
            "the token nowhere in the URL (user, password, path, query, fragment, encoded)",
            LOAD,
            _in_url_cases,
            _in_url_body,
            edges=_in_url_edges,
        ),
    ]
