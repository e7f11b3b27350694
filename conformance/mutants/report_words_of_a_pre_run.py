"""Mutant: a report builder that sends the word results a pre-literate or illiterate job
hands it (its history's train_loss_words, val_accuracy_words, ...): it builds as the
reference does but never checks the report against the rules that tie its fields to the
run's config. §5.2: "*_words is null for pre and illit, which have no words"."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import _job_state, _secrets

BREAKS = "report.consistency.no_words"


def unchecked(data: dict[str, Any]) -> dict[str, Any]:
    """The reference's build_report without its check before sending."""
    from trainrecord.report import build_report

    state = _job_state(data["state"], _secrets(data["secrets"]))
    kw = {k: data[k] for k in ("event", "status", "seq", "sent_at")}
    return {"report": build_report(state, **kw)}


if __name__ == "__main__":
    run_mutant("report_words_of_a_pre_run", {"build_report": unchecked})
