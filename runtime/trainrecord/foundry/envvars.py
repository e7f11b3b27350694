"""Integers from environment variables, spelled the way the Foundry spec allows.

The seed says each variable holds "an integer"; this module fixes which spellings are one
(see ``spec/README.md``, "Foundry run records v1"):

* surrounding ASCII white space (space, tab, newline, carriage return, form feed,
  vertical tab) is stripped;
* then an optional ``+`` or ``-`` and one or more ASCII digits ``0``-``9``, nothing else:
  ``0x10``, ``1_000``, ``1e3``, ``4.0``, ``8,4`` and non-ASCII digits such as ``"١٢"``
  (which Python's ``int()`` would take) are not integers;
* leading zeros are allowed (``007`` is 7);
* the value lies in the signed 64-bit range, so that every language can hold it.

A ``FOUNDRY_RUN_ID`` that is empty or only white space (as Unicode defines it, like every
blank text of the spec: a lone no-break space too) is blank rather than not an integer.
Each variable then has its own range: ranks and the restart count are zero or greater,
``OMP_NUM_THREADS`` is at least 1, ``FOUNDRY_RUN_ID`` may be any such integer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from trainrecord.errors import Problem, safe_value

ASCII_SPACE = " \t\n\r\f\v"
INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class EnvInteger:
    """One integer variable the witness writer reads, with its rule ids and range."""

    name: str
    minimum: int | None
    below_rule: str | None
    meaning: str

    @property
    def prefix(self) -> str:
        """The rule-id prefix of the variable, e.g. ``witness.env.rank``."""
        return f"witness.env.{self.name.lower()}"


RUN_ID = EnvInteger("FOUNDRY_RUN_ID", None, None, "the run id the launcher supplies")
RANK = EnvInteger("RANK", 0, "negative", "the process rank")
SLURM_PROCID = EnvInteger("SLURM_PROCID", 0, "negative", "the process rank under Slurm")
RESTART_COUNT = EnvInteger("SLURM_RESTART_COUNT", 0, "negative", "the restart attempt")
OMP_NUM_THREADS = EnvInteger("OMP_NUM_THREADS", 1, "range", "the CPU thread count")


def _problem(var: EnvInteger, rule: str, message: str, raw: object) -> Problem:
    return Problem(f"{var.prefix}.{rule}", (var.name,), message, safe_value(raw))


def parse_integer(var: EnvInteger, raw: str) -> tuple[int | None, Problem | None]:
    """Parse the text of ``var``; return the integer, or the problem that refuses it."""
    text = raw.strip(ASCII_SPACE)
    if not INTEGER.fullmatch(text):
        return None, _problem(
            var,
            "integer",
            f"{var.name} must be an integer ({var.meaning}): ASCII digits with an optional "
            "sign and surrounding spaces, nothing else (no 0x, no _, no decimal point, "
            "no list, no non-ASCII digits); fix or unset it",
            raw,
        )
    digits = text.lstrip("+-").lstrip("0")
    value = int(text) if len(digits) <= 19 else None  # int() refuses > 4300 digits
    if value is None or not INT64_MIN <= value <= INT64_MAX:
        return None, _problem(
            var,
            "integer",
            f"{var.name} is outside the signed 64-bit integer range; give {var.meaning} "
            "as a smaller integer",
            raw,
        )
    if var.minimum is not None and value < var.minimum:
        what = "zero or greater" if var.minimum == 0 else f"at least {var.minimum}"
        return None, _problem(
            var,
            var.below_rule or "range",
            f"{var.name} must be {what} ({var.meaning}); fix or unset it",
            raw,
        )
    return value, None


def read_integer(
    env: Mapping[str, object], var: EnvInteger
) -> tuple[bool, int | None, Problem | None]:
    """Read ``var`` from ``env``: (whether it is set, its integer, or its problem)."""
    if var.name not in env:
        return False, None, None
    raw = env[var.name]
    if not isinstance(raw, str):
        return (
            True,
            None,
            Problem(
                "witness.env.type",
                (var.name,),
                f"{var.name} must be text, as environment variables are; pass a mapping "
                "from str to str",
                safe_value(raw),
            ),
        )
    return (True, *parse_integer(var, raw))


def read_run_id(env: Mapping[str, object]) -> tuple[int | None, Problem | None]:
    """FOUNDRY_RUN_ID: required, not blank, an integer.

    Blank is empty or only white space as Unicode defines it (``str.isspace``, the schemas'
    ``\\S``): a no-break space or an ideographic space alone is blank, not a non-integer.
    """
    if RUN_ID.name not in env:
        return None, Problem(
            f"{RUN_ID.prefix}.unset",
            (RUN_ID.name,),
            "FOUNDRY_RUN_ID is not set; the launcher must export the integer run id "
            "(e.g. FOUNDRY_RUN_ID=4217) before the run starts",
        )
    raw = env[RUN_ID.name]
    if isinstance(raw, str) and not raw.strip():  # white space as Unicode (str.isspace) has it
        return None, _problem(
            RUN_ID,
            "blank",
            "FOUNDRY_RUN_ID is blank; set it to the integer run id the launcher assigned",
            raw,
        )
    _, value, problem = read_integer(env, RUN_ID)
    return value, problem


def read_rank(env: Mapping[str, object]) -> tuple[int | None, Problem | None]:
    """The rank: RANK when set, else SLURM_PROCID when set, else 0.

    Only the variable that decides is read: a SLURM_PROCID shadowed by RANK is ignored.
    """
    for var in (RANK, SLURM_PROCID):
        present, value, problem = read_integer(env, var)
        if present:
            return value, problem
    return 0, None
