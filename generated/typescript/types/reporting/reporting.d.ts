/* DO NOT EDIT: generated from spec/schemas/reporting/reporting.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Reporting API v2: one report (schema 2), the full current state of one training, lesion or word set run, POSTed as JSON to the configured URL. Every field is required and no others are allowed; a field without a value is null. The kind field selects the shape.
 */
export type Report = ReportTraining | ReportLesion | ReportWordset;
/**
 * The validation of the starting weights; null until it has run.
 */
export type ReportTrainingValidation = {
  /**
   * Mean cross-entropy per image over all validation images and words; not negative; null when not measured.
   */
  val_loss: number | null;
  /**
   * Mean cross-entropy over the validation images; null when not measured.
   */
  val_loss_images: number | null;
  /**
   * Mean cross-entropy over the validation words; null for pre and illit, which have no words.
   */
  val_loss_words: number | null;
  /**
   * Accuracy on the validation images in percent (0 to 100); null when not measured.
   */
  val_accuracy_images: number | null;
  /**
   * Accuracy on the validation words in percent (0 to 100); null for pre and illit.
   */
  val_accuracy_words: number | null;
  /**
   * Wall time in seconds (of the validation; in a history entry, of the epoch's training and validation); null when not measured.
   */
  duration_seconds: number | null;
  /**
   * When it finished, as sent_at writes times; null when not recorded.
   */
  finished_at: string | null;
} | null;
/**
 * {type, message} when status is failed, else null.
 */
export type ReportError = {
  /**
   * The exception class name, e.g. OutOfMemoryError. Not empty, at most 200 characters.
   */
  type: string;
  /**
   * The exception message, at most 500 characters, with the home folder shortened to ~ and no absolute paths, user names or secrets.
   */
  message: string;
} | null;
/**
 * The units the biased model's word outputs read; null for the unbiased model.
 */
export type ReportWordChannel = {
  /**
   * The first unit the biased model's word outputs read.
   */
  first: number;
  /**
   * The last unit the biased model's word outputs read.
   */
  last: number;
} | null;
/**
 * The validations of the intact and the lesioned model; null until the intact model is validated.
 */
export type ReportLesionInitialValidation = {
  intact: ReportLesionValidation;
  lesioned: ReportLesionValidation1;
} | null;
/**
 * The validation of the lesioned model; null until it has run.
 */
export type ReportLesionValidation1 = {
  /**
   * Mean cross-entropy per image over all validation images and words; not negative; null when not measured.
   */
  val_loss: number | null;
  /**
   * Mean cross-entropy over the validation images; null when not measured.
   */
  val_loss_images: number | null;
  /**
   * Mean cross-entropy over the validation words; null for pre and illit, which have no words.
   */
  val_loss_words: number | null;
  /**
   * Accuracy on the validation images in percent (0 to 100); null when not measured.
   */
  val_accuracy_images: number | null;
  /**
   * Accuracy on the validation words in percent (0 to 100); null for pre and illit.
   */
  val_accuracy_words: number | null;
  /**
   * Wall time in seconds (of the validation; in a history entry, of the epoch's training and validation); null when not measured.
   */
  duration_seconds: number | null;
  /**
   * When it finished, as sent_at writes times; null when not recorded.
   */
  finished_at: string | null;
  /**
   * Mean over the lesioned units of each unit's mean activation to the validation words; null without lesioned units.
   */
  mean_word_activation_lesioned: number | null;
  /**
   * The same over the other units; null when not measured.
   */
  mean_word_activation_other: number | null;
  /**
   * How many of the lesioned units are word-selective.
   */
  word_selective_lesioned: number;
  /**
   * How many of the other units are word-selective.
   */
  word_selective_other: number;
} | null;
/**
 * {type, message} when status is failed, else null.
 */
export type ReportError1 = {
  /**
   * The exception class name, e.g. OutOfMemoryError. Not empty, at most 200 characters.
   */
  type: string;
  /**
   * The exception message, at most 500 characters, with the home folder shortened to ~ and no absolute paths, user names or secrets.
   */
  message: string;
} | null;
/**
 * {type, message} when status is failed, else null.
 */
export type ReportError2 = {
  /**
   * The exception class name, e.g. OutOfMemoryError. Not empty, at most 200 characters.
   */
  type: string;
  /**
   * The exception message, at most 500 characters, with the home folder shortened to ~ and no absolute paths, user names or secrets.
   */
  message: string;
} | null;

