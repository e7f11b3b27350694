"""What a check is, the context it runs in, and the helpers checks share.

A :class:`Check` tests one rule of the registry against a target: a Hypothesis strategy
draws inputs (from :mod:`trainrecord_conformance.strategies`), and the check's body runs
the target's operations on them and raises :class:`Failed` when the rule does not hold.
A rule may have several checks (the schema check through ``validate`` and the writer check
through ``write_metrics``, say); it passes when each check whose operations the target
supports passes.
"""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import strategies as st

from trainrecord.canonical import loads_strict
from trainrecord_conformance.protocol import Result
from trainrecord_conformance.targets import Target, TargetError

Strategy = Callable[[Target], st.SearchStrategy[Any]]
Body = Callable[["Context", Any], None]
Edges = Callable[[Target], Sequence[Any]]


A = TypeVar("A")
R = TypeVar("R")


def for_any_target(make: Callable[[A], R], arg: A) -> Callable[[Target], R]:
    """A check's strategy or edges that do not depend on the target: ``make(arg)``, with
    ``arg`` bound now (a lambda made in a loop would see the loop's last value)."""
    return lambda target: make(arg)


class Failed(AssertionError):
    """The target broke the rule; the message says how."""


class Unsupported(Exception):
    """The implementation answered ``unsupported`` to ``validate`` for a schema it does not
    implement (a partial implementation: a Foundry-only harness and the diary schemas, say).
    The example is not counted: a check none of whose examples ran is *skipped*, never
    passed."""


@dataclass(frozen=True)
class Check:
    """One way to test one rule."""

    rule: str
    name: str
    ops: frozenset[str]
    strategy: Strategy
    body: Body
    scale: str = "behaviour"
    """``schema`` checks (one per schema rule, hundreds) draw fewer examples per profile."""
    edges: Edges | None = None
    """The cases that define the rule (``true`` for an integer, the exact bound, ...), in
    the strategy's shape: run first, as explicit examples, on every run and every profile,
    before any random draw, so that a verdict never depends on the draws' luck."""


@dataclass
class Context:
    """What a check body gets: the target, fresh folders, and a loopback report receiver."""

    target: Target
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="trc-")))
    _counter: itertools.count = field(default_factory=itertools.count)
    _services: dict[str, Any] = field(default_factory=dict)
    _validated: set[str] = field(default_factory=set)
    _unsupported: set[str] = field(default_factory=set)
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """The requests of the example running now (operation, input): the runner clears it
    before each example and shows it when a check fails."""

    def folder(self, create: bool = False) -> Path:
        """A fresh path under the run's temporary root (not created unless asked)."""
        path = self.root / f"case{next(self._counter)}"
        if create:
            path.mkdir()
        return path

    def service(self, name: str, factory: Callable[[], Any]) -> Any:
        """A long-lived helper (an HTTP receiver, a TLS CA), made once per run."""
        if name not in self._services:
            self._services[name] = factory()
        return self._services[name]

    def run(self, op: str, data: dict[str, Any]) -> Result:
        """Run an operation on the target: its ``ok`` or ``refused`` result.

        An ``error`` answer is the implementation's failure, not a verdict on the rule:
        it raises :class:`TargetError` (the check is reported as an *error*). ``unsupported``
        from ``validate`` for a schema raises :class:`Unsupported` (the example is skipped);
        a harness must answer one schema the same way all run long.
        """
        self.sent.append((op, data))
        result = self.target.run(op, data)
        if result.outcome == "error":
            raise TargetError(
                f"{op} answered error (the implementation failed): {result.message[-1500:]}"
            )
        if op == "validate":
            schema = str(data.get("schema", "")).split("#", 1)[0]
            if result.outcome == "unsupported":
                if schema in self._validated:
                    raise TargetError(
                        f"validate answered unsupported for {schema}, which it validated "
                        "earlier in this run: answer a schema the same way every time"
                    )
                self._unsupported.add(schema)
                raise Unsupported(f"validate: the implementation does not validate {schema}")
            if schema in self._unsupported:
                raise TargetError(
                    f"validate validated {schema}, for which it answered unsupported earlier "
                    "in this run: answer a schema the same way every time"
                )
            self._validated.add(schema)
        if result.outcome == "unsupported":
            raise TargetError(f"{op}: the harness listed {op} at start but answered unsupported")
        return result

    def ok(self, op: str, data: dict[str, Any]) -> dict[str, Any]:
        """Run an operation that must succeed; its output."""
        result = self.run(op, data)
        if result.outcome != "ok":
            raise Failed(f"{op} on a valid input gave {result.describe()}")
        return result.output

    def refused(self, op: str, data: dict[str, Any], rule: str) -> Result:
        """Run an operation that must be refused naming ``rule``."""
        result = self.run(op, data)
        if result.outcome == "ok":
            raise Failed(f"{op} accepted an input that breaks {rule}: {result.describe()}")
        if result.outcome != "refused":
            raise Failed(f"{op} gave {result.describe()} instead of refusing with {rule}")
        if rule not in result.rules:
            raise Failed(f"{op} refused, but named {result.rules}, not {rule}")
        return result

    def close(self) -> None:
        """Stop the services and remove the temporary folders."""
        for service in self._services.values():
            close = getattr(service, "close", None)
            if close is not None:
                close()
        shutil.rmtree(self.root, ignore_errors=True)


def snapshot(path: Path) -> dict[str, bytes | None]:
    """Every file and folder under ``path`` (folders map to None), for before/after checks."""
    if not path.exists():
        return {}
    out: dict[str, bytes | None] = {".": None}
    for item in sorted(path.rglob("*")):
        out[str(item.relative_to(path))] = _content(item)
    return out


def _content(item: Path) -> bytes | None:
    """A folder's None, a file's bytes, or a marker saying what else stands there (a FIFO,
    a socket, a dangling link, a file that cannot be read): never a crash of the check."""
    try:
        if item.is_dir():
            return None
        if item.is_file():
            return item.read_bytes()
        kind = "a dangling link" if item.is_symlink() else "not a regular file"
    except OSError as exc:
        kind = f"unreadable: {exc.strerror or exc}"
    return f"<{kind}>".encode()


def written_json(path: Path, rule: str, what: str | None = None) -> Any:
    """The strict JSON document an implementation left at ``path``.

    Whatever else is there (no file, a folder, bytes that are not UTF-8, not one strict
    JSON document: cut, trailing data, NaN, a name twice) is a :class:`Failed` naming
    ``rule`` and what was found, never a crash of the check. ``what`` names the file in the
    message (default: its name).
    """
    name = what or path.name
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise Failed(f"[{rule}] {name}: there is no such file") from None
    except IsADirectoryError:
        raise Failed(f"[{rule}] {name} is a folder, not a file") from None
    except OSError as exc:
        raise Failed(f"[{rule}] {name} cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Failed(
            f"[{rule}] {name} is not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start} "
            f"of {len(raw)}"
        ) from None
    try:
        return loads_strict(text)
    except json.JSONDecodeError as exc:
        near = json.dumps(text[max(0, exc.pos - 30) : exc.pos + 30], ensure_ascii=False)
        raise Failed(
            f"[{rule}] {name} is not one strict JSON document: {exc.msg[0].lower()}"
            f"{exc.msg[1:]} at char {exc.pos} (line {exc.lineno} column {exc.colno}) of "
            f"{len(text)}, near {near}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise Failed(f"[{rule}] {name} is not strict JSON: {exc}") from None
