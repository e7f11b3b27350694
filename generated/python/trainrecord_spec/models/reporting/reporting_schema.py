# DO NOT EDIT: generated from spec/schemas/reporting/reporting.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field
from trainrecord_spec._base import StrictModel
from typing_extensions import TypeAliasType


class ReportTrainingConfig(StrictModel):
    """
    How a training run is set up (from its metadata.json; constant during the run).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    mode: Literal['pre', 'illit', 'lit_bias', 'lit_no_bias']
    """
    pre (pre-literate, images only), illit (illiterate), lit_bias or lit_no_bias (literate with or without the bias).
    """
    model_choice: str | None
    """
    The architecture choice, z (CORnet-Z) or s (CORnet-S); null when not recorded.
    """
    model_class: str | None
    """
    The Python class name of the network, e.g. CORnetZBiasedWords; null when not recorded.
    """
    parameters: Annotated[int | None, Field(ge=0)]
    """
    The number of parameters of the network; null when not recorded.
    """
    outputs: Annotated[int | None, Field(ge=0)]
    """
    The number of output classes; null when not recorded.
    """
    pre_name: str | None
    """
    The pre-literate model a literate or illiterate run starts from (its run has group pre and this name); null for pre.
    """
    wordset: str | None
    """
    The name of the word set used, when one is used; else null. A name, never the words.
    """
    batch_size: Annotated[int | None, Field(ge=1)]
    """
    The training batch size, at least 1; null when not recorded.
    """
    lr: Annotated[float | None, Field(ge=0.0)]
    """
    The SGD learning rate every epoch trains with; not negative; null when not recorded.
    """
    momentum: Annotated[float | None, Field(ge=0.0)]
    """
    The SGD momentum; not negative; null when not recorded.
    """
    weight_decay: Annotated[float | None, Field(ge=0.0)]
    """
    The SGD weight decay; not negative; null when not recorded.
    """
    img_classes: Annotated[int | None, Field(ge=0)]
    """
    The number of image classes; null when not recorded.
    """
    wrd_classes: Annotated[int | None, Field(ge=0)]
    """
    The number of word classes; null when not recorded.
    """
    train_images: Annotated[int | None, Field(ge=0)]
    """
    The size of the training set (images plus word images); null when not recorded.
    """
    val_images: Annotated[int | None, Field(ge=0)]
    """
    The size of the validation set (images plus word images); null when not recorded.
    """
    device_name: str | None
    """
    The GPU model, or the CPU; null when not recorded.
    """
    gpus_used: Annotated[int | None, Field(ge=0)]
    """
    The number of GPUs used; null when not recorded.
    """


LesionedUnit = TypeAliasType("LesionedUnit", Annotated[int, Field(ge=0)])
"""
A unit index, not negative.
"""


class ReportWordsetConfig(StrictModel):
    """
    How a word set is generated.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    wordlist: Annotated[str, Field(min_length=1)]
    """
    The name of the word list the set is drawn from (a name, never the words).
    """
    num_words: Annotated[int, Field(ge=0)]
    """
    The number of words, which is the number of classes.
    """
    num_train: Annotated[int, Field(ge=0)]
    """
    Images per word in the training split.
    """
    num_val: Annotated[int, Field(ge=0)]
    """
    Images per word in the validation split.
    """
    train_fonts: list[str]
    """
    The font names used for the training split.
    """
    val_fonts: list[str]
    """
    The font names used for the validation split.
    """
    width: Annotated[int, Field(ge=1)]
    """
    The image width in pixels, at least 1.
    """
    height: Annotated[int, Field(ge=1)]
    """
    The image height in pixels, at least 1.
    """


