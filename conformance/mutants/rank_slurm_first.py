"""Mutant: a witness writer that reads SLURM_PROCID before RANK (the seed: RANK first)."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
from _base import run_mutant

from trainrecord_conformance.operations import write_witness

BREAKS = "witness.rank.precedence"


def slurm_first(data: dict[str, Any]) -> dict[str, Any]:
    """When SLURM_PROCID is set, drop RANK, so that SLURM_PROCID decides the rank."""
    env = data["env"]
    if isinstance(env, dict) and "SLURM_PROCID" in env:
        env = {k: v for k, v in env.items() if k != "RANK"}
    return write_witness({**data, "env": env})


if __name__ == "__main__":
    run_mutant("rank_slurm_first", {"write_witness": slurm_first})
