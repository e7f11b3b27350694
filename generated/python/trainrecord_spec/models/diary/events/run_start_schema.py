# DO NOT EDIT: generated from spec/schemas/diary/events/run_start.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
try:
    from pydantic import MISSING
except ImportError:  # pydantic < 2.14 has it under experimental
    from pydantic.experimental.missing_sentinel import MISSING  # type: ignore[no-redef]

from .. import common_schema
from ..common_schema import DiaryLineCommon


class DiaryRunStart(DiaryLineCommon):
    """
    Diary event run_start: The first line of every diary: what ran, on what, with which configuration.
    """

    event: Annotated[Literal['run_start'], Field(min_length=1)]
    """
    Always "run_start".
    """
    name: Annotated[str, Field(min_length=1)]
    """
    The run's name as the caller gave it.
    """
    tool: Annotated[str, Field(min_length=1)]
    """
    What wrote the diary and its version, e.g. "trainrecord 0.1.0".
    """
    model: Annotated[str, Field(min_length=1)]
    """
    The model's class name, e.g. ResNet.
    """
    parameters: Annotated[int, Field(ge=0)]
    """
    The number of parameter elements in the model, trainable and frozen alike (sum of numel over model.parameters()).
    """
    layers: list[common_schema.LayerName]
    """
    The monitored layers (modules with parameters), in model.named_modules() order.
    """
    architecture_sha256: Annotated[
        str, Field(max_length=64, min_length=64, pattern='^[0-9a-f]{64}$')
    ]
    """
    SHA-256 of name:shape for every parameter in model.named_parameters() order, joined by |, where shape is written as Python writes list(tensor.shape), e.g. conv1.weight:[16, 3, 3, 3]; a scalar parameter has shape []. Two runs with the same value have the same parameter names and shapes.
    """
    optimizer: Annotated[str | None, Field(min_length=1)]
    """
    The optimizer's class name, e.g. SGD, or null when none was given.
    """
    python: Annotated[str, Field(min_length=1)]
    """
    The Python version, as platform.python_version() gives it.
    """
    torch: str | None
    """
    The PyTorch version, as torch.__version__ gives it, or null when the writer does not use torch.
    """
    platform: Annotated[str, Field(min_length=1)]
    """
    The platform, as platform.platform() gives it.
    """
    config: dict[str, Any] | None
    """
    The run's configuration as the caller gave it (any JSON object), or null.
    """
    record_version: Annotated[int, Field(ge=1, le=1)]
    """
    The record format version, currently 1. It changes when a field is removed or its meaning changes; a reader refuses a version it does not know.
    """
    start_step: Annotated[int | MISSING, Field(ge=0)] = MISSING
    """
    Optional. The number of the run's first step when the monitor continued a run from a checkpoint (Monitor(start_step=N)): steps and metrics rows carry on from it. Absent when the run starts at step 0.
    """
