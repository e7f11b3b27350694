/* DO NOT EDIT: generated from every schema in spec/schemas by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */


export type { DiaryLineCommon } from "./types/diary/common";
export type { DiaryAlarm } from "./types/diary/events/alarm";
export type { DiaryAlarmCleared } from "./types/diary/events/alarm_cleared";
export type { DiaryCertificate, ChannelIndices } from "./types/diary/events/certificate";
export type { DiaryCertificateRefused } from "./types/diary/events/certificate_refused";
export type { DiaryChannels, ChannelIndices1, ChannelIndices2 } from "./types/diary/events/channels";
export type { DiaryChannelsCleared } from "./types/diary/events/channels_cleared";
export type { DiaryLossRecovered } from "./types/diary/events/loss_recovered";
export type { DiaryLossReduced } from "./types/diary/events/loss_reduced";
export type { DiaryLossSpike } from "./types/diary/events/loss_spike";
export type { DiaryManifest, LayerNames } from "./types/diary/events/manifest";
export type { DiaryNoGradients } from "./types/diary/events/no_gradients";
export type { DiaryNonfiniteGradient } from "./types/diary/events/nonfinite_gradient";
export type { DiaryNonfiniteLoss } from "./types/diary/events/nonfinite_loss";
export type { DiaryRepair } from "./types/diary/events/repair";
export type { DiaryRunEnd } from "./types/diary/events/run_end";
export type { DiaryRunStart } from "./types/diary/events/run_start";
export type { DiarySinkError } from "./types/diary/events/sink_error";
export type { DiarySkippedStep } from "./types/diary/events/skipped_step";
export type { DiaryStructure } from "./types/diary/events/structure";
export type { DiaryKnownLine, LayerNames1, LayerNames2, ChannelIndices3, ChannelIndices4, ChannelIndices5, ChannelIndices6, ChannelIndices7, LayerNames3, LayerNames4 } from "./types/diary/known-line";
export type { DiaryLine } from "./types/diary/line";
export type { DiaryMetricsRow } from "./types/diary/metrics-row";
export type { DiaryRecordSeal } from "./types/diary/record";
export type { FoundryMetrics, FoundryMetricsRow } from "./types/foundry/metrics";
export type { FoundryWitness } from "./types/foundry/witness";
export type { HarnessRunResponse } from "./types/harness/run-response";
export type { HarnessRunRequest } from "./types/harness/run";
export type { HarnessStartResponse } from "./types/harness/start-response";
export type { HarnessStartRequest } from "./types/harness/start";
export type { HarnessStopResponse } from "./types/harness/stop-response";
export type { HarnessStopRequest } from "./types/harness/stop";
export type { Report, ReportTrainingValidation, ReportError, ReportWordChannel, ReportLesionInitialValidation, ReportLesionValidation1, ReportError1, ReportError2, ReportTraining, ReportTrainingConfig, ReportTrainingProgress, ReportTrainingEpoch, ReportLesion, ReportLesionConfig, ReportLesionProgress, ReportLesionValidation, ReportLesionEpoch, ReportWordset, ReportWordsetConfig, ReportWordsetProgress } from "./types/reporting/reporting";

