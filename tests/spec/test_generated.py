"""generated/ is what spec/ produces, and the spec models need nothing heavier than pydantic."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_generated_tree_matches_spec() -> None:
    proc = subprocess.run(
        [sys.executable, "tools/generate.py", "--check", "generated"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_spec_package_imports_without_torch_or_jsonschema() -> None:
    code = (
        "import sys; import trainrecord_spec; "
        "bad = [m for m in ('torch', 'jsonschema', 'requests') if m in sys.modules]; "
        "assert not bad, bad; print(len(trainrecord_spec.MODELS))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) >= 1


def test_generated_files_carry_the_do_not_edit_banner() -> None:
    for path in (ROOT / "generated" / "python").rglob("*.py"):
        assert path.read_text(encoding="utf-8").startswith("# DO NOT EDIT"), path
