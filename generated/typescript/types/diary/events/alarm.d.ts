/* DO NOT EDIT: generated from spec/schemas/diary/events/alarm.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Diary event alarm: A layer's gradient norm left its band around the baseline.
 */
export type DiaryAlarm = DiaryLineCommon & {
  /**
   * Always "alarm".
   */
  event: "alarm";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * Always "warning" for alarm.
   */
  severity: "warning";
  /**
   * A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
   */
  layer: string;
  /**
   * The module class name, e.g. Conv2d.
   */
  kind: string;
  /**
   * no_gradient (the norm is 0, or the layer got no gradient and grad_norm is null), vanishing (far below the baseline) or exploding (far above it).
   */
  diagnosis: "no_gradient" | "vanishing" | "exploding";
  /**
   * The layer's gradient norm at this check: finite (non-finite gradients are nonfinite_gradient events), 0 when the gradient is all zero; null for a no_gradient alarm on a layer that got no gradient at all (no parameter of it has a .grad), which has no norm.
   */
  grad_norm: number | null;
  /**
   * The layer's baseline: 10 to the running mean of log10 gradient norm; null for a no_gradient alarm on a layer that never had a finite non-zero norm, which has no running mean.
   */
  baseline: number | null;
  /**
   * How many standard deviations of log10 gradient norm the norm lies from the baseline, or null when it cannot be computed (a zero norm).
   */
  sigma: number | null;
  [k: string]: unknown;
};

/**
 * The fields every line of diary.jsonl carries: its position, time, event type and the two hashes that chain it to the line before. A line may carry more fields than its event lists, never fewer; fields a reader does not know are ignored. The seed's named fields step, severity and layer keep their meaning on every line that carries them, listed for its event or not (and on event types this version does not list).
 */
export interface DiaryLineCommon {
  /**
   * Position of the line in the record: 0 for the first line, then contiguous.
   */
  seq: number;
  /**
   * Unix time in seconds from the writer's local clock when the line was written, rounded to milliseconds (round(time.time(), 3)).
   */
  time: number;
  /**
   * The event type, e.g. run_start or alarm. Event types this version does not list are allowed and are checked only for these common fields.
   */
  event: string;
  /**
   * The hash of the previous line (seq - 1), or 64 zeros on the first line.
   */
  prev: string;
  /**
   * SHA-256 (64 lowercase hex characters) of prev followed by the canonical JSON of the line without prev and hash: json.dumps(body, sort_keys=True, separators=(",", ":")), UTF-8.
   */
  hash: string;
  /**
   * On any line that carries it (the event's list names it or not): the optimizer step at which the check ran, counting from 0. Optional here; the events that list it require it.
   */
  step?: number;
  /**
   * On any line that carries it: one of info, warning, action, proof, critical. Optional here; the events that list it require it (some fix its value).
   */
  severity?: "info" | "warning" | "action" | "proof" | "critical";
  /**
   * On any line that carries it: a module name from model.named_modules(). Optional here; the events that list it require it.
   */
  layer?: string;
  [k: string]: unknown;
}
