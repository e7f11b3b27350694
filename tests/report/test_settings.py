"""§1: turning reporting on with a missing or unsafe setting raises at once, naming the rule,
and never shows the token."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.report.conftest import TOKEN, TLSFiles, training_state
from trainrecord.errors import RecordRefused
from trainrecord.report import (
    ReportServer,
    ReportSettings,
    build_report,
    encode_report,
    load_settings,
    local_time,
    post_report,
)
from trainrecord.report.settings import is_loopback_host


def refused(rule: str, **kw: object) -> RecordRefused:
    args = {"url": "https://example.org/api/runs", "every": 60, "token": TOKEN, **kw}
    with pytest.raises(RecordRefused) as info:
        ReportSettings(**args)  # type: ignore[arg-type]
    assert info.value.rule == rule, str(info.value)
    assert TOKEN not in str(info.value)
    return info.value


@pytest.mark.parametrize(
    "url",
    [
        "https://example.org/api/runs",
        "https://example.org:8443/x?y=1",
        "http://localhost:8000/r",
        "http://127.0.0.1/r",
        "http://127.9.8.7:1/r",
        "http://[::1]:8080/r",
        "http://LOCALHOST/r",
    ],
)
def test_safe_urls_are_accepted(url: str) -> None:
    assert ReportSettings(url=url, every=60, token=TOKEN).url == url


@pytest.mark.parametrize(
    "url",
    [
        "http://example.org/api/runs",
        "http://10.0.0.1/r",
        "http://128.0.0.1/r",
        "http://localhost.example.org/r",
        "ftp://example.org/r",
        "example.org/api/runs",
        "https:///nohost",
        "http://[::2]/r",
    ],
)
def test_unsafe_urls_are_refused(url: str) -> None:
    refused("report.settings.url_scheme", url=url)


@pytest.mark.parametrize("url", ["https://alice:pw@example.org/r", "https://alice@example.org/r"])
def test_urls_with_credentials_are_refused_without_showing_them(url: str) -> None:
    exc = refused("report.settings.url_credentials", url=url)
    assert "pw" not in str(exc) and "alice" not in str(exc)


@pytest.mark.parametrize("url", [None, "", "   "])
def test_a_missing_url_is_refused(url: object) -> None:
    refused("report.settings.url_missing", url=url)


@pytest.mark.parametrize("every", [0, -1, float("nan"), float("inf"), True, "60", None])
def test_every_must_be_a_positive_number(every: object) -> None:
    refused("report.settings.every", every=every)


@pytest.mark.parametrize(
    "token", ["", None, "has space", "line\nbreak", "tab\there", "t\u00f6ken", "del\x7f", "nul\x00"]
)
def test_a_missing_or_unusable_token_is_refused(token: object) -> None:
    exc = refused("report.settings.token", token=token)
    if isinstance(token, str) and token:
        assert token not in str(exc)


def test_every_printable_ascii_character_but_space_is_a_token_character() -> None:
    token = "".join(chr(c) for c in range(0x21, 0x7F))
    assert ReportSettings(url="https://example.org/r", every=60, token=token).token == token


def test_the_token_is_not_in_the_repr() -> None:
    settings = ReportSettings(url="https://example.org/r", every=60, token=TOKEN)
    assert TOKEN not in repr(settings)


def test_a_missing_ca_bundle_is_refused() -> None:
    refused("report.settings.ca_bundle", ca_bundle="/nonexistent/ca.pem")


def test_a_ca_bundle_that_is_not_pem_certificates_is_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "ca.pem"
    garbage.write_text("not a certificate\n")
    refused("report.settings.ca_bundle", ca_bundle=str(garbage))


def test_a_ca_refusal_shows_the_path_as_given_with_home_and_token_scrubbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A docs probe: REQUESTS_CA_BUNDLE=/tmp/nothere/ca.pem was refused "(got 'ca.pem')", the
    value shown not the value set. The whole path is shown now; only the home folder (as
    ~) and the token are scrubbed, as in every other message."""
    toml = tmp_path / "paths.toml"
    toml.write_text('[report]\nurl = "https://example.org/r"\nevery = 60\n')
    home = tmp_path / "home" / "someone"
    monkeypatch.setenv("HOME", str(home))
    for given, shown in [
        ("/tmp/nothere/ca.pem", "'/tmp/nothere/ca.pem'"),
        ("/nonexist", "'/nonexist'"),
        ("certs/ca.pem", "'certs/ca.pem'"),
        (f"{home}/certs/ca.pem", "'~/certs/ca.pem'"),
        (f"/srv/{TOKEN}/ca.pem", "'/srv/<token>/ca.pem'"),
    ]:
        env = {"CORREAD_REPORT_TOKEN": TOKEN, "CURL_CA_BUNDLE": given}
        with pytest.raises(RecordRefused) as info:
            load_settings(toml, env=env)
        assert info.value.problems[0].value == shown, str(info.value)
        assert str(home) not in str(info.value) and TOKEN not in str(info.value)
    long = "/data/" + "x" * 300 + "/ca.pem"  # past 200 characters: the end is kept
    value = refused("report.settings.ca_bundle", ca_bundle=long).problems[0].value
    assert value is not None and value.endswith("xx/ca.pem'") and value.startswith("'...")
    value = refused("report.settings.ca_bundle", ca_bundle=str(home / "ca.pem")).problems[0].value
    assert value == "'~/ca.pem'"


