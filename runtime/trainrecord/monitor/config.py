"""The run's configuration as run_start records it: JSON values, or a refusal that says how.

``Monitor(config=...)`` takes a dict (or None). :func:`record_config` returns the JSON form
to record: numpy scalars (and 0-d numpy arrays) become the numbers they hold, as the Foundry
writers take them (:func:`trainrecord.foundry.numbers.plain_number`; a ``numpy.bool_`` is
a boolean here, since a configuration may hold booleans), subclasses of str, int and float
become the plain values (``IntEnum``, ``numpy.float64``), tuples become lists. NaN and the
infinities stay floats: the diary writer writes them as ``"NaN"``, ``"Infinity"``,
``"-Infinity"``. Anything else that is not a JSON value (a tensor, a path, a set, a
``torch.device``, an ``argparse.Namespace``, a key that is not a string) is refused with a
:class:`~trainrecord.errors.RecordRefused` naming every such key as Python writes it
(``config['optim']['lr']``), its type and what to pass instead (``float(x)``,
``str(path)``, ``vars(args)``, ``sorted(s)``). Nothing is ever turned into text silently:
a configuration is recorded as the caller meant it or not at all.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from collections.abc import Mapping
from typing import Any

from trainrecord.errors import Problem, RecordRefused, safe_value
from trainrecord.foundry.numbers import plain_number

_JSON_LEAVES = (str, int, float, bool, type(None))


def record_config(config: Any) -> dict[str, Any] | None:
    """``config`` as JSON values for run_start (a new dict), or None; refuse what is not.

    Raises :class:`~trainrecord.errors.RecordRefused` with one problem per value that is not
    a JSON value (rule ``diary.file.json``), or for a ``config`` that is not a dict or None
    (rule ``diary.run_start.config.type``)."""
    if config is None:
        return None
    if not isinstance(config, dict):
        if (
            type(config).__name__ == "Namespace"
            or isinstance(config, Mapping)
            or (dataclasses.is_dataclass(config) and not isinstance(config, type))
        ):
            name = "args" if type(config).__name__ == "Namespace" else "config"
            fix = f"config={_advice(config, name)}"
        else:
            fix = "a dict of names and values, e.g. config={'lr': 0.1, 'epochs': 3}"
        raise RecordRefused.one(
            "diary.run_start.config.type",
            ["config"],
            f"config must be a dict of JSON values or None, not of type {_type_name(config)}: "
            f"pass {fix}",
            config,
        )
    problems: list[Problem] = []
    out = _convert(config, "config", ("config",), problems, set())
    if problems:
        raise RecordRefused(problems)
    return out


def _convert(
    value: Any,
    where: str,
    path: tuple[str | int, ...],
    problems: list[Problem],
    seen: set[int],
) -> Any:
    """The JSON form of ``value`` at ``where`` (Python's spelling) / ``path`` (JSON's)."""
    value = _unwrap_numpy(value)
    if type(value) in _JSON_LEAVES:
        return value
    if isinstance(value, (dict, list, tuple)):
        if id(value) in seen:
            problems.append(
                _problem(path, f"{where} contains itself: a configuration is a tree", value)
            )
            return None
        seen.add(id(value))
        try:
            if isinstance(value, dict):
                out: dict[str, Any] = {}
                for key, item in value.items():
                    if not isinstance(key, str):
                        problems.append(
                            _problem(
                                (*path, repr(key)),
                                f"{where} has the key {key!r} of type {_type_name(key)}: JSON "
                                "keys are strings; use str(key) (or a name) as the key",
                                key,
                            )
                        )
                        continue
                    out[str.__str__(key)] = _convert(
                        item, f"{where}[{key!r}]", (*path, key), problems, seen
                    )
                return out
            return [
                _convert(item, f"{where}[{i}]", (*path, i), problems, seen)
                for i, item in enumerate(value)
            ]
        finally:
            seen.discard(id(value))
    for plain in (str, int, float):  # subclasses: IntEnum, StrEnum, numpy.float64, ...
        if isinstance(value, plain):
            return plain(value) if plain is not str else str.__str__(value)
    problems.append(
        _problem(
            path,
            f"{where} is of type {_type_name(value)}, which is not a JSON value (number, "
            f"string, bool, None, list, dict): pass {_advice(value, where)}",
            value,
        )
    )
    return None


def _unwrap_numpy(value: Any) -> Any:
    """A numpy scalar or 0-d array as the Python value it holds; anything else as is."""
    kind = type(value)
    if kind.__module__ != "numpy":
        return value
    if kind.__name__ == "ndarray":
        if value.ndim != 0:
            return value
        value = value[()]  # the numpy scalar it holds
        if type(value).__module__ != "numpy":  # an object array's Python object
            return value
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.bool_):
        return bool(value)
    return plain_number(value)


def _problem(path: tuple[str | int, ...], message: str, value: Any) -> Problem:
    return Problem("diary.file.json", path, message, safe_value(value))


def _type_name(value: Any) -> str:
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def _advice(value: Any, where: str) -> str:
    """What to pass instead of ``value`` (written at ``where``), in Python."""
    torch = sys.modules.get("torch")
    module = type(value).__module__.split(".")[0]
    name = type(value).__name__
    if name == "Namespace" and module == "argparse":
        return f"vars({where}) (a dict of the arguments)"
    if torch is not None and isinstance(value, torch.Tensor):
        if value.numel() == 1:
            return f"{where}.item() (or float({where}): the number it holds)"
        return f"{where}.tolist() (its values), or leave the tensor out"
    if module == "numpy" and name == "ndarray":
        return f"{where}.tolist()"
    if torch is not None and isinstance(value, (torch.device, torch.dtype)):
        return f"str({where})"
    if module == "pathlib" or name.endswith("Path"):
        return f"str({where})"
    if isinstance(value, (set, frozenset)):
        return f"sorted({where}) (or list({where}))"
    if isinstance(value, (bytes, bytearray)):
        return f"{where}.decode() (or {where}.hex())"
    if isinstance(value, enum.Enum):
        return f"{where}.value (or {where}.name)"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return f"dataclasses.asdict({where})"
    if module == "omegaconf":
        return f"OmegaConf.to_container({where}, resolve=True)"
    if isinstance(value, Mapping):
        return f"dict({where})"
    if hasattr(value, "isoformat"):  # datetime, date, time
        return f"{where}.isoformat()"
    return f"str({where}) for its text, a number, or leave it out"