import type { DiaryLineCommon as _DiaryLineCommon } from "./types/diary/common";
import type { DiaryAlarm as _DiaryAlarm } from "./types/diary/events/alarm";
import type { DiaryAlarmCleared as _DiaryAlarmCleared } from "./types/diary/events/alarm_cleared";
import type { DiaryCertificate as _DiaryCertificate } from "./types/diary/events/certificate";
import type { DiaryCertificateRefused as _DiaryCertificateRefused } from "./types/diary/events/certificate_refused";
import type { DiaryChannels as _DiaryChannels } from "./types/diary/events/channels";
import type { DiaryChannelsCleared as _DiaryChannelsCleared } from "./types/diary/events/channels_cleared";
import type { DiaryLossRecovered as _DiaryLossRecovered } from "./types/diary/events/loss_recovered";
import type { DiaryLossReduced as _DiaryLossReduced } from "./types/diary/events/loss_reduced";
import type { DiaryLossSpike as _DiaryLossSpike } from "./types/diary/events/loss_spike";
import type { DiaryManifest as _DiaryManifest } from "./types/diary/events/manifest";
import type { DiaryNoGradients as _DiaryNoGradients } from "./types/diary/events/no_gradients";
import type { DiaryNonfiniteGradient as _DiaryNonfiniteGradient } from "./types/diary/events/nonfinite_gradient";
import type { DiaryNonfiniteLoss as _DiaryNonfiniteLoss } from "./types/diary/events/nonfinite_loss";
import type { DiaryRepair as _DiaryRepair } from "./types/diary/events/repair";
import type { DiaryRunEnd as _DiaryRunEnd } from "./types/diary/events/run_end";
import type { DiaryRunStart as _DiaryRunStart } from "./types/diary/events/run_start";
import type { DiarySinkError as _DiarySinkError } from "./types/diary/events/sink_error";
import type { DiarySkippedStep as _DiarySkippedStep } from "./types/diary/events/skipped_step";
import type { DiaryStructure as _DiaryStructure } from "./types/diary/events/structure";
import type { DiaryKnownLine as _DiaryKnownLine } from "./types/diary/known-line";
import type { DiaryLine as _DiaryLine } from "./types/diary/line";
import type { DiaryMetricsRow as _DiaryMetricsRow } from "./types/diary/metrics-row";
import type { DiaryRecordSeal as _DiaryRecordSeal } from "./types/diary/record";
import type { FoundryMetrics as _FoundryMetrics } from "./types/foundry/metrics";
import type { FoundryWitness as _FoundryWitness } from "./types/foundry/witness";
import type { HarnessRunResponse as _HarnessRunResponse } from "./types/harness/run-response";
import type { HarnessRunRequest as _HarnessRunRequest } from "./types/harness/run";
import type { HarnessStartResponse as _HarnessStartResponse } from "./types/harness/start-response";
import type { HarnessStartRequest as _HarnessStartRequest } from "./types/harness/start";
import type { HarnessStopResponse as _HarnessStopResponse } from "./types/harness/stop-response";
import type { HarnessStopRequest as _HarnessStopRequest } from "./types/harness/stop";
import type { Report as _Report } from "./types/reporting/reporting";

/** Every record type, by its schema's `$id`. */
export interface RecordTypes {
  "https://trainrecord.dev/schemas/diary/common.schema.json": _DiaryLineCommon;
  "https://trainrecord.dev/schemas/diary/events/alarm.schema.json": _DiaryAlarm;
  "https://trainrecord.dev/schemas/diary/events/alarm_cleared.schema.json": _DiaryAlarmCleared;
  "https://trainrecord.dev/schemas/diary/events/certificate.schema.json": _DiaryCertificate;
  "https://trainrecord.dev/schemas/diary/events/certificate_refused.schema.json": _DiaryCertificateRefused;
  "https://trainrecord.dev/schemas/diary/events/channels.schema.json": _DiaryChannels;
  "https://trainrecord.dev/schemas/diary/events/channels_cleared.schema.json": _DiaryChannelsCleared;
  "https://trainrecord.dev/schemas/diary/events/loss_recovered.schema.json": _DiaryLossRecovered;
  "https://trainrecord.dev/schemas/diary/events/loss_reduced.schema.json": _DiaryLossReduced;
  "https://trainrecord.dev/schemas/diary/events/loss_spike.schema.json": _DiaryLossSpike;
  "https://trainrecord.dev/schemas/diary/events/manifest.schema.json": _DiaryManifest;
  "https://trainrecord.dev/schemas/diary/events/no_gradients.schema.json": _DiaryNoGradients;
  "https://trainrecord.dev/schemas/diary/events/nonfinite_gradient.schema.json": _DiaryNonfiniteGradient;
  "https://trainrecord.dev/schemas/diary/events/nonfinite_loss.schema.json": _DiaryNonfiniteLoss;
  "https://trainrecord.dev/schemas/diary/events/repair.schema.json": _DiaryRepair;
  "https://trainrecord.dev/schemas/diary/events/run_end.schema.json": _DiaryRunEnd;
  "https://trainrecord.dev/schemas/diary/events/run_start.schema.json": _DiaryRunStart;
  "https://trainrecord.dev/schemas/diary/events/sink_error.schema.json": _DiarySinkError;
  "https://trainrecord.dev/schemas/diary/events/skipped_step.schema.json": _DiarySkippedStep;
  "https://trainrecord.dev/schemas/diary/events/structure.schema.json": _DiaryStructure;
  "https://trainrecord.dev/schemas/diary/known-line.schema.json": _DiaryKnownLine;
  "https://trainrecord.dev/schemas/diary/line.schema.json": _DiaryLine;
  "https://trainrecord.dev/schemas/diary/metrics-row.schema.json": _DiaryMetricsRow;
  "https://trainrecord.dev/schemas/diary/record.schema.json": _DiaryRecordSeal;
  "https://trainrecord.dev/schemas/foundry/metrics.schema.json": _FoundryMetrics;
  "https://trainrecord.dev/schemas/foundry/witness.schema.json": _FoundryWitness;
  "https://trainrecord.dev/schemas/harness/run-response.schema.json": _HarnessRunResponse;
  "https://trainrecord.dev/schemas/harness/run.schema.json": _HarnessRunRequest;
  "https://trainrecord.dev/schemas/harness/start-response.schema.json": _HarnessStartResponse;
  "https://trainrecord.dev/schemas/harness/start.schema.json": _HarnessStartRequest;
  "https://trainrecord.dev/schemas/harness/stop-response.schema.json": _HarnessStopResponse;
  "https://trainrecord.dev/schemas/harness/stop.schema.json": _HarnessStopRequest;
  "https://trainrecord.dev/schemas/reporting/reporting.schema.json": _Report;
}