/**
 * A report about a training job.
 */
export interface ReportTraining {
  /**
   * The payload format version: 2. A breaking change increases it; a receiver refuses versions it does not understand.
   */
  schema: 2;
  /**
   * The ordering number of this report for its run_id: the send time in milliseconds since the Unix epoch, strictly increasing across resumes and processes. Receivers compare it as an opaque integer; at most 2^53 - 1 so that every JSON implementation reads it exactly.
   */
  seq: number;
  /**
   * When this report was built: ISO 8601 local time with the machine's UTC offset, to the second, e.g. 2026-10-05T21:48:05-04:00 (a numeric offset, never Z).
   */
  sent_at: string;
  /**
   * The UUID of the run in canonical lowercase form, stored in the run's metadata.json and the same across resumes. The primary key of a run.
   */
  run_id: string;
  /**
   * The kind of job: training. Decides the shape of config, progress, initial_validation and history.
   */
  kind: "training";
  /**
   * The run's folder name, e.g. pre_s_49, lesion_lit_bias_z_49u_89 or english. A display name, not a key; never a path (no / or \).
   */
  name: string;
  /**
   * The folder the run is in: for training pre, illiterate, or the word set (or name) a literate model is grouped under; for a lesion run the group of the lesioned model; for a word set always wordsets. Never a path.
   */
  group: string;
  /**
   * The name of the machine running the job. Not empty, at most 255 characters.
   */
  host: string;
  /**
   * Why this report was sent (§3): started, progress, epoch_end (training and lesion only), complete, interrupted, failed or snapshot.
   */
  event: "started" | "progress" | "epoch_end" | "complete" | "interrupted" | "failed" | "snapshot";
  /**
   * The run's state (§6): in progress, complete, interrupted, discarded, failed, or stopped (only in a snapshot).
   */
  status: "in progress" | "complete" | "interrupted" | "discarded" | "failed" | "stopped";
  /**
   * When the run was first started (not the latest resume), as sent_at writes times; null when unknown.
   */
  started_at: string | null;
  /**
   * When the run completed, as sent_at writes times; null until status is complete.
   */
  finished_at: string | null;
  config: ReportTrainingConfig;
  progress: ReportTrainingProgress;
  /**
   * Estimated whole seconds until the run finishes; null when not running or not yet estimable.
   */
  eta_seconds: number | null;
  initial_validation: ReportTrainingValidation;
  /**
   * One entry per finished epoch, oldest first; the last entry is the finished model.
   */
  history: ReportTrainingEpoch[] | null;
  error: ReportError;
}
/**
 * How the run is set up (§5.2 to §5.4).
 */
export interface ReportTrainingConfig {
  /**
   * pre (pre-literate, images only), illit (illiterate), lit_bias or lit_no_bias (literate with or without the bias).
   */
  mode: "pre" | "illit" | "lit_bias" | "lit_no_bias";
  /**
   * The architecture choice, z (CORnet-Z) or s (CORnet-S); null when not recorded.
   */
  model_choice: string | null;
  /**
   * The Python class name of the network, e.g. CORnetZBiasedWords; null when not recorded.
   */
  model_class: string | null;
  /**
   * The number of parameters of the network; null when not recorded.
   */
  parameters: number | null;
  /**
   * The number of output classes; null when not recorded.
   */
  outputs: number | null;
  /**
   * The pre-literate model a literate or illiterate run starts from (its run has group pre and this name); null for pre.
   */
  pre_name: string | null;
  /**
   * The name of the word set used, when one is used; else null. A name, never the words.
   */
  wordset: string | null;
  /**
   * The training batch size, at least 1; null when not recorded.
   */
  batch_size: number | null;
  /**
   * The SGD learning rate every epoch trains with; not negative; null when not recorded.
   */
  lr: number | null;
  /**
   * The SGD momentum; not negative; null when not recorded.
   */
  momentum: number | null;
  /**
   * The SGD weight decay; not negative; null when not recorded.
   */
  weight_decay: number | null;
  /**
   * The number of image classes; null when not recorded.
   */
  img_classes: number | null;
  /**
   * The number of word classes; null when not recorded.
   */
  wrd_classes: number | null;
  /**
   * The size of the training set (images plus word images); null when not recorded.
   */
  train_images: number | null;
  /**
   * The size of the validation set (images plus word images); null when not recorded.
   */
  val_images: number | null;
  /**
   * The GPU model, or the CPU; null when not recorded.
   */
  device_name: string | null;
  /**
   * The number of GPUs used; null when not recorded.
   */
  gpus_used: number | null;
}
/**
 * How far the run is (§5.2 to §5.4).
 */
