"""What a type checker sees of ``trainrecord``: the project's mypy on small consumer files.

The consumer file lies in tmp_path, outside the project, and mypy finds the packages by
their source roots (``MYPYPATH=runtime:generated/python``), as a consumer's IDE set up for
the editable install would.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT

MYPY = Path(sys.executable).parent / "mypy"

# Every mypy run shares one cache (.mypy_cache/consumer-tests, warm after the first):
# two pytest-xdist workers writing it at once gave mypy an INTERNAL ERROR (exit 2) in a
# CI run, so the tests of this module run one after another, on one worker.
pytestmark = pytest.mark.xdist_group("mypy-consumer-cache")


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
    command = [
        str(MYPY) if MYPY.exists() else "mypy",
        "--config-file",
        str(config),
        "--cache-dir",
        str(ROOT / ".mypy_cache" / "consumer-tests"),
        "--no-error-summary",
        "--show-error-codes",
        "--show-traceback",
        str(consumer),
    ]
    run = functools.partial(
        subprocess.run,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
        timeout=600,
    )
    proc = run(command)
    if proc.returncode == 2 and "INTERNAL ERROR" in proc.stdout + proc.stderr:
        # mypy 2.4.1 crashed so twice in fresh-clone CI runs (the cold shared cache, with
        # the other xdist worker busy; not reproduced alone): once more, with a cache of
        # its own, and its traceback in the failure if it crashes again
        command[command.index("--cache-dir") + 1] = str(tmp_path / "mypy-cache")
        proc = run(command)
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


def test_report_builders_name_a_misspelt_field(tmp_path: Path) -> None:
    out = run_mypy(
        tmp_path,
        """\
        from trainrecord.report import config, epoch_entry, open_run, validation_entry

        config("training", batchsize=100)
        epoch_entry("lesion", epoch=1, word_selective_lesion=3)
        validation_entry("training", val_los=0.5)
        open_run("runs/pre_s_1").job_state("training", {}, epochs_totl=5)
        config("wordset", mode="pre")
        """,
    )
    assert 'Unexpected keyword argument "batchsize"' in lines_of(out, 3), out
    assert 'did you mean "batch_size"' in lines_of(out, 3), out
    assert 'Unexpected keyword argument "word_selective_lesion"' in lines_of(out, 4), out
    assert 'Unexpected keyword argument "val_los"' in lines_of(out, 5), out
    assert 'Unexpected keyword argument "epochs_totl"' in lines_of(out, 6), out
    # mode is a training config field, not a wordset one: no overload takes the call
    assert 'No overload variant of "config"' in lines_of(out, 7), out


def test_report_builders_refuse_a_wrong_value_type(tmp_path: Path) -> None:
    out = run_mypy(
        tmp_path,
        """\
        from trainrecord.report import config, epoch_entry, open_run

        config("training", batch_size="100")
        config("training", mode="prelit")
        config("lesion", lesioned_units=3)
        epoch_entry("training", epoch=1.5)
        open_run("runs/pre_s_1").job_state("training", {}, epochs_total="5")
        """,
    )
    for line in range(3, 8):
        assert "error:" in lines_of(out, line), (line, out)
    assert '"batch_size" has incompatible type "str"' in lines_of(out, 3) or (
        'No overload variant of "config" matches argument types "str", "str"' in lines_of(out, 3)
    ), out


def test_right_report_builder_calls_type_check_clean(tmp_path: Path) -> None:
    out = run_mypy(
        tmp_path,
        """\
        from typing import Any

        from trainrecord.report import config, epoch_entry, open_run, validation_entry
        from trainrecord.report.payload import Kind

        cfg = config("training", mode="pre", batch_size=100, lr=0.01, device_name=None)
        config(
            "lesion",
            source_name="lit_bias_z_49",
            source_mode="lit_bias",
            lesioned_units=[89, 3],
            word_channel={"first": 463, "last": 511},
            reset_outgoing=True,
        )
        config("wordset", wordlist="english", num_words=1000, train_fonts=["Arial"])
        epoch_entry("training", epoch=0, lr=0.01, train_loss=1.0, duration_seconds=3)
        epoch_entry("lesion", epoch=0, word_selective_lesioned=4, val_accuracy_words=None)
        validation_entry("lesion", val_loss=0.5, word_selective_other=2)
        validation_entry("training", val_loss=0.5)
        run = open_run("runs/pre_s_1")
        run.job_state("training", cfg, epochs_first=0, epochs_total=50, name="pre_s_1")

        def any_kind(kind: Kind, values: dict[str, Any]) -> None:
            config(kind, **values)
            epoch_entry(kind, epoch=1)
        """,
    )
    assert "error" not in out, out


def test_generated_field_types_are_the_schema_defs() -> None:
    """trainrecord_spec.fields has one TypedDict per builder $defs object, its keys exactly
    the schema's properties in schema order, all optional, nullable exactly where the
    schema's type has null; and each builder overload takes its kind's TypedDict."""
    import json
    import typing

    from trainrecord.report import payload
    from trainrecord_spec import fields

    schema = json.loads(
        (ROOT / "spec" / "schemas" / "reporting" / "reporting.schema.json").read_text()
    )
    defs = schema["$defs"]
    builder_defs = {
        "training_config",
        "lesion_config",
        "wordset_config",
        "training_validation",
        "lesion_validation",
        "training_epoch",
        "lesion_epoch",
    }
    assert set(fields.FIELDS) == builder_defs
    for name, typed in fields.FIELDS.items():
        props = defs[name]["properties"]
        assert list(typed.__annotations__) == list(props), name
        assert typed.__optional_keys__ == frozenset(props), name
        assert typed.__required_keys__ == frozenset(), name
        for key, node in props.items():
            annotation = typed.__annotations__[key]
            text = getattr(annotation, "__forward_arg__", annotation)
            if "$ref" in node:
                node = defs[node["$ref"].removeprefix("#/$defs/")]
            kinds = node.get("type")  # None for an enum: none of the builders' has null
            nullable = isinstance(kinds, list) and "null" in kinds
            assert text.endswith("| None") == nullable, (name, key, text)
    wanted = {
        payload.config: {k: f"{k}_config" for k in ("training", "lesion", "wordset")},
        payload.validation_entry: {
            "training": "training_validation",
            "wordset": "training_validation",
            "lesion": "lesion_validation",
        },
        payload.epoch_entry: {
            "training": "training_epoch",
            "wordset": "training_epoch",
            "lesion": "lesion_epoch",
        },
    }
    for builder, by_kind in wanted.items():
        seen = {}
        for overload in typing.get_overloads(builder):
            kinds = overload.__annotations__["kind"]
            typed_name = overload.__annotations__["values"]
            for kind in kinds.removeprefix("Literal[").removesuffix("]").split(", "):
                seen[kind.strip("'\"")] = typed_name
        assert seen == {
            kind: f"Unpack[{fields.FIELDS[d].__name__}]" for kind, d in by_kind.items()
        }, builder.__name__


def test_job_state_fields_are_job_state_fields() -> None:
    """RunFolder.job_state's typed keyword arguments are JobState's fields, with its types,
    less kind, run_id and config."""
    import dataclasses

    from trainrecord.report.payload import JobState, JobStateFields

    want = {f.name: f.type for f in dataclasses.fields(JobState)}
    for name in ("kind", "run_id", "config"):
        del want[name]
    have = {k: getattr(v, "__forward_arg__", v) for k, v in JobStateFields.__annotations__.items()}
    assert have == want
    assert JobStateFields.__required_keys__ == frozenset()
