# DO NOT EDIT: generated from spec/schemas/diary/events/run_end.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from trainrecord_spec._base import StrictModel
from typing_extensions import TypeAliasType

from ..common_schema import DiaryLineCommon

CountsAdditionalProperty = TypeAliasType(
    "CountsAdditionalProperty", Annotated[int, Field(ge=0)]
)


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
