"""The Node diary writer refuses a line its verifier fails on a cross-field rule, as the
Python writer does: a run_end with more checks than steps (``diary.run_end.checks``) and a
repair whose relative_change is not delta_norm / weight_norm_before, or null although that
norm was not 0 (``diary.repair.relative_change.value``). Both writers reuse their own
verifier's check; the refused line is not written, a right one is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.diary.helpers import BODIES
from tests.typescript.node_harness import Harness, diary_lines, node_refuses, python_refuses
from trainrecord.diary import verify

pytestmark = pytest.mark.xdist_group("node")

START = {"event": "run_start", **BODIES["run_start"]}
NORMS = {"delta_norm": 1.5, "weight_norm_before": 3.0, "weight_norm_after": 3.2}


@pytest.mark.parametrize(
    ("event", "fields", "rule"),
    [
        ("run_end", {"steps": 3, "checks": 4}, "diary.run_end.checks"),
        ("repair", {**NORMS, "relative_change": 0.6}, "diary.repair.relative_change.value"),
        ("repair", {**NORMS, "relative_change": None}, "diary.repair.relative_change.value"),
        (
            "repair",
            {"delta_norm": 1.5, "weight_norm_before": 0.0, "relative_change": 1.0},
            "diary.repair.relative_change.value",
        ),
        ("repair", {**NORMS, "relative_change": 0.5}, None),
        ("repair", {"delta_norm": 1.5, "weight_norm_before": 0.0, "relative_change": None}, None),
    ],
    ids=["checks-over-steps", "wrong-ratio", "null-ratio", "ratio-of-zero", "right", "right-null"],
)
def test_node_refuses_a_broken_relation_as_python_does(
    harness: Harness, tmp_path: Path, event: str, fields: dict[str, Any], rule: str | None
) -> None:
    events = [START, {"event": event, **BODIES[event], **fields}]
    rules = {
        "python": python_refuses(tmp_path / "python", events),
        "node": node_refuses(harness, tmp_path / "node", events),
    }
    expected = None if rule is None else [rule]
    assert rules == {"python": expected, "node": expected}
    lines = 2 if rule is None else 1
    assert diary_lines(tmp_path / "python") == diary_lines(tmp_path / "node") == lines
    if rule is None:  # a repair and no run_end: a crashed session, which verifies
        assert verify(tmp_path / "python").ok and verify(tmp_path / "node").ok
