/* DO NOT EDIT: generated from spec/schemas/diary/events/loss_recovered.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Diary event loss_recovered: The loss returned near its baseline after a spike.
 */
export type DiaryLossRecovered = DiaryLineCommon & {
  /**
   * Always "loss_recovered".
   */
  event: "loss_recovered";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * The loss at this step.
   */
  value: number;
  /**
   * The loss baseline.
   */
  baseline: number;
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
