/* DO NOT EDIT: generated from spec/schemas/diary/known-line.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * A line of diary.jsonl whose event is one of the 19 event types of record_version 1, selected by event. Use this to validate a line of a known type with a discriminated union; DiaryLine also accepts unknown event types.
 */
export type DiaryKnownLine =
  | DiaryRunStart
  | DiaryStructure
  | DiaryManifest
  | DiaryAlarm
  | DiaryAlarmCleared
  | DiaryChannels
  | DiaryChannelsCleared
  | DiaryCertificate
  | DiaryCertificateRefused
  | DiaryNoGradients
  | DiaryLossReduced
  | DiaryRepair
  | DiaryLossSpike
  | DiaryLossRecovered
  | DiaryNonfiniteLoss
  | DiaryNonfiniteGradient
  | DiarySkippedStep
  | DiarySinkError
  | DiaryRunEnd;
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
 * Diary event structure: What the monitor learnt about the model's dataflow from the first sampled step.
 */
export type DiaryStructure = DiaryLineCommon & {
  /**
   * Always "structure".
   */
  event: "structure";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * {producer: batchnorm}: for each producer layer, the BatchNorm whose input is the producer's unmodified output.
   */
  pairs: {
    /**
     * A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
     */
    [k: string]: string;
  };
  relu_after: LayerNames1;
  /**
   * Where the autograd walk started: "loss", "model outputs", or null when no walk was possible.
   */
  graph: "loss" | "model outputs" | null;
  [k: string]: unknown;
};
/**
 * The layers whose output a ReLU module receives unmodified.
 *
 * Items: A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
 */
export type LayerNames1 = string[];
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
  layers: LayerNames2;
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
export type LayerNames2 = string[];
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
 * Diary event alarm_cleared: A layer's gradient norm returned to its band after an alarm.
 */
export type DiaryAlarmCleared = DiaryLineCommon & {
  /**
   * Always "alarm_cleared".
   */
  event: "alarm_cleared";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
   */
  layer: string;
  /**
   * The diagnosis of the alarm that cleared: no_gradient, vanishing or exploding.
   */
  diagnosis: "no_gradient" | "vanishing" | "exploding";
  /**
   * The layer's gradient norm at this check.
   */
  grad_norm: number;
  /**
   * The layer's baseline: 10 to the running mean of log10 gradient norm.
   */
  baseline: number;
  [k: string]: unknown;
};
/**
 * Diary event channels: The stuck-channel state of a producer layer changed.
 */
export type DiaryChannels = DiaryLineCommon & {
  /**
   * Always "channels".
   */
  event: "channels";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * warning when the level is most or all, or any channel is certified; info otherwise. Never action, proof or critical: those are a repair's, a certificate's and non-finite values'.
   */
  severity: "info" | "warning";
  /**
   * A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
   */
  layer: string;
  /**
   * The BatchNorm paired with the layer (its module name), or null.
   */
  batchnorm: string | null;
  /**
   * The layer's channel count (output channels or features).
   */
  channels: number;
  /**
   * How many of the layer's channels are stuck: none, some, most (half or more) or all.
   */
  level: "none" | "some" | "most" | "all";
  /**
   * How many channels are certified dead (proved from the weights and the structure).
   */
  n_certified: number;
  /**
   * How many channels are constant (flat) over the checked batch.
   */
  n_flat: number;
  /**
   * How many channels were observed silent (never positive after the ReLU).
   */
  n_observed: number;
  /**
   * How many channels have decayed (their weights shrank towards zero).
   */
  n_decayed: number;
  certified: ChannelIndices;
  flat: ChannelIndices1;
  observed: ChannelIndices2;
  [k: string]: unknown;
};
/**
 * The indices of the certified-dead channels, truncated to the list limit.
 */
export type ChannelIndices = number[];
/**
 * The indices of the constant channels, truncated to the list limit.
 */
export type ChannelIndices1 = number[];
/**
 * The indices of the observed-silent channels, truncated to the list limit.
 */
export type ChannelIndices2 = number[];
/**
 * Diary event channels_cleared: A producer layer's stuck channels returned to none.
 */
