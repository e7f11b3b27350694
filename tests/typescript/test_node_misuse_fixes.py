"""The misuse probe's fixes hold in the Node implementation as in Python: report_status()
never raises with a token the server echoes (real TLS server on loopback), a refused URL is
shown without query values or fragment, a key [report] does not have is refused naming it
(and the closest known key, as difflib finds it), a token under any secret-like key is
refused without showing it. Each failed on Node before its fix."""

from __future__ import annotations

import difflib
import json
import random
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.report.conftest import TOKEN
from tests.report.servers import Behaviour, TestServer
from tests.typescript.node_harness import NODE_IMPL, Harness, require_node
from trainrecord.errors import RecordRefused
from trainrecord.report import load_settings
from trainrecord.report.settings import REPORT_KEYS, redact_url
from trainrecord_conformance import operations as python_ops
from trainrecord_conformance.checks.payload import base_state
from trainrecord_conformance.checks.reporting import _vector_reports

pytestmark = pytest.mark.xdist_group("node")


def _raw(harness: Harness, op: str, **payload: Any) -> dict[str, Any]:
    """The harness's whole answer (a refusal with its message)."""
    harness.seq += 1
    answer = harness.request({"cmd": "run", "seq": harness.seq, "op": op, "input": payload})
    assert answer.get("seq") == harness.seq and answer["outcome"] in ("ok", "refused"), answer
    return dict(answer)


@pytest.mark.parametrize(
    "body",
    [
        b"bad request; you sent Authorization: {auth}",
        b'{"headers": {"authorization": "{auth%}"}}',
        b"x" * 283 + b"{auth}",  # the token from character 290: across the 300 cut
    ],
    ids=["as-sent", "percent-encoded", "at-the-cut"],
)
def test_report_status_hides_an_echoed_token_in_node_as_in_python(
    harness: Harness, tls: tuple[str, Any], servers: list[TestServer], body: bytes
) -> None:
    ca, context = tls
    server = TestServer(Behaviour(status=500, body=body, mode="echo"), context)
    servers.append(server)
    state = {**base_state(_vector_reports()[0]), "running": False}
    sent = {"url": server.url + "/api/runs", "token": TOKEN, "state": state, "status": "stopped"}
    python = python_ops.report_status({**sent, "ca_file": ca})
    node = harness.run("report_status", **sent, ca_file=ca)
    assert len(server.requests) == 2
    assert all(r.header("Authorization") == f"Bearer {TOKEN}" for r in server.requests)
    for out in (python, node):
        assert out["raised"] is True and "HTTP 500" in out["message"]
        assert "<token>" in out["message"]
        for shown in (TOKEN, quote(TOKEN, safe=""), TOKEN[:10]):
            assert shown not in out["message"]
    assert node["message"] == python["message"]


def _load_both(harness: Harness, path: Path, env: dict[str, str]) -> tuple[Any, Any]:
    """(Python, Node): the rules and message of a refusal, or the loaded url."""
    try:
        python: Any = load_settings(path, env=env).url
    except RecordRefused as exc:
        python = (list(dict.fromkeys(exc.rules)), str(exc))
    answer = _raw(harness, "load_settings", path=str(path), env=env)
    node: Any = answer["output"]["url"] if answer["outcome"] == "ok" else None
    if answer["outcome"] == "refused":
        node = (answer["rules"], answer["message"])
    return python, node


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "http://example.org/api?api_key=APIKEYXYZ#frag-SECRET",
            "http://example.org/api?api_key=***#***",
        ),
        ("ftp://example.org/api?api_key=APIKEYXYZ&SECRET", "ftp://example.org/api?api_key=***&***"),
        ("http://10.1.2.3:8080/r?SECRET", "http://10.1.2.3:8080/r?***"),
    ],
)
def test_a_refused_url_is_shown_alike_without_its_secrets(
    harness: Harness, tmp_path: Path, url: str, shown: str
) -> None:
    path = tmp_path / "paths.toml"
    path.write_text(f'[report]\nurl = "{url}"\n', encoding="utf-8")
    python, node = _load_both(harness, path, {"CORREAD_REPORT_TOKEN": TOKEN})
    for rules, message in (python, node):
        assert rules == ["report.settings.url_scheme"]
        assert f"(got '{shown}')" in message
        assert "APIKEYXYZ" not in message and "SECRET" not in message


