"""The Foundry witness ``observed.attempt<N>.json``: write it once, read it safely.

:func:`write_witness` validates everything first (environment, arguments, configuration),
then creates the results directory and the witness atomically, never replacing an existing
one. :func:`read_witness` inspects ``run_record_format`` before anything else, then
validates the rest against the spec schema and returns the generated model.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainrecord import schemas
from trainrecord.canonical import config_sha as _config_sha
from trainrecord.canonical import dumps_strict
from trainrecord.errors import Problem, RecordRefused, safe_value
from trainrecord.foundry import envvars, files
from trainrecord.foundry.accelerator import accelerator_info
from trainrecord.foundry.messages import humane
from trainrecord.foundry.numbers import long_int_problems, plain_number
from trainrecord.foundry.text import text_problems

if TYPE_CHECKING:  # the generated models load with pydantic: only when a file is read
    from trainrecord_spec.models.foundry.witness_schema import FoundryWitness

WITNESS_SCHEMA = "https://trainrecord.dev/schemas/foundry/witness.schema.json"
RUN_RECORD_FORMAT = 1
TEXT_FIELDS = ("device", "device_name")
"""The witness fields that hold free text (the others' patterns allow ASCII only)."""
WITNESS_NAME = re.compile(r"observed\.attempt(0|[1-9][0-9]*)\.json", re.ASCII)
"""The file name of a witness; N is written in decimal without leading zeros."""


def witness_name(attempt: int) -> str:
    """The witness file name for restart attempt ``attempt``."""
    return f"observed.attempt{attempt}.json"


def config_sha(config: Any) -> str:
    """First 16 hex characters of sha256 over ``json.dumps(config, sort_keys=True)``.

    Exactly what the seed says: NaN and infinities are hashed as json.dumps writes them
    (``NaN``, ``Infinity``, ``-Infinity``), so a run whose configuration holds one is still
    witnessed. Only a configuration json.dumps cannot serialize at all (a set, bytes, an
    object, keys of mixed types, a circular reference) is refused
    (``witness.config.serializable``). The configuration itself never appears in the
    message: it may hold secrets.
    """
    try:
        return _config_sha(config)
    except (TypeError, ValueError, RecursionError) as exc:
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise RecordRefused.one(
            "witness.config.serializable",
            ("config",),
            f"json.dumps(config, sort_keys=True) cannot serialize the configuration "
            f"({reason}); pass only dicts (with text keys), lists, str, int, float, bool and "
            "None, e.g. convert sets to sorted lists and objects to dicts",
        ) from None


def cpu_count() -> int | None:
    """The number of CPUs this process may run on (its affinity), else ``os.cpu_count()``."""
    if hasattr(os, "sched_getaffinity"):
        try:
            return len(os.sched_getaffinity(0)) or None
        except OSError:
            pass
    return os.cpu_count()


def _device_text(device: Any) -> tuple[str | None, Problem | None]:
    if not isinstance(device, str) and type(device).__module__.startswith("torch"):
        device = str(device)  # a torch.device
    if not isinstance(device, str):
        return None, Problem(
            "witness.device.type",
            ("device",),
            "device must be text such as 'cpu', 'cuda', 'cuda:1' or 'mps'",
            safe_value(device),
        )
    found = text_problems({"device": device}, ("device",), "witness")
    if found:
        return None, found[0]
    return device, None


def _environment_problems(
    env: Mapping[str, Any],
) -> tuple[dict[str, Any], list[Problem]]:
    found: list[Problem] = []
    values: dict[str, Any] = {}
    run_id, problem = envvars.read_run_id(env)
    values["experiment_id"] = run_id if run_id is not None else 0
    found += [problem] if problem else []
    present, attempt, problem = envvars.read_integer(env, envvars.RESTART_COUNT)
    values["attempt"] = attempt if present and attempt is not None else 0
    found += [problem] if problem else []
    present, threads, problem = envvars.read_integer(env, envvars.OMP_NUM_THREADS)
    values["cpu_threads"] = threads if present else cpu_count()
    if problem:
        found.append(problem)
        values["cpu_threads"] = 1
    return values, found


def write_witness(
    results_dir: str | os.PathLike[str],
    *,
    config: Any,
    device: Any,
    wall_seconds: int,
    env: Mapping[str, str] | None = None,
) -> Path | None:
    """Write ``observed.attempt<N>.json`` into ``results_dir``; return its path.

    Call it from the training entry point's ``finally`` block. ``env`` defaults to
    ``os.environ``. On a nonzero rank it returns None and writes nothing. Every input is
    validated before anything is created; a refusal raises :class:`RecordRefused` with
    every problem found and leaves the filesystem as it was. An existing witness is never
    replaced (``witness.path.exists``), even when processes race for the same attempt. A
    write that fails (a read-only folder, a full disk) raises
    :class:`~trainrecord.errors.RecordWriteError` (an ``OSError``) naming the witness, the
    cause and what to do; no witness is made.

    Args:
        results_dir: the run's results folder (made when missing); something not a
            folder in its way is refused (``witness.path.results_dir``).
        config: the run's configuration. Only its hash is written (``config_sha``: the
            first 16 hex characters of sha256 over ``json.dumps(config, sort_keys=True)``);
            one json.dumps cannot serialize is refused (``witness.config.serializable``).
        device: the device the run requested, as text (``"cpu"``, ``"cuda"``,
            ``"cuda:1"``, ``"mps"``) or a ``torch.device``; not blank. For an accelerator,
            torch is asked for its name and peak memory (null when it cannot tell).
        wall_seconds: the run's elapsed whole seconds, an int >= 0 (a float such as
            ``12.5`` is refused: pass ``int(time.monotonic() - start)``).
        env: the mapping read instead of ``os.environ`` (default None): ``FOUNDRY_RUN_ID``
            (required, an integer), ``RANK``/``SLURM_PROCID`` (default 0),
            ``SLURM_RESTART_COUNT`` (the attempt, default 0) and ``OMP_NUM_THREADS``
            (default: the CPUs this process may use). Not a mapping: ``witness.env.type``.

    Example (from README.md)::

        start = time.monotonic()
        with exit_on_sigterm():  # SIGTERM raises SystemExit(143), so finally runs on it too
            try:
                rows = train(config)
                write_metrics(results_dir, rows)
            finally:
                write_witness(results_dir, config=config, device="cuda",
                              wall_seconds=int(time.monotonic() - start))
    """
    environ: Mapping[str, Any] = os.environ if env is None else env
    if not isinstance(environ, Mapping):
        raise RecordRefused.one(
            "witness.env.type",
            ("env",),
            "env must be a mapping from variable name to text, or None for os.environ",
            type(environ).__name__,
        )
    rank, problem = envvars.read_rank(environ)
    found: list[Problem] = [problem] if problem else []
    if not found and rank != 0:
        return None
    values, env_found = _environment_problems(environ)
    found += env_found
    device_text, problem = _device_text(device)
    found += [problem] if problem else []
    sha = "0" * 16
    try:
        sha = config_sha(config)
    except RecordRefused as exc:
        found += exc.problems
    witness: dict[str, Any] = {
        "attempt": values["attempt"],
        "captured_at": datetime.now(UTC).isoformat(),
        "config_sha": sha,
        "cpu_threads": values["cpu_threads"],
        "device": device_text if device_text is not None else "cpu",
        "device_name": None,
        "experiment_id": values["experiment_id"],
        "peak_vram_mb": None,
        "run_record_format": RUN_RECORD_FORMAT,
        "wall_seconds": plain_number(wall_seconds),
    }
    found += [
        p
        for p in humane(schemas.problems(witness, WITNESS_SCHEMA))
        if p.path[:1] in (("wall_seconds",), ("device",))
    ]
    found += long_int_problems(witness, ("wall_seconds",), "witness")
    if found:
        raise RecordRefused(found)
    files.check_folder(Path(results_dir), "witness.path.results_dir")
    target = Path(results_dir) / witness_name(witness["attempt"])
    if target.exists() or target.is_symlink():
        raise _exists(target)
    witness["device_name"], witness["peak_vram_mb"] = accelerator_info(witness["device"])
    witness["captured_at"] = datetime.now(UTC).isoformat()  # when it is written
    found = witness_problems(witness)  # the guarantee: what we write is valid (and UTF-8)
    if found:
        raise RecordRefused(found)
    data = (dumps_strict(witness, indent=2) + "\n").encode("utf-8")
    made: list[Path] = []
    try:
        with files.failures_named(target, made=made):
            files.make_folders(target.parent, made)
            files.create_new(target, data)
    except FileExistsError:
        raise _exists(target) from None
    return target


def _exists(target: Path) -> RecordRefused:
    return RecordRefused.one(
        "witness.path.exists",
        (target.name,),
        f"the witness {target} already exists and is never replaced; a later process must "
        "not erase what an attempt did: use a new SLURM_RESTART_COUNT or another results "
        "directory",
    )


def version_problems(data: Any) -> list[Problem]:
    """The reader's first check: ``run_record_format`` must be the integer 1.

    Returns the one unsupported-version problem (naming the version found), or nothing.
    A document that is not an object, or lacks the field, is left to the schema.
    """
    if not isinstance(data, dict) or "run_record_format" not in data:
        return []
    version = data["run_record_format"]
    if type(version) is int and version == RUN_RECORD_FORMAT:
        return []
    return [
        Problem(
            "witness.run_record_format.unsupported",
            ("run_record_format",),
            f"run_record_format {safe_value(version)} is not supported: this reader understands "
            "version 1 only; read the file with a reader for that version",
            safe_value(version),
        )
    ]


def witness_problems(data: Any, path: Path | None = None) -> list[Problem]:
    """Every problem of a parsed witness: version first, then schema, text and file name."""
    found = version_problems(data)
    if found:
        return found
    found = humane(schemas.problems(data, WITNESS_SCHEMA))
    found += text_problems(data, TEXT_FIELDS, "witness")
    found += long_int_problems(data, ("wall_seconds",), "witness")
    match = WITNESS_NAME.fullmatch(path.name) if path is not None else None
    attempt = data.get("attempt") if isinstance(data, dict) else None
    if path is not None and match and type(attempt) is int and 0 <= attempt != int(match.group(1)):
        found.append(
            Problem(
                "witness.attempt.filename",
                ("attempt",),
                f"the file {path.name} is the witness of attempt {match.group(1)} but its attempt "
                f"field says {attempt}; the file was renamed or edited",
                safe_value(attempt),
            )
        )
    return found


def read_witness(path: str | os.PathLike[str]) -> FoundryWitness:
    """Read and validate a witness; return the generated ``FoundryWitness`` model.

    Args:
        path: the witness file (``observed.attempt<N>.json``). A missing file raises
            ``FileNotFoundError``; one that is not strict JSON (UTF-8, no NaN) is refused
            (``witness.file.json``), one that is no regular file or over 1 MiB
            (``witness.file.regular``); a witness that breaks the spec, or of a
            ``run_record_format`` this reader does not know, raises
            :class:`RecordRefused` with every problem.

    Example::

        witness = read_witness("results/observed.attempt0.json")
        print(witness.experiment_id, witness.attempt, witness.wall_seconds)
    """
    from trainrecord_spec.models.foundry.witness_schema import FoundryWitness

    file = Path(path)
    data, text = files.read_json(file, "witness.file.json")
    found = witness_problems(data, file)
    if found:
        raise RecordRefused(found)
    return FoundryWitness.model_validate_json(text)
