"""Usability probe fixes: serve setup errors, settings URL/TOML/token rules, and schema
problems listed once (each failed before its fix)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report.conftest import TOKEN, TLSFiles
from trainrecord import schemas
from trainrecord.errors import RecordRefused
from trainrecord.report.settings import load_settings


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CORREAD_REPORT_TOKEN": TOKEN}
    return subprocess.run(
        [sys.executable, "-m", "trainrecord.cli", "serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def one_line_usage_error(proc: subprocess.CompletedProcess[str]) -> str:
    err = proc.stderr.strip()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in err and "\n" not in err and TOKEN not in err, err
    return err


def test_serve_names_a_missing_cert_file(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    err = one_line_usage_error(serve("--db", str(db), "--cert", "nope.pem", "--key", "nope.pem"))
    assert "--cert nope.pem" in err and "no such file" in err and "None" not in err
    assert not db.exists()


def test_serve_swapped_cert_and_key_is_one_line(tmp_path: Path, tls: TLSFiles) -> None:
    db = tmp_path / "r.sqlite"
    err = one_line_usage_error(serve("--db", str(db), "--cert", tls.key, "--key", tls.cert))
    assert "--cert" in err and "--key" in err and "swapped" in err
    assert not db.exists()


def test_serve_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        db = tmp_path / "r.sqlite"
        env = {**os.environ, "CORREAD_REPORT_TOKEN": TOKEN}
        proc = subprocess.run(
            [sys.executable, "-m", "trainrecord.cli", "serve", "--port", port, "--db", str(db)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    err = one_line_usage_error(proc)
    assert f"--port {port}" in err and "already in use" in err
    assert not db.exists()


@pytest.mark.parametrize("where", ["folder", "missing folder", "under a file"])
def test_serve_db_that_cannot_be_a_file_is_one_line(tmp_path: Path, where: str) -> None:
    (tmp_path / "afile").write_text("x")
    db = {
        "folder": tmp_path,
        "missing folder": tmp_path / "nope" / "x.sqlite",
        "under a file": tmp_path / "afile" / "x.sqlite",
    }[where]
    err = one_line_usage_error(serve("--db", str(db)))
    assert f"--db {db}" in err
    assert not (tmp_path / "nope").exists()


@pytest.mark.parametrize("args", [["--host", "0.0.0.0"], ["--cert", "c.pem"], ["--key", "k.pem"]])
def test_a_refused_serve_creates_no_database(tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "left.sqlite"
    err = one_line_usage_error(serve("--db", str(db), *args))
    assert "report.server.plain_http_loopback" in err
    assert not db.exists() and list(tmp_path.iterdir()) == []


def _paths(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "paths.toml"
    path.write_text(f'[report]\nurl = "{url}"\nevery = 60\n', encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "url", ["https://exa mple.org/api/runs", "https://exa\tmple.org/r", "https://ex<a>.org/r"]
)
def test_a_url_with_a_bad_host_character_is_refused(tmp_path: Path, url: str) -> None:
    with pytest.raises(RecordRefused) as caught:
        load_settings(_paths(tmp_path, url), {"CORREAD_REPORT_TOKEN": TOKEN})
    assert caught.value.rule == "report.settings.url_scheme"
    assert caught.value.field == "report.url"


@pytest.mark.parametrize(
    "url", ["https://example.org/api/runs", "https://[::1]:8443/r", "http://127.0.0.1:8/r"]
)
def test_good_urls_still_load(tmp_path: Path, url: str) -> None:
    assert load_settings(_paths(tmp_path, url), {"CORREAD_REPORT_TOKEN": TOKEN}).url == url


def test_paths_toml_that_is_not_toml_has_its_own_rule(tmp_path: Path) -> None:
    path = tmp_path / "paths.toml"
    path.write_text("[report\nurl = 1\n", encoding="utf-8")
    with pytest.raises(RecordRefused) as caught:
        load_settings(path, {"CORREAD_REPORT_TOKEN": TOKEN})
    assert caught.value.rule == "report.settings.toml"
    assert "not valid TOML" in str(caught.value)


def test_the_token_in_the_url_is_refused_without_showing_it(tmp_path: Path) -> None:
    path = _paths(tmp_path, f"https://example.org/api/runs?token={TOKEN}")
    with pytest.raises(RecordRefused) as caught:
        load_settings(path, {"CORREAD_REPORT_TOKEN": TOKEN})
    assert caught.value.rule == "report.settings.token"
    assert caught.value.field == "report.url"
    assert TOKEN not in str(caught.value) and TOKEN not in repr(caught.value)


@pytest.mark.parametrize("doc", [{"kind": "training "}, {"kind": "trainig"}, {}])
def test_schema_problems_of_a_report_without_a_known_kind_are_listed_once(doc: dict) -> None:
    found = schemas.problems(doc, "https://trainrecord.dev/schemas/reporting/reporting.schema.json")
    keys = [(p.rule, p.path, p.message) for p in found]
    assert found and len(keys) == len(set(keys)), keys
    if "kind" in doc:
        assert found[0].rule == "report.kind.unknown"
        assert "training, lesion, wordset" in found[0].message
        assert sum(p.rule == "report.kind.unknown" for p in found) == 1
    else:
        assert (found[0].rule, found[0].path) == ("report.fields.missing", ("kind",))
