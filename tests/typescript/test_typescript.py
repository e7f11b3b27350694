"""The generated TypeScript package: it compiles under ``tsc --strict`` and types the seeds.

``tsc`` is the TypeScript compiler pinned in ``tools/ts/package-lock.json``. The tests skip
(with the reason) only when Node.js or npm is not installed; they install the pinned tools
with ``npm ci`` when ``tools/ts/node_modules`` is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.xdist_group("typescript")

TS_TOOLS = ROOT / "tools" / "ts"
GENERATED = ROOT / "generated" / "typescript"
CASES = Path(__file__).resolve().parent / "ts"


@pytest.fixture(scope="module")
def tsc() -> Path:
    """The pinned tsc, installed with npm ci when missing."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js (node and npm) is not installed: the TypeScript checks need it")
    exe = TS_TOOLS / "node_modules" / ".bin" / "tsc"
    if not exe.exists():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"], cwd=TS_TOOLS, check=True, capture_output=True
        )
    return exe


def run_tsc(tsc: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tsc), *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=120
    )


def test_generated_declarations_compile_strict(tsc: Path) -> None:
    files = sorted(str(p.relative_to(ROOT)) for p in GENERATED.rglob("*.d.ts"))
    assert "generated/typescript/index.d.ts" in files
    proc = run_tsc(tsc, "--noEmit", "--strict", "--skipLibCheck", "false", *files)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_one_declaration_file_per_schema() -> None:
    schemas = sorted(
        p.relative_to(ROOT / "spec" / "schemas").as_posix().removesuffix(".schema.json")
        for p in (ROOT / "spec" / "schemas").rglob("*.schema.json")
    )
    types = sorted(
        p.relative_to(GENERATED / "types").as_posix().removesuffix(".d.ts")
        for p in (GENERATED / "types").rglob("*.d.ts")
    )
    assert types == schemas
    for path in GENERATED.rglob("*.d.ts"):
        assert path.read_text(encoding="utf-8").startswith("/* DO NOT EDIT"), path


def test_package_ships_schemas_and_vectors() -> None:
    manifest = json.loads((GENERATED / "package.json").read_text(encoding="utf-8"))
    assert manifest["name"] == "@trainrecord/spec"
    assert manifest["types"] == "index.d.ts"
    for folder in ("schemas", "vectors", "types"):
        assert folder in manifest["files"]
    for path in (ROOT / "spec" / "schemas").rglob("*.json"):
        copy = GENERATED / "schemas" / path.relative_to(ROOT / "spec" / "schemas")
        assert copy.read_bytes() == path.read_bytes()
    for path in (ROOT / "spec" / "vectors").rglob("*.json"):
        copy = GENERATED / "vectors" / path.relative_to(ROOT / "spec" / "vectors")
        assert copy.read_bytes() == path.read_bytes()


def test_package_loader_finds_every_schema() -> None:
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed")
    script = (
        "const p = require(process.argv[1]);"
        "const out = {};"
        "for (const id of p.schemaIds) out[id] = p.loadSchema(id)['$id'];"
        "console.log(JSON.stringify(out));"
    )
    proc = subprocess.run(
        ["node", "-e", script, str(GENERATED)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    loaded = json.loads(proc.stdout)
    ids = {
        json.loads(p.read_text(encoding="utf-8"))["$id"]
        for p in (ROOT / "spec" / "schemas").rglob("*.schema.json")
    }
    assert loaded == {i: i for i in ids}


def test_node_implementation_type_checks(tsc: Path) -> None:
    """The Node implementation (JavaScript with JSDoc types) under tsc --strict --checkJs.

    It types its schema ids, event names and metrics fields with the generated package
    (@trainrecord/spec), so a schema renamed in spec/ is a type error there.
    """
    from tests.typescript.node_harness import NODE_IMPL, require_node

    require_node()
    proc = run_tsc(tsc, "-p", str(NODE_IMPL / "tsconfig.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_seed_examples_type_check(tsc: Path) -> None:
    proc = run_tsc(tsc, "-p", str(CASES / "tsconfig.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_rejected_values_are_type_errors(tsc: Path, tmp_path: Path) -> None:
    """Without its @ts-expect-error comments, every marked line of rejected.ts is an error."""
    source = (CASES / "rejected.ts").read_text(encoding="utf-8")
    lines = source.splitlines()
    marked = [i for i, line in enumerate(lines) if line.strip().startswith("// @ts-expect-error")]
    expected = {i + 2 for i in marked}
    assert len(expected) >= 5
    stripped = "\n".join("" if i in marked else line for i, line in enumerate(lines))
    case = CASES / "_stripped_rejected.ts"
    case.write_text(stripped + "\n", encoding="utf-8")
    try:
        proc = run_tsc(
            tsc,
            "--noEmit",
            "--strict",
            "--module",
            "NodeNext",
            "--moduleResolution",
            "NodeNext",
            str(case),
        )
    finally:
        case.unlink()
    error_lines = {
        int(m) for m in re.findall(r"_stripped_rejected\.ts\((\d+),\d+\): error", proc.stdout)
    }
    assert proc.returncode != 0
    assert expected <= error_lines, proc.stdout + proc.stderr
