"""A forward pass that raises part-way on a check step, caught by the loop, or one whose
loss is never backpropagated.

A bad batch, or an out-of-memory error that the loop catches and then retries or skips,
or Ctrl+C in a notebook (a KeyboardInterrupt, for which torch calls no always-called
hook): the modules that ran before the exception were seen by the check's hooks. That aborted
pass must not shape the learnt structure (its nodes are in no loss graph, so each of its
ReLUs looked like the second consumer of its layer, and the producers lost their
certificate and repair for the whole run). Its channel statistics must not enter the check
either (a retried batch counted its values twice, a corrupt one hid silent units), nor
those of a pass whose output no backward reached (a loss discarded). Each
test trains a real model, once with the failing attempts and once without, and the two
records must say the same.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

from tests.monitor.conftest import TinyCNN, TinyMLP, batches, events, metrics, read_run
from tests.monitor.test_events import sgd, zero_block2
from trainrecord.monitor import Monitor


class OutOfMemory(RuntimeError):
    """What the flaky models raise (as CUDA does: a RuntimeError)."""


class Flaky(TinyCNN):
    """TinyCNN whose forward pass raises after block 2 (block1, conv2, bn2 and relu2 have
    run) while ``fails`` > 0; ``checkpointed``: both blocks inside one non-reentrant
    activation checkpoint (the exception is then raised inside it)."""

    def __init__(self, checkpointed: bool = False) -> None:
        super().__init__()
        self.fails = 0
        self.error: type[BaseException] = OutOfMemory
        self.checkpointed = checkpointed

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu2(self.bn2(self.conv2(self.block1(x))))
        if self.fails > 0:
            self.fails -= 1
            raise self.error("CUDA out of memory (simulated)")
        return y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = checkpoint(self.trunk, x, use_reentrant=False) if self.checkpointed else self.trunk(x)
        return self.head(self.flatten(self.pool(y)))


def forward(model: Flaky, x: torch.Tensor, y: torch.Tensor, retry: bool) -> torch.Tensor:
    """The loss, retried once after an out-of-memory error when ``retry``."""
    try:
        return F.cross_entropy(model(x), y)
    except (OutOfMemory, KeyboardInterrupt):
        if not retry:
            raise
        return F.cross_entropy(model(x), y)


def flaky_run(
    run_dir: Path, loop: str, fail_at: set[int], error: type[BaseException] = OutOfMemory
) -> list[dict[str, Any]]:
    """The zeroed-block scenario (block 2 zeroed at step 10: certificate, repair) with one
    forward pass raising at each step of ``fail_at`` (0, where the structure is learnt, and 12: check steps; 5: not),
    caught by the loop in the way ``loop`` names."""
    torch.manual_seed(0)
    model = Flaky(checkpointed=loop == "checkpointed, retried")
    model.error = error
    optimizer = sgd(model)
    data = batches(20, batch=16)
    bad = batches(20, batch=16, seed=1)
    with Monitor(model, optimizer, run_dir, check_every=2, warmup=3, repair=True) as monitor:
        for step, (x, y) in enumerate(data):
            if step == 10:
                zero_block2(model, optimizer)
            fails = step in fail_at
            if loop == "bad batch skipped" and fails:
                model.fails = 1
                try:  # the loader's bad batch fails; the loop goes on with the next one
                    F.cross_entropy(model(bad[step][0]), bad[step][1]).backward()
                except (OutOfMemory, KeyboardInterrupt):
                    pass
                else:
                    raise AssertionError("the bad batch did not fail")
            elif loop == "micro-batches, the second retried":
                half = len(x) // 2
                (forward(model, x[:half], y[:half], retry=True) / 2).backward()
                model.fails = int(fails)
            elif loop == "called twice, the second retried":
                first = model(x[::2])
                model.fails = int(fails)
                second = forward(model, x[1::2], y[1::2], retry=True)
                (F.cross_entropy(first, y[::2]) + second).backward()
            elif loop != "bad batch skipped":
                model.fails = int(fails)
            if loop == "micro-batches, the second retried":
                (forward(model, x[half:], y[half:], retry=True) / 2).backward()
            elif loop != "called twice, the second retried":
                forward(model, x, y, retry=True).backward()
            assert model.fails == 0
            monitor.step()
            optimizer.step()
            optimizer.zero_grad()
    return read_run(run_dir)


def said(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every line without its time, its chain fields and the run's name."""
    drop = {"time", "prev", "hash", "metrics_sha256", "name"}
    return [{k: v for k, v in line.items() if k not in drop} for line in lines]


LOOPS = [
    "bad batch skipped",
    "retried",
    "micro-batches, the second retried",
    "called twice, the second retried",
    "checkpointed, retried",
]