export type DiaryChannelsCleared = DiaryLineCommon & {
  /**
   * Always "channels_cleared".
   */
  event: "channels_cleared";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * The severity of the change: warning when stuck channels appear or grow, info when they shrink or clear. Never action, proof or critical: those are a repair's, a certificate's and non-finite values'.
   */
  severity: "info" | "warning";
  /**
   * A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
   */
  layer: string;
  /**
   * The BatchNorm paired with the layer (its module name), or null.
   */
  batchnorm: string | null;
  /**
   * The layer's channel count (output channels or features).
   */
  channels: number;
  /**
   * How many of the layer's channels are stuck: none, some, most (half or more) or all.
   */
  level: "none" | "some" | "most" | "all";
  /**
   * How many channels are certified dead (proved from the weights and the structure).
   */
  n_certified: number;
  /**
   * How many channels are constant (flat) over the checked batch.
   */
  n_flat: number;
  /**
   * How many channels were observed silent (never positive after the ReLU).
   */
  n_observed: number;
  /**
   * How many channels have decayed (their weights shrank towards zero).
   */
  n_decayed: number;
  certified: ChannelIndices3;
  flat: ChannelIndices4;
  observed: ChannelIndices5;
  [k: string]: unknown;
};
/**
 * The indices of the certified-dead channels, truncated to the list limit.
 */
export type ChannelIndices3 = number[];
/**
 * The indices of the constant channels, truncated to the list limit.
 */
export type ChannelIndices4 = number[];
/**
 * The indices of the observed-silent channels, truncated to the list limit.
 */
export type ChannelIndices5 = number[];
/**
 * Diary event certificate: Channels proved dead from the weights and the structure.
 */
export type DiaryCertificate = DiaryLineCommon & {
  /**
   * Always "certificate".
   */
  event: "certificate";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * Always "proof" for certificate.
   */
  severity: "proof";
  /**
   * A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
   */
  layer: string;
  /**
   * The BatchNorm paired with the layer (its module name), or null.
   */
  batchnorm: string | null;
  channels: ChannelIndices6;
  /**
   * How many channels are certified (all of them, even when the list is truncated).
   */
  count: number;
  /**
   * The certificate's claim in words.
   */
  statement: string;
  /**
   * Every assumption the proof rests on, one sentence each (e.g. training-mode BatchNorm, the ReLU as sole consumer).
   */
  assumes: string[];
  [k: string]: unknown;
};
/**
 * The indices of the certified channels, truncated to the list limit.
 */
export type ChannelIndices6 = number[];
/**
 * Diary event certificate_refused: Channels look dead from their weights but a condition of the proof fails. Written once per layer and reason.
 */
export type DiaryCertificateRefused = DiaryLineCommon & {
  /**
   * Always "certificate_refused".
   */
  event: "certificate_refused";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * Always "info" for certificate_refused.
   */
  severity: "info";
  /**
   * A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
   */
  layer: string;
  /**
   * The BatchNorm paired with the layer (its module name), or null.
   */
  batchnorm: string | null;
  /**
   * How many channels look dead but were not certified.
   */
  count: number;
  /**
   * Which condition failed, in words.
   */
  reason: string;
  [k: string]: unknown;
};
/**
 * Diary event no_gradients: A check found no gradients at all. Written once per run; every such check is counted in run_end.counts.checks_without_gradients.
 */
export type DiaryNoGradients = DiaryLineCommon & {
  /**
   * Always "no_gradients".
   */
  event: "no_gradients";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * Always "warning" for no_gradients.
   */
  severity: "warning";
  /**
   * What to fix, e.g. call monitor.step() after loss.backward().
   */
  message: string;
  [k: string]: unknown;
};
/**
 * Diary event loss_reduced: The loss passed to step() had several elements; its mean was recorded. Written once per run.
 */
export type DiaryLossReduced = DiaryLineCommon & {
  /**
   * Always "loss_reduced".
   */
  event: "loss_reduced";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * Always "info" for loss_reduced.
   */
  severity: "info";
  /**
   * How many elements the loss had (at least 2: a one-element loss needs no reduction).
   */
  elements: number;
  [k: string]: unknown;
};
/**
 * Diary event repair: Stuck channels were re-initialised.
 */
export type DiaryRepair = DiaryLineCommon & {
  /**
   * Always "repair".
   */
  event: "repair";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * Always "action" for repair.
   */
  severity: "action";
  /**
   * A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
   */
  layer: string;
  /**
   * The BatchNorm paired with the layer (its module name), or null.
   */
  batchnorm: string | null;
  channels: ChannelIndices7;
  /**
   * How many channels were repaired.
   */
  count: number;
  /**
   * How the channels were re-initialised.
   */
  method: string;
  /**
   * How many optimizer-state tensors had the repaired channels zeroed.
   */
  optimizer_slices_reset: number;
  /**
   * Always "discrete": a repair is a jump.
   */
  modification_class: "discrete";
  /**
   * Always null: no bound on the repair's size is enforced.
   */
  bound: null;
  /**
   * The size of the change, the norm of the weight difference.
   */
  delta_norm: number;
  /**
   * The weight norm before the repair.
   */
  weight_norm_before: number;
  /**
   * The weight norm after the repair.
   */
  weight_norm_after: number;
  /**
   * delta_norm / weight_norm_before, or null when weight_norm_before was 0.
   */
  relative_change: number | null;
  /**
   * Where the new weights came from: the global RNG, or a seeded generator (with its seed).
   */
  rng: string;
  [k: string]: unknown;
};
/**
 * The indices of the repaired channels, truncated to the list limit.
 */
