"""The check step's fast paths give the numbers of the plain computations they replace.

Channel extremes (``amax``/``amin`` instead of ``aminmax``) with NaN, infinities and signed
zeros; the NaN-padded scale rows (one gather instead of ``pad_sequence``) on a model with
affine and non-affine BatchNorms and a Linear producer; per-layer gradient norms when some
parameters have no gradient or gradients that require grad (``create_graph=True``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.nn import functional as F

from tests.monitor.conftest import TinyCNN, train
from trainrecord.monitor import Monitor
from trainrecord.monitor.channels import channel_extremes, channel_scale
from trainrecord.monitor.gradients import GradientNorms, parameter_layers

special = st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 3.5])


def aminmax_extremes(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The previous implementation: one ``aminmax`` pass."""
    dim %= x.dim()
    if dim == x.dim() - 1:
        low, high = torch.aminmax(x.reshape(-1, x.shape[-1]), dim=0)
    elif dim == 1 and x.dim() > 2:
        low, high = torch.aminmax(x.flatten(2), dim=2)
        low, high = low.amin(dim=0), high.amax(dim=0)
    else:
        low, high = torch.aminmax(x.movedim(dim, -1).reshape(-1, x.shape[dim]), dim=0)
    return high.float(), low.float()


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values, NaN where the other has NaN, and the same classification of zeros."""
    return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))


@given(
    st.integers(min_value=1, max_value=3),
    st.integers(min_value=1, max_value=4),
    st.sampled_from([1, 2, 3, 12]),  # 12 x 12 positions: the trailing-first order
    st.lists(special, min_size=1, max_size=8),
    st.sampled_from([(1, 4), (-1, 4), (-1, 2), (0, 4), (2, 4)]),
)
def test_channel_extremes_match_aminmax_with_special_values(
    n: int, c: int, h: int, specials: list[float], dims: tuple[int, int]
) -> None:
    dim, ndim = dims
    shape = (n, c, h, h) if ndim == 4 else (n, c)
    x = torch.randn(shape)
    flat = x.view(-1)
    for i, value in enumerate(specials):
        flat[(i * 7) % flat.numel()] = value
    high, low = channel_extremes(x, dim)
    ref_high, ref_low = aminmax_extremes(x, dim)
    assert same(high, ref_high) and same(low, ref_low)
    # the monitor's tests on them agree: silent (high <= 0) and flat (high == low)
    assert torch.equal(high <= 0, ref_high <= 0)
    assert torch.equal(high == low, ref_high == ref_low)


@pytest.mark.parametrize(
    "shape",
    [(4, 3, 1, 1), (4, 3, 2, 5), (2, 3, 12, 12), (4, 3, 1), (4, 3, 200), (5, 3)],
    ids=["one-position", "batch-first", "trailing-first", "1d-one", "1d-long", "linear"],
)
def test_channel_extremes_every_reduction_order(shape: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    x = torch.randn(shape)
    x[0, 1] = math.nan  # NaN propagates in every order
    dims = tuple(d for d in range(x.dim()) if d != 1)
    high, low = channel_extremes(x, 1)
    assert same(high, x.amax(dim=dims)) and same(low, x.amin(dim=dims))


class Mixed(nn.Module):
    """Producers with an affine BatchNorm, a non-affine BatchNorm, and none (Linear)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 6, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(6, affine=False)
        self.fc = nn.Linear(6, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores."""
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean(dim=(2, 3)))


def test_padded_scales_match_pad_sequence(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = Mixed()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(model, optimizer, tmp_path, check_every=1, log=False) as monitor:
        train(model, optimizer, monitor, 3)
        with torch.no_grad():
            model.bn1.weight[1] = 0.0
            model.bn1.weight[2] = -2.0
        rows = []
        for name in monitor.producers:
            info = monitor.producer_info[name]
            bn = info.bn_module
            weight = getattr(bn, "weight", None) if bn is not None else None
            if weight is not None:
                rows.append(weight.detach().abs().float())
        for name in monitor.producers:
            info = monitor.producer_info[name]
            bn = info.bn_module
            if bn is None or getattr(bn, "weight", None) is None:
                rows.append(channel_scale(info.module, None))
        expected = torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=math.nan)
        padded = monitor._padded_scales()
        assert padded is not None and padded.shape == expected.shape == (3, 6)
        assert same(padded, expected)
        assert len(monitor._pad_index) == 1  # the index is built once
        monitor._padded_scales()
        assert len(monitor._pad_index) == 1


def reference_norms(model: nn.Module) -> dict[str, float | None]:
    """Per layer, sqrt of the sum of its parameters' squared gradient norms (float64)."""
    out: dict[str, float | None] = {}
    for name, params in parameter_layers(model).items():
        grads = [p.grad for _, p in params if p.grad is not None]
        out[name] = math.sqrt(sum(g.double().pow(2).sum().item() for g in grads)) if grads else None
    return out


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_gradient_norms_with_missing_and_graph_gradients() -> None:
    torch.manual_seed(0)
    model = TinyCNN(detach_second=True)  # block1 gets no gradient at all
    x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))
    model.head.bias.requires_grad_(True)
    F.cross_entropy(model(x), y).backward(create_graph=True)
    norms = GradientNorms(parameter_layers(model))
    values, any_grad = norms.compute()
    assert any_grad
    expected = reference_norms(model)
    assert list(values) == list(expected)
    assert values["block1.0"] is None and values["block1.1"] is None
    for name, value in values.items():
        if expected[name] is None:
            assert value is None
        else:
            assert isinstance(value, float)
            assert math.isclose(value, expected[name], rel_tol=1e-6)
    halved, _ = norms.compute(2.0)
    assert all(
        (a is None and b is None) or math.isclose(a / 2.0, b, rel_tol=1e-12)
        for a, b in zip(values.values(), halved.values(), strict=True)
    )
    model.zero_grad(set_to_none=True)
    values, any_grad = norms.compute()
    assert not any_grad and all(v is None for v in values.values())


