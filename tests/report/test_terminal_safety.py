"""The report client shows text from outside the process escaped
(:func:`trainrecord.errors.escaped`): the start of a server's answer in
``ReportNotDelivered``'s message, and the names of environment variables in the missing-token
refusal. A server answering with ESC [2J, or a variable named with one, could clear the
terminal that shows the traceback. A real HTTP server and a real process environment; fail
before the fix."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.report.conftest import settings_for, training_state
from tests.report.servers import Behaviour, TestServer
from trainrecord.report import ReportNotDelivered, report_status

BAD = "\x1b[2J\u202e\x85"
SHOWN = "\\x1b[2J\\u202e\\x85"


def test_the_servers_answer_is_shown_escaped_and_kept_as_sent(
    hostile: Callable[..., TestServer],
) -> None:
    server = hostile(Behaviour(status=503, body=f"down{BAD}for maintenance".encode()))
    with pytest.raises(ReportNotDelivered) as info:
        report_status(settings_for(server.url), training_state(), "stopped")
    message = str(info.value)
    assert message.endswith(f"; server said: down{SHOWN}for maintenance"), message
    assert not {"\x1b", "\u202e", "\x85"} & set(message)
    assert info.value.body == f"down{BAD}for maintenance"  # the answer as the server sent it


def test_a_variable_named_like_the_token_is_named_escaped(tmp_path: Path) -> None:
    toml = tmp_path / "paths.toml"
    toml.write_text('[report]\nurl = "https://example.org/api/runs"\nevery = 60\n')
    script = textwrap.dedent(f"""
        from trainrecord.errors import RecordRefused
        from trainrecord.report import load_settings
        try:
            load_settings({str(toml)!r})
        except RecordRefused as exc:
            print(exc)
    """)
    env = {k: v for k, v in os.environ.items() if k != "CORREAD_REPORT_TOKEN"}
    env[f"MY{BAD}_REPORT_TOKEN"] = "not-shown-value"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, env=env)
    out = done.stdout.decode("utf-8")
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert f"(MY{SHOWN}_REPORT_TOKEN is set, but the token is read only from" in out, out
    assert not {"\x1b", "\u202e", "\x85"} & set(out) and "not-shown-value" not in out