export type ChannelIndices7 = number[];
/**
 * Diary event loss_spike: The loss jumped far above its running baseline.
 */
export type DiaryLossSpike = DiaryLineCommon & {
  /**
   * Always "loss_spike".
   */
  event: "loss_spike";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * Always "warning" for loss_spike.
   */
  severity: "warning";
  /**
   * The loss at this step (finite: a non-finite loss is a nonfinite_loss event).
   */
  value: number;
  /**
   * The loss baseline the spike was measured against.
   */
  baseline: number;
  [k: string]: unknown;
};
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
 * Diary event nonfinite_loss: The loss was NaN or infinite.
 */
export type DiaryNonfiniteLoss = DiaryLineCommon & {
  /**
   * Always "nonfinite_loss".
   */
  event: "nonfinite_loss";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * Always "critical" for nonfinite_loss.
   */
  severity: "critical";
  /**
   * What the loss was: "NaN", "Infinity" or "-Infinity".
   */
  value: "NaN" | "Infinity" | "-Infinity";
  [k: string]: unknown;
};
/**
 * Diary event nonfinite_gradient: Some layers' gradients held NaN or infinite values.
 */
export type DiaryNonfiniteGradient = DiaryLineCommon & {
  /**
   * Always "nonfinite_gradient".
   */
  event: "nonfinite_gradient";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * Always "critical" for nonfinite_gradient.
   */
  severity: "critical";
  layers: LayerNames3;
  [k: string]: unknown;
};
/**
 * The layers whose gradients were not finite.
 *
 * Items: A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
 */
export type LayerNames3 = string[];
/**
 * Diary event skipped_step: The GradScaler skipped the optimizer step because gradients were not finite.
 */
export type DiarySkippedStep = DiaryLineCommon & {
  /**
   * Always "skipped_step".
   */
  event: "skipped_step";
  /**
   * The optimizer step at which the check ran, counting from 0.
   */
  step: number;
  /**
   * Always "info" for skipped_step.
   */
  severity: "info";
  /**
   * The GradScaler's scale when the step was skipped. Positive.
   */
  scale: number;
  layers: LayerNames4;
  [k: string]: unknown;
};
/**
 * The layers whose gradients were not finite.
 *
 * Items: A module name as model.named_modules() gives it (without a DistributedDataParallel 'module.' prefix). Not empty.
 */
export type LayerNames4 = string[];
/**
 * Diary event sink_error: A sink (logging, a callback, TensorBoard) failed; training went on.
 */
export type DiarySinkError = DiaryLineCommon & {
  /**
   * Always "sink_error".
   */
  event: "sink_error";
  /**
   * Which sink failed.
   */
  sink: string;
  /**
   * The error, as its type and message.
   */
  error: string;
  [k: string]: unknown;
};
/**
 * Diary event run_end: The last line of a finished run.
 */
export type DiaryRunEnd = DiaryLineCommon & {
  /**
   * Always "run_end".
   */
  event: "run_end";
  /**
   * How many optimizer steps the monitor saw.
   */
  steps: number;
  /**
   * How many checks ran.
   */
  checks: number;
  /**
   * Counts by name, e.g. events by type and checks_without_gradients.
   */
  counts: {
    [k: string]: number;
  };
  /**
   * SHA-256 of metrics.jsonl as it stood when run_end was written.
   */
  metrics_sha256: string;
  /**
   * Optional. How the run ended when an exception ended it: the exception's class name and message (at most 500 characters), as the monitor saw it when it was closed while the exception was propagating (a with block left by it, or close() in an except or finally block); null or absent when the loop ended normally.
   */
  error?: {
    /**
     * The exception's class name, e.g. RuntimeError or KeyboardInterrupt.
     */
    type: string;
    /**
     * The exception's message, at most 500 characters (may be empty).
     */
    message: string;
    [k: string]: unknown;
  } | null;
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
