"""Every check of the suite, by rule id.

Checks come from one module per format (:mod:`.schema` for every rule a schema expresses,
:mod:`.canonical`, :mod:`.foundry`, :mod:`.foundry_written`, :mod:`.foundry_decisions`,
:mod:`.reading`, :mod:`.diary`, :mod:`.writing`,
:mod:`.keys`, :mod:`.reporting`, :mod:`.payload`, :mod:`.sequence`, :mod:`.run_identity`,
:mod:`.settings`, :mod:`.server`, :mod:`.harness`). :func:`all_checks` collects them; rules without any check are listed by
:func:`trainrecord_conformance.registry.uncovered` with the reason (``coverage.py``).
"""

from __future__ import annotations

from functools import cache

from trainrecord_conformance.checks.base import Check, Context, Failed


@cache
def all_checks() -> dict[str, tuple[Check, ...]]:
    """Every check, grouped by the rule it tests."""
    from trainrecord_conformance.checks import (
        canonical,
        diary,
        foundry,
        foundry_bytes,
        foundry_decisions,
        foundry_written,
        harness,
        keys,
        payload,
        reading,
        reporting,
        run_identity,
        schema,
        sequence,
        server,
        settings,
        visibility,
        writing,
    )

    out: dict[str, list[Check]] = {}
    for module in (
        schema,
        canonical,
        foundry,
        foundry_written,
        foundry_decisions,
        reading,
        diary,
        writing,
        keys,
        reporting,
        payload,
        sequence,
        run_identity,
        settings,
        server,
        harness,
        visibility,
        foundry_bytes,
    ):
        for check in module.checks():
            out.setdefault(check.rule, []).append(check)
    return {rule: tuple(found) for rule, found in out.items()}


__all__ = ["Check", "Context", "Failed", "all_checks"]
