"""Fixes from the misuse probe (/tmp/probe_misuse): a secret never reaches a message or a
log, a misspelt or secret key in paths.toml is refused instead of ignored, and a wrong
argument to the Reporter is a TypeError naming it. Real files, real servers over loopback
(TLS where the token travels); each test failed before its fix, except where it says it
pins a decision."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests

from tests.report.conftest import TOKEN, TLSFiles, settings_for, training_state
from tests.report.servers import Behaviour, TestServer
from trainrecord.errors import RecordRefused
from trainrecord.report import (
    JobState,
    Reporter,
    ReportNotDelivered,
    ReportServer,
    config,
    epoch_entry,
    load_settings,
    open_run,
    report_status,
    validation_entry,
)
from trainrecord.report.privacy import scrub_token
from trainrecord.report.settings import redact_url


@pytest.fixture
def echoing(tls: TLSFiles) -> Iterator[Callable[[int, bytes], TestServer]]:
    started: list[TestServer] = []

    def start(status: int, body: bytes) -> TestServer:
        server = TestServer(Behaviour(status=status, body=body, mode="echo"), tls.context)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


# ------------------------------------------------------------------ 1. report_status()


@pytest.mark.parametrize(
    "body",
    [
        b"bad request; you sent Authorization: {auth}",
        b'{"error": "denied", "headers": {"authorization": "{auth%}"}}',
        b"x" * 283 + b"{auth}",  # "Bearer " then the token from character 290: the cut
    ],
    ids=["as-sent", "percent-encoded", "at-the-cut"],
)
def test_report_status_never_raises_with_the_token_a_server_echoes(
    echoing: Callable[[int, bytes], TestServer], tls: TLSFiles, body: bytes
) -> None:
    server = echoing(500, body)
    with pytest.raises(ReportNotDelivered) as info:
        report_status(settings_for(server.url, ca=tls.ca), training_state(), "stopped")
    assert server.requests and server.requests[0].header("Authorization") == f"Bearer {TOKEN}"
    message = str(info.value)
    assert info.value.status == 500 and "HTTP 500" in message
    for shown in (message, info.value.body, info.value.outcome.body):
        assert TOKEN not in shown and quote(TOKEN, safe="") not in shown
        assert TOKEN[:10] not in shown  # not even the part before a cut
    assert "<token>" in info.value.body
    assert len(info.value.body) <= 300


def test_the_body_is_scrubbed_before_it_is_cut() -> None:
    text = "x" * 295 + TOKEN + " tail"
    assert scrub_token(text, TOKEN)[:300] == "x" * 295 + "<toke"
    assert scrub_token(text.replace("t", "%74"), TOKEN).startswith("x" * 295 + "<token>")
    assert scrub_token("no token here", TOKEN) == "no token here"
    assert scrub_token("anything", None) == "anything"


def test_the_reporters_warning_never_holds_the_token_a_server_echoes(
    echoing: Callable[[int, bytes], TestServer], tls: TLSFiles, caplog: pytest.LogCaptureFixture
) -> None:
    """The sender warns with the outcome's message (never the body); pinned here."""
    server = echoing(500, b"echo: {auth} {auth%}")
    caplog.set_level(logging.INFO, logger="trainrecord")
    with Reporter(settings_for(server.url, ca=tls.ca), training_state()) as reporter:
        reporter.started()
    assert server.requests
    assert "the server failed (HTTP 500)" in caplog.text
    assert TOKEN not in caplog.text and quote(TOKEN, safe="") not in caplog.text


@pytest.mark.parametrize("encoded", [False, True], ids=["as-written", "percent-encoded"])
def test_the_receivers_log_never_holds_its_token_from_a_request_line(
    https_receiver: ReportServer, tls: TLSFiles, caplog: pytest.LogCaptureFixture, encoded: bool
) -> None:
    """A client that puts the token in the URL: `trainrecord serve` logs each request line."""
    caplog.set_level(logging.INFO, logger="trainrecord.report.receiver")
    shown = "".join(f"%{ord(c):02X}" for c in TOKEN) if encoded else TOKEN
    answer = requests.post(
        f"{https_receiver.url}/api/runs?token={shown}",
        data=b"{}",
        headers={"Content-Type": "application/json"},
        verify=tls.ca,
        timeout=10,
    )
    assert answer.status_code == 401
    assert "/api/runs?token=<token>" in caplog.text
    assert TOKEN not in caplog.text and shown not in caplog.text


