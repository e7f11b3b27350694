"""Figures the documents state that the code decides: each test fails when the code changes
and the sentence does not (a docs probe found a mutant count, a profile's example counts and
"every rule has a check" all stale)."""

from __future__ import annotations

import re

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
SPEC_README = (ROOT / "spec" / "README.md").read_text(encoding="utf-8")
DOCS_README = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
GUIDE = (ROOT / "docs" / "harness-guide.md").read_text(encoding="utf-8")
WORDS = {5: "five", 9: "nine", 10: "ten"}


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_rules_without_a_check_are_the_ones_the_docs_name() -> None:
    from trainrecord_conformance.checks import all_checks
    from trainrecord_conformance.runner import select

    checks = all_checks()
    uncovered = [rule for rule in select(None) if not checks.get(rule)]
    word = WORDS.get(len(uncovered), str(len(uncovered)))
    assert f"but {word} has a Hypothesis strategy" in _flat(README)
    assert f"The {word}:" in _flat(README)
    assert f"but {word} has a Hypothesis strategy" in _flat(GUIDE)
    for rule in uncovered:
        assert f"`{rule}`" in README, rule


def test_the_known_model_differences_are_the_five_the_docs_name() -> None:
    from tests.spec.test_schemas_and_vectors import KNOWN_MODEL_DIFFERENCES

    word = WORDS[len(KNOWN_MODEL_DIFFERENCES)]
    assert f"on every vector (tests/spec) except {word}" in _flat(SPEC_README)
    assert f"on every vector (`tests/spec`) except {word}" in _flat(DOCS_README)


def test_the_profiles_example_counts_are_the_readmes() -> None:
    from trainrecord_conformance.runner import PROFILES

    counts = {
        name: re.search(rf"`{name}` (\d+), (\d+) and (\d+)", _flat(README)) for name in PROFILES
    }
    for name, found in counts.items():
        assert found is not None, name
        behaviour, io, schema = (int(n) for n in found.groups())
        assert PROFILES[name] == {"behaviour": behaviour, "io": io, "schema": schema}, name


def test_the_edge_killed_mutants_are_as_many_as_the_readme_says() -> None:
    from tests.conformance.test_mutants import EDGE_KILLED, MUTANTS

    word = WORDS[len(EDGE_KILLED)]
    assert f"{word} mutants only those cases find" in _flat(README)
    assert set(EDGE_KILLED) <= {path.stem for path in MUTANTS}


def test_the_conformance_timeout_default_is_the_documented_one() -> None:
    from trainrecord_conformance.targets import DEFAULT_TIMEOUT

    assert f"`--timeout` (default {DEFAULT_TIMEOUT:g} s)" in _flat(README)
    assert f"`--timeout` seconds (default {DEFAULT_TIMEOUT:g})" in _flat(GUIDE)


def test_the_api_tables_options_are_the_signatures() -> None:
    # A review: docs/README's table lacked Monitor's signing_key and require_seal, added the
    # same day; every keyword of these calls is named there, each as `name=`
    import inspect

    from trainrecord.diary import DiaryWriter, MetricsWriter, verify
    from trainrecord.monitor import Monitor

    for call in (Monitor, DiaryWriter, MetricsWriter, verify):
        for name in list(inspect.signature(call).parameters)[1:]:
            if name != "self":
                assert f"{name}=" in DOCS_README, (call.__name__, name)
