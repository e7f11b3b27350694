"""write_witness and read_witness: every refusal rule, the guarantees, the written file."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.foundry.conftest import good_env, snapshot
from trainrecord import schemas
from trainrecord.errors import RecordRefused
from trainrecord.foundry import (
    WITNESS_SCHEMA,
    config_sha,
    read_witness,
    write_witness,
)

CONFIG = {"lr": 0.001, "epochs": 2}


def write(results: Path, env: dict[str, Any] | None = None, **kwargs: Any) -> Path | None:
    args: dict[str, Any] = {"config": CONFIG, "device": "cpu", "wall_seconds": 93}
    args.update(kwargs)
    return write_witness(results, env=good_env() if env is None else env, **args)


REFUSALS: list[tuple[str, dict[str, Any], dict[str, Any], str, str]] = [
    # (case, env, kwargs, rule, field)
    ("FOUNDRY_RUN_ID unset", {}, {}, "witness.env.foundry_run_id.unset", "FOUNDRY_RUN_ID"),
    (
        "FOUNDRY_RUN_ID empty",
        {"FOUNDRY_RUN_ID": ""},
        {},
        "witness.env.foundry_run_id.blank",
        "FOUNDRY_RUN_ID",
    ),
    (
        "FOUNDRY_RUN_ID spaces",
        {"FOUNDRY_RUN_ID": " \t "},
        {},
        "witness.env.foundry_run_id.blank",
        "FOUNDRY_RUN_ID",
    ),
    (
        "FOUNDRY_RUN_ID hex",
        {"FOUNDRY_RUN_ID": "0x10"},
        {},
        "witness.env.foundry_run_id.integer",
        "FOUNDRY_RUN_ID",
    ),
    (
        "FOUNDRY_RUN_ID arabic digits",
        {"FOUNDRY_RUN_ID": "١٢"},
        {},
        "witness.env.foundry_run_id.integer",
        "FOUNDRY_RUN_ID",
    ),
    ("RANK not an integer", good_env(RANK="zero"), {}, "witness.env.rank.integer", "RANK"),
    ("RANK blank", good_env(RANK=""), {}, "witness.env.rank.integer", "RANK"),
    ("RANK negative", good_env(RANK="-1"), {}, "witness.env.rank.negative", "RANK"),
    (
        "SLURM_PROCID not an integer",
        good_env(SLURM_PROCID="1.0"),
        {},
        "witness.env.slurm_procid.integer",
        "SLURM_PROCID",
    ),
    (
        "SLURM_PROCID negative",
        good_env(SLURM_PROCID="-2"),
        {},
        "witness.env.slurm_procid.negative",
        "SLURM_PROCID",
    ),
    (
        "SLURM_RESTART_COUNT not an integer",
        good_env(SLURM_RESTART_COUNT="1_0"),
        {},
        "witness.env.slurm_restart_count.integer",
        "SLURM_RESTART_COUNT",
    ),
    (
        "SLURM_RESTART_COUNT negative",
        good_env(SLURM_RESTART_COUNT="-1"),
        {},
        "witness.env.slurm_restart_count.negative",
        "SLURM_RESTART_COUNT",
    ),
    (
        "OMP_NUM_THREADS a list",
        good_env(OMP_NUM_THREADS="8,4"),
        {},
        "witness.env.omp_num_threads.integer",
        "OMP_NUM_THREADS",
    ),
    (
        "OMP_NUM_THREADS zero",
        good_env(OMP_NUM_THREADS="0"),
        {},
        "witness.env.omp_num_threads.range",
        "OMP_NUM_THREADS",
    ),
    ("env value not text", {"FOUNDRY_RUN_ID": 17}, {}, "witness.env.type", "FOUNDRY_RUN_ID"),
    (
        "FOUNDRY_RUN_ID no-break space",
        {"FOUNDRY_RUN_ID": "\u00a0"},
        {},
        "witness.env.foundry_run_id.blank",
        "FOUNDRY_RUN_ID",
    ),
    (
        "FOUNDRY_RUN_ID ideographic space",
        {"FOUNDRY_RUN_ID": " \u3000\t"},
        {},
        "witness.env.foundry_run_id.blank",
        "FOUNDRY_RUN_ID",
    ),
    (
        "config with a circular reference",
        None,
        {"config": (lambda c: c.update(self=c) or c)({})},
        "witness.config.serializable",
        "config",
    ),
    (
        "config with a set",
        None,
        {"config": {"layers": {1, 2}}},
        "witness.config.serializable",
        "config",
    ),
    ("device not text", None, {"device": 0}, "witness.device.type", "device"),
    ("device None", None, {"device": None}, "witness.device.type", "device"),
    ("device blank", None, {"device": "  "}, "witness.device.blank", "device"),
    ("device lone surrogate", None, {"device": "cuda\ud800"}, "witness.device.type", "device"),
    (
        "wall_seconds float",
        None,
        {"wall_seconds": 93.7},
        "witness.wall_seconds.type",
        "wall_seconds",
    ),
    (
        "wall_seconds 93.0",
        None,
        {"wall_seconds": 93.0},
        "witness.wall_seconds.type",
        "wall_seconds",
    ),
    (
        "wall_seconds bool",
        None,
        {"wall_seconds": True},
        "witness.wall_seconds.type",
        "wall_seconds",
    ),
    (
        "wall_seconds text",
        None,
        {"wall_seconds": "93"},
        "witness.wall_seconds.type",
        "wall_seconds",
    ),
    (
        "wall_seconds negative",
        None,
        {"wall_seconds": -1},
        "witness.wall_seconds.negative",
        "wall_seconds",
    ),
]


@pytest.mark.parametrize(
    ("case", "env", "kwargs", "rule", "field"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_refusal(
    results: Path,
    case: str,
    env: dict[str, Any] | None,
    kwargs: dict[str, Any],
    rule: str,
    field: str,
) -> None:
    """witness.write.nothing_on_refusal: refused with the rule, field named, nothing created."""
    before = snapshot(results.parent.parent)
    with pytest.raises(RecordRefused) as info:
        write(results, env, **kwargs)
    assert info.value.rules == [rule]
    assert info.value.field == field
    assert rule in str(info.value) and field in str(info.value)
    assert not results.exists()
    assert snapshot(results.parent.parent) == before


def test_refusal_is_a_value_error_and_names_every_problem(results: Path) -> None:
    env = {"FOUNDRY_RUN_ID": "x", "OMP_NUM_THREADS": "0"}
    with pytest.raises(ValueError) as info:
        write(results, env, device="", wall_seconds=-3)
    assert isinstance(info.value, RecordRefused)
    assert set(info.value.rules) == {
        "witness.env.foundry_run_id.integer",
        "witness.env.omp_num_threads.range",
        "witness.device.blank",
        "witness.wall_seconds.negative",
    }
    assert not results.parent.exists()


def test_secrets_in_config_never_appear_in_messages(results: Path) -> None:
    config = {"api_token": "hunter2-very-secret", "layers": {"hunter2-very-secret"}}
    with pytest.raises(RecordRefused) as info:
        write(results, config=config)
    assert "hunter2" not in str(info.value)
    assert info.value.problems[0].value is None


def test_long_env_values_are_shortened_in_messages(results: Path) -> None:
    with pytest.raises(RecordRefused) as info:
        write(results, {"FOUNDRY_RUN_ID": "x" * 10_000})
    assert len(str(info.value)) < 600


def test_existing_witness_is_refused_and_kept(results: Path) -> None:
    first = write(results)
    assert first is not None
    before = snapshot(results)
    with pytest.raises(RecordRefused) as info:
        write(results, wall_seconds=5)
    assert info.value.rules == ["witness.path.exists"]
    assert snapshot(results) == before


def test_existing_symlink_counts_as_existing(results: Path, tmp_path: Path) -> None:
    results.mkdir(parents=True)
    (results / "observed.attempt0.json").symlink_to(tmp_path / "nowhere")
    with pytest.raises(RecordRefused, match=r"witness\.path\.exists"):
        write(results)


def test_witness_fields_and_oracle(results: Path) -> None:
    """witness.write.fields: the path, and every field its inputs fix."""
    env = good_env(SLURM_RESTART_COUNT=" 3 ", OMP_NUM_THREADS="6", FOUNDRY_RUN_ID="-17")
    path = write(results, env, wall_seconds=0)
    assert path == results / "observed.attempt3.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert schemas.problems(data, WITNESS_SCHEMA) == []
    assert sorted(data) == sorted(
        [
            "attempt",
            "captured_at",
            "config_sha",
            "cpu_threads",
            "device",
            "device_name",
            "experiment_id",
            "peak_vram_mb",
            "run_record_format",
            "wall_seconds",
        ]
    )
    assert data["attempt"] == 3 and data["experiment_id"] == -17 and data["cpu_threads"] == 6
    assert data["config_sha"] == "da1dca8eecbe78ba" == config_sha(CONFIG)
    assert data["run_record_format"] == 1 and data["wall_seconds"] == 0
    captured = datetime.fromisoformat(data["captured_at"])
    assert captured.utcoffset().total_seconds() == 0
    assert abs((datetime.now(UTC) - captured).total_seconds()) < 60
    assert data["captured_at"] == captured.isoformat()


@pytest.mark.parametrize(
    ("config", "sha"),
    [
        ({"lr": float("nan"), "epochs": 2}, "ac1bcb6a3c667693"),
        ({"clip": float("inf"), "floor": -float("inf"), "xs": [float("nan"), 1.0]}, None),
    ],
)
def test_a_configuration_with_nan_is_hashed_as_json_dumps_writes_it(
    results: Path, config: dict[str, Any], sha: str | None
) -> None:
    """The seed hashes json.dumps(config, sort_keys=True), which writes NaN and Infinity: a
    failed run with a NaN in its configuration is witnessed too (not refused)."""
    text = json.dumps(config, sort_keys=True)
    assert "NaN" in text or "Infinity" in text
    expected = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    assert config_sha(config) == expected == (sha or expected)
    data = json.loads(write(results, config=config).read_text(encoding="utf-8"))
    assert data["config_sha"] == expected


def test_text_outside_ascii_is_written_as_is(results: Path) -> None:
    """witness.write.non_ascii: the UTF-8 bytes of the text, never a \\uXXXX escape."""
    path = write(results, device="cpu:é")
    raw = path.read_bytes()
    assert '"device": "cpu:é"'.encode() in raw
    assert b"\\u" not in raw
    assert json.loads(raw)["device"] == "cpu:é"


def test_cpu_device_gives_null_name_and_peak(results: Path) -> None:
    """witness.device.cpu_nulls."""
    for device in ("cpu", "cpu:0", "CPU"):
        path = write(results / device.replace(":", "_"), device=device)
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["device"] == device
        assert data["device_name"] is None and data["peak_vram_mb"] is None


def test_cpu_threads_defaults_to_the_visible_cpus(results: Path) -> None:
    data = json.loads(write(results).read_text(encoding="utf-8"))
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert data["cpu_threads"] == expected


def test_torch_device_object_is_written_as_text(results: Path) -> None:
    torch = pytest.importorskip("torch")
    data = json.loads(write(results, device=torch.device("cpu")).read_text(encoding="utf-8"))
    assert data["device"] == "cpu"


def test_unavailable_accelerator_gives_nulls(results: Path) -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: covered by the device check")
    data = json.loads(write(results, device="cuda:1").read_text(encoding="utf-8"))
    assert data["device"] == "cuda:1"
    assert data["device_name"] is None and data["peak_vram_mb"] is None


@pytest.mark.parametrize(
    "env",
    [
        good_env(RANK="1"),
        good_env(SLURM_PROCID="3"),
        {"RANK": "2"},
        {"RANK": "5", "FOUNDRY_RUN_ID": "junk"},
    ],
)
def test_nonzero_rank_writes_nothing(results: Path, env: dict[str, str]) -> None:
    """witness.rank.nonzero: None, no file, no folder, even without FOUNDRY_RUN_ID."""
    assert write(results, env) is None
    assert not results.parent.exists()


@pytest.mark.parametrize(
    ("rank", "slurm_procid", "writes"),
    [("0", "3", True), ("0", "-1", True), ("2", "0", False), ("1", "1", False)],
)
def test_rank_takes_precedence_over_slurm_procid(
    results: Path, rank: str, slurm_procid: str, writes: bool
) -> None:
    """witness.rank.precedence: with both set, RANK alone decides whether rank 0 writes."""
    path = write(results, good_env(RANK=rank, SLURM_PROCID=slurm_procid))
    assert (path is not None) is writes
    assert results.exists() is writes


def test_default_env_is_os_environ(results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "SLURM_PROCID", "SLURM_RESTART_COUNT", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FOUNDRY_RUN_ID", "99")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    path = write_witness(results, config={}, device="cpu", wall_seconds=1)
    assert path is not None and path.name == "observed.attempt2.json"
    assert json.loads(path.read_text(encoding="utf-8"))["experiment_id"] == 99
    monkeypatch.delenv("FOUNDRY_RUN_ID")
    with pytest.raises(RecordRefused, match=r"witness\.env\.foundry_run_id\.unset"):
        write_witness(results, config={}, device="cpu", wall_seconds=1)


def test_no_temporary_files_left(results: Path) -> None:
    write(results)
    with pytest.raises(RecordRefused):
        write(results)
    assert [p.name for p in results.iterdir()] == ["observed.attempt0.json"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_written_file_has_the_usual_permissions(results: Path) -> None:
    # Not the 0600 of a mkstemp file: readers of other users see what open() would give.
    umask = os.umask(0o022)
    os.umask(umask)
    assert write(results).stat().st_mode & 0o777 == 0o666 & ~umask


# Reading --------------------------------------------------------------------------------


def _witness_doc(**changes: Any) -> dict[str, Any]:
    doc = {
        "attempt": 0,
        "captured_at": "2026-11-29T23:05:41.123456+00:00",
        "config_sha": "da1dca8eecbe78ba",
        "cpu_threads": 8,
        "device": "cpu",
        "device_name": None,
        "experiment_id": 4217,
        "peak_vram_mb": None,
        "run_record_format": 1,
        "wall_seconds": 93,
    }
    doc.update(changes)
    return doc


def test_read_witness_returns_the_model(results: Path) -> None:
    path = write(results)
    model = read_witness(path)
    assert type(model).__name__ == "FoundryWitness"
    assert model.model_dump() == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("version", [2, 0, "1", 1.0, True, None, "two"])
def test_reader_refuses_unknown_version_first(tmp_path: Path, version: Any) -> None:
    """witness.read.version_first and witness.run_record_format.unsupported."""
    # Everything else is wrong too; the reader reports only the version, naming it.
    doc = {"run_record_format": version, "attempt": "x", "new_v2_field": 1}
    path = tmp_path / "observed.attempt0.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(RecordRefused) as info:
        read_witness(path)
    assert info.value.rules == ["witness.run_record_format.unsupported"]
    assert repr(version) in str(info.value)


@pytest.mark.parametrize("field", ["device", "device_name"])
@pytest.mark.parametrize("text", ["\ud800", "cuda\udfff", "\udc80x"])
def test_reader_refuses_lone_surrogates_as_not_text(tmp_path: Path, field: str, text: str) -> None:
    """Text with a lone surrogate is not text (spec/README.md): witness.<field>.type, named,
    never a crash of the model."""
    path = tmp_path / "observed.attempt0.json"
    path.write_text(json.dumps(_witness_doc(**{field: text})), encoding="utf-8")
    with pytest.raises(RecordRefused) as info:
        read_witness(path)
    assert info.value.rules == [f"witness.{field}.type"]
    assert info.value.field == field
    assert f"[witness.{field}.type] {field}: " in str(info.value)


def test_writer_refuses_a_device_name_that_is_not_text(
    results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device name with a lone surrogate cannot be written as UTF-8: refused, not a crash."""
    import trainrecord.foundry.witness as witness_module

    monkeypatch.setattr(witness_module, "accelerator_info", lambda device: ("H200\udc80", 3))
    with pytest.raises(RecordRefused) as info:
        write(results, device="cuda")
    assert info.value.rules == ["witness.device_name.type"]
    assert info.value.field == "device_name"
    assert not results.exists()