export interface ReportTrainingProgress {
  /**
   * The number of the run's first epoch; epochs are counted from 0 over the pre-literate epochs, then the later ones. Null when not recorded.
   */
  epochs_first: number | null;
  /**
   * The number of epochs in this run; null when not recorded.
   */
  epochs_total: number | null;
  /**
   * Epochs finished so far in this run (the length of history).
   */
  epochs_completed: number;
  /**
   * The epoch running now (epochs_first + epochs_completed); null when not running.
   */
  epoch: number | null;
  /**
   * What the run is doing: initial_validation, training or validation; null when not known (outside the training process, or not running).
   */
  phase: "initial_validation" | "training" | "validation" | null;
  /**
   * The 0-based index of the batch being processed in the current phase; null when not known.
   */
  batch: number | null;
  /**
   * The number of batches of the current phase; null when not known.
   */
  batches: number | null;
  /**
   * The share of the run done, 0 to 1. Training counts as the first 95 % of an epoch and validation as the last 5 % (lesion: training 95 %, validation 4 %, selectivity 1 %); the initial validation counts as nothing. Null when not known.
   */
  fraction: number | null;
}
/**
 * One finished epoch: its training means, then the validation of the weights after it.
 */
export interface ReportTrainingEpoch {
  /**
   * The epoch this entry describes, in the run's numbering.
   */
  epoch: number;
  /**
   * The learning rate the epoch trained with; null when not recorded.
   */
  lr: number | null;
  /**
   * Running mean cross-entropy over the epoch's training batches; null when not measured.
   */
  train_loss: number | null;
  /**
   * The same over the images; null when not measured.
   */
  train_loss_images: number | null;
  /**
   * The same over the words; null for pre and illit.
   */
  train_loss_words: number | null;
  /**
   * Running training accuracy on the images in percent (0 to 100); null when not measured.
   */
  train_accuracy_images: number | null;
  /**
   * Running training accuracy on the words in percent (0 to 100); null for pre and illit.
   */
  train_accuracy_words: number | null;
  /**
   * Mean cross-entropy per image over all validation images and words; not negative; null when not measured.
   */
  val_loss: number | null;
  /**
   * Mean cross-entropy over the validation images; null when not measured.
   */
  val_loss_images: number | null;
  /**
   * Mean cross-entropy over the validation words; null for pre and illit, which have no words.
   */
  val_loss_words: number | null;
  /**
   * Accuracy on the validation images in percent (0 to 100); null when not measured.
   */
  val_accuracy_images: number | null;
  /**
   * Accuracy on the validation words in percent (0 to 100); null for pre and illit.
   */
  val_accuracy_words: number | null;
  /**
   * Wall time in seconds (of the validation; in a history entry, of the epoch's training and validation); null when not measured.
   */
  duration_seconds: number | null;
  /**
   * When it finished, as sent_at writes times; null when not recorded.
   */
  finished_at: string | null;
}
/**
 * A report about a lesion job.
 */
