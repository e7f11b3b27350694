# DO NOT EDIT: generated from spec/schemas/diary/known-line.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated

from pydantic import Field
from trainrecord_spec._base import StrictModel
from typing_extensions import TypeAliasType

from .events import (
    alarm_cleared_schema,
    alarm_schema,
    certificate_refused_schema,
    certificate_schema,
    channels_cleared_schema,
    channels_schema,
    loss_recovered_schema,
    loss_reduced_schema,
    loss_spike_schema,
    manifest_schema,
    no_gradients_schema,
    nonfinite_gradient_schema,
    nonfinite_loss_schema,
    repair_schema,
    run_end_schema,
    run_start_schema,
    sink_error_schema,
    skipped_step_schema,
    structure_schema,
)

DiaryKnownLine = TypeAliasType(
    "DiaryKnownLine",
    Annotated[
        run_start_schema.DiaryRunStart | structure_schema.DiaryStructure | manifest_schema.DiaryManifest | alarm_schema.DiaryAlarm | alarm_cleared_schema.DiaryAlarmCleared | channels_schema.DiaryChannels | channels_cleared_schema.DiaryChannelsCleared | certificate_schema.DiaryCertificate | certificate_refused_schema.DiaryCertificateRefused | no_gradients_schema.DiaryNoGradients | loss_reduced_schema.DiaryLossReduced | repair_schema.DiaryRepair | loss_spike_schema.DiaryLossSpike | loss_recovered_schema.DiaryLossRecovered | nonfinite_loss_schema.DiaryNonfiniteLoss | nonfinite_gradient_schema.DiaryNonfiniteGradient | skipped_step_schema.DiarySkippedStep | sink_error_schema.DiarySinkError | run_end_schema.DiaryRunEnd,
        Field(discriminator='event', title='DiaryKnownLine'),
    ],
)
"""
A line of diary.jsonl whose event is one of the 19 event types of record_version 1, selected by event. Use this to validate a line of a known type with a discriminated union; DiaryLine also accepts unknown event types.
"""