def test_load_settings_reads_paths_toml_and_the_environment(tmp_path: Path) -> None:
    import trustme

    trustme.CA().cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    toml = tmp_path / "paths.toml"
    toml.write_text(
        '[report]\nurl = "https://example.org/api/runs"\nevery = 30\nca_bundle = "ca.pem"\n'
    )
    settings = load_settings(toml, env={"CORREAD_REPORT_TOKEN": TOKEN})
    assert (settings.url, settings.every, settings.token) == (
        "https://example.org/api/runs",
        30.0,
        TOKEN,
    )
    assert settings.ca_bundle == str(tmp_path / "ca.pem")
    assert settings.timeout == 10.0


def test_load_settings_without_the_token_variable_raises(tmp_path: Path) -> None:
    toml = tmp_path / "paths.toml"
    toml.write_text('[report]\nurl = "https://example.org/api/runs"\nevery = 60\n')
    with pytest.raises(RecordRefused) as info:
        load_settings(toml, env={})
    assert info.value.rule == "report.settings.token"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"REPORT_TOKEN": TOKEN}, "REPORT_TOKEN is set"),
        ({"TRAINRECORD_TOKEN": TOKEN}, "TRAINRECORD_TOKEN is set"),
        ({"my_report_api_token": TOKEN}, "my_report_api_token is set"),
        (
            {"REPORT_TOKEN": TOKEN, "TRAINRECORD_TOKEN": TOKEN, "CORREAD_REPORT_TOKEN": ""},
            "REPORT_TOKEN and TRAINRECORD_TOKEN are set",
        ),
        ({"TOKEN": TOKEN, "REPORT_URL": "x"}, None),
    ],
)
def test_a_missing_token_names_a_similar_variable_that_is_set_never_its_value(
    tmp_path: Path, env: dict[str, str], named: str | None
) -> None:
    # A newcomer probe exported TRAINRECORD_TOKEN or REPORT_TOKEN and got the same message
    # as with no token at all.
    toml = tmp_path / "paths.toml"
    toml.write_text('[report]\nurl = "https://example.org/api/runs"\nevery = 60\n')
    with pytest.raises(RecordRefused) as info:
        load_settings(toml, env=env)
    assert info.value.rule == "report.settings.token"
    message = str(info.value)
    assert TOKEN not in message and "\n" not in message
    if named is None:
        assert " is set" not in message
    else:
        assert message.endswith(
            f"({named}, but the token is read only from CORREAD_REPORT_TOKEN)"
        ), message


def test_a_token_in_paths_toml_is_refused_and_not_shown(tmp_path: Path) -> None:
    toml = tmp_path / "paths.toml"
    toml.write_text(f'[report]\nurl = "https://example.org/r"\nevery = 60\ntoken = "{TOKEN}"\n')
    with pytest.raises(RecordRefused) as info:
        load_settings(toml, env={"CORREAD_REPORT_TOKEN": TOKEN})
    assert info.value.rule == "report.settings.token"
    assert TOKEN not in str(info.value)