# ------------------------------------------------------------------ 3. URLs in refusals


def _paths_toml(tmp_path: Path, report: str) -> Path:
    path = tmp_path / "paths.toml"
    path.write_text(f"[paths]\ndata = 'data'\n\n[report]\n{report}", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "http://example.org/api?api_key=APIKEYXYZ#frag-SECRET",
            "'http://example.org/api?api_key=***#***'",
        ),
        (
            "ftp://example.org/api?api_key=APIKEYXYZ&SECRET",
            "'ftp://example.org/api?api_key=***&***'",
        ),
        ("http://10.1.2.3:8080/r?sig=SECRET&v=2", "'http://10.1.2.3:8080/r?sig=***&v=***'"),
    ],
)
def test_a_refused_url_shows_no_query_value_or_fragment(
    tmp_path: Path, url: str, shown: str
) -> None:
    path = _paths_toml(tmp_path, f'url = "{url}"\nevery = 60\n')
    with pytest.raises(RecordRefused) as info:
        load_settings(path, env={"CORREAD_REPORT_TOKEN": TOKEN})
    assert info.value.rule == "report.settings.url_scheme"
    message = str(info.value)
    assert "APIKEYXYZ" not in message and "SECRET" not in message
    assert f"(got {shown})" in message  # scheme, host and path stay: what to fix


