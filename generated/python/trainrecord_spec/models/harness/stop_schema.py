# DO NOT EDIT: generated from spec/schemas/harness/stop.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict
from trainrecord_spec._base import StrictModel


class HarnessStopRequest(StrictModel):
    """
    Conformance harness protocol, last message from the suite. The harness answers with a HarnessStopResponse and exits with status 0.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    cmd: Literal['stop']
    """
    Always "stop".
    """
