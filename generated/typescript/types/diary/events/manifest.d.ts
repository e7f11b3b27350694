/* DO NOT EDIT: generated from spec/schemas/diary/events/manifest.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Diary event manifest: What is checked and how: written once, before the first check.
 */
export type DiaryManifest = DiaryLineCommon & {
  /**
   * Always "manifest".
   */
  event: "manifest";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * A check runs every check_every optimizer steps. At least 1.
   */
  check_every: number;
  layers: LayerNames;
  /**
   * The producer layers (Conv, Linear) whose channels are checked: one object per producer with at least its layer name and whether its channels can be certified (certifiable) and, when not, why (reason).
   */
  producers: {
    /**
     * A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
     */
    layer: string;
    /**
     * Whether dead channels of this producer can be proved from its weights and structure.
     */
    certifiable: boolean;
    [k: string]: unknown;
  }[];
  /**
   * Whether channel checks run (false) or their settings (an object, e.g. which statistics and the list limit).
   */
  channel_checks:
    | boolean
    | {
        [k: string]: unknown;
      };
  /**
   * Whether repair is enabled (false) or its settings (an object, e.g. method and rng).
   */
  repair:
    | boolean
    | {
        [k: string]: unknown;
      };
  /**
   * The numeric precision of training: the parameters' dtypes (e.g. float32), the activations' dtype under autocast, and the GradScaler when one is enabled, e.g. "float32 parameters, bfloat16 activations (autocast) in this check's forward pass; GradScaler: gradient norms divided by the scale".
   */
  precision: string;
  /**
   * The distributed setup (an object, e.g. backend, world_size, rank), or null when training runs in one process.
   */
  distributed: {
    [k: string]: unknown;
  } | null;
  /**
   * Sentences about what is not checked or checked with caveats; may be empty.
   */
  notes: string[];
  [k: string]: unknown;
};
/**
 * The layers whose gradients are checked.
 *
 * Items: A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
 */
export type LayerNames = string[];

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
