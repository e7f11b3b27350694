/* DO NOT EDIT: generated from every schema in spec/schemas by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */
"use strict";
/** Schema files shipped in @trainrecord/spec, by $id. */
const path = require("node:path");
const fs = require("node:fs");

const FILES = {
  "https://trainrecord.dev/schemas/diary/common.schema.json": "schemas/diary/common.schema.json",
  "https://trainrecord.dev/schemas/diary/events/alarm.schema.json": "schemas/diary/events/alarm.schema.json",
  "https://trainrecord.dev/schemas/diary/events/alarm_cleared.schema.json": "schemas/diary/events/alarm_cleared.schema.json",
  "https://trainrecord.dev/schemas/diary/events/certificate.schema.json": "schemas/diary/events/certificate.schema.json",
  "https://trainrecord.dev/schemas/diary/events/certificate_refused.schema.json": "schemas/diary/events/certificate_refused.schema.json",
  "https://trainrecord.dev/schemas/diary/events/channels.schema.json": "schemas/diary/events/channels.schema.json",
  "https://trainrecord.dev/schemas/diary/events/channels_cleared.schema.json": "schemas/diary/events/channels_cleared.schema.json",
  "https://trainrecord.dev/schemas/diary/events/loss_recovered.schema.json": "schemas/diary/events/loss_recovered.schema.json",
  "https://trainrecord.dev/schemas/diary/events/loss_reduced.schema.json": "schemas/diary/events/loss_reduced.schema.json",
  "https://trainrecord.dev/schemas/diary/events/loss_spike.schema.json": "schemas/diary/events/loss_spike.schema.json",
  "https://trainrecord.dev/schemas/diary/events/manifest.schema.json": "schemas/diary/events/manifest.schema.json",
  "https://trainrecord.dev/schemas/diary/events/no_gradients.schema.json": "schemas/diary/events/no_gradients.schema.json",
  "https://trainrecord.dev/schemas/diary/events/nonfinite_gradient.schema.json": "schemas/diary/events/nonfinite_gradient.schema.json",
  "https://trainrecord.dev/schemas/diary/events/nonfinite_loss.schema.json": "schemas/diary/events/nonfinite_loss.schema.json",
  "https://trainrecord.dev/schemas/diary/events/repair.schema.json": "schemas/diary/events/repair.schema.json",
  "https://trainrecord.dev/schemas/diary/events/run_end.schema.json": "schemas/diary/events/run_end.schema.json",
  "https://trainrecord.dev/schemas/diary/events/run_start.schema.json": "schemas/diary/events/run_start.schema.json",
  "https://trainrecord.dev/schemas/diary/events/sink_error.schema.json": "schemas/diary/events/sink_error.schema.json",
  "https://trainrecord.dev/schemas/diary/events/skipped_step.schema.json": "schemas/diary/events/skipped_step.schema.json",
  "https://trainrecord.dev/schemas/diary/events/structure.schema.json": "schemas/diary/events/structure.schema.json",
  "https://trainrecord.dev/schemas/diary/known-line.schema.json": "schemas/diary/known-line.schema.json",
  "https://trainrecord.dev/schemas/diary/line.schema.json": "schemas/diary/line.schema.json",
  "https://trainrecord.dev/schemas/diary/metrics-row.schema.json": "schemas/diary/metrics-row.schema.json",
  "https://trainrecord.dev/schemas/diary/record.schema.json": "schemas/diary/record.schema.json",
  "https://trainrecord.dev/schemas/foundry/metrics.schema.json": "schemas/foundry/metrics.schema.json",
  "https://trainrecord.dev/schemas/foundry/witness.schema.json": "schemas/foundry/witness.schema.json",
  "https://trainrecord.dev/schemas/harness/run-response.schema.json": "schemas/harness/run-response.schema.json",
  "https://trainrecord.dev/schemas/harness/run.schema.json": "schemas/harness/run.schema.json",
  "https://trainrecord.dev/schemas/harness/start-response.schema.json": "schemas/harness/start-response.schema.json",
  "https://trainrecord.dev/schemas/harness/start.schema.json": "schemas/harness/start.schema.json",
  "https://trainrecord.dev/schemas/harness/stop-response.schema.json": "schemas/harness/stop-response.schema.json",
  "https://trainrecord.dev/schemas/harness/stop.schema.json": "schemas/harness/stop.schema.json",
  "https://trainrecord.dev/schemas/reporting/reporting.schema.json": "schemas/reporting/reporting.schema.json"
};

const packageRoot = __dirname;
const schemaIds = Object.freeze(Object.keys(FILES));

function schemaPath(id) {
  const rel = FILES[id];
  if (rel === undefined) throw new Error(`unknown schema $id: ${id}`);
  return path.join(packageRoot, rel);
}

function loadSchema(id) {
  return JSON.parse(fs.readFileSync(schemaPath(id), "utf8"));
}

module.exports = { packageRoot, schemaIds, schemaPath, loadSchema };
