# DO NOT EDIT: generated from spec/schemas/diary/events/structure.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .. import common_schema
from ..common_schema import DiaryLineCommon


class DiaryStructure(DiaryLineCommon):
    """
    Diary event structure: What the monitor learnt about the model's dataflow from the first sampled step.
    """

    event: Annotated[Literal['structure'], Field(min_length=1)]
    """
    Always "structure".
    """
    step: Annotated[int, Field(ge=0)]
    """
    The optimizer step at which the check ran, counting from 0.
    """
    pairs: dict[str, common_schema.LayerName]
    """
    {producer: batchnorm}: for each producer layer, the BatchNorm whose input is the producer's unmodified output.
    """
    relu_after: list[common_schema.LayerName]
    """
    The layers whose output a ReLU module receives unmodified.
    """
    graph: Literal['loss', 'model outputs'] | None
    """
    Where the autograd walk started: "loss", "model outputs", or null when no walk was possible.
    """
