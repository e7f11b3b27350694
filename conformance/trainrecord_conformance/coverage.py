"""Rules the suite does not test through an implementation's interface, and why.

The completeness test fails for any rule of the registry that has neither a check nor an
entry here; an entry here is reported as *not covered* in every run, never as passed.
"""

from __future__ import annotations

NOT_COVERED: dict[str, str] = {}
"""rule id -> why the harness protocol cannot observe it (filled per format below)."""
