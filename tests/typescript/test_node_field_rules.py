"""The Node implementation refuses, before sending, the reports that break the consistency
rules tying a report's fields to its config (report.consistency.no_words, pre_name,
history_order, word_channel, mean_word_activation_lesioned, word_selective_lesioned), with
the rules Python's consistency_problems names, and sends the consistent neighbours of each.
Failed before Node had the rules: it sent every one of them."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.report.conftest import (
    lesion_epoch,
    lesion_state,
    training_epoch,
    training_state,
)
from tests.typescript.node_harness import Harness
from trainrecord.report import JobState, build_report, consistency_problems, local_time

TOKEN = "tok-0123456789abcdef"


def _training(mode: str = "pre", epochs: tuple[int, ...] = (0,), **entry: Any) -> JobState:
    state = training_state(history=[{**training_epoch(n), **entry} for n in epochs])
    state.config = {**state.config, "mode": mode}
    return state


def _lesion(units: list[int], epochs: tuple[int, ...] = (80,), **change: Any) -> JobState:
    entry = {k: v for k, v in change.items() if k in lesion_epoch(0)}
    state = lesion_state(history=[{**lesion_epoch(n), **entry} for n in epochs])
    cfg = {k: v for k, v in change.items() if k not in entry}
    state.config = {**state.config, "lesioned_units": units, **cfg}
    return state


CASES: dict[str, tuple[Callable[[], JobState], Callable[[], JobState]]] = {
    "no_words": (
        lambda: _training(train_loss_words=0.3),
        lambda: _training("lit_bias", train_loss_words=0.3),
    ),
    "no_words_illit": (
        lambda: _training("illit", val_accuracy_words=60.0),
        lambda: _training("lit_no_bias", val_accuracy_words=60.0),
    ),
    "pre_name": (
        lambda: _set(_training(), pre_name="pre_s_49"),
        lambda: _set(_training("illit"), pre_name="pre_s_49"),
    ),
    "history_order": (lambda: _training(epochs=(0, 0)), lambda: _training(epochs=(0, 2))),
    "history_order_newest_first": (
        lambda: _training(epochs=(2, 1)),
        lambda: _training(epochs=(1, 2)),
    ),
    "word_channel": (
        lambda: _lesion([3, 17, 463], source_mode="lit_no_bias"),
        lambda: _lesion([3, 17, 463], source_mode="lit_no_bias", word_channel=None),
    ),
    "mean_word_activation_lesioned": (
        lambda: _lesion([], word_selective_lesioned=0),
        lambda: _lesion([], word_selective_lesioned=0, mean_word_activation_lesioned=None),
    ),
    "word_selective_lesioned": (
        lambda: _lesion([3], word_selective_lesioned=2),
        lambda: _lesion([3], word_selective_lesioned=1),
    ),
}


def _set(state: JobState, **cfg: Any) -> JobState:
    state.config = {**state.config, **cfg}
    return state


class _Recorder(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.seen += 1  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Any]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    srv.seen = 0  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _build(state: JobState) -> dict[str, Any]:
    return build_report(state, event="epoch_end", status="in progress", seq=1, sent_at=local_time())


@pytest.mark.parametrize("case", list(CASES))
def test_node_refuses_a_report_breaking_a_field_rule_as_python(
    harness: Harness, server: Any, case: str
) -> None:
    breaking, neighbour = (_build(make()) for make in CASES[case])
    rule = "report.consistency." + case.removesuffix("_illit").removesuffix("_newest_first")
    assert sorted({p.rule for p in consistency_problems(breaking)}) == [rule]
    assert consistency_problems(neighbour) == []
    url = f"http://127.0.0.1:{server.server_address[1]}/api/runs"
    got = harness.run("send_report", url=url, token=TOKEN, report=breaking)
    assert got.get("refused") and sorted(set(got["rules"])) == [rule], got
    assert server.seen == 0
    got = harness.run("send_report", url=url, token=TOKEN, report=neighbour)
    assert got == {"delivered": True, "status": 200}
    assert server.seen == 1
