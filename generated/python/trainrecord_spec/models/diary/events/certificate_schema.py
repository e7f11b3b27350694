# DO NOT EDIT: generated from spec/schemas/diary/events/certificate.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from trainrecord_spec._base import StrictModel
from typing_extensions import TypeAliasType

from .. import common_schema
from ..common_schema import DiaryLineCommon

Assume = TypeAliasType("Assume", Annotated[str, Field(min_length=1)])


class DiaryCertificate(DiaryLineCommon):
    """
    Diary event certificate: Channels proved dead from the weights and the structure.
    """

    event: Annotated[Literal['certificate'], Field(min_length=1)]
    """
    Always "certificate".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    severity: Literal['proof']
    """
    Always "proof" for certificate.
    """
    layer: Annotated[str, Field(min_length=1)]
    """
    The module name from model.named_modules().
    """
    batchnorm: Annotated[str | None, Field(min_length=1)]
    """
    The BatchNorm paired with the layer (its module name), or null.
    """
    channels: list[common_schema.ChannelIndice]
    """
    The indices of the certified channels, truncated to the list limit.
    """
    count: Annotated[int, Field(ge=0)]
    """
    How many channels are certified (all of them, even when the list is truncated).
    """
    statement: Annotated[str, Field(min_length=1)]
    """
    The certificate's claim in words.
    """
    assumes: list[Assume]
    """
    Every assumption the proof rests on, one sentence each (e.g. training-mode BatchNorm, the ReLU as sole consumer).
    """
