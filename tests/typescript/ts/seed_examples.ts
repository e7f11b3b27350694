// The seed contracts' own examples, typed with the generated types (generated/typescript).
// tsc --noEmit --strict must accept every one of them (tests/typescript/test_typescript.py).
import type {
  DiaryKnownLine,
  DiaryKnownLineByEvent,
  DiaryMetricsRow,
  FoundryMetrics,
  FoundryWitness,
  RecordTypes,
  Report,
  ReportByKind,
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

// reporting-api-v2.txt §8, "Training, progress" (both history entries shown there).
export const trainingProgress: Report = {
  schema: 2,
  seq: 1791252574351,
  sent_at: "2026-10-05T22:09:34-04:00",
  run_id: "95c70a15-e5f2-505b-8982-64f41a828363",
  kind: "training",
  name: "pre_s_49",
  group: "pre",
  host: "lab-gpu-01",
  event: "progress",
  status: "in progress",
  started_at: "2026-10-05T21:48:05-04:00",
  finished_at: null,
  config: {
    mode: "pre", model_choice: "s", model_class: "CORnetS",
    parameters: 53416616, outputs: 1000, pre_name: null, wordset: null,
    batch_size: 100, lr: 0.01, momentum: 0.9, weight_decay: 0.0001,
    img_classes: 1000, wrd_classes: 1000, train_images: 1281167, val_images: 50000,
    device_name: "NVIDIA A100 80GB PCIe", gpus_used: 1,
  },
  progress: {
    epochs_first: 0, epochs_total: 50, epochs_completed: 3, epoch: 3,
    phase: "training", batch: 6400, batches: 12812, fraction: 0.0695,
  },
  eta_seconds: 139576,
  initial_validation: {
    val_loss: 6.908, val_loss_images: 6.908, val_loss_words: null,
    val_accuracy_images: 0.1, val_accuracy_words: null,
    duration_seconds: 150.0, finished_at: "2026-10-05T21:50:40-04:00",
  },
  history: [
    { epoch: 0, lr: 0.01,
      train_loss: 5.9, train_loss_images: 5.9, train_loss_words: null,
      train_accuracy_images: 2.1, train_accuracy_words: null,
      val_loss: 5.2, val_loss_images: 5.2, val_loss_words: null,
      val_accuracy_images: 6.3, val_accuracy_words: null,
      duration_seconds: 3000.0, finished_at: "2026-10-05T22:40:40-04:00" },
    { epoch: 1, lr: 0.01,
      train_loss: 4.6, train_loss_images: 4.6, train_loss_words: null,
      train_accuracy_images: 11.8, train_accuracy_words: null,
      val_loss: 4.1, val_loss_images: 4.1, val_loss_words: null,
      val_accuracy_images: 17.0, val_accuracy_words: null,
      duration_seconds: 3000.0, finished_at: "2026-10-05T23:30:40-04:00" },
  ],
  error: null,
};

// reporting-api-v2.txt §8, "Word set, progress".
export const wordsetProgress: Report = {
  schema: 2,
  seq: 1791252557812,
  sent_at: "2026-10-05T22:09:17-04:00",
  run_id: "12270431-eafa-4e1f-af1d-da0fe84d5dea",
  kind: "wordset",
  name: "english",
  group: "wordsets",
  host: "lab-gpu-01",
  event: "progress",
  status: "in progress",
  started_at: "2026-10-05T22:09:17-04:00",
  finished_at: null,
  config: {
    wordlist: "english", num_words: 1000, num_train: 1000, num_val: 50,
    train_fonts: ["sans"], val_fonts: ["serif"], width: 500, height: 500,
  },
  progress: { words_done: 300, words_total: 1000, fraction: 0.3 },
  eta_seconds: 1640,
  initial_validation: null,
  history: null,
  error: null,
};

// reporting-api-v2.txt §8, "Lesion, one history entry".
export const lesionEpoch: ReportByKind["lesion"]["history"] = [
  { epoch: 80, lr: 0.01,
    train_loss: 1.75, train_loss_images: 3.05, train_loss_words: 0.11,
    train_accuracy_images: 37.4, train_accuracy_words: 97.1,
    val_loss: 1.93, val_loss_images: 2.73, val_loss_words: 1.13,
    val_accuracy_images: 42.2, val_accuracy_words: 74.9,
    duration_seconds: 790.0, finished_at: "2026-10-29T13:37:50-04:00",
    mean_word_activation_lesioned: 0.85, mean_word_activation_other: 0.43,
    word_selective_lesioned: 2, word_selective_other: 33 },
];

// The discriminated union on `kind`: narrowing gives the kind's own config and progress.
export function progressText(report: Report): string {
  switch (report.kind) {
    case "wordset":
      return `${report.progress.words_done ?? "?"} of ${report.progress.words_total} words`;
    case "lesion":
      return `${report.config.lesioned_units.length} units lesioned`;
    case "training":
      return `epoch ${report.progress.epoch ?? "-"} (${report.config.mode})`;
    default: {
      const never: never = report;
      return never;
    }
  }
}