def test_reader_refuses_schema_problems(tmp_path: Path) -> None:
    path = tmp_path / "observed.attempt0.json"
    path.write_text(json.dumps(_witness_doc(attempt=-1, extra=1)), encoding="utf-8")
    with pytest.raises(RecordRefused) as info:
        read_witness(path)
    assert set(info.value.rules) == {"witness.attempt.negative", "witness.fields.extra"}


@pytest.mark.parametrize("attempt", [1, 0, 3])
def test_reader_checks_attempt_against_file_name(tmp_path: Path, attempt: int) -> None:
    """witness.attempt.filename: attempt 0 (the first attempt, the smallest valid value) in
    observed.attempt2.json is refused like any other attempt that is not 2, a larger one (3)
    as well as a smaller one."""
    path = tmp_path / "observed.attempt2.json"
    path.write_text(json.dumps(_witness_doc(attempt=attempt)), encoding="utf-8")
    with pytest.raises(RecordRefused) as info:
        read_witness(path)
    assert info.value.rules == ["witness.attempt.filename"]
    other = tmp_path / "copy-of-witness.json"
    other.write_text(json.dumps(_witness_doc(attempt=attempt)), encoding="utf-8")
    assert read_witness(other).attempt == attempt


@pytest.mark.parametrize("name", ["observed.attempt02.json", "observed.attempt00.json"])
def test_a_name_with_leading_zeros_is_read_without_the_file_name_check(
    tmp_path: Path, name: str
) -> None:
    """witness.attempt.filename holds only for N written without leading zeros (the name the
    writer writes): observed.attempt02.json is not attempt 2's name, so attempt 3 in it is
    read, as under any other name (spec/rules/foundry.json)."""
    path = tmp_path / name
    path.write_text(json.dumps(_witness_doc(attempt=3)), encoding="utf-8")
    assert read_witness(path).attempt == 3