/** The members of DiaryKnownLine, by their `event` value: a discriminated union on `event`. */
export interface DiaryKnownLineByEvent {
  "run_start": import("./types/diary/events/run_start").DiaryRunStart;
  "structure": import("./types/diary/events/structure").DiaryStructure;
  "manifest": import("./types/diary/events/manifest").DiaryManifest;
  "alarm": import("./types/diary/events/alarm").DiaryAlarm;
  "alarm_cleared": import("./types/diary/events/alarm_cleared").DiaryAlarmCleared;
  "channels": import("./types/diary/events/channels").DiaryChannels;
  "channels_cleared": import("./types/diary/events/channels_cleared").DiaryChannelsCleared;
  "certificate": import("./types/diary/events/certificate").DiaryCertificate;
  "certificate_refused": import("./types/diary/events/certificate_refused").DiaryCertificateRefused;
  "no_gradients": import("./types/diary/events/no_gradients").DiaryNoGradients;
  "loss_reduced": import("./types/diary/events/loss_reduced").DiaryLossReduced;
  "repair": import("./types/diary/events/repair").DiaryRepair;
  "loss_spike": import("./types/diary/events/loss_spike").DiaryLossSpike;
  "loss_recovered": import("./types/diary/events/loss_recovered").DiaryLossRecovered;
  "nonfinite_loss": import("./types/diary/events/nonfinite_loss").DiaryNonfiniteLoss;
  "nonfinite_gradient": import("./types/diary/events/nonfinite_gradient").DiaryNonfiniteGradient;
  "skipped_step": import("./types/diary/events/skipped_step").DiarySkippedStep;
  "sink_error": import("./types/diary/events/sink_error").DiarySinkError;
  "run_end": import("./types/diary/events/run_end").DiaryRunEnd;
}

/** The members of Report, by their `kind` value: a discriminated union on `kind`. */
export interface ReportByKind {
  "training": import("./types/reporting/reporting").ReportTraining;
  "lesion": import("./types/reporting/reporting").ReportLesion;
  "wordset": import("./types/reporting/reporting").ReportWordset;
}

/** The `$id` of every schema shipped in this package. */
export type SchemaId = keyof RecordTypes;

/** The `$id` of every schema shipped in this package, sorted. */
export declare const schemaIds: readonly SchemaId[];
/** Absolute path of the schema file with this `$id` inside the installed package. */
export declare function schemaPath(id: string): string;
/** The parsed schema with this `$id` (JSON.parse of the shipped file). */
export declare function loadSchema(id: string): Record<string, unknown>;
/** Absolute path of the installed package's root folder. */
export declare const packageRoot: string;
