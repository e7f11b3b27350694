"""The public surface of ``trainrecord``: light to import, every re-export resolves."""

from __future__ import annotations

import subprocess
import sys

import trainrecord


def test_import_trainrecord_does_not_import_torch_or_heavy_modules() -> None:
    """Also with the top-level names imported for type checkers (only under TYPE_CHECKING)."""
    code = (
        "import sys, trainrecord; "
        "bad = [m for m in ('torch', 'pydantic', 'jsonschema', 'requests', 'matplotlib',"
        " 'trainrecord.diary', 'trainrecord.foundry', 'trainrecord.report',"
        " 'trainrecord.monitor') if m in sys.modules];"
        " assert not bad, bad"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_every_name_in_all_resolves_to_the_object_of_its_module() -> None:
    import importlib

    for name in trainrecord.__all__:
        obj = getattr(trainrecord, name)
        module = trainrecord._LAZY.get(name)
        if module:
            assert obj is getattr(importlib.import_module(module), name)


def test_unknown_names_raise_attribute_error() -> None:
    try:
        trainrecord.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")