class ReportWordChannel(StrictModel):
    """
    The units the biased model's word outputs read, e.g. {"first": 463, "last": 511}; null for the unbiased model.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    first: Annotated[int, Field(ge=0)]
    """
    The first unit the biased model's word outputs read.
    """
    last: Annotated[int, Field(ge=0)]
    """
    The last unit the biased model's word outputs read.
    """


class ReportTrainingProgress(StrictModel):
    """
    How far a training run is.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    epochs_first: Annotated[int | None, Field(ge=0)]
    """
    The number of the run's first epoch; epochs are counted from 0 over the pre-literate epochs, then the later ones. Null when not recorded.
    """
    epochs_total: Annotated[int | None, Field(ge=0)]
    """
    The number of epochs in this run; null when not recorded.
    """
    epochs_completed: Annotated[int, Field(ge=0)]
    """
    Epochs finished so far in this run (the length of history).
    """
    epoch: Annotated[int | None, Field(ge=0)]
    """
    The epoch running now (epochs_first + epochs_completed); null when not running.
    """
    phase: Literal['initial_validation', 'training', 'validation'] | None
    """
    What the run is doing: initial_validation, training or validation; null when not known (outside the training process, or not running).
    """
    batch: Annotated[int | None, Field(ge=0)]
    """
    The 0-based index of the batch being processed in the current phase; null when not known.
    """
    batches: Annotated[int | None, Field(ge=0)]
    """
    The number of batches of the current phase; null when not known.
    """
    fraction: Annotated[float | None, Field(ge=0.0, le=1.0)]
    """
    The share of the run done, 0 to 1. Training counts as the first 95 % of an epoch and validation as the last 5 % (lesion: training 95 %, validation 4 %, selectivity 1 %); the initial validation counts as nothing. Null when not known.
    """


class ReportLesionProgress(StrictModel):
    """
    How far a lesion run is.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    epochs_first: Annotated[int | None, Field(ge=0)]
    """
    The number of the run's first epoch; epochs are counted from 0 over the pre-literate epochs, then the later ones. Null when not recorded.
    """
    epochs_total: Annotated[int | None, Field(ge=0)]
    """
    The number of epochs in this run; null when not recorded.
    """
    epochs_completed: Annotated[int, Field(ge=0)]
    """
    Epochs finished so far in this run (the length of history).
    """
    epoch: Annotated[int | None, Field(ge=0)]
    """
    The epoch running now (epochs_first + epochs_completed); null when not running.
    """
    phase: Literal['intact_validation', 'intact_selectivity', 'initial_validation', 'initial_selectivity', 'training', 'validation', 'selectivity'] | None
    """
    What the lesion run is doing: intact_validation, intact_selectivity, initial_validation, initial_selectivity, training, validation or selectivity; null when not known.
    """
    batch: Annotated[int | None, Field(ge=0)]
    """
    The 0-based index of the batch being processed in the current phase; null when not known.
    """
    batches: Annotated[int | None, Field(ge=0)]
    """
    The number of batches of the current phase; null when not known.
    """
    fraction: Annotated[float | None, Field(ge=0.0, le=1.0)]
    """
    The share of the run done, 0 to 1. Training counts as the first 95 % of an epoch and validation as the last 5 % (lesion: training 95 %, validation 4 %, selectivity 1 %); the initial validation counts as nothing. Null when not known.
    """


class ReportWordsetProgress(StrictModel):
    """
    How far a word set generation is.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    words_done: Annotated[int | None, Field(ge=0)]
    """
    Words whose images are all drawn; null in a snapshot of an unfinished set.
    """
    words_total: Annotated[int, Field(ge=0)]
    """
    The number of words in the set.
    """
    fraction: Annotated[float | None, Field(ge=0.0, le=1.0)]
    """
    The share of the run done, 0 to 1. Training counts as the first 95 % of an epoch and validation as the last 5 % (lesion: training 95 %, validation 4 %, selectivity 1 %); the initial validation counts as nothing. Null when not known.
    """


