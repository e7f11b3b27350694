"""A failing check leaves its implementer what to replay: the harness requests of the
failing example as run lines, and the files they name, kept after the run. An outside
implementer found the counterexample alone (the check's own draw) no request to send, and
the files gone; and the summary told nothing of skipped rules."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from trainrecord.diary import verify
from trainrecord_conformance.report import summary
from trainrecord_conformance.runner import CheckOutcome, RuleOutcome, run_rules
from trainrecord_conformance.targets import ExecTarget, harness_command

MUTANT = ROOT / "conformance" / "mutants" / "verifier_skips_prev.py"


def test_a_failure_keeps_the_requests_and_files_that_replay_it() -> None:
    with ExecTarget(f"{sys.executable} {MUTANT}", name="mutant", timeout=60) as target:
        [outcome] = run_rules(target, ["diary.chain.prev"], profile="ci", examples=5)
    assert outcome.status == "fail", outcome.to_json()
    [check] = [c for c in outcome.checks if c.status == "fail"]
    assert check.requests and "kept, as they were when the check failed, in" in check.kept
    last = check.requests[-1]
    assert (last["cmd"], last["op"]) == ("run", "verify_diary")
    folder = Path(last["input"]["dir"])
    assert folder.is_dir() and str(folder).startswith(check.kept.rsplit(" in ", 1)[1])
    assert not verify(folder).ok  # the kept files show the tampering the mutant missed
    # sent as shown, the reference harness refuses what the mutant accepted, and the mutant
    # still accepts it: the lines replay the failure outside the suite
    answers = {}
    commands = {
        "reference": shlex.split(harness_command()),
        "mutant": [sys.executable, str(MUTANT)],
    }
    for name, command in commands.items():
        lines = [{"cmd": "start", "version": 1}, last, {"cmd": "stop"}]
        done = subprocess.run(
            command,
            input="".join(json.dumps(x) + "\n" for x in lines),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        answers[name] = json.loads(done.stdout.splitlines()[1])["output"]["status"]
    assert answers == {"reference": "failed", "mutant": "ok"}
    text = summary([outcome], "mutant", {"name": "m", "language": "python"})
    assert "requests of the failing example, as your harness got them" in text
    assert json.dumps(last, ensure_ascii=False) in text


def test_the_summary_names_the_operations_behind_skipped_rules() -> None:
    skipped = [
        RuleOutcome(
            rule,
            "refusal",
            "skipped",
            [CheckOutcome("c", "skipped", "not supported: write_witness, write_metrics")],
        )
        for rule in ("witness.path.exists", "metrics.row.extra")
    ]
    text = summary(skipped, "t", {"name": "n", "language": "l"})
    assert (
        "2 rules were skipped: the target does not offer write_metrics, write_witness "
        "(see --json for each rule)." in text
    )


def test_two_failures_of_one_check_keep_their_files_apart() -> None:
    # A review: the kept folder was named after the check alone; targets of one run count
    # their cases from case0 alike, so a second target's failure replaced the first's files
    # (and a link or FIFO in both raised FileExistsError)
    kept = []
    for _ in range(2):
        with ExecTarget(f"{sys.executable} {MUTANT}", name="mutant", timeout=60) as target:
            [outcome] = run_rules(target, ["diary.chain.prev"], profile="ci", examples=5)
        [check] = [c for c in outcome.checks if c.status == "fail"]
        kept.append(Path(check.requests[-1]["input"]["dir"]))
    assert kept[0] != kept[1] and kept[0].name == kept[1].name  # the same case, two homes
    assert kept[0].is_dir() and kept[1].is_dir()
