"""What a user gets from the built distributions, away from this checkout.

The wheel and sdist are built from a copy of the packaged sources with the venv's own
setuptools (no build isolation, nothing downloaded); the wheel is unpacked into a folder
and run with ``python -S`` from a directory outside the checkout, with the third-party
dependencies taken from this venv but ``trainrecord*`` only from the wheel (so an editable
install's import hook cannot stand in for a file the wheel lacks).
"""

from __future__ import annotations

import email.message
import email.parser
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGED = [
    "pyproject.toml",
    "README.md",
    "MANIFEST.in",
    "LICENSE",
    "setup.py",
    "setup.cfg",
    "runtime",
    "generated/python",
    "conformance/trainrecord_conformance",
    "tests",  # setuptools' sdist picks up tests/test*.py unless told otherwise
]
PACKAGES = ("trainrecord", "trainrecord_spec", "trainrecord_conformance")

pytestmark = pytest.mark.xdist_group("packaging")  # one build, on one worker


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path
    log: str


def _setuptools_or_skip() -> None:
    """Skip (with the reason) when this venv's setuptools cannot build the project as its
    pyproject asks: a build here must not download one."""
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed in this venv: cannot build without a download")
    import setuptools

    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    floor = next((r for r in wanted if r.startswith("setuptools>=")), None)
    if floor is not None:
        need = tuple(int(p) for p in floor.split(">=")[1].split("."))
        have = tuple(int(p) for p in re.findall(r"\d+", setuptools.__version__)[: len(need)])
        if have < need:
            pytest.skip(
                f"setuptools {setuptools.__version__} in this venv; the build needs {floor}"
            )


def build(kind: str, src: Path, out: Path) -> tuple[Path, str]:
    """``build_wheel`` or ``build_sdist`` of setuptools' PEP 517 backend, as pip runs it
    with ``--no-build-isolation``: the distribution and the build's output."""
    code = f"import sys\nfrom setuptools import build_meta as b\nprint('BUILT', b.build_{kind}(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(out)],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out / done.stdout.splitlines()[-1].split()[1], done.stdout + done.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    _setuptools_or_skip()
    src = tmp_path_factory.mktemp("src")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", "node_modules")
    for name in PACKAGED:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        elif path.is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, src / name)
    dist = tmp_path_factory.mktemp("dist")
    wheel, log = build("wheel", src, dist)
    sdist, more = build("sdist", src, dist)  # one process each: setuptools keeps state
    return Built(wheel, sdist, log + more)


def _metadata(built: Built) -> email.message.Message:
    with zipfile.ZipFile(built.wheel) as whl:
        name = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(whl.read(name).decode())


