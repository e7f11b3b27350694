# DO NOT EDIT: generated from spec/schemas/harness/start.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field
from trainrecord_spec._base import StrictModel


class HarnessStartRequest(StrictModel):
    """
    Conformance harness protocol, first message from the suite: one JSON object on one line of the harness's standard input. The harness answers with a HarnessStartResponse.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    cmd: Literal['start']
    """
    Always "start".
    """
    version: Annotated[int, Field(ge=1, le=1)]
    """
    The protocol version the suite speaks: 1.
    """
