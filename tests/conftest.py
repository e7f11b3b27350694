"""Shared test setup: Hypothesis profiles and paths.

Profiles: ``ci`` (fast, derandomized, used by .ci/run), ``dev`` (the default) and
``thorough`` (many examples, for local runs). Pick one with HYPOTHESIS_PROFILE.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec"
SEEDS = ROOT.parent / "shared" / "seeds"

settings.register_profile(
    "ci",
    max_examples=25,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
