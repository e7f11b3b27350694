# DO NOT EDIT: generated from spec/schemas/diary/events/manifest.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from trainrecord_spec._base import StrictModel

from .. import common_schema
from ..common_schema import DiaryLineCommon


class Producer(StrictModel):
    layer: Annotated[str, Field(min_length=1)]
    """
    The producer's module name.
    """
    certifiable: bool
    """
    Whether dead channels of this producer can be proved from its weights and structure.
    """


class DiaryManifest(DiaryLineCommon):
    """
    Diary event manifest: What is checked and how: written once, before the first check.
    """

    event: Annotated[Literal['manifest'], Field(min_length=1)]
    """
    Always "manifest".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    check_every: Annotated[int, Field(ge=1)]
    """
    A check runs every check_every optimizer steps. At least 1.
    """
    layers: list[common_schema.LayerName]
    """
    The layers whose gradients are checked.
    """
    producers: list[Producer]
    """
    The producer layers (Conv, Linear) whose channels are checked: one object per producer with at least its layer name and whether its channels can be certified (certifiable) and, when not, why (reason).
    """
    channel_checks: bool | dict[str, Any]
    """
    Whether channel checks run (false) or their settings (an object, e.g. which statistics and the list limit).
    """
    repair: bool | dict[str, Any]
    """
    Whether repair is enabled (false) or its settings (an object, e.g. method and rng).
    """
    precision: Annotated[str, Field(min_length=1)]
    """
    The numeric precision of training: the parameters' dtypes (e.g. float32), the activations' dtype under autocast, and the GradScaler when one is enabled, e.g. "float32 parameters, bfloat16 activations (autocast) in this check's forward pass; GradScaler: gradient norms divided by the scale".
    """
    distributed: dict[str, Any] | None
    """
    The distributed setup (an object, e.g. backend, world_size, rank), or null when training runs in one process.
    """
    notes: list[str]
    """
    Sentences about what is not checked or checked with caveats; may be empty.
    """