export interface ReportLesion {
  /**
   * The payload format version: 2. A breaking change increases it; a receiver refuses versions it does not understand.
   */
  schema: 2;
  /**
   * The ordering number of this report for its run_id: the send time in milliseconds since the Unix epoch, strictly increasing across resumes and processes. Receivers compare it as an opaque integer; at most 2^53 - 1 so that every JSON implementation reads it exactly.
   */
  seq: number;
  /**
   * When this report was built: ISO 8601 local time with the machine's UTC offset, to the second, e.g. 2026-10-05T21:48:05-04:00 (a numeric offset, never Z).
   */
  sent_at: string;
  /**
   * The UUID of the run in canonical lowercase form, stored in the run's metadata.json and the same across resumes. The primary key of a run.
   */
  run_id: string;
  /**
   * The kind of job: lesion. Decides the shape of config, progress, initial_validation and history.
   */
  kind: "lesion";
  /**
   * The run's folder name, e.g. pre_s_49, lesion_lit_bias_z_49u_89 or english. A display name, not a key; never a path (no / or \).
   */
  name: string;
  /**
   * The folder the run is in: for training pre, illiterate, or the word set (or name) a literate model is grouped under; for a lesion run the group of the lesioned model; for a word set always wordsets. Never a path.
   */
  group: string;
  /**
   * The name of the machine running the job. Not empty, at most 255 characters.
   */
  host: string;
  /**
   * Why this report was sent (§3): started, progress, epoch_end (training and lesion only), complete, interrupted, failed or snapshot.
   */
  event: "started" | "progress" | "epoch_end" | "complete" | "interrupted" | "failed" | "snapshot";
  /**
   * The run's state (§6): in progress, complete, interrupted, discarded, failed, or stopped (only in a snapshot).
   */
  status: "in progress" | "complete" | "interrupted" | "discarded" | "failed" | "stopped";
  /**
   * When the run was first started (not the latest resume), as sent_at writes times; null when unknown.
   */
  started_at: string | null;
  /**
   * When the run completed, as sent_at writes times; null until status is complete.
   */
  finished_at: string | null;
  config: ReportLesionConfig;
  progress: ReportLesionProgress;
  /**
   * Estimated whole seconds until the run finishes; null when not running or not yet estimable.
   */
  eta_seconds: number | null;
  initial_validation: ReportLesionInitialValidation;
  /**
   * One entry per finished epoch, oldest first; the last entry is the finished model.
   */
  history: ReportLesionEpoch[] | null;
  error: ReportError1;
}
/**
 * How the run is set up (§5.2 to §5.4).
 */
export interface ReportLesionConfig {
  /**
   * The lesioned model; its run has the same group and this name.
   */
  source_name: string;
  /**
   * Whether the lesioned model is biased (lit_bias) or unbiased (lit_no_bias).
   */
  source_mode: "lit_bias" | "lit_no_bias";
  /**
   * The architecture choice, z (CORnet-Z) or s (CORnet-S); null when not recorded.
   */
  model_choice: string | null;
  /**
   * The Python class name of the network, e.g. CORnetZBiasedWords; null when not recorded.
   */
  model_class: string | null;
  /**
   * The number of parameters of the network; null when not recorded.
   */
  parameters: number | null;
  /**
   * The number of output classes; null when not recorded.
   */
  outputs: number | null;
  /**
   * The name of the word set used, when one is used; else null. A name, never the words.
   */
  wordset: string | null;
  /**
   * The training batch size, at least 1; null when not recorded.
   */
  batch_size: number | null;
  /**
   * The SGD learning rate every epoch trains with; not negative; null when not recorded.
   */
  lr: number | null;
  /**
   * The SGD momentum; not negative; null when not recorded.
   */
  momentum: number | null;
  /**
   * The SGD weight decay; not negative; null when not recorded.
   */
  weight_decay: number | null;
  /**
   * The number of image classes; null when not recorded.
   */
  img_classes: number | null;
  /**
   * The number of word classes; null when not recorded.
   */
  wrd_classes: number | null;
  /**
   * The size of the training set (images plus word images); null when not recorded.
   */
  train_images: number | null;
  /**
   * The size of the validation set (images plus word images); null when not recorded.
   */
  val_images: number | null;
  /**
   * The GPU model, or the CPU; null when not recorded.
   */
  device_name: string | null;
  /**
   * The number of GPUs used; null when not recorded.
   */
  gpus_used: number | null;
  /**
   * The number of units in the dense layer (512); null when not recorded.
   */
  units_total: number | null;
  /**
   * The indices of the lesioned units, ascending; empty for a control run without a lesion. Only the list of units, never per-unit values.
   *
   * Items: A unit index, not negative.
   */
  lesioned_units: number[];
  word_channel: ReportWordChannel;
  /**
   * Whether the units' readout weights were re-initialised too.
   */
  reset_outgoing: boolean;
  /**
   * Epochs the units stay silent (output 0) before they are released and re-initialised.
   */
  silent_epochs: number;
  /**
   * The word selectivity from which a unit counts as word-selective; null when not recorded.
   */
  selectivity_threshold: number | null;
  /**
   * The number of ImageNet images in the selectivity sample; null when not recorded.
   */
  selectivity_images: number | null;
  /**
   * The number of validation word images the word activations are averaged over; null when not recorded.
   */
  selectivity_words: number | null;
}
/**
 * How far the run is (§5.2 to §5.4).
 */
