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


def _failed_report(message: str) -> dict:
    state = training_state()
    state.error = {"type": "RuntimeError", "message": message}
    return build_report(state, event="failed", status="failed", seq=1, sent_at=local_time())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "DataLoader worker (pid(s) 12345, 12346) exited unexpectedly",
            "DataLoader worker (pid(s) <pid>, <pid>) exited unexpectedly",
        ),
        ("worker pid 123 died", "worker pid <pid> died"),
        ("pid 123", "pid <pid>"),
        ("pid=123", "pid=<pid>"),
        ("pid: 123", "pid: <pid>"),
        ("PID 123 killed", "PID <pid> killed"),
        ("killed (pid 123)", "killed (pid <pid>)"),
        ("process 123 exited", "process <pid> exited"),
        ("process id 123", "process id <pid>"),
        ("Process ID: 123", "Process ID: <pid>"),
        ("pids [123, 456] hung", "pids [<pid>, <pid>] hung"),
        ("processes 123 and 456 died", "processes <pid> and <pid> died"),
    ],
)
def test_every_common_form_of_a_process_id_is_scrubbed_and_checked(
    text: str, expected: str
) -> None:
    assert scrub_message(text, SECRETS) == expected
    found = privacy_problems(_failed_report(text), SECRETS)
    assert [p.path for p in found] == [("error", "message")]
    assert "process id" in found[0].message
    assert privacy_problems(_failed_report(expected), SECRETS) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cannot open /data", "cannot open .../data"),
        ("torch.load('/model.pt') failed", "torch.load('.../model.pt') failed"),
        ("[Errno 13] Permission denied: '/scratch'", "[Errno 13] Permission denied: '.../scratch'"),
        ("--out=/runs", "--out=.../runs"),
        ("C:/Users/bob/x.pt is missing", "...\\x.pt is missing"),
    ],
)
def test_one_part_absolute_paths_are_scrubbed_and_refused(text: str, expected: str) -> None:
    assert scrub_message(text, SECRETS) == expected
    assert privacy_problems(_failed_report(expected), SECRETS) == []
    report = _failed_report("m")
    report["config"]["device_name"] = text
    assert ["absolute path" in p.message for p in privacy_problems(report, SECRETS)] == [True]


@pytest.mark.parametrize(
    "text",
    [
        "shape 3/4 mismatch",
        "loss/acc went up",
        "a/b",
        "N/A",
        "+/- 2",
        "1 / 2",
        "see https://example.org/docs for help",
        "https://host/x",
        "POST http://127.0.0.1:8787/api/runs refused",
        "~/models/x.pt",
        ".../x.pt",
    ],
)
def test_text_that_is_not_an_absolute_path_is_left_as_it_is(text: str) -> None:
    assert scrub_message(text, SECRETS) == text
    report = _failed_report(text)
    report["config"]["device_name"] = text
    assert privacy_problems(report, SECRETS) == []


def test_short_user_names_are_scrubbed_as_whole_words() -> None:
    secrets = Secrets(token=TOKEN, home="/home/al", user="al", pid=48213)
    text = "user al may not write; alpha and pal stay"
    expected = "user <user> may not write; alpha and pal stay"
    assert scrub_message(text, secrets) == expected
    found = privacy_problems(_failed_report(text), secrets)
    assert [p.message for p in found] == ["names the user; scrub the message"]
    assert privacy_problems(_failed_report(expected), secrets) == []
    assert scrub_message("/home/al/x.pt as al", secrets) == "~/x.pt as <user>"


def test_a_one_character_user_name_is_scrubbed_only_as_a_path_part() -> None:
    secrets = Secrets(token=TOKEN, home="/srv/a", user="a", pid=48213)
    assert scrub_message("/srv/a/x.pt: a bad file", secrets) == "~/x.pt: a bad file"
    assert scrub_message("cannot read /home/a", secrets) == "cannot read .../<user>"
    assert scrub_message("copy models/a/x.pt", secrets) == "copy models/<user>/x.pt"
    assert privacy_problems(_failed_report("copy models/a/x.pt"), secrets)
    assert privacy_problems(_failed_report("a bad file, a b c"), secrets) == []


