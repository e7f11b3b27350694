# DO NOT EDIT: generated from spec/schemas/reporting/reporting.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
"""The report builders' keyword arguments, one TypedDict per $defs object of
reporting.schema.json.

``trainrecord.report.config(kind, **values)``, ``validation_entry`` and ``epoch_entry``
take ``**values: Unpack[...]`` of these, so an IDE completes the field names and a type
checker flags a misspelt one or a value of the wrong type. Every key is optional
(``total=False``): the builder fills a missing field with null. Bounds (minimum,
minLength, ...) are not types: the builders and the schema check them at run time.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = [
    'FIELDS',
    'WordChannel',
    'TrainingConfigFields',
    'LesionConfigFields',
    'WordsetConfigFields',
    'TrainingValidationFields',
    'LesionValidationFields',
    'TrainingEpochFields',
    'LesionEpochFields',
]


class WordChannel(TypedDict):
    """
    The units the biased model's word outputs read, e.g. {"first": 463, "last": 511}; null
    for the unbiased model.
    """

    first: int
    """The first unit the biased model's word outputs read."""

    last: int
    """The last unit the biased model's word outputs read."""


class TrainingConfigFields(TypedDict, total=False):
    """How a training run is set up (from its metadata.json; constant during the run)."""

    mode: Literal['pre', 'illit', 'lit_bias', 'lit_no_bias']
    """
    pre (pre-literate, images only), illit (illiterate), lit_bias or lit_no_bias (literate
    with or without the bias).
    """

    model_choice: str | None
    """The architecture choice, z (CORnet-Z) or s (CORnet-S); null when not recorded."""

    model_class: str | None
    """
    The Python class name of the network, e.g. CORnetZBiasedWords; null when not recorded.
    """

    parameters: int | None
    """The number of parameters of the network; null when not recorded."""

    outputs: int | None
    """The number of output classes; null when not recorded."""

    pre_name: str | None
    """
    The pre-literate model a literate or illiterate run starts from (its run has group pre
    and this name); null for pre.
    """

    wordset: str | None
    """
    The name of the word set used, when one is used; else null. A name, never the words.
    """

    batch_size: int | None
    """The training batch size, at least 1; null when not recorded."""

    lr: float | None
    """
    The SGD learning rate every epoch trains with; not negative; null when not recorded.
    """

    momentum: float | None
    """The SGD momentum; not negative; null when not recorded."""

    weight_decay: float | None
    """The SGD weight decay; not negative; null when not recorded."""

    img_classes: int | None
    """The number of image classes; null when not recorded."""

    wrd_classes: int | None
    """The number of word classes; null when not recorded."""

    train_images: int | None
    """The size of the training set (images plus word images); null when not recorded."""

    val_images: int | None
    """The size of the validation set (images plus word images); null when not recorded."""

    device_name: str | None
    """The GPU model, or the CPU; null when not recorded."""

    gpus_used: int | None
    """The number of GPUs used; null when not recorded."""