class ReportTrainingValidation(StrictModel):
    """
    The validation of the starting weights; null until it has run, and for a run started from a checkpoint.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    val_loss: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy per image over all validation images and words; not negative; null when not measured.
    """
    val_loss_images: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy over the validation images; null when not measured.
    """
    val_loss_words: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy over the validation words; null for pre and illit, which have no words.
    """
    val_accuracy_images: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Accuracy on the validation images in percent (0 to 100); null when not measured.
    """
    val_accuracy_words: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Accuracy on the validation words in percent (0 to 100); null for pre and illit.
    """
    duration_seconds: Annotated[float | None, Field(ge=0.0)]
    """
    Wall time in seconds (of the validation; in a history entry, of the epoch's training and validation); null when not measured.
    """
    finished_at: Annotated[
        str | None,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When it finished, as sent_at writes times; null when not recorded.
    """


class ReportLesionValidation(StrictModel):
    """
    One validation of a lesion run's model, with the unit summaries; null for the lesioned model until it is validated.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    val_loss: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy per image over all validation images and words; not negative; null when not measured.
    """
    val_loss_images: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy over the validation images; null when not measured.
    """
    val_loss_words: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy over the validation words; null for pre and illit, which have no words.
    """
    val_accuracy_images: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Accuracy on the validation images in percent (0 to 100); null when not measured.
    """
    val_accuracy_words: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Accuracy on the validation words in percent (0 to 100); null for pre and illit.
    """
    duration_seconds: Annotated[float | None, Field(ge=0.0)]
    """
    Wall time in seconds (of the validation; in a history entry, of the epoch's training and validation); null when not measured.
    """
    finished_at: Annotated[
        str | None,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When it finished, as sent_at writes times; null when not recorded.
    """
    mean_word_activation_lesioned: float | None
    """
    Mean over the lesioned units of each unit's mean activation to the validation words; null without lesioned units.
    """
    mean_word_activation_other: float | None
    """
    The same over the other units; null when not measured.
    """
    word_selective_lesioned: Annotated[int, Field(ge=0)]
    """
    How many of the lesioned units are word-selective.
    """
    word_selective_other: Annotated[int, Field(ge=0)]
    """
    How many of the other units are word-selective.
    """


class ReportLesionValidation1(StrictModel):
    """
    The validation of the intact model, before the lesion; never null once initial_validation is an object.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    val_loss: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy per image over all validation images and words; not negative; null when not measured.
    """
    val_loss_images: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy over the validation images; null when not measured.
    """
    val_loss_words: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy over the validation words; null for pre and illit, which have no words.
    """
    val_accuracy_images: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Accuracy on the validation images in percent (0 to 100); null when not measured.
    """
    val_accuracy_words: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Accuracy on the validation words in percent (0 to 100); null for pre and illit.
    """
    duration_seconds: Annotated[float | None, Field(ge=0.0)]
    """
    Wall time in seconds (of the validation; in a history entry, of the epoch's training and validation); null when not measured.
    """
    finished_at: Annotated[
        str | None,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When it finished, as sent_at writes times; null when not recorded.
    """
    mean_word_activation_lesioned: float | None
    """
    Mean over the lesioned units of each unit's mean activation to the validation words; null without lesioned units.
    """
    mean_word_activation_other: float | None
    """
    The same over the other units; null when not measured.
    """
    word_selective_lesioned: Annotated[int, Field(ge=0)]
    """
    How many of the lesioned units are word-selective.
    """
    word_selective_other: Annotated[int, Field(ge=0)]
    """
    How many of the other units are word-selective.
    """


class ReportLesionInitialValidation(StrictModel):
    """
    The validations of the intact and of the lesioned model; null until the intact model is validated.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    intact: Annotated[ReportLesionValidation1, Field(title='ReportLesionValidation')]
    """
    The validation of the intact model, before the lesion; never null once initial_validation is an object.
    """
    lesioned: ReportLesionValidation | None
    """
    The validation of the lesioned model; null until it has run.
    """


class ReportTrainingEpoch(StrictModel):
    """
    One finished epoch: its training means, then the validation of the weights after it.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    epoch: Annotated[int, Field(ge=0)]
    """
    The epoch this entry describes, in the run's numbering.
    """
    lr: Annotated[float | None, Field(ge=0.0)]
    """
    The learning rate the epoch trained with; null when not recorded.
    """
    train_loss: Annotated[float | None, Field(ge=0.0)]
    """
    Running mean cross-entropy over the epoch's training batches; null when not measured.
    """
    train_loss_images: Annotated[float | None, Field(ge=0.0)]
    """
    The same over the images; null when not measured.
    """
    train_loss_words: Annotated[float | None, Field(ge=0.0)]
    """
    The same over the words; null for pre and illit.
    """
    train_accuracy_images: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Running training accuracy on the images in percent (0 to 100); null when not measured.
    """
    train_accuracy_words: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Running training accuracy on the words in percent (0 to 100); null for pre and illit.
    """
    val_loss: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy per image over all validation images and words; not negative; null when not measured.
    """
    val_loss_images: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy over the validation images; null when not measured.
    """
    val_loss_words: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy over the validation words; null for pre and illit, which have no words.
    """
    val_accuracy_images: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Accuracy on the validation images in percent (0 to 100); null when not measured.
    """
    val_accuracy_words: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Accuracy on the validation words in percent (0 to 100); null for pre and illit.
    """
    duration_seconds: Annotated[float | None, Field(ge=0.0)]
    """
    Wall time in seconds (of the validation; in a history entry, of the epoch's training and validation); null when not measured.
    """
    finished_at: Annotated[
        str | None,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When it finished, as sent_at writes times; null when not recorded.
    """


class ReportLesionEpoch(StrictModel):
    """
    One finished epoch of a lesion run, with the unit summaries.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    epoch: Annotated[int, Field(ge=0)]
    """
    The epoch this entry describes, in the run's numbering.
    """
    lr: Annotated[float | None, Field(ge=0.0)]
    """
    The learning rate the epoch trained with; null when not recorded.
    """
    train_loss: Annotated[float | None, Field(ge=0.0)]
    """
    Running mean cross-entropy over the epoch's training batches; null when not measured.
    """
    train_loss_images: Annotated[float | None, Field(ge=0.0)]
    """
    The same over the images; null when not measured.
    """
    train_loss_words: Annotated[float | None, Field(ge=0.0)]
    """
    The same over the words; null for pre and illit.
    """
    train_accuracy_images: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Running training accuracy on the images in percent (0 to 100); null when not measured.
    """
    train_accuracy_words: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Running training accuracy on the words in percent (0 to 100); null for pre and illit.
    """
    val_loss: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy per image over all validation images and words; not negative; null when not measured.
    """
    val_loss_images: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy over the validation images; null when not measured.
    """
    val_loss_words: Annotated[float | None, Field(ge=0.0)]
    """
    Mean cross-entropy over the validation words; null for pre and illit, which have no words.
    """
    val_accuracy_images: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Accuracy on the validation images in percent (0 to 100); null when not measured.
    """
    val_accuracy_words: Annotated[float | None, Field(ge=0.0, le=100.0)]
    """
    Accuracy on the validation words in percent (0 to 100); null for pre and illit.
    """
    duration_seconds: Annotated[float | None, Field(ge=0.0)]
    """
    Wall time in seconds (of the validation; in a history entry, of the epoch's training and validation); null when not measured.
    """
    finished_at: Annotated[
        str | None,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When it finished, as sent_at writes times; null when not recorded.
    """
    mean_word_activation_lesioned: float | None
    """
    Mean over the lesioned units of each unit's mean activation to the validation words; null without lesioned units.
    """
    mean_word_activation_other: float | None
    """
    The same over the other units; null when not measured.
    """
    word_selective_lesioned: Annotated[int, Field(ge=0)]
    """
    How many of the lesioned units are word-selective.
    """
    word_selective_other: Annotated[int, Field(ge=0)]
    """
    How many of the other units are word-selective.
    """


class ReportError(StrictModel):
    """
    What ended a failed run; null unless status is failed.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    type: Annotated[str, Field(max_length=200, min_length=1)]
    """
    The exception class name, e.g. OutOfMemoryError. Not empty, at most 200 characters.
    """
    message: Annotated[str, Field(max_length=500)]
    """
    The exception message, at most 500 characters, with the home folder shortened to ~ and no absolute paths, user names or secrets.
    """


class ReportTraining(StrictModel):
    """
    A report about a training job.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    schema_: Annotated[int, Field(alias='schema', ge=2, le=2)]
    """
    The payload format version: 2. A breaking change increases it; a receiver refuses versions it does not understand.
    """
    seq: Annotated[int, Field(ge=0, le=9007199254740991)]
    """
    The ordering number of this report for its run_id: the send time in milliseconds since the Unix epoch, strictly increasing across resumes and processes. Receivers compare it as an opaque integer; at most 2^53 - 1 so that every JSON implementation reads it exactly.
    """
    sent_at: Annotated[
        str,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When this report was built: ISO 8601 local time with the machine's UTC offset, to the second, e.g. 2026-10-05T21:48:05-04:00 (a numeric offset, never Z).
    """
    run_id: Annotated[
        str,
        Field(
            max_length=36,
            pattern='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
        ),
    ]
    """
    The UUID of the run in canonical lowercase form, stored in the run's metadata.json and the same across resumes. The primary key of a run.
    """
    kind: Literal['training']
    """
    The kind of job: training. Decides the shape of config, progress, initial_validation and history.
    """
    name: Annotated[str, Field(max_length=255, min_length=1, pattern='^[^/\\\\]+$')]
    """
    The run's folder name, e.g. pre_s_49, lesion_lit_bias_z_49u_89 or english. A display name, not a key; never a path (no / or \\).
    """
    group: Annotated[str, Field(max_length=255, min_length=1, pattern='^[^/\\\\]+$')]
    """
    The folder the run is in: for training pre, illiterate, or the word set (or name) a literate model is grouped under; for a lesion run the group of the lesioned model; for a word set always wordsets. Never a path.
    """
    host: Annotated[str, Field(max_length=255, min_length=1)]
    """
    The name of the machine running the job. Not empty, at most 255 characters.
    """
    event: Literal['started', 'progress', 'epoch_end', 'complete', 'interrupted', 'failed', 'snapshot']
    """
    Why this report was sent (§3): started, progress, epoch_end (training and lesion only), complete, interrupted, failed or snapshot.
    """
    status: Literal['in progress', 'complete', 'interrupted', 'discarded', 'failed', 'stopped']
    """
    The run's state (§6): in progress, complete, interrupted, discarded, failed, or stopped (only in a snapshot).
    """
    started_at: Annotated[
        str | None,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When the run was first started (not the latest resume), as sent_at writes times; null when unknown.
    """
    finished_at: Annotated[
        str | None,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When the run completed, as sent_at writes times; null until status is complete.
    """
    config: ReportTrainingConfig
    """
    How the run is set up (§5.2 to §5.4).
    """
    progress: ReportTrainingProgress
    """
    How far the run is (§5.2 to §5.4).
    """
    eta_seconds: Annotated[int | None, Field(ge=0)]
    """
    Estimated whole seconds until the run finishes; null when not running or not yet estimable.
    """
    initial_validation: ReportTrainingValidation | None
    """
    The validation of the starting weights; null until it has run.
    """
    history: list[ReportTrainingEpoch] | None
    """
    One entry per finished epoch, oldest first; the last entry is the finished model.
    """
    error: ReportError | None
    """
    {type, message} when status is failed, else null.
    """


class ReportWordset(StrictModel):
    """
    A report about a wordset job.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    schema_: Annotated[int, Field(alias='schema', ge=2, le=2)]
    """
    The payload format version: 2. A breaking change increases it; a receiver refuses versions it does not understand.
    """
    seq: Annotated[int, Field(ge=0, le=9007199254740991)]
    """
    The ordering number of this report for its run_id: the send time in milliseconds since the Unix epoch, strictly increasing across resumes and processes. Receivers compare it as an opaque integer; at most 2^53 - 1 so that every JSON implementation reads it exactly.
    """
    sent_at: Annotated[
        str,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When this report was built: ISO 8601 local time with the machine's UTC offset, to the second, e.g. 2026-10-05T21:48:05-04:00 (a numeric offset, never Z).
    """
    run_id: Annotated[
        str,
        Field(
            max_length=36,
            pattern='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
        ),
    ]
    """
    The UUID of the run in canonical lowercase form, stored in the run's metadata.json and the same across resumes. The primary key of a run.
    """
    kind: Literal['wordset']
    """
    The kind of job: wordset. Decides the shape of config, progress, initial_validation and history.
    """
    name: Annotated[str, Field(max_length=255, min_length=1, pattern='^[^/\\\\]+$')]
    """
    The run's folder name, e.g. pre_s_49, lesion_lit_bias_z_49u_89 or english. A display name, not a key; never a path (no / or \\).
    """
    group: Literal['wordsets']
    """
    Always wordsets for a word set.
    """
    host: Annotated[str, Field(max_length=255, min_length=1)]
    """
    The name of the machine running the job. Not empty, at most 255 characters.
    """
    event: Literal['started', 'progress', 'complete', 'interrupted', 'failed', 'snapshot']
    """
    Why this report was sent (§3): started, progress, complete, interrupted, failed or snapshot. A word set has no epochs, so never epoch_end.
    """
    status: Literal['in progress', 'complete', 'interrupted', 'discarded', 'failed', 'stopped']
    """
    The run's state (§6): in progress, complete, interrupted, discarded, failed, or stopped (only in a snapshot).
    """
    started_at: Annotated[
        str | None,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When the run was first started (not the latest resume), as sent_at writes times; null when unknown.
    """
    finished_at: Annotated[
        str | None,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When the run completed, as sent_at writes times; null until status is complete.
    """
    config: ReportWordsetConfig
    """
    How the run is set up (§5.2 to §5.4).
    """
    progress: ReportWordsetProgress
    """
    How far the run is (§5.2 to §5.4).
    """
    eta_seconds: Annotated[int | None, Field(ge=0)]
    """
    Estimated whole seconds until the run finishes; null when not running or not yet estimable.
    """
    initial_validation: None
    """
    Always null for a word set.
    """
    history: None
    """
    Always null for a word set.
    """
    error: ReportError | None
    """
    {type, message} when status is failed, else null.
    """


class ReportLesionConfig(StrictModel):
    """
    How a lesion run is set up; the SGD settings are the recovery's.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    source_name: Annotated[str, Field(min_length=1)]
    """
    The lesioned model; its run has the same group and this name.
    """
    source_mode: Literal['lit_bias', 'lit_no_bias']
    """
    Whether the lesioned model is biased (lit_bias) or unbiased (lit_no_bias).
    """
    model_choice: str | None
    """
    The architecture choice, z (CORnet-Z) or s (CORnet-S); null when not recorded.
    """
    model_class: str | None
    """
    The Python class name of the network, e.g. CORnetZBiasedWords; null when not recorded.
    """
    parameters: Annotated[int | None, Field(ge=0)]
    """
    The number of parameters of the network; null when not recorded.
    """
    outputs: Annotated[int | None, Field(ge=0)]
    """
    The number of output classes; null when not recorded.
    """
    wordset: str | None
    """
    The name of the word set used, when one is used; else null. A name, never the words.
    """
    batch_size: Annotated[int | None, Field(ge=1)]
    """
    The training batch size, at least 1; null when not recorded.
    """
    lr: Annotated[float | None, Field(ge=0.0)]
    """
    The SGD learning rate every epoch trains with; not negative; null when not recorded.
    """
    momentum: Annotated[float | None, Field(ge=0.0)]
    """
    The SGD momentum; not negative; null when not recorded.
    """
    weight_decay: Annotated[float | None, Field(ge=0.0)]
    """
    The SGD weight decay; not negative; null when not recorded.
    """
    img_classes: Annotated[int | None, Field(ge=0)]
    """
    The number of image classes; null when not recorded.
    """
    wrd_classes: Annotated[int | None, Field(ge=0)]
    """
    The number of word classes; null when not recorded.
    """
    train_images: Annotated[int | None, Field(ge=0)]
    """
    The size of the training set (images plus word images); null when not recorded.
    """
    val_images: Annotated[int | None, Field(ge=0)]
    """
    The size of the validation set (images plus word images); null when not recorded.
    """
    device_name: str | None
    """
    The GPU model, or the CPU; null when not recorded.
    """
    gpus_used: Annotated[int | None, Field(ge=0)]
    """
    The number of GPUs used; null when not recorded.
    """
    units_total: Annotated[int | None, Field(ge=0)]
    """
    The number of units in the dense layer (512); null when not recorded.
    """
    lesioned_units: list[LesionedUnit]
    """
    The indices of the lesioned units, ascending; empty for a control run without a lesion. Only the list of units, never per-unit values.
    """
    word_channel: ReportWordChannel | None
    """
    The units the biased model's word outputs read; null for the unbiased model.
    """
    reset_outgoing: bool
    """
    Whether the units' readout weights were re-initialised too.
    """
    silent_epochs: Annotated[int, Field(ge=0)]
    """
    Epochs the units stay silent (output 0) before they are released and re-initialised.
    """
    selectivity_threshold: float | None
    """
    The word selectivity from which a unit counts as word-selective; null when not recorded.
    """
    selectivity_images: Annotated[int | None, Field(ge=0)]
    """
    The number of ImageNet images in the selectivity sample; null when not recorded.
    """
    selectivity_words: Annotated[int | None, Field(ge=0)]
    """
    The number of validation word images the word activations are averaged over; null when not recorded.
    """


class ReportLesion(StrictModel):
    """
    A report about a lesion job.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    schema_: Annotated[int, Field(alias='schema', ge=2, le=2)]
    """
    The payload format version: 2. A breaking change increases it; a receiver refuses versions it does not understand.
    """
    seq: Annotated[int, Field(ge=0, le=9007199254740991)]
    """
    The ordering number of this report for its run_id: the send time in milliseconds since the Unix epoch, strictly increasing across resumes and processes. Receivers compare it as an opaque integer; at most 2^53 - 1 so that every JSON implementation reads it exactly.
    """
    sent_at: Annotated[
        str,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When this report was built: ISO 8601 local time with the machine's UTC offset, to the second, e.g. 2026-10-05T21:48:05-04:00 (a numeric offset, never Z).
    """
    run_id: Annotated[
        str,
        Field(
            max_length=36,
            pattern='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
        ),
    ]
    """
    The UUID of the run in canonical lowercase form, stored in the run's metadata.json and the same across resumes. The primary key of a run.
    """
    kind: Literal['lesion']
    """
    The kind of job: lesion. Decides the shape of config, progress, initial_validation and history.
    """
    name: Annotated[str, Field(max_length=255, min_length=1, pattern='^[^/\\\\]+$')]
    """
    The run's folder name, e.g. pre_s_49, lesion_lit_bias_z_49u_89 or english. A display name, not a key; never a path (no / or \\).
    """
    group: Annotated[str, Field(max_length=255, min_length=1, pattern='^[^/\\\\]+$')]
    """
    The folder the run is in: for training pre, illiterate, or the word set (or name) a literate model is grouped under; for a lesion run the group of the lesioned model; for a word set always wordsets. Never a path.
    """
    host: Annotated[str, Field(max_length=255, min_length=1)]
    """
    The name of the machine running the job. Not empty, at most 255 characters.
    """
    event: Literal['started', 'progress', 'epoch_end', 'complete', 'interrupted', 'failed', 'snapshot']
    """
    Why this report was sent (§3): started, progress, epoch_end (training and lesion only), complete, interrupted, failed or snapshot.
    """
    status: Literal['in progress', 'complete', 'interrupted', 'discarded', 'failed', 'stopped']
    """
    The run's state (§6): in progress, complete, interrupted, discarded, failed, or stopped (only in a snapshot).
    """
    started_at: Annotated[
        str | None,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When the run was first started (not the latest resume), as sent_at writes times; null when unknown.
    """
    finished_at: Annotated[
        str | None,
        Field(
            max_length=25,
            pattern='^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9][+-]([01][0-9]|2[0-3]):[0-5][0-9]$',
        ),
    ]
    """
    When the run completed, as sent_at writes times; null until status is complete.
    """
    config: ReportLesionConfig
    """
    How the run is set up (§5.2 to §5.4).
    """
    progress: ReportLesionProgress
    """
    How far the run is (§5.2 to §5.4).
    """
    eta_seconds: Annotated[int | None, Field(ge=0)]
    """
    Estimated whole seconds until the run finishes; null when not running or not yet estimable.
    """
    initial_validation: ReportLesionInitialValidation | None
    """
    The validations of the intact and the lesioned model; null until the intact model is validated.
    """
    history: list[ReportLesionEpoch] | None
    """
    One entry per finished epoch, oldest first; the last entry is the finished model.
    """
    error: ReportError | None
    """
    {type, message} when status is failed, else null.
    """


Report = TypeAliasType(
    "Report",
    Annotated[
        ReportTraining | ReportLesion | ReportWordset,
        Field(discriminator='kind', title='Report'),
    ],
)
"""
Reporting API v2: one report (schema 2), the full current state of one training, lesion or word set run, POSTed as JSON to the configured URL. Every field is required and no others are allowed; a field without a value is null. The kind field selects the shape.
"""
