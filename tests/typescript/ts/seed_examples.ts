// The seed contracts' own examples, typed with the generated types (generated/typescript).
// tsc --noEmit --strict must accept every one of them (tests/typescript/test_typescript.py).
import type {
  DiaryKnownLine,
  DiaryKnownLineByEvent,
  DiaryMetricsRow,
  FoundryMetrics,
  FoundryWitness,
  RecordTypes,
} from "../../../generated/typescript/index.js";

// foundry-run-records-v1.txt, "Witness fields": every field, CPU run.
export const witness: FoundryWitness = {
  attempt: 0,
  captured_at: "2026-10-05T21:48:05.123456+00:00",
  config_sha: "da1dca8eecbe78ba",
  cpu_threads: 8,
  device: "cpu",
  device_name: null,
  experiment_id: 42,
  peak_vram_mb: null,
  run_record_format: 1,
  wall_seconds: 17,
};

// foundry-run-records-v1.txt, "Metrics fields": a non-empty array of five-field rows.
export const metrics: FoundryMetrics = [
  { benchmark: "ETTh1", metric: "mse", horizon: 96, seed: 0, value: 0.384 },
  { benchmark: "ETTh1", metric: "mae", horizon: 96, seed: 0, value: 0.402 },
];

// diary-record-format.txt, metrics.jsonl: the real row from the watch-only demo.
export const metricsRow: DiaryMetricsRow = {
  step: 450,
  loss: 2.305945873260498,
  grad: {
    "conv1.0": 0.0, "conv1.1": 0.0, "conv2.0": 0.0, "conv2.1": 0.0, "conv3.0": 0.0,
    "conv3.1": 0.0, "classifier.0": 0.0558704249560833, "classifier.3": 0.08159016817808151,
  },
  stuck: {
    "conv1.0": [0, 0, 0, 0], "conv2.0": [64, 0, 0, 0], "conv3.0": [128, 0, 0, 0],
    "classifier.0": [0, 0, 100, 0], "classifier.3": [0, 0, 0, 0],
  },
};

// The discriminated union on `event`: narrowing on event gives the event's own fields.
export function describe(line: DiaryKnownLine): string {
  switch (line.event) {
    case "alarm":
      return `${line.layer} ${line.diagnosis} at step ${line.step}`;
    case "run_end":
      return `end after ${line.steps} steps, metrics ${line.metrics_sha256}`;
    default:
      return line.event;
  }
}

// The lookup table agrees with the union.
export const alarmSeverity: DiaryKnownLineByEvent["alarm"]["severity"] = "warning";

// RecordTypes maps a schema's $id to its type.
export const byId: RecordTypes["https://trainrecord.dev/schemas/foundry/witness.schema.json"] =
  witness;
