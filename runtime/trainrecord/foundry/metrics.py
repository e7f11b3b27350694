"""The Foundry ``metrics.json``: an array with one row per reported number.

:func:`write_metrics` validates every row first and writes nothing unless all are valid;
then it creates the results directory and replaces ``metrics.json`` atomically.
:func:`read_metrics` refuses a ``metrics.json`` that sits beside a witness of a version it
does not know (the seed: compatibility is not inferred from the file name), validates the
rows against the spec schema and returns the generated row models.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainrecord import schemas
from trainrecord.canonical import dumps_strict, loads_strict
from trainrecord.errors import Problem, RecordRefused, safe_value
from trainrecord.foundry import files
from trainrecord.foundry.messages import humane
from trainrecord.foundry.numbers import long_int_problems, plain_number
from trainrecord.foundry.text import text_problems
from trainrecord.foundry.witness import WITNESS_NAME

if TYPE_CHECKING:  # the generated models load with pydantic: only when a file is read
    from trainrecord_spec.models.foundry.metrics_schema import FoundryMetricsRow

METRICS_SCHEMA = "https://trainrecord.dev/schemas/foundry/metrics.schema.json"
METRICS_NAME = "metrics.json"
FIELDS = ("benchmark", "metric", "horizon", "seed", "value")
TEXT_FIELDS = ("benchmark", "metric")


def _row(row: Any) -> Any:
    """A row as a plain dict (fields in the spec's order first), numpy numbers made plain."""
    if hasattr(row, "model_dump") and callable(row.model_dump):
        row = row.model_dump()
    if not isinstance(row, Mapping):
        return row
    ordered = {k: row[k] for k in FIELDS if k in row}
    ordered.update({k: v for k, v in row.items() if k not in ordered})
    return {k: plain_number(v) for k, v in ordered.items()}


def normalize_rows(rows: Any) -> Any:
    """The rows as a list of plain dicts; anything that is not a sequence of rows stays."""
    if isinstance(rows, (str, bytes, bytearray, Mapping)) or not isinstance(rows, Iterable):
        return rows
    return [_row(row) for row in rows]


def metrics_problems(rows: Any) -> list[Problem]:
    """Every problem of the rows (parsed or as given to the writer), each with its rule id."""
    found = humane(schemas.problems(rows, METRICS_SCHEMA))
    if isinstance(rows, list):
        for i, row in enumerate(rows):
            found += text_problems(row, TEXT_FIELDS, "metrics", (i,))
            found += long_int_problems(row, ("horizon", "seed"), "metrics", (i,))
    return found


def write_metrics(results_dir: str | os.PathLike[str], rows: Iterable[Any]) -> Path:
    """Validate every row, then atomically write ``results_dir/metrics.json``; return its path.

    ``rows`` is a sequence of mappings with exactly benchmark, metric, horizon, seed and
    value. Nothing is created unless every row is valid; a refusal raises
    :class:`RecordRefused` with every problem, each with its rule id. A write that fails
    (a read-only folder, a full disk) raises :class:`~trainrecord.errors.RecordWriteError`
    (an ``OSError``) naming metrics.json, the cause and what to do; the metrics.json
    already there, if any, is left as it was.

    Args:
        results_dir: the run's results folder (made when missing); something not a
            folder in its way is refused (``metrics.path.results_dir``).
        rows: every row of the run, at least one (``metrics.empty``): mappings (or
            generated ``FoundryMetricsRow`` models) with ``benchmark`` and ``metric``
            (non-blank text), ``horizon`` and ``seed`` (ints >= 0) and ``value`` (a finite
            number); numpy numbers are taken as the numbers they hold. Each call replaces
            metrics.json with the rows it is given: pass them all in one call.

    Example (from README.md)::

        rows = [{"benchmark": "ETTh1", "metric": "mse", "horizon": 96, "seed": 0,
                 "value": 0.386}]
        write_metrics(results_dir, rows)  # every row checked first; replaced atomically
        assert read_metrics(results_dir)[0].value == 0.386
    """
    plain = normalize_rows(rows)
    found = metrics_problems(plain)
    if found:
        raise RecordRefused(found)
    data = (dumps_strict(plain, indent=2) + "\n").encode("utf-8")
    loads_strict(data)  # the guarantee: strict JSON, whatever float subclass came in
    files.check_folder(Path(results_dir), "metrics.path.results_dir")
    target = Path(results_dir) / METRICS_NAME
    made: list[Path] = []
    with files.failures_named(target, made=made):
        files.make_folders(target.parent, made)
        files.replace(target, data)
    return target


def sibling_version_problems(path: Path) -> list[Problem]:
    """A version 1 reader refuses metrics beside a witness of another version."""
    folder = path.parent
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not WITNESS_NAME.fullmatch(entry.name) or not entry.is_file():
            continue
        try:
            data = loads_strict(entry.read_bytes().decode("utf-8"))
        except (OSError, ValueError):
            continue  # a broken witness says nothing about the metrics' version
        if not isinstance(data, dict) or "run_record_format" not in data:
            continue
        version = data["run_record_format"]
        if type(version) is not int or version != 1:
            return [
                Problem(
                    "metrics.read.sibling_version",
                    (),
                    f"{path.name} sits beside {entry.name}, a run_record_format "
                    f"{safe_value(version)} witness; this version 1 reader does not infer that "
                    "the metrics are version 1; read them with a reader for that version",
                    safe_value(version),
                )
            ]
    return []


def read_metrics(path: str | os.PathLike[str]) -> list[FoundryMetricsRow]:
    """Read and validate ``metrics.json``; return the generated ``FoundryMetricsRow`` models.

    ``path`` is the file, or the results folder that holds it (as :func:`write_metrics`
    takes). A ``value`` the file holds as an integer is returned as that ``int``, exactly (a
    float would round ``2**53 + 1``).

    Args:
        path: metrics.json, or the results folder that holds it. A missing file raises
            ``FileNotFoundError``; one that is not strict JSON (UTF-8, no NaN) is refused
            (``metrics.file.json``), one that is no regular file or over 256 MiB
            (``metrics.file.regular``); rows that break the spec, or a metrics.json beside
            a witness of another ``run_record_format`` (``metrics.read.sibling_version``),
            raise :class:`RecordRefused` with every problem.

    Example::

        for row in read_metrics(results_dir):  # or results_dir + "/metrics.json"
            print(row.benchmark, row.metric, row.horizon, row.seed, row.value)
    """
    import trainrecord_spec

    file = Path(path)
    if file.is_dir() and file.name != METRICS_NAME:  # the folder write_metrics was given
        file = file / METRICS_NAME  # (a folder named metrics.json is metrics.file.regular)
    found = sibling_version_problems(file)
    if found:
        raise RecordRefused(found)
    data, text = files.read_json(file, "metrics.file.json")
    found = metrics_problems(data)
    if found:
        raise RecordRefused(found)
    models = list(trainrecord_spec.adapter(METRICS_SCHEMA).validate_json(text))
    # the model's value is a float; an integer value is returned exactly as the file holds
    # it (2**53 + 1 stays itself, as the writer wrote it and Node's reader returns it)
    return [
        model.model_copy(update={"value": row["value"]}) if type(row["value"]) is int else model
        for model, row in zip(models, data, strict=True)
    ]
