# DO NOT EDIT: generated from spec/schemas/diary/events/sink_error.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..common_schema import DiaryLineCommon


class DiarySinkError(DiaryLineCommon):
    """
    Diary event sink_error: A sink (logging, a callback, TensorBoard) failed; training went on.
    """

    event: Annotated[Literal['sink_error'], Field(min_length=1)]
    """
    Always "sink_error".
    """
    sink: Annotated[str, Field(min_length=1)]
    """
    Which sink failed.
    """
    error: Annotated[str, Field(min_length=1)]
    """
    The error, as its type and message.
    """