@pytest.mark.parametrize(
    ("lines", "rules", "named"),
    [
        ("evry = 5", ["report.settings.unknown_key"], ["'evry'", "did you mean 'every'?"]),
        ('URL = "x"', ["report.settings.unknown_key"], ["'URL'", "did you mean 'url'?"]),
        ('"ca-bundle" = "ca.pem"', ["report.settings.unknown_key"], ["did you mean 'ca_bundle'?"]),
        ("colour = 'blue'", ["report.settings.unknown_key"], ["'colour'"]),
        (f'api_token = "{TOKEN}"', ["report.settings.token"], ["'api_token'"]),
        ('Auth = "k-0123456789"', ["report.settings.token"], ["'Auth'"]),
        (f'note = "{TOKEN}"', ["report.settings.token"], ["'note'"]),
        (
            'evry = 5\nAPI-Key = "k-0123456789"',
            ["report.settings.unknown_key", "report.settings.token"],
            ["'evry'", "'API-Key'"],
        ),
    ],
)
def test_report_keys_are_refused_alike(
    harness: Harness, tmp_path: Path, lines: str, rules: list[str], named: list[str]
) -> None:
    path = tmp_path / "paths.toml"
    path.write_text(f'[report]\nurl = "https://example.org/api"\n{lines}\n', encoding="utf-8")
    python, node = _load_both(harness, path, {"CORREAD_REPORT_TOKEN": TOKEN})
    for got_rules, message in (python, node):
        assert got_rules == rules
        assert all(name in message for name in named), message
        for secret in (TOKEN, "k-0123456789", "blue", "ca.pem"):
            assert secret not in message


def _node_eval(script: str, data: Any) -> Any:
    """Run ``script`` (a function body of ``settings`` and ``data``) in Node; its result."""
    code = (
        "const settings = require('./lib/settings');"
        "const data = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        f"process.stdout.write(JSON.stringify((() => {{ {script} }})()));"
    )
    out = subprocess.run(
        [require_node(), "-e", code],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        cwd=NODE_IMPL,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout)


def test_redact_url_and_the_closest_key_agree_with_python() -> None:
    """spec/README.md, Settings: the same plain string rules and difflib's choice, on
    random text over the characters that matter (3000 URLs, 3000 keys)."""
    rng = random.Random(20250)
    url_chars = ":/?#@&=ab%."
    urls = [
        rng.choice(["", "https://", "http://", "ftp://", "x:"])
        + "".join(rng.choice(url_chars) for _ in range(rng.randint(0, 24)))
        for _ in range(3000)
    ]
    key_chars = "urlevyca_b-RLE"
    keys = ["".join(rng.choice(key_chars) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    node = _node_eval(
        "return [data.urls.map(settings.redactUrl), data.keys.map(settings.closeMatch)];",
        {"urls": urls, "keys": keys},
    )
    python_urls = [redact_url(u) for u in urls]
    python_keys = [
        (difflib.get_close_matches(k.lower(), REPORT_KEYS, n=1) or [None])[0] for k in keys
    ]
    assert [(u, p) for u, p, n in zip(urls, python_urls, node[0], strict=True) if p != n] == []
    assert [(k, p) for k, p, n in zip(keys, python_keys, node[1], strict=True) if p != n] == []


def test_a_ca_refusal_shows_the_path_as_python_does(harness: Harness, tmp_path: Path) -> None:
    # Node showed only the file name ('ca.pem' for /tmp/nothere/ca.pem), as Python did
    # before 45afe7c; both show the path as given now, the token scrubbed, the end of a long one
    toml = tmp_path / "paths.toml"
    toml.write_text('[report]\nurl = "https://example.org/r"\nevery = 60\n')
    for given in ("/tmp/nothere/ca.pem", "certs/ca.pem", f"/srv/{TOKEN}/ca.pem", "/d/" + "x" * 300):
        env = {"CORREAD_REPORT_TOKEN": TOKEN, "CURL_CA_BUNDLE": given}
        with pytest.raises(RecordRefused) as info:
            load_settings(toml, env=env)
        shown = info.value.problems[0].value
        assert shown is not None and shown.startswith("'") and shown.endswith("'")
        answer = _raw(harness, "load_settings", path=str(toml), env=env)
        assert answer["outcome"] == "refused" and answer["rules"] == ["report.settings.ca_bundle"]
        assert answer["message"].endswith(f"({shown[1:-1]})"), (answer["message"], shown)
        assert TOKEN not in answer["message"]
