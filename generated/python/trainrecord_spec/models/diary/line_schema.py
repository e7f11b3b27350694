# DO NOT EDIT: generated from spec/schemas/diary/line.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from .common_schema import DiaryLineCommon


class DiaryLine(DiaryLineCommon):
    """
    Any line of diary.jsonl: the common fields, and, when event names a known event type, everything that event type requires. Unknown event types are accepted with the common fields.
    """
