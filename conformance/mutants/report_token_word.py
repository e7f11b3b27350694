"""Mutant: a report builder that scrubs (and looks for) the token only where it stands as
a whole word, the user name's rule applied to the token: ``key_<token>_v2`` goes out."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord.report import payload, privacy
from trainrecord_conformance.operations import build_report

BREAKS = "report.privacy.secrets"


def scrub(text: str, secrets: Any = None) -> str:
    """The token replaced as a whole word, then everything else as the reference does."""
    s = secrets or privacy.Secrets()
    out = privacy._word(s.token).sub("<token>", str(text)) if s.token else str(text)
    return privacy.scrub_message(out, dataclasses.replace(s, token=None))


def problems(report: Any, secrets: Any = None) -> list[Any]:
    """The reference's problems, the token looked for as a whole word only."""
    s = secrets or privacy.Secrets()
    found = privacy.privacy_problems(report, dataclasses.replace(s, token=None))
    word = privacy._word(s.token) if s.token else None
    if word is not None and any(word.search(text) for _, text in privacy._strings(report)):
        found.append(privacy.Problem("report.privacy.secrets", (), "holds the report token"))
    return found


def faulty(data: dict[str, Any]) -> dict[str, Any]:
    """Build with the whole-word token scrub and check."""
    payload.scrub_message, payload.privacy_problems = scrub, problems
    return build_report(data)


if __name__ == "__main__":
    run_mutant("report_token_word", {"build_report": faulty})