export interface ReportLesionProgress {
  /**
   * The number of the run's first epoch; epochs are counted from 0 over the pre-literate epochs, then the later ones. Null when not recorded.
   */
  epochs_first: number | null;
  /**
   * The number of epochs in this run; null when not recorded.
   */
  epochs_total: number | null;
  /**
   * Epochs finished so far in this run (the length of history).
   */
  epochs_completed: number;
  /**
   * The epoch running now (epochs_first + epochs_completed); null when not running.
   */
  epoch: number | null;
  /**
   * What the lesion run is doing: intact_validation, intact_selectivity, initial_validation, initial_selectivity, training, validation or selectivity; null when not known.
   */
  phase:
    | "intact_validation"
    | "intact_selectivity"
    | "initial_validation"
    | "initial_selectivity"
    | "training"
    | "validation"
    | "selectivity"
    | null;
  /**
   * The 0-based index of the batch being processed in the current phase; null when not known.
   */
  batch: number | null;
  /**
   * The number of batches of the current phase; null when not known.
   */
  batches: number | null;
  /**
   * The share of the run done, 0 to 1. Training counts as the first 95 % of an epoch and validation as the last 5 % (lesion: training 95 %, validation 4 %, selectivity 1 %); the initial validation counts as nothing. Null when not known.
   */
  fraction: number | null;
}
/**
 * The validation of the intact model, before the lesion; never null once initial_validation is an object.
 */
export interface ReportLesionValidation {
  /**
   * Mean cross-entropy per image over all validation images and words; not negative; null when not measured.
   */
  val_loss: number | null;
  /**
   * Mean cross-entropy over the validation images; null when not measured.
   */
  val_loss_images: number | null;
  /**
   * Mean cross-entropy over the validation words; null for pre and illit, which have no words.
   */
  val_loss_words: number | null;
  /**
   * Accuracy on the validation images in percent (0 to 100); null when not measured.
   */
  val_accuracy_images: number | null;
  /**
   * Accuracy on the validation words in percent (0 to 100); null for pre and illit.
   */
  val_accuracy_words: number | null;
  /**
   * Wall time in seconds (of the validation; in a history entry, of the epoch's training and validation); null when not measured.
   */
  duration_seconds: number | null;
  /**
   * When it finished, as sent_at writes times; null when not recorded.
   */
  finished_at: string | null;
  /**
   * Mean over the lesioned units of each unit's mean activation to the validation words; null without lesioned units.
   */
  mean_word_activation_lesioned: number | null;
  /**
   * The same over the other units; null when not measured.
   */
  mean_word_activation_other: number | null;
  /**
   * How many of the lesioned units are word-selective.
   */
  word_selective_lesioned: number;
  /**
   * How many of the other units are word-selective.
   */
  word_selective_other: number;
}
/**
 * One finished epoch of a lesion run, with the unit summaries.
 */
export interface ReportLesionEpoch {
  /**
   * The epoch this entry describes, in the run's numbering.
   */
  epoch: number;
  /**
   * The learning rate the epoch trained with; null when not recorded.
   */
  lr: number | null;
  /**
   * Running mean cross-entropy over the epoch's training batches; null when not measured.
   */
  train_loss: number | null;
  /**
   * The same over the images; null when not measured.
   */
  train_loss_images: number | null;
  /**
   * The same over the words; null for pre and illit.
   */
  train_loss_words: number | null;
  /**
   * Running training accuracy on the images in percent (0 to 100); null when not measured.
   */
  train_accuracy_images: number | null;
  /**
   * Running training accuracy on the words in percent (0 to 100); null for pre and illit.
   */
  train_accuracy_words: number | null;
  /**
   * Mean cross-entropy per image over all validation images and words; not negative; null when not measured.
   */
  val_loss: number | null;
  /**
   * Mean cross-entropy over the validation images; null when not measured.
   */
  val_loss_images: number | null;
  /**
   * Mean cross-entropy over the validation words; null for pre and illit, which have no words.
   */
  val_loss_words: number | null;
  /**
   * Accuracy on the validation images in percent (0 to 100); null when not measured.
   */
  val_accuracy_images: number | null;
  /**
   * Accuracy on the validation words in percent (0 to 100); null for pre and illit.
   */
  val_accuracy_words: number | null;
  /**
   * Wall time in seconds (of the validation; in a history entry, of the epoch's training and validation); null when not measured.
   */
  duration_seconds: number | null;
  /**
   * When it finished, as sent_at writes times; null when not recorded.
   */
  finished_at: string | null;
  /**
   * Mean over the lesioned units of each unit's mean activation to the validation words; null without lesioned units.
   */
  mean_word_activation_lesioned: number | null;
  /**
   * The same over the other units; null when not measured.
   */
  mean_word_activation_other: number | null;
  /**
   * How many of the lesioned units are word-selective.
   */
  word_selective_lesioned: number;
  /**
   * How many of the other units are word-selective.
   */
  word_selective_other: number;
}
/**
 * A report about a wordset job.
 */
