"""The Node implementation's Foundry writers against the Python runtime, through the harness.

Refusals name the same rules as the Python writers, refused calls leave the filesystem as it
was, metrics.json is byte-identical to what the Python writer writes, an existing witness is
never replaced, and of several Node processes racing for one witness exactly one wins.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from tests.typescript.node_harness import HARNESS, Harness, require_node
from trainrecord.errors import RecordRefused
from trainrecord.foundry import write_metrics, write_witness

pytestmark = pytest.mark.xdist_group("node")


def python_rules(call: Any) -> set[str] | None:
    """The rules a Python writer refuses with, or None when it writes."""
    try:
        call()
    except RecordRefused as exc:
        return {p.rule for p in exc.problems}
    return None


def node_rules(result: dict[str, Any]) -> set[str] | None:
    return set(result["rules"]) if result.get("refused") else None


TRICKY_INTEGERS = [
    "0",
    "3",
    "-1",
    " 7 ",
    "+2",
    "007",
    "",
    " ",
    "1.0",
    "0x10",
    "8,4",
    "1_000",
    "١٢",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "abc",
    "\v5\f",
]
ENV_NAMES = ["FOUNDRY_RUN_ID", "RANK", "SLURM_PROCID", "SLURM_RESTART_COUNT", "OMP_NUM_THREADS"]
ENV_VALUES = st.one_of(st.sampled_from(TRICKY_INTEGERS), st.text(max_size=4))
ENVS = st.dictionaries(st.sampled_from([*ENV_NAMES, "HOME"]), ENV_VALUES)


@pytest.mark.parametrize("name", ENV_NAMES)
def test_each_env_spelling_matches_python(harness: Harness, tmp_path: Path, name: str) -> None:
    for i, raw in enumerate(TRICKY_INTEGERS):
        env = {"FOUNDRY_RUN_ID": "5", name: raw}
        py_dir, node_dir = tmp_path / f"py{i}", tmp_path / f"node{i}"
        want = python_rules(
            lambda env=env, d=py_dir: write_witness(
                d, config={}, device="cpu", wall_seconds=1, env=env
            )
        )
        got = harness.run(
            "write_witness", dir=str(node_dir), env=env, config={}, device="cpu", wall_seconds=1
        )
        assert node_rules(got) == want, (name, raw)
        assert node_dir.exists() == py_dir.exists(), (name, raw)


WALL = st.one_of(st.integers(-5, 10**6), st.sampled_from([1.0, True, None, "3", 2**70]))
DEVICES = st.one_of(st.sampled_from(["cpu", "", "  ", "\ud800", 3]), st.text(max_size=3))


@settings(max_examples=40)
@given(env=ENVS, wall=WALL, device=DEVICES, config=st.sampled_from([{}, {"lr": 0.1}, [1, 2.0]]))
def test_witness_refusals_match_python(
    harness: Harness,
    tmp_path_factory: pytest.TempPathFactory,
    env: dict[str, str],
    wall: Any,
    device: Any,
    config: Any,
) -> None:
    base = tmp_path_factory.mktemp("w")
    py_dir, node_dir = base / "py" / "results", base / "node" / "results"
    want = python_rules(
        lambda: write_witness(py_dir, config=config, device=device, wall_seconds=wall, env=env)
    )
    got = harness.run(
        "write_witness", dir=str(node_dir), env=env, config=config, device=device, wall_seconds=wall
    )
    assert node_rules(got) == want
    py_files = sorted(p.name for p in py_dir.glob("*")) if py_dir.exists() else None
    node_files = sorted(p.name for p in node_dir.glob("*")) if node_dir.exists() else None
    assert node_files == py_files  # same file, or nothing at all (no folder, no temp file)


def test_witness_fields_and_no_overwrite(harness: Harness, tmp_path: Path) -> None:
    env = {"FOUNDRY_RUN_ID": "4217", "SLURM_RESTART_COUNT": "2", "OMP_NUM_THREADS": "8"}
    got = harness.run(
        "write_witness",
        dir=str(tmp_path),
        env=env,
        config={"lr": 0.001, "epochs": 2},
        device="cpu",
        wall_seconds=17,
    )
    target = tmp_path / "observed.attempt2.json"
    assert got == {"path": str(target)}
    data = json.loads(target.read_text("utf-8"))
    assert data == {
        **data,
        "attempt": 2,
        "config_sha": "da1dca8eecbe78ba",
        "cpu_threads": 8,
        "device": "cpu",
        "device_name": None,
        "experiment_id": 4217,
        "peak_vram_mb": None,
        "run_record_format": 1,
        "wall_seconds": 17,
    }
    before = target.read_bytes()
    again = harness.run(
        "write_witness", dir=str(tmp_path), env=env, config={}, device="cpu", wall_seconds=99
    )
    assert again["refused"] and again["rules"] == ["witness.path.exists"]
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["observed.attempt2.json"]
    rank = harness.run(
        "write_witness",
        dir=str(tmp_path / "r1"),
        env={**env, "RANK": "1"},
        config={},
        device="cpu",
        wall_seconds=1,
    )
    assert rank == {"path": None}
    assert not (tmp_path / "r1").exists()


def test_racing_node_processes_one_witness_wins(tmp_path: Path) -> None:
    node = require_node()
    request = {
        "cmd": "run",
        "seq": 1,
        "op": "write_witness",
        "input": {
            "dir": str(tmp_path),
            "env": {"FOUNDRY_RUN_ID": "1"},
            "config": {},
            "device": "cpu",
            "wall_seconds": 1,
        },
    }
    script = "\n".join(
        json.dumps(m) for m in ({"cmd": "start", "version": 1}, request, {"cmd": "stop"})
    )
    procs = [
        subprocess.Popen(
            [node, str(HARNESS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        for _ in range(6)
    ]
    outputs = [p.communicate(script + "\n", timeout=60)[0] for p in procs]
    results = [json.loads(out.splitlines()[1]) for out in outputs]
    winners = [r for r in results if r["outcome"] == "ok" and r["output"]["path"]]
    losers = [r for r in results if r["outcome"] == "refused"]
    assert len(winners) == 1 and len(losers) == 5
    assert all(r["rules"] == ["witness.path.exists"] for r in losers)
    assert [p.name for p in tmp_path.iterdir()] == ["observed.attempt0.json"]
    json.loads((tmp_path / "observed.attempt0.json").read_text("utf-8"))


ROW = st.fixed_dictionaries(
    {
        "benchmark": st.sampled_from(["ETTh1", " ", "", "é\x7f", "\ud800"]),
        "metric": st.sampled_from(["mse", "\t"]),
        "horizon": st.one_of(st.integers(-2, 720), st.sampled_from([1.0, True])),
        "seed": st.one_of(st.integers(-1, 3), st.sampled_from([2**70])),
        "value": st.one_of(
            st.floats(allow_nan=False, allow_infinity=False),
            st.integers(),
            st.sampled_from([True, "1", None]),
        ),
    },
    optional={"extra": st.just(1)},
)


@settings(max_examples=40)
@given(rows=st.lists(ROW, max_size=3))
def test_metrics_refusals_and_bytes_match_python(
    harness: Harness, tmp_path_factory: pytest.TempPathFactory, rows: list[dict[str, Any]]
) -> None:
    base = tmp_path_factory.mktemp("m")
    py_dir, node_dir = base / "py" / "results", base / "node" / "results"
    want = python_rules(lambda: write_metrics(py_dir, rows))
    got = harness.run("write_metrics", dir=str(node_dir), rows=rows)
    assert node_rules(got) == want
    if want is None:
        assert (node_dir / "metrics.json").read_bytes() == (py_dir / "metrics.json").read_bytes()
    else:
        assert not node_dir.exists() and not py_dir.exists()


def test_metrics_replaced_atomically(harness: Harness, tmp_path: Path) -> None:
    row = {"benchmark": "b", "metric": "m", "horizon": 1, "seed": 0, "value": 0.5}
    harness.run("write_metrics", dir=str(tmp_path), rows=[row])
    harness.run("write_metrics", dir=str(tmp_path), rows=[{**row, "value": 2.0}])
    assert json.loads((tmp_path / "metrics.json").read_text("utf-8"))[0]["value"] == 2.0
    assert "2.0" in (tmp_path / "metrics.json").read_text("utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]


def _in_the_way(base: Path, kind: str) -> Path:
    """A results_dir under ``base`` with something in its way: a file at it or above it, a
    link to nothing, or (no refusal) a link to a folder."""
    base.mkdir(parents=True)
    (base / "afile").write_text("keep")
    (base / "folder").mkdir()
    (base / "dangling").symlink_to(base / "missing")
    (base / "linked").symlink_to(base / "folder")
    return {
        "file": base / "afile",
        "under_file": base / "afile" / "sub" / "deeper",
        "dangling": base / "dangling",
        "under_dangling": base / "dangling" / "sub",
        "linked": base / "linked" / "sub",
    }[kind]


def _tree(base: Path) -> dict[str, Any]:
    """Every entry under ``base``: the file in the way with its bytes, links as links, a
    written record by name only (its captured_at differs)."""
    return {
        str(p.relative_to(base)): (
            "link" if p.is_symlink() else p.read_bytes() if p.name == "afile" else p.is_dir()
        )
        for p in sorted(base.rglob("*"))
    }


RESULTS_DIRS = ["file", "under_file", "dangling", "under_dangling", "linked"]


@pytest.mark.parametrize("kind", RESULTS_DIRS)
@pytest.mark.parametrize(
    "env",
    [{"FOUNDRY_RUN_ID": "3"}, {"FOUNDRY_RUN_ID": "x"}, {"FOUNDRY_RUN_ID": "3", "RANK": "2"}],
    ids=["valid", "bad_env", "rank2"],
)
def test_witness_results_dir_in_the_way_matches_python(
    harness: Harness, tmp_path: Path, kind: str, env: dict[str, str]
) -> None:
    """witness.path.results_dir: the same refusal at the same point (after every input
    check and the rank, before witness.path.exists), and nothing changed."""
    py_dir, node_dir = _in_the_way(tmp_path / "py", kind), _in_the_way(tmp_path / "node", kind)
    want = python_rules(
        lambda: write_witness(py_dir, config={}, device="cpu", wall_seconds=1, env=env)
    )
    got = harness.run(
        "write_witness", dir=str(node_dir), env=env, config={}, device="cpu", wall_seconds=1
    )
    assert node_rules(got) == want
    if kind != "linked" and env == {"FOUNDRY_RUN_ID": "3"}:
        assert want == {"witness.path.results_dir"}
    assert _tree(tmp_path / "node") == _tree(tmp_path / "py")


@pytest.mark.parametrize("kind", RESULTS_DIRS)
@pytest.mark.parametrize("horizon", [1, True], ids=["valid", "bool_horizon"])
def test_metrics_results_dir_in_the_way_matches_python(
    harness: Harness, tmp_path: Path, kind: str, horizon: Any
) -> None:
    """metrics.path.results_dir: refused after the rows are checked; nothing changed."""
    rows = [{"benchmark": "b", "metric": "m", "horizon": horizon, "seed": 0, "value": 0.5}]
    py_dir, node_dir = _in_the_way(tmp_path / "py", kind), _in_the_way(tmp_path / "node", kind)
    want = python_rules(lambda: write_metrics(py_dir, rows))
    got = harness.run("write_metrics", dir=str(node_dir), rows=rows)
    assert node_rules(got) == want
    if kind != "linked" and type(horizon) is int:
        assert want == {"metrics.path.results_dir"}
    assert _tree(tmp_path / "node") == _tree(tmp_path / "py")


# --- read_witness -------------------------------------------------------------------------

from trainrecord.foundry import read_witness  # noqa: E402


def _python_read_rules(path: Path) -> set[str] | None:
    return python_rules(lambda: read_witness(path))


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("observed.attempt0.json", None),
        ("observed.attempt3.json", None),  # attempt 0 inside: renamed
        ("observed.attempt0.json", ('"run_record_format": 1', '"run_record_format": 2')),
        ("observed.attempt0.json", ('"run_record_format": 1', '"run_record_format": 1.0')),
        ("observed.attempt0.json", ('"wall_seconds": 17', '"wall_seconds": -1')),
        ("observed.attempt0.json", ('"wall_seconds": 17', '"wall_seconds": NaN')),
        ("observed.attempt0.json", ('"device": "cpu"', '"device": " "')),
        ("observed.attempt0.json", ('"attempt": 0,', "")),
    ],
)
def test_read_witness_matches_python(
    harness: Harness, tmp_path: Path, name: str, change: tuple[str, str] | None
) -> None:
    written = write_witness(
        tmp_path / "w", config={}, device="cpu", wall_seconds=17, env={"FOUNDRY_RUN_ID": "9"}
    )
    assert written is not None
    text = written.read_text("utf-8")
    if change is not None:
        assert change[0] in text
        text = text.replace(*change)
    target = tmp_path / name
    target.write_text(text, "utf-8")
    got = harness.run("read_witness", path=str(target))
    want = _python_read_rules(target)
    assert node_rules(got) == want
    if want is None:
        assert got["witness"] == json.loads(text)


# --- results_dir: a name too long, and what stands in the way, in the same words -------


@pytest.mark.parametrize("deep", [False, True], ids=["last", "middle"])
def test_a_too_long_results_dir_name_makes_nothing_in_either(
    harness: Harness, tmp_path: Path, deep: bool
) -> None:
    """A part of results_dir longer than NAME_MAX: an OSError (ENAMETOOLONG) naming
    results_dir before anything is made (mkdir made the parents, then failed)."""
    rows = [{"benchmark": "b", "metric": "m", "horizon": 0, "seed": 0, "value": 1}]
    for side in ("py", "node"):
        (tmp_path / side).mkdir()
    long = "c" * 300
    tail = (long, "d") if deep else (long,)
    for name, py_call, node_op, node_args in [
        (
            "witness",
            lambda d: write_witness(
                d, config={}, device="cpu", wall_seconds=1, env={"FOUNDRY_RUN_ID": "1"}
            ),
            "write_witness",
            {"env": {"FOUNDRY_RUN_ID": "1"}, "config": {}, "device": "cpu", "wall_seconds": 1},
        ),
        ("metrics", lambda d: write_metrics(d, rows), "write_metrics", {"rows": rows}),
    ]:
        py_dir = tmp_path.joinpath("py", name, "x", *tail)
        with pytest.raises(
            OSError, match=r"results_dir .*longer than the filesystem allows"
        ) as err:
            py_call(py_dir)
        assert err.value.errno == 36 and not isinstance(err.value, RecordRefused)
        harness.seq += 1
        payload = {"dir": str(tmp_path.joinpath("node", name, "x", *tail)), **node_args}
        got = harness.request({"cmd": "run", "seq": harness.seq, "op": node_op, "input": payload})
        assert got["outcome"] == "error", got
        assert "longer than the filesystem allows (255)" in got["message"]
    assert list((tmp_path / "py").iterdir()) == [] and list((tmp_path / "node").iterdir()) == []


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("file", "is a file"),
        ("under_file", "which is a file"),
        ("dangling", "is a link to nothing"),
        ("link_to_file", "is a link to a file"),
        ("loop", "is a link loop"),
    ],
)
def test_results_dir_in_the_way_is_named_alike(
    harness: Harness, tmp_path: Path, kind: str, words: str
) -> None:
    """Python and Node say what stands in the way in the same words: a dangling link was
    "a file" in Node, a link to a file "a link to no folder" in Python."""
    messages = []
    for side in ("py", "node"):
        base = tmp_path / side
        base.mkdir()
        (base / "afile").write_text("keep")
        (base / "dangling").symlink_to(base / "missing")
        (base / "link_to_file").symlink_to(base / "afile")
        (base / "loop").symlink_to(base / "loop")
        target = {"file": base / "afile", "under_file": base / "afile" / "sub"}.get(
            kind, base / kind
        )
        if side == "py":
            with pytest.raises(RecordRefused) as refused:
                write_metrics(
                    target, [{"benchmark": "b", "metric": "m", "horizon": 0, "seed": 0, "value": 1}]
                )
            messages.append(refused.value.problems[0].message.replace(str(base), "BASE"))
        else:
            harness.seq += 1
            row = {"benchmark": "b", "metric": "m", "horizon": 0, "seed": 0, "value": 1}
            payload = {"dir": str(target), "rows": [row]}
            got = harness.request(
                {"cmd": "run", "seq": harness.seq, "op": "write_metrics", "input": payload}
            )
            assert got["rules"] == ["metrics.path.results_dir"], got
            messages.append(
                got["message"].removeprefix("metrics.path.results_dir: ").replace(str(base), "BASE")
            )
    assert messages[0] == messages[1]
    assert f"{words}, not a folder" in messages[0]
