# DO NOT EDIT: generated from spec/schemas/diary/common.schema.json by `make generate` (tools/generate.py).
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

LayerName = TypeAliasType("LayerName", Annotated[str, Field(min_length=1)])
"""
A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
"""


ChannelIndice = TypeAliasType("ChannelIndice", Annotated[int, Field(ge=0)])


class DiaryLineCommon(StrictModel):
    """
    The fields every line of diary.jsonl carries: its position, time, event type and the two hashes that chain it to the line before. A line may carry more fields than its event lists, never fewer; fields a reader does not know are ignored. The seed's named fields step, severity and layer keep their meaning on every line that carries them, listed for its event or not (and on event types this version does not list).
    """

    seq: Annotated[int, Field(ge=0)]
    """
    Position of the line in the record: 0 for the first line, then contiguous.
    """
    time: Annotated[float, Field(ge=0.0)]
    """
    Unix time in seconds from the writer's local clock when the line was written, rounded to milliseconds (round(time.time(), 3)).
    """
    event: Annotated[str, Field(min_length=1)]
    """
    The event type, e.g. run_start or alarm. Event types this version does not list are allowed and are checked only for these common fields.
    """
    prev: Annotated[str, Field(max_length=64, min_length=64, pattern='^[0-9a-f]{64}$')]
    """
    The hash of the previous line (seq - 1), or 64 zeros on the first line.
    """
    hash: Annotated[str, Field(max_length=64, min_length=64, pattern='^[0-9a-f]{64}$')]
    """
    SHA-256 (64 lowercase hex characters) of prev followed by the canonical JSON of the line without prev and hash: json.dumps(body, sort_keys=True, separators=(",", ":")), UTF-8.
    """
    step: Annotated[int | MISSING, Field(ge=0)] = MISSING
    """
    On any line that carries it (the event's list names it or not): the optimizer step at which the check ran, counting from 0. Optional here; the events that list it require it.
    """
    severity: Literal['info', 'warning', 'action', 'proof', 'critical'] | MISSING = (
        MISSING
    )
    """
    On any line that carries it: one of info, warning, action, proof, critical. Optional here; the events that list it require it (some fix its value).
    """
    layer: Annotated[str | MISSING, Field(min_length=1)] = MISSING
    """
    On any line that carries it: a module name from model.named_modules(). Optional here; the events that list it require it.
    """
