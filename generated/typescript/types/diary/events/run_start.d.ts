/* DO NOT EDIT: generated from spec/schemas/diary/events/run_start.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Diary event run_start: The first line of every diary: what ran, on what, with which configuration.
 */
export type DiaryRunStart = DiaryLineCommon & {
  /**
   * Always "run_start".
   */
  event: "run_start";
  /**
   * The run's name as the caller gave it.
   */
  name: string;
  /**
   * What wrote the diary and its version, e.g. "trainrecord 0.1.0".
   */
  tool: string;
  /**
   * The model's class name, e.g. ResNet.
   */
  model: string;
  /**
   * The number of parameter elements in the model, trainable and frozen alike (sum of numel over model.parameters()).
   */
  parameters: number;
  layers: LayerNames;
  /**
   * SHA-256 of name:shape for every parameter in model.named_parameters() order, joined by |, where shape is written as Python writes list(tensor.shape), e.g. conv1.weight:[16, 3, 3, 3]; a scalar parameter has shape []. Two runs with the same value have the same parameter names and shapes.
   */
  architecture_sha256: string;
  /**
   * The optimizer's class name, e.g. SGD, or null when none was given.
   */
  optimizer: string | null;
  /**
   * The Python version, as platform.python_version() gives it.
   */
  python: string;
  /**
   * The PyTorch version, as torch.__version__ gives it, or null when the writer does not use torch.
   */
  torch: string | null;
  /**
   * The platform, as platform.platform() gives it.
   */
  platform: string;
  /**
   * The run's configuration as the caller gave it (any JSON object), or null.
   */
  config: {
    [k: string]: unknown;
  } | null;
  /**
   * The record format version, currently 1. It changes when a field is removed or its meaning changes; a reader refuses a version it does not know.
   */
  record_version: 1;
  /**
   * Optional. The number of the run's first step when the monitor continued a run from a checkpoint (Monitor(start_step=N)): steps and metrics rows carry on from it. Absent when the run starts at step 0.
   */
  start_step?: number;
  [k: string]: unknown;
};
/**
 * The monitored layers (modules with parameters), in model.named_modules() order.
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