def test_a_failed_job_sends_no_worker_pid_short_user_or_one_part_path(
    receiver: ReportServer, monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    import getpass

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(getpass, "getuser", lambda: "al")
    state = training_state()
    reporter = Reporter(settings_for(receiver.url), state)
    with pytest.raises(RuntimeError), reporter:
        raise RuntimeError(
            "DataLoader worker (pid(s) 12345, 12346) exited unexpectedly; "
            "worker pid=777 could not open '/model.pt' as al"
        )
    sent = receiver.store.latest(state.run_id)
    assert sent["status"] == "failed"
    assert sent["error"]["message"] == (
        "DataLoader worker (pid(s) <pid>, <pid>) exited unexpectedly; "
        "worker pid=<pid> could not open '.../model.pt' as <user>"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cannot open file:///home/alice/data/x.pt", "cannot open file://~/data/x.pt"),
        ("loaded file:/home/alice/x.pt", "loaded file://~/x.pt"),
        ("url file://localhost/home/alice/x.pt", "url file://~/x.pt"),
        ("FILE:///home/alice", "FILE://~"),
        # Path.as_uri() percent-encodes: a space, or a user name like zoë or ali%63e
        ("file:///home/al%69ce/my%20run/x.pt failed", "file://~/my run/x.pt failed"),
        ("read file:///opt/data/alice/x.pt", "read file://.../x.pt"),
        ("read file:///data", "read file://.../data"),
        ("file:///C:/Users/bob/x.pt missing", "file://.../x.pt missing"),
        ("'file:///home/alicex/y.pt'", "'file://.../y.pt'"),
    ],
)
def test_file_urls_are_scrubbed_as_their_paths(text: str, expected: str) -> None:
    assert scrub_message(text, SECRETS) == expected
    assert privacy_problems(_failed_report(expected), SECRETS) == []
    report = _failed_report("m")
    report["config"]["device_name"] = text
    assert privacy_problems(report, SECRETS), "the check finds a file URL's path"


def test_a_file_url_in_a_failed_job_sends_neither_home_nor_user(
    receiver: ReportServer, monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    from pathlib import Path

    home = Path(tmp_path) / "zoë smith"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    state = training_state()
    with pytest.raises(OSError), Reporter(settings_for(receiver.url), state):
        raise OSError(f"cannot map {(home / 'runs' / 'x.pt').as_uri()}")
    sent = receiver.store.latest(state.run_id)
    assert sent["status"] == "failed"
    assert sent["error"]["message"] == "cannot map file://~/runs/x.pt"


@pytest.mark.parametrize(
    "written",
    [
        "tr-test-token-7f3a9c1e5b2d4f6a8c0e".replace("7f", "%37%66"),
        "tr-test-to%6Ben-7f3a9c1e5b2d4f6a8c0e",
        "tr-test-to%6ben-7f3a9c1e5b2d4f6a8c0e",
        "".join(f"%{ord(c):02X}" for c in "tr-test-token-7f3a9c1e5b2d4f6a8c0e"),
        "%74r-test-token-7f3a9c1e5b2d4f6a8c0e",
    ],
)
def test_a_percent_encoded_token_is_the_token(written: str) -> None:
    """In a URL of an error message: scrubbed, and found by the payload check."""
    assert TOKEN == "tr-test-token-7f3a9c1e5b2d4f6a8c0e"
    text = f"POST https://reports.example.org/r?t={written} failed"
    assert scrub_message(text, SECRETS) == "POST https://reports.example.org/r?t=<token> failed"
    [problem] = privacy_problems({"error": {"message": text}}, SECRETS)
    assert "token" in problem.message