class Wide(nn.Module):
    """Layers whose gradients take each path of the norm pass: large float32 and float64
    ones (BLAS dot), small ones, a bfloat16 one and a non-contiguous one (_foreach_norm)."""

    def __init__(self) -> None:
        super().__init__()
        self.big = nn.Linear(256, 128)  # 32768 weights: dot
        self.wide64 = nn.Linear(128, 160).double()  # 20480 float64 weights: dot
        self.small = nn.Linear(160, 4)  # 640 weights: _foreach_norm
        self.low = nn.Linear(4, 4).to(torch.bfloat16)


def test_squared_norm_paths_agree_with_float64_and_survive_under_and_overflow() -> None:
    torch.manual_seed(0)
    model = Wide()
    for p in model.parameters():
        p.grad = torch.randn_like(p)
    model.big.bias.grad = torch.randn(256)[::2]  # a non-contiguous gradient
    norms = GradientNorms(parameter_layers(model))
    values, any_grad = norms.compute()
    assert any_grad
    expected = reference_norms(model)
    for name, value in values.items():
        assert value is not None and math.isclose(value, expected[name], rel_tol=2e-6), name
    # squares that underflow or overflow float32 are taken again in float64
    model.big.weight.grad.fill_(1e-25)
    model.small.weight.grad.fill_(1e20)
    model.big.bias.grad.zero_()
    values, _ = norms.compute()
    assert math.isclose(values["big"], 1e-25 * math.sqrt(128 * 256), rel_tol=1e-5)
    assert math.isclose(values["small"], 1e20 * math.sqrt(4 * 160), rel_tol=1e-6)
    model.small.weight.grad[0, 0] = math.inf
    model.low.weight.grad[0, 0] = math.nan
    values, _ = norms.compute()
    assert values["small"] == math.inf and math.isnan(values["low"])
    model.zero_grad(set_to_none=False)  # really zero: 0, not None
    values, any_grad = norms.compute()
    assert any_grad and all(v == 0.0 for v in values.values())


