"""Bench: the Foundry writers against a plain ``json.dump``, side by side in one run.

What the checks and the durability cost: ``write_metrics`` (every row validated by the
schema oracle, temporary file, fsync, rename, folder fsync) against ``json.dump`` of the
same rows to an open file; ``write_witness`` (environment parsing, oracle, fsync, hard
link) against ``json.dump`` of an equivalent dict. Prints the time per call of each and
the ratio. ``--rows`` sets the metrics size (default 1000), ``--repeat`` the calls.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from trainrecord.foundry import write_metrics, write_witness


def _rows(n: int) -> list[dict[str, Any]]:
    return [
        {
            "benchmark": f"bench{i % 7}",
            "metric": "mse",
            "horizon": 96 * (i % 4),
            "seed": i % 5,
            "value": 0.1 + i * 1e-3,
        }
        for i in range(n)
    ]


def _time(func: Any, repeat: int) -> float:
    best = float("inf")
    for i in range(repeat):
        start = time.perf_counter()
        func(i)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = _rows(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)

        def plain_metrics(i: int) -> None:
            with open(root / f"plain{i}.json", "w", encoding="utf-8") as fh:
                json.dump(rows, fh, indent=2)

        ours = _time(lambda i: write_metrics(root / "m", rows), args.repeat)
        plain = _time(plain_metrics, args.repeat)
        print(
            f"metrics, {args.rows} rows: write_metrics {ours * 1e3:.1f} ms, "
            f"json.dump {plain * 1e3:.1f} ms, ratio {ours / plain:.1f}x"
        )

        witness = {
            "attempt": 0,
            "captured_at": "2026-11-29T23:05:41.123456+00:00",
            "config_sha": "da1dca8eecbe78ba",
            "cpu_threads": 8,
            "device": "cpu",
            "device_name": None,
            "experiment_id": 1,
            "peak_vram_mb": None,
            "run_record_format": 1,
            "wall_seconds": 93,
        }

        def plain_witness(i: int) -> None:
            with open(root / f"plainw{i}.json", "x", encoding="utf-8") as fh:
                json.dump(witness, fh, indent=2)

        def our_witness(i: int) -> None:
            write_witness(
                root / "w",
                config={"lr": 0.001, "epochs": 2},
                device="cpu",
                wall_seconds=93,
                env={"FOUNDRY_RUN_ID": "1", "SLURM_RESTART_COUNT": str(i)},
            )

        ours = _time(our_witness, args.repeat)
        plain = _time(plain_witness, args.repeat)
        print(
            f"witness: write_witness {ours * 1e3:.2f} ms, json.dump {plain * 1e3:.2f} ms, "
            f"ratio {ours / plain:.1f}x"
        )


if __name__ == "__main__":
    main()