class LesionConfigFields(TypedDict, total=False):
    """How a lesion run is set up; the SGD settings are the recovery's."""

    source_name: str
    """The lesioned model; its run has the same group and this name."""

    source_mode: Literal['lit_bias', 'lit_no_bias']
    """Whether the lesioned model is biased (lit_bias) or unbiased (lit_no_bias)."""

    model_choice: str | None
    """The architecture choice, z (CORnet-Z) or s (CORnet-S); null when not recorded."""

    model_class: str | None
    """
    The Python class name of the network, e.g. CORnetZBiasedWords; null when not recorded.
    """

    parameters: int | None
    """The number of parameters of the network; null when not recorded."""

    outputs: int | None
    """The number of output classes; null when not recorded."""

    wordset: str | None
    """
    The name of the word set used, when one is used; else null. A name, never the words.
    """

    batch_size: int | None
    """The training batch size, at least 1; null when not recorded."""

    lr: float | None
    """
    The SGD learning rate every epoch trains with; not negative; null when not recorded.
    """

    momentum: float | None
    """The SGD momentum; not negative; null when not recorded."""

    weight_decay: float | None
    """The SGD weight decay; not negative; null when not recorded."""

    img_classes: int | None
    """The number of image classes; null when not recorded."""

    wrd_classes: int | None
    """The number of word classes; null when not recorded."""

    train_images: int | None
    """The size of the training set (images plus word images); null when not recorded."""

    val_images: int | None
    """The size of the validation set (images plus word images); null when not recorded."""

    device_name: str | None
    """The GPU model, or the CPU; null when not recorded."""

    gpus_used: int | None
    """The number of GPUs used; null when not recorded."""

    units_total: int | None
    """The number of units in the dense layer (512); null when not recorded."""

    lesioned_units: list[int]
    """
    The indices of the lesioned units, ascending; empty for a control run without a lesion.
    Only the list of units, never per-unit values.
    """

    word_channel: WordChannel | None
    """The units the biased model's word outputs read; null for the unbiased model."""

    reset_outgoing: bool
    """Whether the units' readout weights were re-initialised too."""

    silent_epochs: int
    """
    Epochs the units stay silent (output 0) before they are released and re-initialised.
    """

    selectivity_threshold: float | None
    """
    The word selectivity from which a unit counts as word-selective; null when not recorded.
    """

    selectivity_images: int | None
    """The number of ImageNet images in the selectivity sample; null when not recorded."""

    selectivity_words: int | None
    """
    The number of validation word images the word activations are averaged over; null when
    not recorded.
    """


class WordsetConfigFields(TypedDict, total=False):
    """How a word set is generated."""

    wordlist: str
    """The name of the word list the set is drawn from (a name, never the words)."""

    num_words: int
    """The number of words, which is the number of classes."""

    num_train: int
    """Images per word in the training split."""

    num_val: int
    """Images per word in the validation split."""

    train_fonts: list[str]
    """The font names used for the training split."""

    val_fonts: list[str]
    """The font names used for the validation split."""

    width: int
    """The image width in pixels, at least 1."""

    height: int
    """The image height in pixels, at least 1."""


class TrainingValidationFields(TypedDict, total=False):
    """
    The validation of the starting weights; null until it has run, and for a run started
    from a checkpoint.
    """

    val_loss: float | None
    """
    Mean cross-entropy per image over all validation images and words; not negative; null
    when not measured.
    """

    val_loss_images: float | None
    """Mean cross-entropy over the validation images; null when not measured."""

    val_loss_words: float | None
    """
    Mean cross-entropy over the validation words; null for pre and illit, which have no
    words.
    """

    val_accuracy_images: float | None
    """Accuracy on the validation images in percent (0 to 100); null when not measured."""

    val_accuracy_words: float | None
    """Accuracy on the validation words in percent (0 to 100); null for pre and illit."""

    duration_seconds: float | None
    """
    Wall time in seconds (of the validation; in a history entry, of the epoch's training and
    validation); null when not measured.
    """

    finished_at: str | None
    """When it finished, as sent_at writes times; null when not recorded."""


class LesionValidationFields(TypedDict, total=False):
    """
    One validation of a lesion run's model, with the unit summaries; null for the lesioned
    model until it is validated.
    """

    val_loss: float | None
    """
    Mean cross-entropy per image over all validation images and words; not negative; null
    when not measured.
    """

    val_loss_images: float | None
    """Mean cross-entropy over the validation images; null when not measured."""

    val_loss_words: float | None
    """
    Mean cross-entropy over the validation words; null for pre and illit, which have no
    words.
    """

    val_accuracy_images: float | None
    """Accuracy on the validation images in percent (0 to 100); null when not measured."""

    val_accuracy_words: float | None
    """Accuracy on the validation words in percent (0 to 100); null for pre and illit."""

    duration_seconds: float | None
    """
    Wall time in seconds (of the validation; in a history entry, of the epoch's training and
    validation); null when not measured.
    """

    finished_at: str | None
    """When it finished, as sent_at writes times; null when not recorded."""

    mean_word_activation_lesioned: float | None
    """
    Mean over the lesioned units of each unit's mean activation to the validation words;
    null without lesioned units.
    """

    mean_word_activation_other: float | None
    """The same over the other units; null when not measured."""

    word_selective_lesioned: int
    """How many of the lesioned units are word-selective."""

    word_selective_other: int
    """How many of the other units are word-selective."""