def test_reader_reads_a_witness_of_the_cap_and_refuses_one_byte_more(tmp_path: Path) -> None:
    """witness.file.regular: a witness of at most 1 MiB is read whole; one byte more is
    refused, not read cut at the cap (the cut here would be a valid witness: the JSON ends
    in spaces)."""
    cap = 1 << 20
    text = json.dumps(_witness_doc(attempt=0)).encode()
    path = tmp_path / "observed.attempt0.json"
    path.write_bytes(text + b" " * (cap - len(text)))
    assert read_witness(path).attempt == 0
    path.write_bytes(text + b" " * (cap + 1 - len(text)))
    with pytest.raises(RecordRefused) as info:
        read_witness(path)
    assert info.value.rules == ["witness.file.regular"]
    assert "larger than 1 MiB" in str(info.value)


@pytest.mark.parametrize(
    "raw", [b'{"attempt": NaN}', b"{", b"\xff\xfe{}", b"", b'\xef\xbb\xbf{"a": 1}', b"[1, 2] x"]
)
def test_reader_refuses_non_json(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "observed.attempt0.json"
    path.write_bytes(raw)
    with pytest.raises(RecordRefused) as info:
        read_witness(path)
    assert info.value.rules == ["witness.file.json"]


# Without torch, and from a finally block -------------------------------------------------

NO_TORCH = """
import sys, json
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is not installed here")
sys.meta_path.insert(0, Block())
from trainrecord.foundry import write_witness
env = {"FOUNDRY_RUN_ID": "5"}
a = write_witness(sys.argv[1], config={}, device="cpu", wall_seconds=1, env=env)
b = write_witness(sys.argv[1], config={}, device="cuda", wall_seconds=1,
                  env=dict(env, SLURM_RESTART_COUNT="1"))
print(json.dumps([json.load(open(a)), json.load(open(b)), "torch" in sys.modules]))
"""


def test_writer_works_without_torch(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", NO_TORCH, str(tmp_path / "r")],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    cpu, cuda, torch_loaded = json.loads(proc.stdout)
    assert not torch_loaded
    assert cpu["device_name"] is None and cuda["device"] == "cuda"
    assert cuda["device_name"] is None and cuda["peak_vram_mb"] is None


def test_cpu_witness_never_imports_torch(tmp_path: Path) -> None:
    code = (
        "import sys; from trainrecord.foundry import write_witness; "
        "write_witness(sys.argv[1], config={}, device='cpu', wall_seconds=0, "
        "env={'FOUNDRY_RUN_ID': '1'}); print('torch' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


TRAIN = textwrap.dedent("""
    import sys, time
    from trainrecord.foundry import write_witness

    def train(config):
        raise RuntimeError("loss diverged at step 3")

    start = time.monotonic()
    config = {"lr": 0.001, "epochs": 2}
    try:
        train(config)
    finally:
        write_witness(sys.argv[1], config=config, device="cpu",
                      wall_seconds=int(time.monotonic() - start))
""")


def test_failing_training_still_leaves_its_witness(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "SLURM_PROCID", "SLURM_RESTART_COUNT", "OMP_NUM_THREADS")
    }
    env["FOUNDRY_RUN_ID"] = "31"
    proc = subprocess.run(
        [sys.executable, "-c", TRAIN, str(tmp_path / "res")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 1
    assert "loss diverged" in proc.stderr
    witness = read_witness(tmp_path / "res" / "observed.attempt0.json")
    assert witness.experiment_id == 31 and witness.config_sha == "da1dca8eecbe78ba"
    assert re.fullmatch(r"\d+", str(witness.wall_seconds))


def test_cuda_witness_reports_name_and_peak(results: Path) -> None:
    """On a machine with CUDA: the name PyTorch reports and the peak in whole MiB."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    block = torch.empty(64 * 1024 * 1024, dtype=torch.uint8, device="cuda:0")  # 64 MiB
    data = json.loads(write(results, device="cuda:0").read_text(encoding="utf-8"))
    del block
    assert data["device_name"] == torch.cuda.get_device_name(0)
    assert data["peak_vram_mb"] == torch.cuda.max_memory_allocated(0) // (1024 * 1024) >= 64
    assert schemas.problems(data, WITNESS_SCHEMA) == []
