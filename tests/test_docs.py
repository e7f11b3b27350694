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
WORDS = {5: "five", 7: "seven", 9: "nine", 10: "ten"}


def _read(*parts: str) -> str:
    path = ROOT.joinpath(*parts)
    return path.read_text(encoding="utf-8") if path.is_file() else ""


# README's Conformance section says what the suite is; the rest is in docs/conformance.md
CONFORMANCE_DOCS = README + _read("docs", "conformance.md")


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_rules_without_a_check_are_the_ones_the_docs_name() -> None:
    from trainrecord_conformance.checks import all_checks
    from trainrecord_conformance.runner import select

    checks = all_checks()
    uncovered = [rule for rule in select(None) if not checks.get(rule)]
    word = WORDS.get(len(uncovered), str(len(uncovered)))
    assert f"but {word} has a Hypothesis strategy" in _flat(README)
    assert f"but {word} has a Hypothesis strategy" in _flat(_read("docs", "conformance.md"))
    assert f"The {word}:" in _flat(CONFORMANCE_DOCS)
    assert f"but {word} has a Hypothesis strategy" in _flat(GUIDE)
    for rule in uncovered:
        assert f"`{rule}`" in CONFORMANCE_DOCS, rule


def test_the_known_model_differences_are_the_ones_the_docs_name() -> None:
    from tests.spec.test_schemas_and_vectors import KNOWN_MODEL_DIFFERENCES

    word = WORDS[len(KNOWN_MODEL_DIFFERENCES)]
    assert f"on every vector (tests/spec) except {word}" in _flat(SPEC_README)
    assert f"on every vector (`tests/spec`) except {word}" in _flat(DOCS_README)


def test_the_profiles_example_counts_are_the_docs() -> None:
    from trainrecord_conformance.runner import PROFILES

    counts = {
        name: re.search(rf"`{name}` (\d+), (\d+) and (\d+)", _flat(CONFORMANCE_DOCS))
        for name in PROFILES
    }
    for name, found in counts.items():
        assert found is not None, name
        behaviour, io, schema = (int(n) for n in found.groups())
        assert PROFILES[name] == {"behaviour": behaviour, "io": io, "schema": schema}, name


def test_the_edge_killed_mutants_are_as_many_as_the_docs_say() -> None:
    from tests.conformance.test_mutants import EDGE_KILLED, MUTANTS

    word = WORDS[len(EDGE_KILLED)]
    assert f"{word} mutants only those cases find" in _flat(CONFORMANCE_DOCS)
    assert set(EDGE_KILLED) <= {path.stem for path in MUTANTS}


def test_the_conformance_timeout_default_is_the_documented_one() -> None:
    from trainrecord_conformance.targets import DEFAULT_TIMEOUT

    assert f"`--timeout` (default {DEFAULT_TIMEOUT:g} s)" in _flat(CONFORMANCE_DOCS)
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


def _as_documented(call: object) -> str:
    """``call``'s signature as the API table writes it: no annotations, strings in "."""
    import inspect

    sig = inspect.signature(call)  # type: ignore[arg-type]
    sig = sig.replace(
        parameters=[p.replace(annotation=p.empty) for p in sig.parameters.values()],
        return_annotation=sig.empty,
    )
    return f"{call.__name__}{sig}".replace("'", '"')  # type: ignore[attr-defined]


def test_the_api_tables_signatures_are_the_code_s() -> None:
    # An API probe: the table said generate_keypair(private, public=None, ...), but the
    # parameters are private_path and public_path (a keyword call from the docs failed)
    from trainrecord.diary import DiaryWriter, MetricsWriter, generate_keypair, verify, write_seal
    from trainrecord.foundry import metrics_problems, witness_problems, write_witness
    from trainrecord.monitor import Monitor
    from trainrecord.report import Reporter, ReportSettings, open_run, report_status

    for call in (
        Monitor,
        DiaryWriter,
        MetricsWriter,
        verify,
        write_seal,
        generate_keypair,
        write_witness,
        witness_problems,
        metrics_problems,
        Reporter,
        ReportSettings,
        open_run,
        report_status,
    ):
        assert _as_documented(call) in _flat(DOCS_README), _as_documented(call)


def test_the_api_table_names_every_export() -> None:
    # An API probe: trainrecord.foundry exports exit_on_sigterm (the README's example uses
    # it), but the table did not name it
    import importlib

    rows = dict(re.findall(r"^\| `([\w.]+)` \| (.*?) \|", DOCS_README, re.MULTILINE))
    for module in (
        "trainrecord",
        "trainrecord.diary",
        "trainrecord.foundry",
        "trainrecord.report",
        "trainrecord.monitor",
        "trainrecord_spec",
    ):
        missing = [
            n for n in importlib.import_module(module).__all__ if f"`{n}" not in rows[module]
        ]
        assert not missing, (module, missing)


MONITOR_DOCS = README + _read("docs", "monitor.md")


def _table(text: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table under ``header``: the lines that follow it without a
    break (a paragraph between two rows ends the table where a renderer ends it)."""
    lines = text.splitlines()
    start = lines.index(header)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_the_event_table_is_one_table_of_every_event() -> None:
    # The table sat in README with a paragraph on metrics.jsonl between its channels_cleared
    # and certificate rows: rendered, the last twelve rows were a loose paragraph of pipes
    from trainrecord.diary import EVENT_TYPES

    rows = _table(MONITOR_DOCS, "| event | what it means | what to do |")
    assert [row[0].strip("`") for row in rows] == list(EVENT_TYPES)
    assert all(len(row) == 3 for row in rows), [row[0] for row in rows if len(row) != 3]
    assert f"these {len(EVENT_TYPES)} event types" in _flat(MONITOR_DOCS)


def test_the_readme_names_every_event_the_monitor_writes() -> None:
    # The README's short "What you get" list: a reader who never opens docs/ sees them all
    from trainrecord.diary import EVENT_TYPES

    section = README[README.index("\n## Monitor\n") : README.index("\n## Diary\n")]
    assert f"The {len(EVENT_TYPES)} event types" in section
    missing = [name for name in EVENT_TYPES if f"`{name}`" not in section]
    assert not missing, missing


def test_the_docs_index_lists_every_document() -> None:
    listed = set(re.findall(r"\]\(([\w.-]+\.md)\)", DOCS_README))
    documents = {p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md"}
    assert documents <= listed, documents - listed


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but - and _ dropped, spaces to -."""
    headings = re.findall(r"^#{1,6} (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_in_the_documents_resolves() -> None:
    documents = [ROOT / "README.md", ROOT / "bench" / "README.md", ROOT / "spec" / "README.md"]
    documents += sorted((ROOT / "docs").glob("*.md"))
    broken = []
    for doc in documents:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"```.*?```", "", text, flags=re.S)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (doc.parent / path).resolve() if path else doc
            if not linked.exists() or (
                anchor and anchor not in _anchors(linked.read_text(encoding="utf-8"))
            ):
                broken.append((doc.name, target))
    assert not broken, broken


def test_the_readme_s_links_to_the_checkout_say_where_they_point() -> None:
    # README.md is the package index's page, where a relative link leads nowhere: the text
    # of each such link is its path in the source repository
    for text, target in re.findall(r"\[([^\]]+)\]\(([^)\s]+)\)", README):
        if not re.match(r"[a-z]+:", target):
            assert text == target, (text, target)
