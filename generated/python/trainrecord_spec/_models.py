# DO NOT EDIT: generated from spec/schemas/**/*.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
"""The table from each schema's $id to the model generated from it."""

from __future__ import annotations

from typing import Any

from trainrecord_spec.models.diary.common_schema import DiaryLineCommon as _0
from trainrecord_spec.models.diary.events.alarm_schema import DiaryAlarm as _1
from trainrecord_spec.models.diary.events.alarm_cleared_schema import DiaryAlarmCleared as _2
from trainrecord_spec.models.diary.events.certificate_schema import DiaryCertificate as _3
from trainrecord_spec.models.diary.events.certificate_refused_schema import DiaryCertificateRefused as _4
from trainrecord_spec.models.diary.events.channels_schema import DiaryChannels as _5
from trainrecord_spec.models.diary.events.channels_cleared_schema import DiaryChannelsCleared as _6
from trainrecord_spec.models.diary.events.loss_recovered_schema import DiaryLossRecovered as _7
from trainrecord_spec.models.diary.events.loss_reduced_schema import DiaryLossReduced as _8
from trainrecord_spec.models.diary.events.loss_spike_schema import DiaryLossSpike as _9
from trainrecord_spec.models.diary.events.manifest_schema import DiaryManifest as _10
from trainrecord_spec.models.diary.events.no_gradients_schema import DiaryNoGradients as _11
from trainrecord_spec.models.diary.events.nonfinite_gradient_schema import DiaryNonfiniteGradient as _12
from trainrecord_spec.models.diary.events.nonfinite_loss_schema import DiaryNonfiniteLoss as _13
from trainrecord_spec.models.diary.events.repair_schema import DiaryRepair as _14
from trainrecord_spec.models.diary.events.run_end_schema import DiaryRunEnd as _15
from trainrecord_spec.models.diary.events.run_start_schema import DiaryRunStart as _16
from trainrecord_spec.models.diary.events.sink_error_schema import DiarySinkError as _17
from trainrecord_spec.models.diary.events.skipped_step_schema import DiarySkippedStep as _18
from trainrecord_spec.models.diary.events.structure_schema import DiaryStructure as _19
from trainrecord_spec.models.diary.known_line_schema import DiaryKnownLine as _20
from trainrecord_spec.models.diary.line_schema import DiaryLine as _21
from trainrecord_spec.models.diary.metrics_row_schema import DiaryMetricsRow as _22
from trainrecord_spec.models.diary.record_schema import DiaryRecordSeal as _23
from trainrecord_spec.models.foundry.metrics_schema import FoundryMetrics as _24
from trainrecord_spec.models.foundry.witness_schema import FoundryWitness as _25
from trainrecord_spec.models.harness.run_response_schema import HarnessRunResponse as _26
from trainrecord_spec.models.harness.run_schema import HarnessRunRequest as _27
from trainrecord_spec.models.harness.start_response_schema import HarnessStartResponse as _28
from trainrecord_spec.models.harness.start_schema import HarnessStartRequest as _29
from trainrecord_spec.models.harness.stop_response_schema import HarnessStopResponse as _30
from trainrecord_spec.models.harness.stop_schema import HarnessStopRequest as _31
from trainrecord_spec.models.reporting.reporting_schema import Report as _32

MODELS: dict[str, Any] = {
    'https://trainrecord.dev/schemas/diary/common.schema.json': _0,
    'https://trainrecord.dev/schemas/diary/events/alarm.schema.json': _1,
    'https://trainrecord.dev/schemas/diary/events/alarm_cleared.schema.json': _2,
    'https://trainrecord.dev/schemas/diary/events/certificate.schema.json': _3,
    'https://trainrecord.dev/schemas/diary/events/certificate_refused.schema.json': _4,
    'https://trainrecord.dev/schemas/diary/events/channels.schema.json': _5,
    'https://trainrecord.dev/schemas/diary/events/channels_cleared.schema.json': _6,
    'https://trainrecord.dev/schemas/diary/events/loss_recovered.schema.json': _7,
    'https://trainrecord.dev/schemas/diary/events/loss_reduced.schema.json': _8,
    'https://trainrecord.dev/schemas/diary/events/loss_spike.schema.json': _9,
    'https://trainrecord.dev/schemas/diary/events/manifest.schema.json': _10,
    'https://trainrecord.dev/schemas/diary/events/no_gradients.schema.json': _11,
    'https://trainrecord.dev/schemas/diary/events/nonfinite_gradient.schema.json': _12,
    'https://trainrecord.dev/schemas/diary/events/nonfinite_loss.schema.json': _13,
    'https://trainrecord.dev/schemas/diary/events/repair.schema.json': _14,
    'https://trainrecord.dev/schemas/diary/events/run_end.schema.json': _15,
    'https://trainrecord.dev/schemas/diary/events/run_start.schema.json': _16,
    'https://trainrecord.dev/schemas/diary/events/sink_error.schema.json': _17,
    'https://trainrecord.dev/schemas/diary/events/skipped_step.schema.json': _18,
    'https://trainrecord.dev/schemas/diary/events/structure.schema.json': _19,
    'https://trainrecord.dev/schemas/diary/known-line.schema.json': _20,
    'https://trainrecord.dev/schemas/diary/line.schema.json': _21,
    'https://trainrecord.dev/schemas/diary/metrics-row.schema.json': _22,
    'https://trainrecord.dev/schemas/diary/record.schema.json': _23,
    'https://trainrecord.dev/schemas/foundry/metrics.schema.json': _24,
    'https://trainrecord.dev/schemas/foundry/witness.schema.json': _25,
    'https://trainrecord.dev/schemas/harness/run-response.schema.json': _26,
    'https://trainrecord.dev/schemas/harness/run.schema.json': _27,
    'https://trainrecord.dev/schemas/harness/start-response.schema.json': _28,
    'https://trainrecord.dev/schemas/harness/start.schema.json': _29,
    'https://trainrecord.dev/schemas/harness/stop-response.schema.json': _30,
    'https://trainrecord.dev/schemas/harness/stop.schema.json': _31,
    'https://trainrecord.dev/schemas/reporting/reporting.schema.json': _32,
}
