// Values the generated types must refuse. Each line below is a type error; @ts-expect-error
// makes tsc fail if the generated types ever accept it (tests/typescript/test_typescript.py).
import type {
  DiaryKnownLine,
  FoundryMetrics,
  FoundryWitness,
  Report,
} from "../../../generated/typescript/index.js";

// @ts-expect-error run_record_format is exactly 1
export const wrongVersion: FoundryWitness["run_record_format"] = 2;

// @ts-expect-error a witness has no extra fields and none missing
export const extra: FoundryWitness = { attempt: 0, extra: true };

// @ts-expect-error metrics.json is a non-empty array
export const empty: FoundryMetrics = [];

// @ts-expect-error horizon is a number, not a string
export const badRow: FoundryMetrics = [{ benchmark: "b", metric: "m", horizon: "96", seed: 0, value: 1 }];

export function alarmOnly(line: DiaryKnownLine): number {
  if (line.event === "run_start") {
    // @ts-expect-error run_start has no grad_norm: the union is discriminated on event
    return line.grad_norm;
  }
  return 0;
}

export function wordsetOnly(report: Report): unknown {
  if (report.kind === "wordset") {
    // @ts-expect-error a word set has no history entries: the union is discriminated on kind
    return report.history[0];
  }
  return null;
}
