"""The Node diary writer refuses text that is not Unicode as the Python writer does
(``diary.text.surrogate``, tamper probe F3/F6): a string holding a lone surrogate, as a key
or a value at any depth, refuses its event and writes none of it. JS strings hold lone
surrogates too (the request's JSON carries them as ``\\ud800`` escapes); a character beyond
U+FFFF is a surrogate pair in a JS string and is text, in both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.typescript.node_harness import Harness, diary_lines, node_refuses, python_refuses
from trainrecord.diary import verify

pytestmark = pytest.mark.xdist_group("node")

START = {
    "event": "run_start",
    "name": "exp",
    "tool": "t 1",
    "model": "Net",
    "parameters": 1,
    "layers": ["fc"],
    "architecture_sha256": "0" * 64,
    "optimizer": None,
    "python": "3",
    "torch": None,
    "platform": "p",
    "config": None,
    "record_version": 1,
}
ERROR = {"event": "sink_error", "sink": "log", "error": "boom"}


@pytest.mark.parametrize(
    "extra",
    [
        {"model": "Net-\ud800"},
        {"x_note": "a\udc80"},
        {"config": {"\udc80\ud83d": 1}},  # a low before a high: two lone surrogates
        {"config": {"a": [1, {"b": "x\udfff"}]}},
        {"config": {"a": [{"\ud800": None}]}},
    ],
    ids=["model", "extra value", "key", "nested value", "nested key"],
)
@pytest.mark.parametrize("at", [0, 1])
def test_node_refuses_a_surrogate_as_python_does(
    harness: Harness, tmp_path: Path, extra: dict[str, Any], at: int
) -> None:
    events = [START, ERROR]
    events[at] = {**events[at], **extra}
    rules = {
        "python": python_refuses(tmp_path / "python", events),
        "node": node_refuses(harness, tmp_path / "node", events),
    }
    assert rules == {"python": ["diary.text.surrogate"], "node": ["diary.text.surrogate"]}
    assert diary_lines(tmp_path / "python") == diary_lines(tmp_path / "node") == at


def test_node_writes_text_beyond_the_bmp_and_python_verifies_it(
    harness: Harness, tmp_path: Path
) -> None:
    text = "\U0001f480 \ud7ff\ue000"
    events = [{**START, "model": text, "config": {text: [text]}}, ERROR]
    assert node_refuses(harness, tmp_path, events) is None
    result = verify(tmp_path, workers=1)
    assert result.ok and result.lines == 2, result.summary()
