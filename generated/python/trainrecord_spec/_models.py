# DO NOT EDIT: generated from spec/schemas/**/*.schema.json by `make generate` (tools/generate.py).
# Change the source and run the command again; CI fails when this file drifts.
"""The table from each schema's $id to the model generated from it."""

from __future__ import annotations

from typing import Any

from trainrecord_spec.models.foundry.metrics_schema import FoundryMetrics as _0
from trainrecord_spec.models.foundry.witness_schema import FoundryWitness as _1

MODELS: dict[str, Any] = {
    'https://trainrecord.dev/schemas/foundry/metrics.schema.json': _0,
    'https://trainrecord.dev/schemas/foundry/witness.schema.json': _1,
}
