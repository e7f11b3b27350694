# DO NOT EDIT: generated from spec/schemas/diary/events/run_end.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
try:
    from pydantic import MISSING
except ImportError:  # pydantic < 2.14 has it under experimental
    from pydantic.experimental.missing_sentinel import MISSING  # type: ignore[no-redef]
from trainrecord_spec._base import StrictModel
from typing_extensions import TypeAliasType

from ..common_schema import DiaryLineCommon

CountsAdditionalProperty = TypeAliasType(
    "CountsAdditionalProperty", Annotated[int, Field(ge=0)]
)


class Error(StrictModel):
    """
    Optional. How the run ended when an exception ended it: the exception's class name and message (at most 500 characters), as the monitor saw it when it was closed while the exception was propagating (a with block left by it, or close() in an except or finally block); null or absent when the loop ended normally.
    """

    type: Annotated[str, Field(min_length=1)]
    """
    The exception's class name, e.g. RuntimeError or KeyboardInterrupt.
    """
    message: Annotated[str, Field(max_length=500)]
    """
    The exception's message, at most 500 characters (may be empty).
    """


class DiaryRunEnd(DiaryLineCommon):
    """
    Diary event run_end: The last line of a finished run.
    """

    event: Annotated[Literal['run_end'], Field(min_length=1)]
    """
    Always "run_end".
    """
    steps: Annotated[int, Field(ge=0)]
    """
    How many optimizer steps the monitor saw.
    """
    checks: Annotated[int, Field(ge=0)]
    """
    How many checks ran.
    """
    counts: dict[str, CountsAdditionalProperty]
    """
    Counts by name, e.g. events by type and checks_without_gradients.
    """
    metrics_sha256: Annotated[
        str, Field(max_length=64, min_length=64, pattern='^[0-9a-f]{64}$')
    ]
    """
    SHA-256 of metrics.jsonl as it stood when run_end was written.
    """
    error: Error | None | MISSING = MISSING
    """
    Optional. How the run ended when an exception ended it: the exception's class name and message (at most 500 characters), as the monitor saw it when it was closed while the exception was propagating (a with block left by it, or close() in an except or finally block); null or absent when the loop ended normally.
    """