@pytest.mark.parametrize(
    "text",
    [b"", b"[paths]\nmodels = 'x'\n", b"[report\nurl=", b"[report]\nurl = '\xff\xfe'\n"],
    ids=["empty", "no-section", "not-toml", "not-utf8"],
)
def test_paths_toml_without_a_report_section_is_refused(tmp_path: Path, text: bytes) -> None:
    toml = tmp_path / "paths.toml"
    toml.write_bytes(text)
    with pytest.raises(RecordRefused) as info:
        load_settings(toml, env={"CORREAD_REPORT_TOKEN": TOKEN})
    broken = text in (b"[report\nurl=", b"[report]\nurl = '\xff\xfe'\n")
    assert info.value.rule == ("report.settings.toml" if broken else "report.settings.url_missing")
    assert "paths.toml" in str(info.value)


@pytest.mark.parametrize("name", ["nope.toml", "folder"])
def test_a_paths_toml_that_cannot_be_read_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A wrong name (or a folder) is a refusal naming the file where it was looked for and
    what to give instead, not a bare FileNotFoundError (a README probe)."""
    (tmp_path / "folder").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RecordRefused) as info:
        load_settings(name, env={"CORREAD_REPORT_TOKEN": TOKEN})
    assert info.value.rule == "report.settings.toml"
    message = str(info.value)
    assert str(tmp_path / name) in message
    assert ("does not exist" if name == "nope.toml" else "is a folder") in message
    assert "give the path of your paths.toml" in message
    assert TOKEN not in message


def test_loopback_hosts() -> None:
    assert all(map(is_loopback_host, ["localhost", "127.0.0.1", "127.255.0.1", "::1", "[::1]"]))
    assert not any(map(is_loopback_host, ["", None, "example.org", "10.0.0.1", "::2", "0.0.0.0"]))


def _https_paths_toml(tmp_path: Path, url: str) -> Path:
    toml = tmp_path / "paths.toml"
    toml.write_text(f'[report]\nurl = "{url}/api/runs"\nevery = 60\n')
    return toml


@pytest.mark.parametrize("variable", ["REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"])
def test_the_ca_bundle_variables_come_from_the_environment_given_to_load_settings(
    tmp_path: Path,
    https_receiver: ReportServer,
    tls: TLSFiles,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
) -> None:
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    toml = _https_paths_toml(tmp_path, https_receiver.url)
    settings = load_settings(toml, env={"CORREAD_REPORT_TOKEN": TOKEN, variable: tls.ca})
    assert settings.verify == tls.ca
    doc = build_report(
        training_state(), event="started", status="in progress", seq=1, sent_at=local_time()
    )
    assert post_report(settings, encode_report(doc)).ok  # real HTTPS, trusted by that CA
    assert https_receiver.store.latest(doc["run_id"]) == doc


def test_os_environ_is_not_read_when_load_settings_is_given_an_environment(
    tmp_path: Path,
    https_receiver: ReportServer,
    tls: TLSFiles,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", tls.ca)
    monkeypatch.setenv("CURL_CA_BUNDLE", tls.ca)
    toml = _https_paths_toml(tmp_path, https_receiver.url)
    settings = load_settings(toml, env={"CORREAD_REPORT_TOKEN": TOKEN})
    assert settings.verify is True  # the system's CAs: the given environment names none
    doc = build_report(
        training_state(), event="started", status="in progress", seq=1, sent_at=local_time()
    )
    outcome = post_report(settings, encode_report(doc))
    assert (outcome.ok, outcome.category) == (False, "tls")
    # Without an environment of its own, load_settings reads os.environ.
    monkeypatch.setenv("CORREAD_REPORT_TOKEN", TOKEN)
    assert load_settings(toml).verify == tls.ca


def test_an_empty_ca_variable_in_os_environ_is_unset_and_the_next_one_is_used(
    tmp_path: Path,
    https_receiver: ReportServer,
    tls: TLSFiles,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQUESTS_CA_BUNDLE, else CURL_CA_BUNDLE: the first one set and not empty. An empty
    REQUESTS_CA_BUNDLE (``export REQUESTS_CA_BUNDLE=``) does not hide CURL_CA_BUNDLE, read
    from os.environ when a report is sent (settings made without ca_environ)."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "")
    monkeypatch.setenv("CURL_CA_BUNDLE", tls.ca)
    settings = ReportSettings(url=f"{https_receiver.url}/api/runs", every=60, token=TOKEN)
    assert settings.verify == tls.ca
    doc = build_report(
        training_state(), event="started", status="in progress", seq=1, sent_at=local_time()
    )
    assert post_report(settings, encode_report(doc)).ok  # real HTTPS, trusted by that CA


def test_every_is_60_seconds_when_paths_toml_leaves_it_out(tmp_path: Path) -> None:
    """load_settings: [report] every is 60 when left out (the seed's example)."""
    toml = tmp_path / "paths.toml"
    toml.write_text('[report]\nurl = "https://example.org/api/runs"\n')
    assert load_settings(toml, env={"CORREAD_REPORT_TOKEN": TOKEN}).every == 60.0


def test_a_missing_ca_bundle_variable_is_refused_by_load_settings(tmp_path: Path) -> None:
    toml = _https_paths_toml(tmp_path, "https://example.org")
    env = {"CORREAD_REPORT_TOKEN": TOKEN, "REQUESTS_CA_BUNDLE": str(tmp_path / "nope.pem")}
    with pytest.raises(RecordRefused) as info:
        load_settings(toml, env=env)
    assert info.value.rule == "report.settings.ca_bundle"
    assert "REQUESTS_CA_BUNDLE" in str(info.value) and TOKEN not in str(info.value)
    (tmp_path / "paths.toml").write_text(
        '[report]\nurl = "https://example.org/r"\nevery = 60\nca_bundle = "ca.pem"\n'
    )
    import trustme

    trustme.CA().cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    settings = load_settings(tmp_path / "paths.toml", env=env)  # ca_bundle wins: unused
    assert settings.verify == str(tmp_path / "ca.pem")


@pytest.mark.parametrize(
    "url",
    [
        f"https://example.org/api/runs?token={TOKEN}",
        f"https://{TOKEN}@example.org/api/runs",
        f"https://user:{TOKEN}@example.org/api/runs",
        f"https://example.org/api/runs/{TOKEN}",
        "https://example.org/api/runs?t=" + "".join(f"%{ord(c):02X}" for c in TOKEN),
    ],
    ids=["query", "user", "password", "path", "percent-encoded"],
)
@pytest.mark.parametrize("way", ["ReportSettings", "load_settings"])
def test_the_token_in_the_url_is_refused_alike_however_settings_are_made(
    tmp_path: Path, url: str, way: str
) -> None:
    with pytest.raises(RecordRefused) as info:
        if way == "ReportSettings":
            ReportSettings(url=url, every=60, token=TOKEN)
        else:
            toml = tmp_path / "paths.toml"
            toml.write_text(f'[report]\nurl = "{url}"\nevery = 60\n', encoding="utf-8")
            load_settings(toml, env={"CORREAD_REPORT_TOKEN": TOKEN})
    [problem] = info.value.problems
    assert (problem.rule, problem.path) == ("report.settings.token", ("report", "url"))
    assert "remove it from the URL" in problem.message and "Authorization" in problem.message
    assert TOKEN not in str(info.value) and TOKEN not in repr(info.value)


@pytest.mark.parametrize(
    ("url", "token", "refused"),
    [
        ("https://test.example.org/api/runs", "test", False),  # part of the host
        ("https://example.org:8443/api/runs", "8443", False),  # the port
        ("https://example.org/api/runs", "ps", False),  # part of the scheme
        ("https://test.example.org/api/test", "test", True),  # and in the path: refused
        ("https://ab/cd@example.org/api", "ab/cd", True),  # user info cut by a "/"
        ("https://a@b@example.org/api", "b", True),  # user info up to the last "@"
    ],
)
def test_a_token_that_is_only_part_of_the_host_is_no_leak(
    url: str, token: str, refused: bool
) -> None:
    """A short test token inside the host name or scheme (``test`` in ``test.example.org``)
    was refused as if the URL held it, with a message saying so."""
    if refused:
        with pytest.raises(RecordRefused) as info:
            ReportSettings(url=url, every=60, token=token)
        assert info.value.rule == "report.settings.token"
    else:
        assert ReportSettings(url=url, every=60, token=token).url == url


def test_settings_say_every_problem_of_url_every_and_token_at_once() -> None:
    """API probe F12: ReportSettings('ftp://x', 'sixty', '') said the URL only; the every
    and token problems came one a try."""
    with pytest.raises(RecordRefused) as caught:
        ReportSettings("ftp://x", "sixty", "")  # type: ignore[arg-type]
    assert [p.rule for p in caught.value.problems] == [
        "report.settings.url_scheme",
        "report.settings.every",
        "report.settings.token",
    ]
