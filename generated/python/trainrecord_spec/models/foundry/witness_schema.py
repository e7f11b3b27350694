# DO NOT EDIT: generated from spec/schemas/foundry/witness.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
from __future__ import annotations

from re import compile
from typing import Annotated

from pydantic import ConfigDict, Field
from trainrecord_spec._base import StrictModel
from typing_extensions import TypeAliasType

CapturedAt = TypeAliasType(
    "CapturedAt",
    Annotated[
        str,
        Field(
            max_length=25,
            min_length=25,
            pattern=compile(
                '^(?!0000)(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)-02-29)T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\\+00:00$'
            ),
        ),
    ],
)
"""
When the witness was written, in Coordinated Universal Time, as datetime.now(timezone.utc).isoformat() writes it: YYYY-MM-DDTHH:MM:SS of a real date (years 0001 to 9999, 29 February only in a leap year), six fraction digits only when the microsecond is not zero (never .000000), and the offset +00:00. A time without an offset, or with Z, is refused: it does not say it is UTC the way isoformat() writes it.
"""


CapturedAt1 = TypeAliasType(
    "CapturedAt1",
    Annotated[
        str,
        Field(
            max_length=32,
            min_length=32,
            pattern=compile(
                '^(?!0000)(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)-02-29)T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\\.(?!000000)[0-9]{6}\\+00:00$'
            ),
        ),
    ],
)
"""
When the witness was written, in Coordinated Universal Time, as datetime.now(timezone.utc).isoformat() writes it: YYYY-MM-DDTHH:MM:SS of a real date (years 0001 to 9999, 29 February only in a leap year), six fraction digits only when the microsecond is not zero (never .000000), and the offset +00:00. A time without an offset, or with Z, is refused: it does not say it is UTC the way isoformat() writes it.
"""


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
    captured_at: CapturedAt | CapturedAt1
    """
    When the witness was written, in Coordinated Universal Time, as datetime.now(timezone.utc).isoformat() writes it: YYYY-MM-DDTHH:MM:SS of a real date (years 0001 to 9999, 29 February only in a leap year), six fraction digits only when the microsecond is not zero (never .000000), and the offset +00:00. A time without an offset, or with Z, is refused: it does not say it is UTC the way isoformat() writes it.
    """
    config_sha: Annotated[
        str, Field(max_length=16, min_length=16, pattern='^[0-9a-f]{16}$')
    ]
    """
    The first 16 lowercase hexadecimal characters of the SHA-256 of json.dumps(config, sort_keys=True), the configuration as the process loaded it after overrides.
    """
    cpu_threads: Annotated[int | None, Field(ge=1)]
    """
    OMP_NUM_THREADS when it is set, otherwise the number of CPUs this process may run on; null only when that number cannot be determined. At least 1.
    """
    device: Annotated[str, Field(pattern='\\S')]
    """
    The device the run requested, such as cpu, cuda, cuda:1 or mps. Not blank (it has a character other than white space).
    """
    device_name: str | None
    """
    The accelerator's name as PyTorch reports it; null on the CPU and when PyTorch reports no name for the device (mps, or an accelerator that was not available).
    """
    experiment_id: int
    """
    The run id the launcher supplied in FOUNDRY_RUN_ID: an integer, which may be zero or negative.
    """
    peak_vram_mb: Annotated[int | None, Field(ge=0)]
    """
    Peak accelerator memory allocated by PyTorch, in whole mebibytes (bytes divided by 1048576, rounded down); null on the CPU and when PyTorch reports no peak for the device.
    """
    run_record_format: Annotated[int, Field(ge=1, le=1)]
    """
    The format version: the integer 1 for version 1 (not 1.0, not "1"). A reader inspects it before anything else and refuses versions it does not understand.
    """
    wall_seconds: Annotated[int, Field(ge=0)]
    """
    Elapsed whole seconds of the run, supplied by the training entry point. Never negative.
    """
