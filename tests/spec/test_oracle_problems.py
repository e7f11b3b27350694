"""The oracle's problems for an instance of no branch of a discriminated oneOf (API probe
F5): a wrong or missing ``event``/``kind`` listed every other branch's required fields
(85 lines for one diary line, 65 for a report, where pydantic gives one). Now the
discriminator's problem comes first and only what every branch says follows; an integer
no float holds is held to its bounds. Real schemas; each test failed before."""

from __future__ import annotations

from typing import Any

import pytest

from tests.report.conftest import training_state
from trainrecord.report import build_report, local_time
from trainrecord.schemas import problems

LINE = "https://trainrecord.dev/schemas/diary/known-line.schema.json"
REPORT = "https://trainrecord.dev/schemas/reporting/reporting.schema.json"


def _report(**over: Any) -> dict[str, Any]:
    doc = build_report(
        training_state(), event="started", status="in progress", seq=1, sent_at=local_time()
    )
    doc.update(over)
    return {k: v for k, v in doc.items() if v is not Ellipsis}


def test_a_diary_line_of_an_unknown_event_gets_the_event_and_the_common_fields() -> None:
    found = problems({"event": "alarmz", "seq": 0}, LINE)
    assert [p.rule for p in found] == ["diary.event.mismatch"] + ["diary.line.fields.missing"] * 3
    assert "event must be one of run_start, structure" in found[0].message
    assert [p.path for p in found[1:]] == [("time",), ("prev",), ("hash",)]


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({"kind": "trainnig"}, ["report.kind.unknown"]),
        ({"kind": ...}, ["report.fields.missing"]),
        ({"kind": "trainnig", "seq": ...}, ["report.kind.unknown", "report.fields.missing"]),
    ],
)
def test_a_report_of_no_kind_gets_the_kind_and_what_every_kind_lacks(
    over: dict[str, Any], expected: list[str]
) -> None:
    found = problems(_report(**over), REPORT)
    assert [p.rule for p in found] == expected, [str(p) for p in found]
    assert found[0].path == ("kind",)


def test_an_integer_no_float_holds_is_held_to_its_bounds() -> None:
    found = problems(_report(seq=10**400), REPORT)
    assert [(p.rule, p.path) for p in found] == [("report.seq.range", ("seq",))]
    assert "integer of 401 digits is greater than the maximum of 9007199254740991" in (
        found[0].message
    )
    assert problems(_report(seq=2**53 - 1), REPORT) == []
