"""Which spellings of an environment variable are an integer (spec/README.md decision)."""

from __future__ import annotations

import pytest

from trainrecord.foundry import envvars
from trainrecord.foundry.envvars import OMP_NUM_THREADS, RANK, RUN_ID, parse_integer

ACCEPTED = [
    ("42", 42),
    (" 42 ", 42),
    ("\t7\n", 7),
    ("007", 7),
    ("+5", 5),
    ("-3", -3),
    ("0", 0),
    ("-0", 0),
    ("9223372036854775807", 2**63 - 1),
    ("-9223372036854775808", -(2**63)),
    ("00000000000000000000000001", 1),
]
REFUSED = [
    "0x10",
    "1_000",
    "1e3",
    "4.0",
    "8,4",
    "١٢",
    "٣",
    "１２",
    "12abc",
    "- 3",
    "+-3",
    "--3",
    "3 4",
    "",
    "   ",
    "\u00a012\u00a0",
    "9223372036854775808",
    "-9223372036854775809",
    "9" * 5000,
    "NaN",
    "inf",
]


@pytest.mark.parametrize(("raw", "value"), ACCEPTED)
def test_integer_spellings_accepted(raw: str, value: int) -> None:
    assert parse_integer(RUN_ID, raw) == (value, None)


@pytest.mark.parametrize("raw", REFUSED)
def test_other_spellings_are_not_integers(raw: str) -> None:
    value, problem = parse_integer(RUN_ID, raw)
    assert value is None and problem is not None
    assert problem.rule == "witness.env.foundry_run_id.integer"
    assert problem.path == ("FOUNDRY_RUN_ID",)
    assert problem.value is not None and len(problem.value) <= 80
    assert "FOUNDRY_RUN_ID" in problem.message


def test_python_int_would_accept_what_the_spec_refuses() -> None:
    # The reason for the decision: int() takes these, the spec does not.
    for raw in ("١٢", "1_000", " +7 "):
        int(raw)
    assert parse_integer(RANK, "١٢")[1] is not None
    assert parse_integer(RANK, "1_000")[1] is not None


def test_ranges_per_variable() -> None:
    assert parse_integer(RANK, "-1")[1].rule == "witness.env.rank.negative"
    assert parse_integer(RANK, "+0") == (0, None)
    assert parse_integer(OMP_NUM_THREADS, "0")[1].rule == "witness.env.omp_num_threads.range"
    assert parse_integer(OMP_NUM_THREADS, "1") == (1, None)
    assert parse_integer(RUN_ID, "-12") == (-12, None)


def test_rank_precedence_and_shadowing() -> None:
    assert envvars.read_rank({}) == (0, None)
    assert envvars.read_rank({"SLURM_PROCID": "3"}) == (3, None)
    assert envvars.read_rank({"RANK": "0", "SLURM_PROCID": "3"}) == (0, None)
    assert envvars.read_rank({"RANK": "2", "SLURM_PROCID": "nonsense"}) == (2, None)
    value, problem = envvars.read_rank({"SLURM_PROCID": "x"})
    assert value is None and problem.rule == "witness.env.slurm_procid.integer"


@pytest.mark.parametrize(
    "raw", ["", " \t\n", "\u00a0", "\u3000", "\u2003\u00a0 ", "\u2028", "\x1c"]
)
def test_run_id_of_white_space_only_is_blank(raw: str) -> None:
    """White space is defined by Unicode (spec/README.md, Blank), not ASCII alone."""
    value, problem = envvars.read_run_id({"FOUNDRY_RUN_ID": raw})
    assert value is None and problem is not None
    assert problem.rule == "witness.env.foundry_run_id.blank"
    assert problem.path == ("FOUNDRY_RUN_ID",)


def test_run_id_with_unicode_space_around_digits_is_not_an_integer() -> None:
    # Not blank (it has digits), and only ASCII white space is stripped around an integer.
    _, problem = envvars.read_run_id({"FOUNDRY_RUN_ID": "\u00a012"})
    assert problem is not None and problem.rule == "witness.env.foundry_run_id.integer"
