"""What a type checker sees of ``trainrecord``: the project's mypy on small consumer files.

The consumer file lies in tmp_path, outside the project, and mypy finds the packages by
their source roots (``MYPYPATH=runtime:generated/python``), as a consumer's IDE set up for
the editable install would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT

MYPY = Path(sys.executable).parent / "mypy"


def run_mypy(tmp_path: Path, source: str) -> str:
    """mypy's output (stdout) for the consumer ``source``, checked in ``tmp_path``."""
    if not MYPY.exists() and shutil.which("mypy") is None:
        pytest.skip("mypy is not installed")
    consumer = tmp_path / "consumer.py"
    consumer.write_text(textwrap.dedent(source), encoding="utf-8")
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\npython_version = 3.11\n", encoding="utf-8")
    env = dict(os.environ)
    env["MYPYPATH"] = os.pathsep.join([str(ROOT / "runtime"), str(ROOT / "generated" / "python")])
    proc = subprocess.run(
        [
            str(MYPY) if MYPY.exists() else "mypy",
            "--config-file",
            str(config),
            "--cache-dir",
            str(ROOT / ".mypy_cache" / "consumer-tests"),
            "--no-error-summary",
            "--show-error-codes",
            str(consumer),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
        timeout=600,
    )
    assert "Cannot find implementation" not in proc.stdout, proc.stdout
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.stdout


def lines_of(output: str, line: int) -> str:
    """The part of mypy's output about line ``line`` of consumer.py."""
    return "\n".join(x for x in output.splitlines() if x.startswith(f"consumer.py:{line}:"))


def test_top_level_names_have_their_real_types(tmp_path: Path) -> None:
    out = run_mypy(
        tmp_path,
        """\
        import trainrecord

        reveal_type(trainrecord.DiaryWriter)
        trainrecord.DiaryWriter(1, 2, 3)
        reveal_type(trainrecord.Monitor)
        reveal_type(trainrecord.write_witness)
        trainrecord.no_such_name
        """,
    )
    assert "-> trainrecord.diary.writer.DiaryWriter" in lines_of(out, 3), out
    assert 'Argument 1 to "DiaryWriter" has incompatible type "int"' in lines_of(out, 4), out
    assert "-> trainrecord.monitor.monitor.Monitor" in lines_of(out, 5), out
    assert "def (results_dir:" in lines_of(out, 6), out
    assert 'has no attribute "no_such_name"' in lines_of(out, 7), out


def test_type_checking_imports_name_every_lazy_export() -> None:
    import ast

    import trainrecord

    tree = ast.parse((ROOT / "runtime" / "trainrecord" / "__init__.py").read_text())
    seen = set()
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    for alias in stmt.names:
                        assert alias.asname == alias.name, "re-export as `X as X`"
                        assert trainrecord._LAZY[alias.name] == stmt.module
                        seen.add(alias.name)
    assert seen == set(trainrecord._LAZY)


def test_the_foundry_readers_return_the_generated_models(tmp_path: Path) -> None:
    out = run_mypy(
        tmp_path,
        """\
        from trainrecord import read_metrics, read_witness

        witness = read_witness("observed.attempt1.json")
        reveal_type(witness)
        witness.no_such_field
        rows = read_metrics("metrics.json")
        reveal_type(rows)
        rows[0].no_such_field
        """,
    )
    assert "FoundryWitness" in lines_of(out, 4), out
    assert 'has no attribute "no_such_field"' in lines_of(out, 5), out
    assert "list[trainrecord_spec.models.foundry.metrics_schema.FoundryMetricsRow]" in lines_of(
        out, 7
    ), out
    assert 'has no attribute "no_such_field"' in lines_of(out, 8), out
