"""The development environment is the pinned one: ``tools/constraints.txt`` pins every
package that ``pip install -e ".[dev,monitor]"`` brings in, and the venv the suite runs in
holds those versions (``make venv`` installs with ``-c tools/constraints.txt``). A
dependency added to pyproject.toml without a pin would let a release upstream change CI
runs again; this test names it."""

from __future__ import annotations

import re
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import ROOT

CONSTRAINTS = ROOT / "tools" / "constraints.txt"


def pins() -> dict[str, str]:
    """Each pinned distribution's canonical name and version."""
    pinned: dict[str, str] = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        assert match, f"{CONSTRAINTS.name}: {line!r} is not NAME==VERSION"
        name = canonicalize_name(match[1])
        assert name not in pinned, f"{CONSTRAINTS.name}: {match[1]} is pinned twice"
        pinned[name] = match[2]
    return pinned


def requirement_closure(root: str, extras: set[str]) -> dict[str, str]:
    """The installed distributions ``root[extras]`` needs, directly or through others
    (environment markers evaluated, each distribution's extras followed), by canonical
    name, with their installed versions; ``root`` itself left out."""
    found: dict[str, str] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset(extras))]
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, wanted = todo.pop()
        if (canonicalize_name(name), wanted) in done:
            continue
        done.add((canonicalize_name(name), wanted))
        dist = metadata.distribution(name)
        if canonicalize_name(name) != canonicalize_name(root):
            found[canonicalize_name(name)] = dist.version
        for text in dist.requires or []:
            requirement = Requirement(text)
            markers = [{"extra": extra} for extra in wanted or {""}]
            if requirement.marker is None or any(requirement.marker.evaluate(m) for m in markers):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return found


def test_every_package_of_the_dev_environment_is_pinned_at_its_installed_version() -> None:
    pinned = pins()
    needed = requirement_closure("trainrecord", {"dev", "monitor"})
    assert {"hypothesis", "pytest", "pydantic", "torch"} <= set(needed)  # the walk works
    unpinned = sorted(set(needed) - set(pinned))
    assert not unpinned, (
        f"{', '.join(unpinned)} installed by the dev environment but not pinned: "
        f"add NAME==VERSION to tools/constraints.txt"
    )
    for name, version in needed.items():
        installed = version.split("+")[0]  # torch's local label (+cpu) is not pinned
        assert installed == pinned[name], (
            f"{name} {version} is installed, tools/constraints.txt pins {pinned[name]}: "
            f"run `make venv` again (or move the pin)"
        )


def test_the_makefile_installs_with_the_constraints() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "CONSTRAINTS := tools/constraints.txt\n" in makefile
    assert '$(PIP) install -q -c $(CONSTRAINTS) -e ".[dev,monitor]"' in makefile
