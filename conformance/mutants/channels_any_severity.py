"""Mutant: a validator that checks a channels (or channels_cleared) line's severity only
against the five severities of any line, as the schema did before: ``proof``, ``action``
and ``critical`` pass, though the seed ties them to a certificate, a repair and
non-finite values, and a channels event is none of them (the reference refuses them as
``diary.channels.severity.value``)."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import validate

BREAKS = "diary.channels.severity.value"

_FIVE = ("info", "warning", "action", "proof", "critical")


def any_severity(data: dict[str, Any]) -> dict[str, Any]:
    """The reference's verdict on a copy whose channels severity, when it is one of the
    five, reads as ``info``."""
    instance = data["instance"]
    if (
        isinstance(instance, dict)
        and instance.get("event") in ("channels", "channels_cleared")
        and instance.get("severity") in _FIVE
    ):
        data = {**data, "instance": {**instance, "severity": "info"}}
    return validate(data)


if __name__ == "__main__":
    run_mutant("channels_any_severity", {"validate": any_severity})