def test_a_url_without_scheme_and_host_is_not_shown(tmp_path: Path) -> None:
    path = _paths_toml(tmp_path, 'url = "reporter:SECRET@example.org/api"\n')
    with pytest.raises(RecordRefused) as info:
        load_settings(path, env={"CORREAD_REPORT_TOKEN": TOKEN})
    assert info.value.rule == "report.settings.url_scheme"
    assert "SECRET" not in str(info.value) and "(got" not in str(info.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "https://user:hunter2@host:8443/a/b?x=1&y#z",
            "https://user:***@host:8443/a/b?x=***&***#***",
        ),
        ("https://tok123@host/a", "https://***@host/a"),
        ("https://a@b:c@host/p@q?r=s@t", "https://a@b:***@host/p@q?r=***"),
        ("https://host/api/runs", "https://host/api/runs"),
        ("https://host/a?", "https://host/a?"),
        ("https://host/a#", "https://host/a#"),
        ("https://host/a?&=v&k=", "https://host/a?&=***&k=***"),
        ("host/a?x", "host/a?***"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


# ------------------------------------------------------------------ 4. paths.toml keys


@pytest.mark.parametrize(
    ("key", "closest"),
    [("evry", "every"), ("URL", "url"), ("ca-bundle", "ca_bundle"), ("colour", None)],
)
def test_an_unknown_report_key_is_refused_naming_the_closest_known_key(
    tmp_path: Path, key: str, closest: str | None
) -> None:
    path = _paths_toml(tmp_path, f'url = "https://example.org/api"\n"{key}" = "VALUE-5"\n')
    with pytest.raises(RecordRefused) as info:
        load_settings(path, env={"CORREAD_REPORT_TOKEN": TOKEN})
    assert info.value.rules == ["report.settings.unknown_key"]
    assert info.value.problems[0].path == ("report", key)
    message = str(info.value)
    assert f"no key {key!r}" in message and "url, every, ca_bundle" in message
    assert "VALUE-5" not in message
    assert (f"did you mean {closest!r}?" in message) if closest else "did you mean" not in message


def test_every_unknown_key_is_listed_at_once(tmp_path: Path) -> None:
    path = _paths_toml(
        tmp_path, 'url = "https://example.org/api"\nevry = 5\napi_token = "x1"\nurll = "y"\n'
    )
    with pytest.raises(RecordRefused) as info:
        load_settings(path, env={"CORREAD_REPORT_TOKEN": TOKEN})
    assert [(p.rule, p.path[-1]) for p in info.value.problems] == [
        ("report.settings.unknown_key", "evry"),
        ("report.settings.token", "api_token"),
        ("report.settings.unknown_key", "urll"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        f'api_token = "{TOKEN}"',
        'API-Key = "k-0123456789"',
        'auth = "Bearer k-0123456789"',
        'bearer_token = "k-0123456789"',
        'password = "k-0123456789"',
        f'note = "{TOKEN}"',  # any key holding the token's value
        'Token = "k-0123456789"',
    ],
)
def test_a_token_in_paths_toml_under_any_name_is_refused_without_showing_it(
    tmp_path: Path, line: str
) -> None:
    path = _paths_toml(tmp_path, f'url = "https://example.org/api"\nevery = 60\n{line}\n')
    with pytest.raises(RecordRefused) as info:
        load_settings(path, env={"CORREAD_REPORT_TOKEN": TOKEN})
    assert info.value.rules == ["report.settings.token"]
    message = str(info.value)
    assert TOKEN not in message and "k-0123456789" not in message
    assert "CORREAD_REPORT_TOKEN" in message


def test_a_tiny_every_is_allowed(tmp_path: Path) -> None:
    """Decision (spec/README.md, Settings): no bound but finite and > 0; pinned."""
    path = _paths_toml(tmp_path, 'url = "https://example.org/api"\nevery = 1e-9\n')
    assert load_settings(path, env={"CORREAD_REPORT_TOKEN": TOKEN}).every == 1e-9


# ------------------------------------------------------------------ 5. Reporter arguments


@pytest.mark.parametrize("state", [None, {"kind": "training"}, "pre_s_49"])
def test_a_reporter_without_a_job_state_is_a_type_error_naming_it(state: object) -> None:
    settings = settings_for("http://127.0.0.1:9/api")
    with pytest.raises(
        TypeError, match=r"^Reporter\(state=\.\.\.\): state must be the JobState .*run\.job_state"
    ) as info:
        Reporter(settings, state)  # type: ignore[arg-type]
    assert f"got {type(state).__name__}" in str(info.value)
    with pytest.raises(
        TypeError, match=r"^report_status\(state=\.\.\.\): state must be the JobState"
    ):
        report_status(settings, state, "stopped")  # type: ignore[arg-type]
    with pytest.raises(
        TypeError,
        match=r"^report_status\(settings=\.\.\.\): settings must be a ReportSettings .*got dict",
    ):
        report_status({"url": "x"}, training_state(), "stopped")  # type: ignore[arg-type]


def test_a_reporter_refused_for_its_state_undoes_the_new_runs_folder(tmp_path: Path) -> None:
    folder = tmp_path / "models" / "pre_s_49"
    run = open_run(folder, {"mode": "pre"})
    assert run.created
    with pytest.raises(TypeError, match="state must be"):
        Reporter(settings_for("http://127.0.0.1:9/api"), None, run=run)  # type: ignore[arg-type]
    assert not (tmp_path / "models").exists()


@pytest.mark.parametrize(
    "call",
    [
        lambda run: run.job_state("train", {"mode": "pre"}, epochs_first=0, epochs_total=5),
        lambda run: config("train", lr=0.1),
        lambda run: epoch_entry("Training", epoch=0),
        lambda run: validation_entry("words", loss=1.0),
        lambda run: JobState(kind="train", run_id=run.run_id, name="n", group="g", config={}),
    ],
)
def test_an_unknown_kind_is_one_problem_where_it_is_given(
    tmp_path: Path, call: Callable[[Any], Any]
) -> None:
    """Newcomer probe: job_state("train", ...) returned, then the Reporter refused it with 48
    problems (every field of a kind it could not know); config("train") was a KeyError."""
    run = open_run(tmp_path / "models" / "pre" / "s1", {"mode": "pre"})
    with pytest.raises(RecordRefused) as caught:
        call(run)
    assert [p.rule for p in caught.value.problems] == ["report.kind.unknown"]
    assert "training, lesion, wordset" in str(caught.value)
