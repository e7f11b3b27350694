"""The reference receiver against a client that means harm (security probe R1-R4): idle
or dripping connections cannot hold it for good nor take every descriptor, a body nested
just under the parser's limit or an integer past every bound gets an answer (400, 422)
instead of a dropped connection, and a refused token leaves a line in the log. Real
servers over loopback; each test failed before its fix."""

from __future__ import annotations

import json
import logging
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.report.test_receiver import AUTH, post, report
from trainrecord.report import ReportServer, ReportStore
from trainrecord.report import receiver as receiver_module


def _get(server: ReportServer) -> int:
    return requests.get(server.url + "/api/runs", headers=AUTH, timeout=5).status_code


def _connect(server: ReportServer) -> socket.socket:
    host, port = server.server_address[:2]
    return socket.create_connection((str(host), port), timeout=5)


def _closed(sock: socket.socket, within: float) -> bool:
    """Whether the server closed ``sock`` within ``within`` seconds (read gives b"")."""
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True


@pytest.fixture
def short_deadline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(receiver_module, "REQUEST_TIMEOUT_S", 1.0)
    monkeypatch.setattr(receiver_module, "MAX_PER_CLIENT", 4)
    yield


def test_a_client_dripping_its_request_is_cut_at_the_deadline(
    short_deadline: None, receiver: ReportServer
) -> None:
    """Before: each read waited 30 s, so a byte every 29 s held the connection for good."""
    sock = _connect(receiver)
    started = time.monotonic()
    cut = False
    for byte in b"GET /api/runs HTTP/1.1\r\nHost: x\r\n":  # never ends its head
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            cut = True
            break
        if _closed(sock, 0.3):
            cut = True
            break
    assert cut and time.monotonic() - started < 5
    assert _get(receiver) == 200


def test_idle_connections_of_one_client_cannot_take_the_server(
    short_deadline: None, receiver: ReportServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: one thread per connection and no cap: 124 idle connections took every
    descriptor and no client got an answer."""
    idle = [_connect(receiver) for _ in range(4)]
    time.sleep(0.2)
    extra = _connect(receiver)
    assert _closed(extra, 2.0)  # over the client's cap: closed at once, unread
    assert "connections refused" in caplog.text
    assert all(_closed(sock, 3.0) for sock in idle)  # cut at the deadline
    assert _get(receiver) == 200  # and the server answers again
    for sock in [*idle, extra]:
        sock.close()


@pytest.mark.parametrize("depth", [900, 960, 975, 980, 985, 995])
def test_a_body_nested_near_the_parsers_limit_is_answered(
    receiver: ReportServer, depth: int
) -> None:
    """Before: at 980 levels the parser took it and the validator died of RecursionError:
    the connection dropped, no answer."""
    doc = report()
    doc["config"]["pre_name"] = "DEEP"
    body = json.dumps(doc).replace('"DEEP"', "[" * depth + "]" * depth).encode()
    answer = post(receiver, body)
    assert answer.status_code in (400, 422), answer.status_code


@pytest.mark.parametrize("seq", [10**400, -(10**400), 2**53], ids=["10**400", "-10**400", "2**53"])
def test_an_integer_past_its_bound_is_422_whatever_its_size(
    receiver: ReportServer, seq: int
) -> None:
    """Before: 10**400 passed the schema's maximum (no float holds it) and the store's
    OverflowError dropped the connection."""
    answer = post(receiver, report(seq=seq))
    assert answer.status_code == 422
    assert [p["rule"] for p in answer.json()["problems"]] == ["report.seq.range"]


def test_a_refused_token_is_logged_without_it(
    receiver: ReportServer, caplog: pytest.LogCaptureFixture
) -> None:
    guess = "guess-0123456789"
    with caplog.at_level(logging.WARNING, logger="trainrecord.report.receiver"):
        answer = requests.post(
            receiver.url + "/api/runs\x1b[2J",
            data=b"{}",
            headers={**AUTH, "Authorization": f"Bearer {guess}"},
            timeout=5,
        )
    assert answer.status_code == 401
    [line] = [r.getMessage() for r in caplog.records if "refused POST" in r.getMessage()]
    assert "bad or missing bearer token" in line and "127.0.0.1" in line
    assert guess not in caplog.text and "\x1b" not in caplog.text


def test_a_new_store_is_private_and_never_made_through_a_link(tmp_path: Path) -> None:
    """Security probe R6: the database was made 0644 (every report readable by every user)
    and through a dangling --db link."""
    store = ReportStore(tmp_path / "r.sqlite")
    assert stat.S_IMODE((tmp_path / "r.sqlite").stat().st_mode) == 0o600
    assert store.runs(60.0) == []
    (tmp_path / "link.sqlite").symlink_to(tmp_path / "elsewhere.sqlite")
    with pytest.raises(OSError, match="is a symbolic link"):
        ReportStore(tmp_path / "link.sqlite")
    assert not (tmp_path / "elsewhere.sqlite").exists()


def test_a_kept_alive_connection_idle_past_its_wait_is_closed(
    receiver: ReportServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review: idle keep-alive connections (every client's session keeps one) counted
    against the per-address cap for the whole 30 s deadline, so jobs behind one NAT
    address filled it; a kept-alive connection now waits KEEPALIVE_IDLE_S for its next
    request."""
    monkeypatch.setattr(receiver_module, "KEEPALIVE_IDLE_S", 0.5)
    monkeypatch.setattr(receiver_module, "REQUEST_TIMEOUT_S", 5.0)
    sock = _connect(receiver)
    sock.sendall(b"GET /api/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ")
    sock.sendall(AUTH["Authorization"].split(" ", 1)[1].encode() + b"\r\n\r\n")
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(65536)
    head, _, body = answer.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(body) < length:  # the whole answer read: what follows is the close
        body += sock.recv(65536)
    assert b"200 OK" in head  # kept alive: now it waits for the next one
    started = time.monotonic()
    assert _closed(sock, 4.0) and time.monotonic() - started < 3.0
    sock.close()
