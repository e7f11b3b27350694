"""§7: the token, absolute paths, the home folder, the user name and the process id never
reach a report; error messages are scrubbed (home folder -> ~) and cut to 500 characters."""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.report.conftest import TOKEN, settings_for, training_epoch, training_state
from trainrecord.errors import RecordRefused
from trainrecord.report import (
    Reporter,
    ReportServer,
    Secrets,
    build_report,
    error_info,
    local_time,
    privacy_problems,
    scrub_message,
)

SECRETS = Secrets(token=TOKEN, home="/home/alice", user="alice", pid=48213)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "No such file: /home/alice/models/pre/pre_s_49/ckpt.pt",
            "No such file: ~/models/pre/pre_s_49/ckpt.pt",
        ),
        ("cannot open '/home/alice'", "cannot open '~'"),
        ("disk full on /data/runs/pre_s_49/epoch_3.pt", "disk full on .../epoch_3.pt"),
        (r"missing C:\Users\bob\models\x.pt", r"missing ...\x.pt"),
        ("user alice may not write", "user <user> may not write"),
        ("token tr-test-token-7f3a9c1e5b2d4f6a8c0e rejected", "token <token> rejected"),
        ("worker pid 48213 died", "worker pid <pid> died"),
        ("process 999 exited", "process <pid> exited"),
        ("killed 48213", "killed <pid>"),
        ("/home/alicex/data is another user's", ".../data is another user's"),
        (
            "CUDA out of memory. Tried to allocate 2.00 GiB ...",
            "CUDA out of memory. Tried to allocate 2.00 GiB ...",
        ),
        (
            "see https://example.org/docs/errors for help",
            "see https://example.org/docs/errors for help",
        ),
        ("shape 3/4 mismatch", "shape 3/4 mismatch"),
        ("malice aforethought", "malice aforethought"),
    ],
)
def test_scrub_message(text: str, expected: str) -> None:
    assert scrub_message(text, SECRETS) == expected


def test_messages_are_cut_to_500_characters() -> None:
    out = scrub_message("e" * 2000, SECRETS)
    assert len(out) == 500 and out.endswith("…")
    info = error_info(RuntimeError("x" * 900), SECRETS)
    assert info == {"type": "RuntimeError", "message": "x" * 499 + "…"}


def test_the_real_home_folder_and_user_are_scrubbed_by_default() -> None:
    home = os.path.expanduser("~")
    message = error_info(FileNotFoundError(f"{home}/models/ckpt.pt missing"))["message"]
    if home not in ("/", ""):
        assert home not in message and message.startswith("~/models/ckpt.pt")


@pytest.mark.parametrize(
    ("path", "value", "why"),
    [
        (("name",), "pre_s_49 tr-test-token-7f3a9c1e5b2d4f6a8c0e", "token"),
        (("config", "model_class"), "/home/alice/nets/CORnetS", "home folder"),
        (("config", "device_name"), "/dev/nvidia0/x", "absolute path"),
        (("error", "message"), "alice broke it", "user"),
        (("error", "message"), "pid 48213", "process id"),
    ],
)
def test_privacy_problems_find_each_secret(path: tuple, value: str, why: str) -> None:
    state = training_state()
    state.error = {"type": "E", "message": "m"}
    report = build_report(state, event="failed", status="failed", seq=1, sent_at=local_time())
    node = report
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    found = privacy_problems(report, SECRETS)
    assert found and {p.rule for p in found} == {"report.privacy.secrets"}
    assert why.split()[0] in " ".join(p.message for p in found)
    assert all(TOKEN not in str(p) for p in found)


def test_a_failed_job_sends_no_secret(
    receiver: ReportServer, monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    home = str(tmp_path)
    monkeypatch.setenv("HOME", home)
    secrets = Secrets(token=TOKEN)
    assert secrets.home == home
    pid = os.getpid()
    state = training_state()
    reporter = Reporter(settings_for(receiver.url), state)
    with pytest.raises(OSError), reporter:
        reporter.epoch_end(training_epoch(0))
        raise OSError(
            f"[Errno 28] No space left: '{home}/models/pre/pre_s_49/epoch_1.pt' "
            f"(pid {pid}, user {secrets.user}, token {TOKEN}, /srv/data/x.pt)"
        )
    sent = receiver.store.latest(state.run_id)
    text = json.dumps(sent)
    assert sent["status"] == "failed"
    assert TOKEN not in text and home not in text
    assert not re.search(rf"(?<!\d){pid}(?!\d)", text)
    if secrets.user_usable():
        assert not re.search(rf"\b{re.escape(secrets.user)}\b", sent["error"]["message"])
    assert "~/models/pre/pre_s_49/epoch_1.pt" in sent["error"]["message"]
    assert ".../x.pt" in sent["error"]["message"]


def test_a_config_with_a_path_is_refused_before_work_starts(receiver: ReportServer) -> None:
    state = training_state()
    state.config = {**state.config, "wordset": "/home/alice/wordsets/english"}
    with pytest.raises(RecordRefused) as info:
        Reporter(settings_for(receiver.url), state)
    assert info.value.rule == "report.privacy.secrets"
    assert receiver.store.runs() == []
