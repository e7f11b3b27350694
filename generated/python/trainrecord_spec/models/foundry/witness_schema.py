# DO NOT EDIT: generated from spec/schemas/foundry/witness.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field
from trainrecord_spec._base import StrictModel


class FoundryWitness(StrictModel):
    """
    Foundry run records v1: the witness observed.attempt<N>.json for restart attempt N. It has exactly these ten fields, no more and no fewer.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    attempt: Annotated[int, Field(ge=0)]
    """
    The restart attempt, read from SLURM_RESTART_COUNT, or 0 when that variable is unset. Never negative.
    """
    captured_at: Annotated[
        str,
        Field(
            max_length=32,
            pattern='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{6})?\\+00:00$',
        ),
    ]
    """
    When the witness was written, in Coordinated Universal Time, as datetime.now(timezone.utc).isoformat() writes it: seconds, optional microseconds, and the offset +00:00.
    """
    config_sha: Annotated[
        str, Field(max_length=16, min_length=16, pattern='^[0-9a-f]{16}$')
    ]
    """
    The first 16 lowercase hexadecimal characters of the SHA-256 of json.dumps(config, sort_keys=True), the configuration as the process loaded it after overrides.
    """
    cpu_threads: Annotated[int | None, Field(ge=1)]
    """
    OMP_NUM_THREADS when it is set, otherwise the number of CPUs visible to the process. At least 1.
    """
    device: Annotated[str, Field(min_length=1, pattern='\\S')]
    """
    The device the run requested, such as cpu, cuda, cuda:1 or mps. Not blank.
    """
    device_name: str | None
    """
    The accelerator's name as PyTorch reports it; null on the CPU.
    """
    experiment_id: int
    """
    The run id the launcher supplied in FOUNDRY_RUN_ID.
    """
    peak_vram_mb: Annotated[int | None, Field(ge=0)]
    """
    Peak accelerator memory allocated, in whole mebibytes; null on the CPU.
    """
    run_record_format: Literal[1]
    """
    The format version. Exactly 1 for version 1; a reader inspects it before anything else and refuses versions it does not understand.
    """
    wall_seconds: Annotated[int, Field(ge=0)]
    """
    Elapsed whole seconds of the run, supplied by the training entry point. Never negative.
    """
