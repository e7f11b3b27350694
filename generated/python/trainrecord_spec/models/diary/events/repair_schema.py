# DO NOT EDIT: generated from spec/schemas/diary/events/repair.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .. import common_schema
from ..common_schema import DiaryLineCommon


class DiaryRepair(DiaryLineCommon):
    """
    Diary event repair: Stuck channels were re-initialised.
    """

    event: Annotated[Literal['repair'], Field(min_length=1)]
    """
    Always "repair".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    severity: Literal['action']
    """
    Always "action" for repair.
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
    The indices of the repaired channels, truncated to the list limit.
    """
    count: Annotated[int, Field(ge=0)]
    """
    How many channels were repaired.
    """
    method: Annotated[str, Field(min_length=1)]
    """
    How the channels were re-initialised.
    """
    optimizer_slices_reset: Annotated[int, Field(ge=0)]
    """
    How many optimizer-state tensors had the repaired channels zeroed.
    """
    modification_class: Literal['discrete']
    """
    Always "discrete": a repair is a jump.
    """
    bound: None
    """
    Always null: no bound on the repair's size is enforced.
    """
    delta_norm: Annotated[float, Field(ge=0.0)]
    """
    The size of the change, the norm of the weight difference.
    """
    weight_norm_before: Annotated[float, Field(ge=0.0)]
    """
    The weight norm before the repair.
    """
    weight_norm_after: Annotated[float, Field(ge=0.0)]
    """
    The weight norm after the repair.
    """
    relative_change: Annotated[float | None, Field(ge=0.0)]
    """
    delta_norm / weight_norm_before, or null when weight_norm_before was 0.
    """
    rng: Annotated[str, Field(min_length=1)]
    """
    Where the new weights came from: the global RNG, or a seeded generator (with its seed).
    """