export interface ReportWordset {
  /**
   * The payload format version: 2. A breaking change increases it; a receiver refuses versions it does not understand.
   */
  schema: 2;
  /**
   * The ordering number of this report for its run_id: the send time in milliseconds since the Unix epoch, strictly increasing across resumes and processes. Receivers compare it as an opaque integer; at most 2^53 - 1 so that every JSON implementation reads it exactly.
   */
  seq: number;
  /**
   * When this report was built: ISO 8601 local time with the machine's UTC offset, to the second, e.g. 2026-10-05T21:48:05-04:00 (a numeric offset, never Z).
   */
  sent_at: string;
  /**
   * The UUID of the run in canonical lowercase form, stored in the run's metadata.json and the same across resumes. The primary key of a run.
   */
  run_id: string;
  /**
   * The kind of job: wordset. Decides the shape of config, progress, initial_validation and history.
   */
  kind: "wordset";
  /**
   * The run's folder name, e.g. pre_s_49, lesion_lit_bias_z_49u_89 or english. A display name, not a key; never a path (no / or \).
   */
  name: string;
  /**
   * Always wordsets for a word set.
   */
  group: "wordsets";
  /**
   * The name of the machine running the job. Not empty, at most 255 characters.
   */
  host: string;
  /**
   * Why this report was sent (§3): started, progress, complete, interrupted, failed or snapshot. A word set has no epochs, so never epoch_end.
   */
  event: "started" | "progress" | "complete" | "interrupted" | "failed" | "snapshot";
  /**
   * The run's state (§6): in progress, complete, interrupted, discarded, failed, or stopped (only in a snapshot).
   */
  status: "in progress" | "complete" | "interrupted" | "discarded" | "failed" | "stopped";
  /**
   * When the run was first started (not the latest resume), as sent_at writes times; null when unknown.
   */
  started_at: string | null;
  /**
   * When the run completed, as sent_at writes times; null until status is complete.
   */
  finished_at: string | null;
  config: ReportWordsetConfig;
  progress: ReportWordsetProgress;
  /**
   * Estimated whole seconds until the run finishes; null when not running or not yet estimable.
   */
  eta_seconds: number | null;
  /**
   * Always null for a word set.
   */
  initial_validation: null;
  /**
   * Always null for a word set.
   */
  history: null;
  error: ReportError2;
}
/**
 * How the run is set up (§5.2 to §5.4).
 */
export interface ReportWordsetConfig {
  /**
   * The name of the word list the set is drawn from (a name, never the words).
   */
  wordlist: string;
  /**
   * The number of words, which is the number of classes.
   */
  num_words: number;
  /**
   * Images per word in the training split.
   */
  num_train: number;
  /**
   * Images per word in the validation split.
   */
  num_val: number;
  /**
   * The font names used for the training split.
   *
   * Items: A font name.
   */
  train_fonts: string[];
  /**
   * The font names used for the validation split.
   *
   * Items: A font name.
   */
  val_fonts: string[];
  /**
   * The image width in pixels, at least 1.
   */
  width: number;
  /**
   * The image height in pixels, at least 1.
   */
  height: number;
}
/**
 * How far the run is (§5.2 to §5.4).
 */
export interface ReportWordsetProgress {
  /**
   * Words whose images are all drawn; null in a snapshot of an unfinished set.
   */
  words_done: number | null;
  /**
   * The number of words in the set.
   */
  words_total: number;
  /**
   * The share of the run done, 0 to 1. Training counts as the first 95 % of an epoch and validation as the last 5 % (lesion: training 95 %, validation 4 %, selectivity 1 %); the initial validation counts as nothing. Null when not known.
   */
  fraction: number | null;
}
