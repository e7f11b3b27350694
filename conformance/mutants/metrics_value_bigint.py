"""Mutant: "every int is a finite number": the schemas' number type takes any integer, so
the metrics writer, reader and validator take a value too large for a 64-bit float
(``10**400``, ``2**1024``: its nearest double is infinite).

The natural mistake of a number check written as ``isinstance(v, int) or
math.isfinite(v)``. Random draws never reach it (they stay within 2**80); only the rule's
fixed edge cases (``10**400``, ``-10**400``, ``2**1024``, ``2**1024 - 2**970``) do, through
the exec protocol.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord import schemas

BREAKS = "metrics.value.type"


def any_int_is_a_number(checker: Any, instance: Any) -> bool:
    """A number: any integer (whatever its size) or a finite float, never a boolean."""
    if isinstance(instance, bool):
        return False
    return isinstance(instance, int) or (isinstance(instance, float) and math.isfinite(instance))


if __name__ == "__main__":
    checker = schemas.TYPE_CHECKER.redefine("number", any_int_is_a_number)
    schemas.OracleValidator = jsonschema.validators.extend(
        Draft202012Validator, type_checker=checker
    )
    run_mutant("metrics_value_bigint", {})
