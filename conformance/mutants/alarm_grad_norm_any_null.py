"""Mutant: a validator that takes a null ``grad_norm`` in any alarm, as a check built from
the generated ``DiaryAlarm`` model alone does (datamodel-code-generator drops the schema's
``if``/``then``): a vanishing or exploding alarm without a gradient norm passes, though only
a ``no_gradient`` alarm on a layer that got no gradient at all has none (the reference
refuses it as ``diary.alarm.grad_norm.null``)."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import validate

BREAKS = "diary.alarm.grad_norm.null"


def any_null(data: dict[str, Any]) -> dict[str, Any]:
    """The reference's verdict on a copy whose alarm, when its grad_norm is null, reads as a
    no_gradient one."""
    instance = data["instance"]
    if (
        isinstance(instance, dict)
        and instance.get("event") == "alarm"
        and "grad_norm" in instance
        and instance["grad_norm"] is None
    ):
        data = {**data, "instance": {**instance, "diagnosis": "no_gradient"}}
    return validate(data)


if __name__ == "__main__":
    run_mutant("alarm_grad_norm_any_null", {"validate": any_null})
