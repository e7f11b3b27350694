"""A missing optional dependency is one line naming the extra to install, exit status 2,
never a ModuleNotFoundError traceback: the console scripts run in real processes with the
module made unimportable (``sys.modules[name] = None`` in a sitecustomize, as when it is
not installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
SITECUSTOMIZE = """\
import os, sys
for name in filter(None, os.environ.get("TR_BLOCK_MODULES", "").split(",")):
    sys.modules[name] = None
"""


@pytest.fixture(scope="module")
def blocker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("block")
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return folder


def script(name: str) -> list[str]:
    """The installed console script, else the module it runs."""
    found = BIN / name
    if found.is_file():
        return [str(found)]
    module = {"trainrecord": "trainrecord.cli", "trainrecord-conformance": None}[name]
    if module is None:
        return [sys.executable, "-m", "trainrecord_conformance.cli"]
    return [sys.executable, "-m", module]


def run_without(
    blocker: Path, modules: str, command: list[str], *args: str | Path
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(blocker), env.get("PYTHONPATH")]))
    env["TR_BLOCK_MODULES"] = modules
    return subprocess.run(
        [*command, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    err = out.stderr.strip()
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in err and "\n" not in err, err
    return err


def test_the_blocker_really_blocks(blocker: Path) -> None:
    out = run_without(blocker, "matplotlib", [sys.executable, "-c", "import matplotlib"])
    assert out.returncode == 1 and "ModuleNotFoundError" in out.stderr


def test_plot_without_matplotlib_names_the_plot_extra(blocker: Path, tmp_path: Path) -> None:
    from tests.diary.helpers import write_run

    write_run(tmp_path / "run", repeat=1, seal=False)
    out = run_without(
        blocker, "matplotlib", script("trainrecord"), "plot", tmp_path / "run", "-o", tmp_path
    )
    assert one_line(out) == (
        'trainrecord plot needs matplotlib, which is not installed: pip install "trainrecord[plot]"'
    )
    assert not (tmp_path / "plot.png").exists()


@pytest.mark.parametrize(
    ("modules", "args"),
    [
        ("hypothesis", ["rules"]),
        ("hypothesis", ["run", "--target", "python", "--rules", "diary.*"]),
        ("trustme", ["run", "--target", "python", "--rules", "report.settings.ca_bundle"]),
        ("jsonschema", ["rules"]),
        ("jsonschema,hypothesis,requests,cryptography,orjson,trustme", ["--help"]),
    ],
)
def test_the_conformance_suite_without_its_extra_names_it(
    blocker: Path, modules: str, args: list[str]
) -> None:
    out = run_without(blocker, modules, script("trainrecord-conformance"), *args)
    err = one_line(out)
    assert err.startswith("trainrecord-conformance")
    assert err.endswith('which is not installed: pip install "trainrecord[conformance]"'), err


@pytest.mark.parametrize("module", ["numpy", "torch"])
def test_the_demo_without_the_monitor_extra_names_it(
    blocker: Path, tmp_path: Path, module: str
) -> None:
    out = run_without(blocker, module, script("trainrecord"), "demo", "--tiny", "--out", tmp_path)
    assert one_line(out) == (
        f"trainrecord demo needs {module}, which is not installed: "
        'pip install torch==2.13.0 "trainrecord[monitor]"'  # never an open-ended torch
    )


def test_importing_the_monitor_without_numpy_says_which_extra(blocker: Path) -> None:
    out = run_without(blocker, "numpy", [sys.executable, "-c", "from trainrecord import Monitor"])
    last = out.stderr.strip().splitlines()[-1]
    assert out.returncode == 1
    assert last == (
        "ModuleNotFoundError: the trainrecord monitor needs numpy, which is not installed: "
        'pip install torch==2.13.0 "trainrecord[monitor]"'
    )


def test_the_hint_pins_the_torch_the_makefile_installs() -> None:
    # A README walkthrough: the hint said pip install "trainrecord[monitor]", which resolves
    # torch>=2.6 to the newest release: on Linux a CUDA build of several GB.
    from trainrecord.extras import TORCH_PIN

    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert f"TORCH_PIN ?= {TORCH_PIN}\n" in makefile


def test_every_extra_includes_the_runtime_and_every_module_has_its_extra() -> None:
    """The README: "Each extra below includes runtime". tensorboard did not (a docs probe):
    ``.[tensorboard]`` alone gave a sink without the writer it feeds."""
    import tomllib

    from trainrecord.extras import EXTRA_OF

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    for name, requirements in extras.items():
        if name != "runtime":  # trainrecord[runtime], or dev's trainrecord[runtime,plot,...]
            assert any(r.startswith("trainrecord[") and "runtime" in r for r in requirements), name
    assert set(EXTRA_OF.values()) <= set(extras)


def test_the_demo_without_matplotlib_still_runs_and_says_how_to_plot(
    blocker: Path, tmp_path: Path
) -> None:
    out = run_without(
        blocker, "matplotlib", script("trainrecord"), "demo", "--tiny", "--out", tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert (
        'plot: skipped (it needs matplotlib, which is not installed: pip install "trainrecord[plot]")'
        in out.stdout
    )


@pytest.mark.parametrize(
    ("modules", "args"),
    [
        ("jsonschema", ["--help"]),
        ("jsonschema", ["verify", "nowhere"]),
        ("jsonschema,requests,cryptography,orjson,rfc3339_validator", ["validate", "x.json"]),
        ("cryptography", ["keygen", "--help"]),
        ("requests", ["--help"]),
    ],
)
def test_a_base_install_names_the_runtime_extra(
    blocker: Path, modules: str, args: list[str]
) -> None:
    """A base install has pydantic only: the command line needs the runtime extra."""
    out = run_without(blocker, modules, script("trainrecord"), *args)
    if modules == "requests" and out.returncode == 0:
        return  # --help needs no requests: the commands import it when they run
    err = one_line(out)
    assert err.startswith("trainrecord needs ")
    assert err.endswith('which is not installed: pip install "trainrecord[runtime]"'), err
