# DO NOT EDIT: generated from spec/schemas/harness/start-response.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field
try:
    from pydantic import MISSING
except ImportError:  # pydantic < 2.14 has it under experimental
    from pydantic.experimental.missing_sentinel import MISSING  # type: ignore[no-redef]
from trainrecord_spec._base import StrictModel


class Implementation(StrictModel):
    """
    Who answers: shown in the suite's report.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    name: Annotated[str, Field(min_length=1)]
    """
    The implementation's name, e.g. trainrecord.
    """
    language: Annotated[str, Field(min_length=1)]
    """
    The language it is written in, e.g. python or javascript.
    """
    version: str | None | MISSING = MISSING
    """
    The implementation's version, when it has one.
    """


class HarnessStartResponse(StrictModel):
    """
    Conformance harness protocol: the harness's answer to start, one JSON object on one line of its standard output. It says who the implementation is and which operations it supports; the suite reports every rule whose operations are missing as skipped.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    version: Annotated[int, Field(ge=1, le=1)]
    """
    The protocol version the harness speaks: 1.
    """
    implementation: Implementation
    """
    Who answers: shown in the suite's report.
    """
    operations: list[Literal['validate', 'line_hash', 'config_hash', 'write_witness', 'write_metrics', 'read_witness', 'write_diary', 'verify_diary', 'send_report', 'read_metrics', 'build_report', 'report_status', 'load_settings', 'keygen', 'load_key', 'seal', 'report_job', 'append_diary', 'architecture', 'open_run', 'serve']]
    """
    The operations the harness supports (see HarnessRunRequest.op). Operations not listed are never sent; their rules are reported as skipped. Each operation once.
    """
