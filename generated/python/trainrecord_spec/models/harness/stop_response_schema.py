# DO NOT EDIT: generated from spec/schemas/harness/stop-response.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict
from trainrecord_spec._base import StrictModel


class HarnessStopResponse(StrictModel):
    """
    Conformance harness protocol: the harness's answer to stop, after which it exits with status 0.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    stopped: Literal[True]
    """
    Always true.
    """
