"""The run's configuration: numpy numbers taken as numbers; anything else JSON cannot hold
refused naming the key (as Python writes it), its type and what to pass instead.

The probe's case (D6): ``config={"lr": np.float32(0.1), "epochs": np.int64(3)}`` was refused
with "Object of type int64 is not JSON serializable", and ``config=args`` (an
``argparse.Namespace``) with "Namespace(lr=0.1) is not of type 'object', 'null'": neither
named the key nor the fix. The tests at the end go through ``Monitor``.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import math
import pathlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.monitor.conftest import TinyMLP, read_run, train
from trainrecord.errors import RecordRefused
from trainrecord.foundry.numbers import plain_number
from trainrecord.monitor import Monitor
from trainrecord.monitor.config import record_config


class Color(enum.IntEnum):
    RED = 1


class Mode(str, enum.Enum):  # noqa: UP042 - str() of such a member is "Mode.FAST"
    FAST = "fast"


class Plain(enum.Enum):
    A = "a"


@dataclasses.dataclass
class Optim:
    lr: float = 0.1


def refused(config: Any) -> RecordRefused:
    with pytest.raises(RecordRefused) as err:
        record_config(config)
    return err.value


# -- taken --------------------------------------------------------------------------------


def test_json_values_are_recorded_as_given_in_a_new_dict():
    config = {"lr": 0.1, "epochs": 3, "name": "exp", "on": True, "off": None, "nest": {"a": [1]}}
    out = record_config(config)
    assert out == config and out is not config and out["nest"] is not config["nest"]
    assert record_config(None) is None
    assert record_config({}) == {}


def test_numpy_scalars_are_the_numbers_they_hold_as_the_foundry_takes_them():
    config = {
        "lr": np.float32(0.1),
        "epochs": np.int64(3),
        "u": np.uint8(255),
        "d": np.float64(2.5),
        "half": np.float16(0.5),
        "nested": {"betas": [np.float64(0.9), np.float32(0.999)]},
    }
    out = record_config(config)
    assert out == {
        "lr": plain_number(np.float32(0.1)),  # the one conversion, shared with the Foundry
        "epochs": 3,
        "u": 255,
        "d": 2.5,
        "half": 0.5,
        "nested": {"betas": [0.9, float(np.float32(0.999))]},
    }
    assert type(out["epochs"]) is int and type(out["lr"]) is float and type(out["d"]) is float
    assert type(out["nested"]["betas"][1]) is float
    json.dumps(out, allow_nan=False)


def test_zero_d_numpy_arrays_and_numpy_booleans_and_strings_are_their_values():
    out = record_config(
        {
            "a": np.array(2.5),
            "i": np.array(7),
            "b": np.True_,
            "ab": np.array(False),
            "s": np.str_("x"),
        }
    )
    assert out == {"a": 2.5, "i": 7, "b": True, "ab": False, "s": "x"}
    assert [type(out[k]) for k in "aibs"] == [float, int, bool, str]


def test_subclasses_of_str_int_float_become_plain_values():
    out = record_config({"c": Color.RED, "m": Mode.FAST})
    assert out == {"c": 1, "m": "fast"} and type(out["c"]) is int and type(out["m"]) is str
    assert json.dumps(out) == '{"c": 1, "m": "fast"}'


def test_tuples_become_lists_and_non_finite_floats_stay_for_the_writer_to_spell():
    out = record_config({"shape": (3, 8, 8), "nan": float("nan"), "inf": np.float32("inf")})
    assert out["shape"] == [3, 8, 8]
    assert math.isnan(out["nan"]) and out["inf"] == math.inf  # "NaN"/"Infinity" in the diary


# -- refused ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kind", "fix"),
    [
        (pathlib.Path("/data/x"), "pathlib.PosixPath", "str(config['opt']['v'])"),
        (torch.device("cpu"), "torch.device", "str(config['opt']['v'])"),
        (torch.float16, "torch.dtype", "str(config['opt']['v'])"),
        (torch.tensor(0.1), "torch.Tensor", "config['opt']['v'].item()"),
        (torch.tensor([1.0, 2.0]), "torch.Tensor", "config['opt']['v'].tolist()"),
        (np.arange(3), "numpy.ndarray", "config['opt']['v'].tolist()"),
        ({1, 2}, "set", "sorted(config['opt']['v'])"),
        (frozenset({1}), "frozenset", "sorted(config['opt']['v'])"),
        (argparse.Namespace(lr=0.1), "argparse.Namespace", "vars(config['opt']['v'])"),
        (b"ab", "bytes", "config['opt']['v'].decode()"),
        (Plain.A, "Plain", "config['opt']['v'].value"),
        (Optim(), "Optim", "dataclasses.asdict(config['opt']['v'])"),
        (complex(1, 2), "complex", "str(config['opt']['v'])"),
        (np.complex64(1), "numpy.complex64", "str(config['opt']['v'])"),
        (object(), "object", "str(config['opt']['v'])"),
    ],
)
def test_a_value_json_cannot_hold_is_refused_naming_its_key_type_and_fix(
    value: Any, kind: str, fix: str
):
    err = refused({"opt": {"v": value}, "fine": 1})
    (problem,) = err.problems
    assert problem.rule == "diary.file.json"
    assert problem.path == ("config", "opt", "v")
    text = str(err)
    assert "config['opt']['v']" in text and kind in text and fix in text, text


def test_every_bad_value_is_named_at_once_in_lists_too():
    err = refused({"a": {1, 2}, "b": [0.1, pathlib.Path("p")], "c": {"d": (torch.tensor(1),)}})
    assert [p.path for p in err.problems] == [
        ("config", "a"),
        ("config", "b", 1),
        ("config", "c", "d", 0),
    ]
    assert "config['b'][1]" in str(err) and "config['c']['d'][0]" in str(err)


def test_a_value_whose_repr_spans_lines_is_shown_on_one_short_line():
    # A newcomer probe: config={"opt": optimizer} showed SGD's repr, line breaks and all.
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    with pytest.raises(RecordRefused) as info:
        record_config({"opt": optimizer})
    (problem,) = info.value.problems
    assert problem.rule == "diary.file.json"  # the rule id is unchanged
    assert problem.value is not None and problem.value.startswith("SGD ( Parameter Group 0 ")
    assert len(problem.value) <= 80 and problem.value.endswith("...")
    assert "\n" not in str(info.value) and "  " not in problem.value


def test_a_key_that_is_not_a_string_is_refused_with_its_path():
    err = refused({"optim": {1: 0.1}})
    (problem,) = err.problems
    assert problem.rule == "diary.file.json" and problem.path == ("config", "optim", "1")
    assert "config['optim'] has the key 1 of type int" in str(err) and "str(key)" in str(err)


def test_a_configuration_that_contains_itself_is_refused():
    config: dict[str, Any] = {"a": 1}
    config["self"] = config
    err = refused(config)
    assert "contains itself" in str(err)
    shared = [1, 2]
    assert record_config({"x": shared, "y": shared}) == {"x": [1, 2], "y": [1, 2]}  # not a loop


@pytest.mark.parametrize(
    ("config", "fix"),
    [
        (argparse.Namespace(lr=0.1), "config=vars(args)"),
        (Optim(), "config=dataclasses.asdict(config)"),
        ([("lr", 0.1)], "a dict of names and values"),
        ("lr=0.1", "a dict of names and values"),
    ],
)
def test_a_config_that_is_not_a_dict_is_refused_saying_what_to_pass(config: Any, fix: str):
    err = refused(config)
    assert err.rule == "diary.run_start.config.type" and err.field == "config"
    assert fix in str(err) and "config must be a dict of JSON values or None" in str(err)


# -- through the Monitor -------------------------------------------------------------------


def test_monitor_records_numpy_numbers_in_run_start(tmp_path: Path):
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    config = {"lr": np.float32(0.5), "epochs": np.int64(3), "shape": (8, 8), "x": float("nan")}
    with Monitor(model, optimizer, tmp_path / "run", config=config, check_every=2) as monitor:
        train(model, optimizer, monitor, 3)
    start = read_run(tmp_path / "run")[0]
    assert start["config"] == {"lr": 0.5, "epochs": 3, "shape": [8, 8], "x": "NaN"}


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"data": {"root": pathlib.Path("/data")}}, ["config['data']['root']", "str("]),
        ({"device": torch.device("cpu")}, ["config['device']", "torch.device", "str("]),
        ({"lr": torch.tensor(0.1)}, ["config['lr']", "torch.Tensor", ".item()"]),
        ({"tags": {"a"}}, ["config['tags']", "set", "sorted("]),
        (argparse.Namespace(lr=0.1), ["config=vars(args)"]),
    ],
)
def test_monitor_refuses_a_config_naming_the_key_and_leaves_nothing_behind(
    tmp_path: Path, config: Any, words: list[str]
):
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    run = tmp_path / "run"
    with pytest.raises(RecordRefused) as err:
        Monitor(model, optimizer, run, config=config)
    for word in words:
        assert word in str(err.value), str(err.value)
    assert not run.exists() or list(run.iterdir()) == []
    # a retry with the fix in the same process works
    with Monitor(model, optimizer, run, config={"lr": 0.1}) as monitor:
        train(model, optimizer, monitor, 1)
    assert read_run(run)[0]["config"] == {"lr": 0.1}
