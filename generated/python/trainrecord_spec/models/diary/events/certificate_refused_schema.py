# DO NOT EDIT: generated from spec/schemas/diary/events/certificate_refused.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..common_schema import DiaryLineCommon


class DiaryCertificateRefused(DiaryLineCommon):
    """
    Diary event certificate_refused: Channels look dead from their weights but a condition of the proof fails. Written once per layer and reason.
    """

    event: Annotated[Literal['certificate_refused'], Field(min_length=1)]
    """
    Always "certificate_refused".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    severity: Literal['info']
    """
    Always "info" for certificate_refused.
    """
    layer: Annotated[str, Field(min_length=1)]
    """
    The module name from model.named_modules().
    """
    batchnorm: Annotated[str | None, Field(min_length=1)]
    """
    The BatchNorm paired with the layer (its module name), or null.
    """
    count: Annotated[int, Field(ge=0)]
    """
    How many channels look dead but were not certified.
    """
    reason: Annotated[str, Field(min_length=1)]
    """
    Which condition failed, in words.
    """