@pytest.fixture(scope="module")
def unpacked(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel unpacked (what pip puts in site-packages) beside links to this venv's
    third-party packages, every one but trainrecord's."""
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(built.wheel) as whl:
        whl.extractall(site / "wheel")
    deps = site / "deps"
    deps.mkdir()
    purelib = Path(sysconfig.get_paths()["purelib"])
    for entry in purelib.iterdir():
        name = entry.name
        if name.startswith(("trainrecord", "__editable__")) or name.endswith(".pth"):
            continue
        (deps / name).symlink_to(entry)
    return site


def run_installed(
    site: Path, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -S`` (no site-packages, so no editable-install hook) with the unpacked
    wheel first on the path, run in ``cwd``."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    full["PYTHONPATH"] = os.pathsep.join([str(site / "wheel"), str(site / "deps")])
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-S", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
        check=False,
    )


def test_the_wheel_declares_its_license_as_an_spdx_expression(built: Built) -> None:
    # The table form, license = { text = "Apache-2.0" }, is deprecated by setuptools
    # ("By 2027-Feb-18, you need to update your project ... or your builds will no longer
    # be supported"), and build-system asked for any setuptools>=68, so an isolated build
    # would take the release that refuses it. PEP 639: License-Expression.
    meta = _metadata(built)
    assert meta["License-Expression"] == "Apache-2.0", meta.items()
    assert "`project.license` as a TOML table is deprecated" not in built.log
    # Apache-2.0 asks for its text to go with every copy: LICENSE is in the wheel
    assert meta.get_all("License-File") == ["LICENSE"], meta.items()
    with zipfile.ZipFile(built.wheel) as wheel:
        text = next(
            wheel.read(n).decode() for n in wheel.namelist() if n.endswith("licenses/LICENSE")
        )
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_the_metadata_names_the_version_the_code_reports(built: Built) -> None:
    from trainrecord import __version__

    meta = _metadata(built)
    assert meta["Name"] == "trainrecord"
    assert meta["Version"] == __version__
    assert meta["Requires-Python"] == ">=3.11"
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().startswith("# trainrecord\n")  # README.md as long_description
    # Only pydantic is unconditional; torch only ever through the monitor extra.
    requires = meta.get_all("Requires-Dist") or []
    assert [r for r in requires if "extra ==" not in r] == ["pydantic<3,>=2.12"]
    assert all("extra == " in r for r in requires if r.startswith("torch"))


def test_the_wheel_holds_every_source_and_data_file_of_the_three_packages(built: Built) -> None:
    roots = {
        "trainrecord": ROOT / "runtime" / "trainrecord",
        "trainrecord_spec": ROOT / "generated" / "python" / "trainrecord_spec",
        "trainrecord_conformance": ROOT / "conformance" / "trainrecord_conformance",
    }
    expected = {
        f"{name}/{path.relative_to(root).as_posix()}"
        for name, root in roots.items()
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    with zipfile.ZipFile(built.wheel) as whl:
        shipped = {n for n in whl.namelist() if ".dist-info/" not in n}
    assert shipped == expected
    for name in PACKAGES:
        assert f"{name}/py.typed" in shipped
    for folder in ("schemas", "vectors", "rules", "meta"):
        assert any(n.startswith(f"trainrecord_spec/{folder}/") for n in shipped), folder


def test_the_installed_packages_work_from_outside_the_checkout(
    unpacked: Path, tmp_path: Path
) -> None:
    code = (
        "import json, sys, importlib.metadata as md\n"
        "import trainrecord, trainrecord_spec, trainrecord_conformance\n"
        "from trainrecord_conformance.registry import rules\n"
        "print(json.dumps({'files': [m.__file__ for m in (trainrecord, trainrecord_spec,"
        " trainrecord_conformance)], 'version': md.version('trainrecord'),"
        " 'scripts': sorted(e.name for e in md.entry_points(group='console_scripts')"
        " if e.value.startswith('trainrecord')),"
        " 'schemas': len(trainrecord_spec.schema_ids()), 'rules': len(rules())}))\n"
    )
    done = run_installed(unpacked, tmp_path, "-c", code)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    for file in seen["files"]:
        assert Path(file).is_relative_to(unpacked / "wheel"), file
    assert seen["scripts"] == ["trainrecord", "trainrecord-conformance"]
    assert seen["schemas"] > 30 and seen["rules"] > 450

    # The schemas and validator, from the files the wheel ships.
    results = tmp_path / "r1"
    write = (
        "import sys\nfrom trainrecord.foundry import write_metrics, write_witness\n"
        "write_metrics(sys.argv[1], [{'benchmark': 'ETTh1', 'metric': 'mse', 'horizon': 96,"
        " 'seed': 0, 'value': 0.386}])\n"
        "write_witness(sys.argv[1], config={'lr': 0.1}, device='cpu', wall_seconds=1)\n"
    )
    done = run_installed(
        unpacked, tmp_path, "-c", write, str(results), env={"FOUNDRY_RUN_ID": "42"}
    )
    assert done.returncode == 0, done.stderr
    done = run_installed(unpacked, tmp_path, "-m", "trainrecord.cli", "validate", str(results))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "valid foundry-witness" in done.stdout and "valid foundry-metrics" in done.stdout
    done = run_installed(
        unpacked, tmp_path, "-m", "trainrecord.cli", "validate", "--schema",
        "foundry/witness.schema.json", str(results / "observed.attempt0.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr

    # The conformance suite: its registry and vectors are package data of trainrecord_spec.
    done = run_installed(
        unpacked, tmp_path, "-m", "trainrecord_conformance.cli", "run", "--target", "python",
        "--rules", "canonical.*", "--profile", "ci", "--examples", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK: 2 rules" in done.stdout


def test_the_sdist_builds_the_same_wheel(built: Built, tmp_path: Path) -> None:
    with tarfile.open(built.sdist) as tar:
        tar.extractall(tmp_path / "sdist", filter="data")
    (top,) = (tmp_path / "sdist").iterdir()
    (tmp_path / "out").mkdir()
    again, _ = build("wheel", top, tmp_path / "out")
    with zipfile.ZipFile(built.wheel) as a, zipfile.ZipFile(again) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())


def test_the_sdist_holds_the_packages_and_no_stray_tests(built: Built) -> None:
    # setuptools' default sdist picks up tests/test*.py: three top-level files of a suite
    # that needs spec/, docs/, the seeds and Node, so they could not run from it anyway.
    with tarfile.open(built.sdist) as tar:
        files = [m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()]
    assert not [f for f in files if f.startswith("tests/")]
    allowed = (
        "runtime/trainrecord/",
        "generated/python/trainrecord_spec/",
        "conformance/trainrecord_conformance/",
        "trainrecord.egg-info/",
    )
    extra = {"PKG-INFO", "README.md", "LICENSE", "pyproject.toml", "setup.cfg", "MANIFEST.in"}
    assert [f for f in files if not f.startswith(allowed) and f not in extra] == []
