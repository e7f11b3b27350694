# DO NOT EDIT: generated from spec/schemas/diary/events/channels.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .. import common_schema
from ..common_schema import DiaryLineCommon


class DiaryChannels(DiaryLineCommon):
    """
    Diary event channels: The stuck-channel state of a producer layer changed.
    """

    event: Annotated[Literal['channels'], Field(min_length=1)]
    """
    Always "channels".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    severity: Literal['info', 'warning']
    """
    warning when the level is most or all, or any channel is certified; info otherwise. Never action, proof or critical: those are a repair's, a certificate's and non-finite values'.
    """
    layer: Annotated[str, Field(min_length=1)]
    """
    The producer layer (a Conv or Linear module) whose channels are counted.
    """
    batchnorm: Annotated[str | None, Field(min_length=1)]
    """
    The BatchNorm paired with the layer (its module name), or null.
    """
    channels: Annotated[int, Field(ge=0)]
    """
    The layer's channel count (output channels or features).
    """
    level: Literal['none', 'some', 'most', 'all']
    """
    How many of the layer's channels are stuck: none, some, most (half or more) or all.
    """
    n_certified: Annotated[int, Field(ge=0)]
    """
    How many channels are certified dead (proved from the weights and the structure).
    """
    n_flat: Annotated[int, Field(ge=0)]
    """
    How many channels are constant (flat) over the checked batch.
    """
    n_observed: Annotated[int, Field(ge=0)]
    """
    How many channels were observed silent (never positive after the ReLU).
    """
    n_decayed: Annotated[int, Field(ge=0)]
    """
    How many channels have decayed (their weights shrank towards zero).
    """
    certified: list[common_schema.ChannelIndice]
    """
    The indices of the certified-dead channels, truncated to the list limit.
    """
    flat: list[common_schema.ChannelIndice]
    """
    The indices of the constant channels, truncated to the list limit.
    """
    observed: list[common_schema.ChannelIndice]
    """
    The indices of the observed-silent channels, truncated to the list limit.
    """