@given(
    st.lists(
        st.tuples(
            st.sampled_from([1, 7, 100, 20000, 40000]),  # below and above DOT_MIN
            st.sampled_from([torch.float32, torch.float64, torch.bfloat16]),
            st.booleans(),  # a non-contiguous view
        ),
        min_size=1,
        max_size=8,
    )
)
def test_squared_norms_keep_every_value_with_its_gradient(
    specs: list[tuple[int, torch.dtype, bool]],
) -> None:
    from trainrecord.monitor.gradients import squared_norms

    torch.manual_seed(len(specs))
    grads = []
    for size, dtype, strided in specs:
        base = torch.randn(size * (2 if strided else 1)).to(dtype)
        grads.append(base[::2] if strided else base)
    values, order = squared_norms(grads)
    assert sorted(order) == list(range(len(grads)))  # each gradient exactly once
    for value, index in zip(values.tolist(), order, strict=True):
        expected = grads[index].double().pow(2).sum().item()
        assert math.isclose(value, expected, rel_tol=1e-4), (index, specs[index])


def test_to_host_reads_every_part_back_in_place_of_it() -> None:
    from trainrecord.monitor.monitor import to_host

    parts = [
        None,
        torch.tensor([1.5]),
        torch.tensor([1, 2, 3], dtype=torch.float64),
        None,
        torch.arange(6, dtype=torch.float32).reshape(2, 3),
    ]
    host = to_host(parts)
    assert host[0] is None and host[3] is None
    assert host[1].tolist() == [1.5] and host[2].tolist() == [1.0, 2.0, 3.0]
    assert host[4].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # flattened
    assert to_host([None, None]) == [None, None]


class RowSink:
    """A user sink that keeps the metrics rows it is given."""

    name = "rows"

    def __init__(self) -> None:
        self.rows: list[dict[str, object]] = []

    def event(self, line: dict[str, object]) -> None:
        """Events are not kept."""

    def metrics(self, row: dict[str, object]) -> None:
        """Keep the row."""
        self.rows.append(row)


def test_metrics_rows_reach_sinks_that_take_them_and_skip_the_others(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    sink = RowSink()
    seen: list[dict[str, object]] = []
    with Monitor(
        model, optimizer, tmp_path / "a", check_every=2, sinks=[sink], callback=seen.append
    ) as monitor:
        assert monitor._sinks._wants_metrics
        train(model, optimizer, monitor, 6)
    assert [r["step"] for r in sink.rows] == [0, 2, 4]
    assert [r["event"] for r in seen][:3] == ["run_start", "structure", "manifest"]
    with Monitor(model, optimizer, tmp_path / "b", callback=seen.append) as quiet:
        assert not quiet._sinks._wants_metrics  # logging and callback sinks: rows not queued


class Bag(nn.Module):
    """A bag of embeddings with sparse gradients, then a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(50, 8, sparse=True)
        self.fc = nn.Linear(8, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.fc(self.emb(tokens).mean(1))


def test_a_sparse_gradient_is_measured_by_its_values(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = Bag()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tokens = torch.tensor([[1, 1, 1, 7], [7, 2, 1, 9]])  # repeated rows: an uncoalesced gradient
    expected = []
    with Monitor(model, optimizer, tmp_path / "run", check_every=1) as monitor:
        for _ in range(3):
            loss = F.cross_entropy(model(tokens), torch.tensor([0, 2]))
            loss.backward()
            assert model.emb.weight.grad.is_sparse
            expected.append(model.emb.weight.grad.to_dense().double().norm().item())
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert [row["grad"]["emb"] for row in rows] == pytest.approx(expected, rel=1e-6)