@pytest.mark.parametrize(
    ("loop", "error"),
    [
        *[(loop, OutOfMemory) for loop in LOOPS],
        # Ctrl+C in a notebook: torch calls no always-called hook (before: conv2 certifiable
        # False, consumer None, as for an exception before 8998475)
        ("bad batch skipped", KeyboardInterrupt),
        ("retried", KeyboardInterrupt),
    ],
)
def test_an_aborted_forward_pass_leaves_the_record_as_without_it(
    tmp_path: Path, loop: str, error: type[BaseException]
) -> None:
    control = flaky_run(tmp_path / "control", loop, set())
    lines = flaky_run(tmp_path / "flaky", loop, {0, 5, 12}, error)

    # the check at step 0 learnt the structure with an aborted pass: it is still the model's
    producers = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}
    assert (producers["conv2"]["certifiable"], producers["conv2"]["consumer"]) == (True, "head")
    assert (producers["block1.0"]["certifiable"], producers["block1.0"]["consumer"]) == (
        True,
        "conv2",
    )
    assert [(c["step"], c["layer"]) for c in events(lines, "certificate")] == [(10, "conv2")]
    assert [r["layer"] for r in events(lines, "repair")] == ["conv2"]
    assert not events(lines, "certificate_refused")
    # and every line, every row, is the one the run without the failing attempts wrote
    assert said(lines) == said(control)
    rows = metrics(tmp_path / "flaky")
    assert rows == metrics(tmp_path / "control")


class FlakyMLP(TinyMLP):
    """TinyMLP whose forward pass raises ``error`` after fc1 while ``fails`` > 0."""

    fails = 0
    error: type[BaseException] = OutOfMemory

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.fc1(self.flatten(x))
        if self.fails > 0:
            self.fails -= 1
            raise self.error("CUDA out of memory (simulated)")
        return self.fc2(self.relu(hidden))


def _first_fc1_report(run: Path) -> list[tuple[int, int, list[int]]]:
    """The first ``channels`` event of fc1 in ``run``: step, n_observed, observed."""
    found = [e for e in events(read_run(run), "channels") if e["layer"] == "fc1"]
    return [(e["step"], e["n_observed"], e["observed"]) for e in found[:1]]


@pytest.mark.parametrize(
    ("attempt", "how"),
    [
        ("none", ""),
        ("the same batch", "raised"),
        ("a corrupt batch", "raised"),
        ("the same batch", "Ctrl+C"),
        ("a corrupt batch", "Ctrl+C"),
        ("the same batch", "never backpropagated"),
        ("a corrupt batch", "never backpropagated"),
    ],
)
def test_an_aborted_forward_pass_adds_nothing_to_the_channel_statistics(
    tmp_path: Path, attempt: str, how: str
) -> None:
    """fc1's unit 0 is silent (bias -50): proven after 8 checks of 32 values, as without
    the aborted attempts (the same batch counted twice proved it at step 3; a batch of NaN
    made every unit of fc1 look alive at each check: never). An attempt that raised
    (caught: a bad batch, out of memory; or Ctrl+C, for which torch calls no always-called
    hook), or a pass that finished but whose loss was discarded (before: both counted)."""
    torch.manual_seed(0)
    model = FlakyMLP()
    model.error = KeyboardInterrupt if how == "Ctrl+C" else OutOfMemory
    with torch.no_grad():
        model.fc1.bias[0] = -50.0
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    run = tmp_path / "run"
    with Monitor(model, optimizer, run, check_every=1, silent_min_values=256) as monitor:
        for x, y in batches(12, batch=32):
            if attempt != "none":  # every step is a check step: each has a failing attempt
                model.fails = int(how != "never backpropagated")
                with contextlib.suppress(OutOfMemory, KeyboardInterrupt):
                    other = model(
                        x if attempt == "the same batch" else torch.full_like(x, torch.nan)
                    )
                    F.cross_entropy(other, y).item()  # a loss looked at, never trained on
                assert model.fails == 0
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    assert _first_fc1_report(run) == [(7, 1, [0])]
    assert [row["stuck"]["fc1"] for row in metrics(run)][6:8] == [[0, 0, 0, 0], [0, 0, 1, 0]]


def test_a_loss_on_features_a_hook_captured_counts_the_pass(tmp_path: Path) -> None:
    """The loss is computed from fc1's activations, captured by a forward hook (metric
    learning on a stock classifier: its own output is computed and unused); fc1's unit 0
    is silent (bias -50): proven at step 7, as when the loss is on the output. Before: a
    pass counted only once backward reached the model's output, so no pass counted and
    the silent unit was never found."""
    torch.manual_seed(0)
    model = TinyMLP()
    with torch.no_grad():
        model.fc1.bias[0] = -50.0
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    captured: list[torch.Tensor] = []
    model.relu.register_forward_hook(lambda module, args, out: captured.append(out))
    run = tmp_path / "run"
    with Monitor(model, optimizer, run, check_every=1, silent_min_values=256) as monitor:
        for x, y in batches(9, batch=32):
            captured.clear()
            model(x)  # the logits are not used
            features = F.normalize(captured[0], dim=1)
            same = (y[:, None] == y[None]).float()
            loss = (features @ features.t() - same).square().mean()
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    assert _first_fc1_report(run) == [(7, 1, [0])]
