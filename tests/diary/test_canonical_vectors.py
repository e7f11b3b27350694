"""The verifier reproduces the spec's canonical-JSON vectors and the architecture vector."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.conftest import SPEC
from trainrecord.diary import architecture_sha256, architecture_text
from trainrecord.diary.chain import scan

LINE = json.loads((SPEC / "vectors" / "canonical" / "line-hash.json").read_text("utf-8"))
ARCH = json.loads((SPEC / "vectors" / "diary" / "canonical" / "architecture.json").read_text())


@pytest.mark.parametrize("case", LINE["cases"], ids=lambda c: c["description"])
@pytest.mark.parametrize("spelling", ["canonical", "raw utf-8"])
def test_a_line_carrying_the_vector_input_verifies_exactly(case: dict, spelling: str) -> None:
    prev = case["prev"]
    line = {"event": "x_vector", "seq": 0, "time": 1.0, "v": case["input"]}
    text = json.dumps(line, sort_keys=True, separators=(",", ":"))
    assert case["canonical"] in text  # the nested value is spelled as the vector says
    line["prev"] = prev
    line["hash"] = hashlib.sha256((prev + text).encode()).hexdigest()
    ascii_ = spelling == "canonical"
    raw = json.dumps(line, ensure_ascii=ascii_).encode("utf-8", "surrogatepass")
    res = scan(raw + b"\n", 1)
    if not ascii_ and res.failure and res.failure.rule == "diary.file.json":
        pytest.skip("a lone surrogate cannot be written as raw UTF-8")
    assert res.failure is None and res.lines == 1
    line["hash"] = hashlib.sha256((prev + text + " ").encode()).hexdigest()
    bad = json.dumps(line).encode()
    assert scan(bad + b"\n", 1).failure.rule == "diary.chain.hash"


@pytest.mark.parametrize("case", ARCH["cases"], ids=lambda c: c["description"])
def test_architecture_vector(case: dict) -> None:
    pairs = [(p["name"], p["shape"]) for p in case["parameters"]]
    assert architecture_text(pairs) == case["text"]
    assert architecture_sha256(pairs) == case["sha256"]


def test_architecture_text_of_torch_shapes() -> None:
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.BatchNorm2d(16))
    model.register_parameter("scale", torch.nn.Parameter(torch.tensor(1.0)))
    text = architecture_text((n, p.shape) for n, p in model.named_parameters())
    assert text == "scale:[]|0.weight:[16, 3, 3, 3]|0.bias:[16]|1.weight:[16]|1.bias:[16]"