class TrainingEpochFields(TypedDict, total=False):
    """
    One finished epoch: its training means, then the validation of the weights after it.
    """

    epoch: int
    """The epoch this entry describes, in the run's numbering."""

    lr: float | None
    """The learning rate the epoch trained with; null when not recorded."""

    train_loss: float | None
    """
    Running mean cross-entropy over the epoch's training batches; null when not measured.
    """

    train_loss_images: float | None
    """The same over the images; null when not measured."""

    train_loss_words: float | None
    """The same over the words; null for pre and illit."""

    train_accuracy_images: float | None
    """
    Running training accuracy on the images in percent (0 to 100); null when not measured.
    """

    train_accuracy_words: float | None
    """
    Running training accuracy on the words in percent (0 to 100); null for pre and illit.
    """

    val_loss: float | None
    """
    Mean cross-entropy per image over all validation images and words; not negative; null
    when not measured.
    """

    val_loss_images: float | None
    """Mean cross-entropy over the validation images; null when not measured."""

    val_loss_words: float | None
    """
    Mean cross-entropy over the validation words; null for pre and illit, which have no
    words.
    """

    val_accuracy_images: float | None
    """Accuracy on the validation images in percent (0 to 100); null when not measured."""

    val_accuracy_words: float | None
    """Accuracy on the validation words in percent (0 to 100); null for pre and illit."""

    duration_seconds: float | None
    """
    Wall time in seconds (of the validation; in a history entry, of the epoch's training and
    validation); null when not measured.
    """

    finished_at: str | None
    """When it finished, as sent_at writes times; null when not recorded."""


class LesionEpochFields(TypedDict, total=False):
    """One finished epoch of a lesion run, with the unit summaries."""

    epoch: int
    """The epoch this entry describes, in the run's numbering."""

    lr: float | None
    """The learning rate the epoch trained with; null when not recorded."""

    train_loss: float | None
    """
    Running mean cross-entropy over the epoch's training batches; null when not measured.
    """

    train_loss_images: float | None
    """The same over the images; null when not measured."""

    train_loss_words: float | None
    """The same over the words; null for pre and illit."""

    train_accuracy_images: float | None
    """
    Running training accuracy on the images in percent (0 to 100); null when not measured.
    """

    train_accuracy_words: float | None
    """
    Running training accuracy on the words in percent (0 to 100); null for pre and illit.
    """

    val_loss: float | None
    """
    Mean cross-entropy per image over all validation images and words; not negative; null
    when not measured.
    """

    val_loss_images: float | None
    """Mean cross-entropy over the validation images; null when not measured."""

    val_loss_words: float | None
    """
    Mean cross-entropy over the validation words; null for pre and illit, which have no
    words.
    """

    val_accuracy_images: float | None
    """Accuracy on the validation images in percent (0 to 100); null when not measured."""

    val_accuracy_words: float | None
    """Accuracy on the validation words in percent (0 to 100); null for pre and illit."""

    duration_seconds: float | None
    """
    Wall time in seconds (of the validation; in a history entry, of the epoch's training and
    validation); null when not measured.
    """

    finished_at: str | None
    """When it finished, as sent_at writes times; null when not recorded."""

    mean_word_activation_lesioned: float | None
    """
    Mean over the lesioned units of each unit's mean activation to the validation words;
    null without lesioned units.
    """

    mean_word_activation_other: float | None
    """The same over the other units; null when not measured."""

    word_selective_lesioned: int
    """How many of the lesioned units are word-selective."""

    word_selective_other: int
    """How many of the other units are word-selective."""


FIELDS: dict[str, Any] = {
    'training_config': TrainingConfigFields,
    'lesion_config': LesionConfigFields,
    'wordset_config': WordsetConfigFields,
    'training_validation': TrainingValidationFields,
    'lesion_validation': LesionValidationFields,
    'training_epoch': TrainingEpochFields,
    'lesion_epoch': LesionEpochFields,
}
"""Each builder $defs name to its TypedDict."""
