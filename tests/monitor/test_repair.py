"""Repair: function-preserving at the moment it happens, optimizer state reset, trains on;
certificates that hold: certified channels stay dead however long training goes on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.parametrizations import weight_norm

from tests.monitor.conftest import TinyCNN, TinyMLP, batches, events, metrics, read_run, train
from tests.monitor.test_events import sgd, zero_block2
from trainrecord.monitor import Monitor


def test_repair_of_certified_channels_leaves_outputs_unchanged(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    probe = batches(1, batch=16, seed=9)[0][0]
    with Monitor(model, optimizer, run_dir, check_every=2, repair=True) as monitor:
        train(model, optimizer, monitor, 4)
        zero_block2(model, optimizer)
        x, y = batches(1, seed=5)[0]
        F.cross_entropy(model(x), y).backward()
        with torch.no_grad():
            before_train = model(probe)
            model.eval()
            before_eval = model(probe)
            model.train()
        conv2_before = model.conv2.weight.detach().clone()
        monitor.step()  # step 4 is a check: certify and repair
        assert not torch.equal(conv2_before, model.conv2.weight)  # the repair happened
        with torch.no_grad():
            after_train = model(probe)
            model.eval()
            after_eval = model(probe)
            model.train()
        optimizer.step()
        optimizer.zero_grad()
    torch.testing.assert_close(after_train, before_train, rtol=0, atol=1e-6)
    torch.testing.assert_close(after_eval, before_eval, rtol=0, atol=1e-6)
    repair = events(read_run(run_dir), "repair")
    assert [(r["step"], r["layer"], r["count"]) for r in repair] == [(4, "conv2", 8)]


def test_silent_channels_without_batchnorm_are_repaired_after_patience_with_adam(
    run_dir: Path,
) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with torch.no_grad():
        model.fc1.bias[:4] = -100.0  # four hidden units never fire: silent, not certifiable
    probe = batches(1, batch=16, seed=9)[0][0]
    outputs = []
    with Monitor(
        model,
        optimizer,
        run_dir,
        check_every=2,
        repair=True,
        repair_patience=2,
        repair_min_values=64,  # two checks of 32 samples
        silent_min_values=64,
    ) as monitor:
        for step, (x, y) in enumerate(batches(12)):
            F.cross_entropy(model(x), y).backward()
            if step == 2:
                with torch.no_grad():
                    outputs.append(model(probe))
            monitor.step(F.cross_entropy(model(x), y).detach())
            if step == 2:
                with torch.no_grad():
                    outputs.append(model(probe))
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    channels = events(lines, "channels")[0]
    assert channels["layer"] == "fc1" and channels["observed"] == [0, 1, 2, 3]
    assert channels["n_certified"] == 0 and channels["level"] == "some"
    repair = events(lines, "repair")
    assert [(r["step"], r["channels"]) for r in repair] == [(2, [0, 1, 2, 3])]
    torch.testing.assert_close(outputs[1], outputs[0], rtol=0, atol=1e-6)  # ReDo-style
    # Adam's exp_avg and exp_avg_sq of fc1.weight, fc1.bias and fc2.weight
    assert repair[0]["optimizer_slices_reset"] == 6
    assert "fc2 zeroed" in repair[0]["method"]
    assert repair[0]["rng"] == "global torch RNG"
    rows = metrics(run_dir)
    assert rows[1]["stuck"]["fc1"] == [0, 0, 4, 0]
    assert rows[-1]["stuck"]["fc1"] == [0, 0, 0, 0]  # the units fire again
    assert [c["layer"] for c in events(lines, "channels_cleared")] == ["fc1"]


def test_certified_channels_stay_dead_through_training(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    with torch.no_grad():  # gamma 0 and beta <= 0 on three channels of bn2, fresh optimizer
        model.bn2.weight[:3] = 0.0
        model.bn2.bias[:3] = torch.tensor([-0.5, -0.01, 0.0])
    seen: list[torch.Tensor] = []
    handle = model.relu2.register_forward_hook(lambda m, a, out: seen.append(out.detach()))
    with Monitor(model, optimizer, run_dir, check_every=5) as monitor:
        train(model, optimizer, monitor, 60)
    handle.remove()
    lines = read_run(run_dir)
    certificate = events(lines, "certificate")
    assert len(certificate) == 1 and certificate[0]["channels"] == [0, 1, 2]
    assert any("weight decay" in a for a in certificate[0]["assumes"])
    for out in seen:  # what the certificate claims: zero for every input, at every step
        assert torch.count_nonzero(out[:, :3]) == 0
    assert torch.count_nonzero(seen[-1][:, 3:]) > 0


def test_linear_units_with_zero_weights_and_negative_bias_are_certified(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=1e-3)
    with torch.no_grad():
        model.fc1.weight[:3] = 0.0
        model.fc1.bias[:3] = torch.tensor([-0.1, -2.0, 0.0])
    seen: list[torch.Tensor] = []
    handle = model.relu.register_forward_hook(lambda m, a, out: seen.append(out.detach()))
    with Monitor(model, optimizer, run_dir, check_every=4) as monitor:
        train(model, optimizer, monitor, 40)
    handle.remove()
    lines = read_run(run_dir)
    [certificate] = events(lines, "certificate")
    assert certificate["layer"] == "fc1" and certificate["batchnorm"] is None
    assert certificate["channels"] == [0, 1, 2]
    assert "all-zero incoming weights and bias <= 0" in certificate["statement"]
    assert any("lr x weight_decay" in a for a in certificate["assumes"])
    assert all(torch.count_nonzero(out[:, :3]) == 0 for out in seen)
    assert [r["stuck"]["fc1"][0] for r in metrics(run_dir)] == [3] * 10
    assert not events(lines, "certificate_refused")


@pytest.mark.parametrize(
    ("lr", "weight_decay", "momentum", "certified"),
    [
        (0.5, 2.0, 0.0, False),  # lr x weight_decay exactly 1: not below the limit
        (0.5, 1.5, 0.0, True),
        (0.5, 0.5, 0.25, False),  # exactly (1 - sqrt(0.25))^2 = 0.25
        (0.5, 0.25, 0.25, True),
    ],
)
def test_weight_decay_at_the_limit_is_refused(
    run_dir: Path, lr: float, weight_decay: float, momentum: float, certified: bool
) -> None:
    """spec/README.md: SGD is certified when lr x weight_decay is below (1 - sqrt(momentum))^2
    (1 without momentum); at the limit exactly it is refused."""
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(
        model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay
    )
    with torch.no_grad():
        model.fc1.weight[:3] = 0.0
        model.fc1.bias[:3] = -0.5
    with Monitor(model, optimizer, run_dir, check_every=4) as monitor:
        train(model, optimizer, monitor, 1)
    lines = read_run(run_dir)
    if certified:
        [certificate] = events(lines, "certificate")
        assert certificate["layer"] == "fc1" and certificate["channels"] == [0, 1, 2]
        assert not events(lines, "certificate_refused")
        return
    [refused] = events(lines, "certificate_refused")
    assert refused["layer"] == "fc1" and refused["step"] == 0
    assert f"lr x weight_decay = {lr * weight_decay:.3g} is not below" in refused["reason"]
    assert not events(lines, "certificate")


def test_momentum_built_by_weight_decay_refuses_rather_than_guesses(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
    with torch.no_grad():
        model.fc1.weight[:3] = 0.0
        model.fc1.bias[:3] = -0.5
    with Monitor(model, optimizer, run_dir, check_every=4, silent_min_values=1) as monitor:
        train(model, optimizer, monitor, 12)
    lines = read_run(run_dir)
    assert [c["step"] for c in events(lines, "certificate")] == [0]  # no state yet at step 0
    [refused] = events(lines, "certificate_refused")
    assert refused["step"] == 4 and "momentum_buffer" in refused["reason"]
    # the channels are still reported, as silent: observed, no longer proved
    assert [r["stuck"]["fc1"] for r in metrics(run_dir)][1:] == [[0, 0, 3, 0]] * 2


def test_a_unit_silent_on_small_batches_is_repaired_only_after_enough_values(
    run_dir: Path,
) -> None:
    # A unit that fires on about 2 % of samples is silent on most batches of 8: before,
    # two silent checks in a row re-initialised it (a user probe: 749 live units wiped in
    # 600 steps, accuracy 0.752 -> 0.711). Now a silent unit is repaired once its silent
    # checks in a row (at least repair_patience) have seen repair_min_values values.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[1.0, 0, 0, 0], [0.01, 0, 0, 0], [0, 1.0, 0, 0]]))
        model[0].bias.copy_(torch.tensor([-2.0, -100.0, 0.0]))  # rare, dead, alive
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # the units stay as they are
    g = torch.Generator().manual_seed(0)
    with Monitor(model, optimizer, run_dir, check_every=1, repair=True, repair_seed=0) as monitor:
        for _ in range(140):
            x, y = torch.randn(8, 4, generator=g), torch.randint(0, 2, (8,), generator=g)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    assert events(lines, "manifest")[0]["repair"]["min_values"] == 1024
    repairs = [(r["step"], r["layer"], r["channels"]) for r in events(lines, "repair")]
    assert repairs == [(127, "0", [1])]  # 128 checks x 8 samples; the rare unit never
    silent = [r["step"] for r in metrics(run_dir) if r["stuck"]["0"][2] >= 1]
    # the dead unit counts as silent once it showed silent_min_values (256) values: 32
    # checks of 8 samples; the rare unit never did (a silent row holds only the dead one)
    assert silent == list(range(31, 128))
    assert {r["stuck"]["0"][2] for r in metrics(run_dir)} == {0, 1}


def test_a_weight_normed_layer_shows_its_relu_and_is_never_repaired(run_dir: Path) -> None:
    torch.manual_seed(0)
    fc1 = nn.Linear(192, 16)
    model = nn.Sequential(nn.Flatten(), weight_norm(fc1), nn.ReLU(), nn.Linear(16, 4))
    with torch.no_grad():
        model[1].bias[:4] = -100.0  # four channels dead from the start
    optimizer = torch.optim.SGD(model.parameters(), 0.05)
    with Monitor(
        model, optimizer, run_dir, check_every=2, repair=True, silent_min_values=64
    ) as monitor:
        train(model, optimizer, monitor, 6)
    lines = read_run(run_dir)
    manifest = events(lines, "manifest")[0]
    producer = {p["layer"]: p for p in manifest["producers"]}["1"]
    assert producer["relu"] == "2" and not producer["certifiable"]
    assert "computed from other parameters" in producer["reason"]
    assert "computed" in manifest["repair"]["not_repaired"]["1"]
    assert "1" not in manifest["repair"]["function_preserving"]  # (it was, contradicting)
    assert metrics(run_dir)[-1]["stuck"]["1"][2] == 4  # seen silent
    assert not events(lines, "repair")  # a repair would be undone at the next forward


class TiedLM(nn.Module):
    """Embedding, a ReLU layer, and an output layer tied to the embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        self.fc = nn.Linear(16, 16)
        self.out = nn.Linear(16, 20, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.fc(self.emb(tokens))))


def test_a_repair_never_zeroes_a_tied_consumer(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TiedLM()
    optimizer = torch.optim.SGD(model.parameters(), 0.1)
    with torch.no_grad():
        model.fc.weight[:4] = 0
        model.fc.bias[:4] = -1.0  # four certifiable dead channels
    embedding = model.emb.weight.detach().clone()
    tokens = torch.randint(0, 20, (8, 6), generator=torch.Generator().manual_seed(1))
    with Monitor(model, optimizer, run_dir, check_every=1, repair=True, repair_seed=0) as monitor:
        loss = F.cross_entropy(model(tokens).reshape(-1, 20), tokens.reshape(-1))
        loss.backward()
        monitor.step(loss)
    lines = read_run(run_dir)
    assert [r["layer"] for r in events(lines, "repair")] == ["fc"]
    assert "consumer of the channels is unknown" in events(lines, "repair")[0]["method"]
    assert "fc" not in events(lines, "manifest")[0]["repair"]["function_preserving"]
    # the manifest says which layers share a weight (their alarms would come in pairs)
    [note] = [n for n in events(lines, "manifest")[0]["notes"] if n.startswith("layers sharing")]
    assert "emb and out:" in note
    assert torch.equal(model.emb.weight.detach(), embedding)  # the tied matrix is untouched


class ExampleNet(nn.Module):
    """The shape of PyTorch's MNIST example: functional ReLUs and pooling, a flatten of
    4x4 maps into a Linear, dropout modules (on 3x8x8 images)."""

    def __init__(self, head_mean: bool = False) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(8 if head_mean else 8 * 4 * 4, 16)
        self.dropout2 = nn.Dropout(0.5)
        self.fc2 = nn.Linear(16, 4)
        self.head_mean = head_mean

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Log-probabilities."""
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        if self.head_mean:
            x = x.mean((-2, -1))  # a global average over the positions
        else:
            x = torch.flatten(self.dropout1(F.max_pool2d(x, 2)), 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


@pytest.mark.parametrize(
    ("head_mean", "channels_last"),
    [(False, False), (True, False), (False, True)],
    ids=["flatten", "mean", "flatten-channels-last"],
)
def test_a_repair_through_functional_pooling_and_a_flatten_is_function_preserving(
    run_dir: Path, head_mean: bool, channels_last: bool
) -> None:
    torch.manual_seed(0)
    model = ExampleNet(head_mean)
    if channels_last:  # the flatten then copies (a reshape), in the logical order
        model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    with torch.no_grad():
        model.conv2.bias[[1, 5]] = -100.0  # two channels never fire: silent
    probe = batches(1, batch=16, seed=9)[0][0]
    form = torch.channels_last if channels_last else torch.contiguous_format
    probe = probe.to(memory_format=form)
    outputs = []
    with Monitor(model, optimizer, run_dir, check_every=2, repair=True) as monitor:
        for step, (x, y) in enumerate(batches(8)):
            F.nll_loss(model(x.to(memory_format=form)), y).backward()
            if step == 2:
                model.eval()  # no dropout: the same function twice
                with torch.no_grad():
                    outputs.append(model(probe))
                model.train()
            monitor.step()
            if step == 2:
                model.eval()
                with torch.no_grad():
                    outputs.append(model(probe))
                model.train()
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    producers = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}
    assert producers["conv1"]["consumer"] == "conv2"
    assert producers["conv2"]["consumer"] == "fc1"  # before: null (F.max_pool2d, flatten)
    assert producers["fc1"]["consumer"] == "fc2"
    repair = [r for r in events(lines, "repair") if r["layer"] == "conv2"]
    assert [(r["step"], r["channels"]) for r in repair] == [(2, [1, 5])]
    assert "fc1 zeroed" in repair[0]["method"]
    assert ("16 input columns per channel" in repair[0]["method"]) == (not head_mean)
    torch.testing.assert_close(outputs[1], outputs[0], rtol=0, atol=1e-6)
    # Adam's two moments of conv2.weight, conv2.bias and fc1.weight
    assert repair[0]["optimizer_slices_reset"] == 6


class NotChannels(nn.Module):
    """Paths that look alike but do not carry conv1's channels whole into the consumer."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 if kind in ("sum_channels", "last_axis") else 8 * 8 * 8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores."""
        x = F.relu(self.conv1(x))
        if self.kind == "permute":  # channels moved before the flatten
            x = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)
        elif self.kind == "sum_channels":  # positions and channels mixed: (N, 8, 8) summed
            x = x.sum(1).mean(1)
        elif self.kind == "last_axis":  # a Linear over the maps' last axis (8 wide)
            x = x.mean((1, 2))
        elif self.kind == "residual":  # something added: a zeroed column changes the sum
            x = torch.flatten(x + 1.0, 1)
        return self.fc(x)


@pytest.mark.parametrize("kind", ["permute", "sum_channels", "last_axis", "residual"])
def test_paths_that_mix_channels_give_no_consumer(run_dir: Path, kind: str) -> None:
    torch.manual_seed(0)
    lines = one_step_run(NotChannels(kind), run_dir)
    producers = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}
    assert producers["conv1"]["consumer"] is None


class SecondConsumer(nn.Module):
    """fc1's units reach the output through the ReLU and, unrectified, through ``skip``."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.fc1 = nn.Linear(3 * 8 * 8, 16)
        self.bn = nn.BatchNorm1d(16)
        self.fc2 = nn.Linear(16, 4)
        self.skip = nn.Linear(16, 4)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores."""
        h = self.fc1(x.flatten(1))
        if self.kind == "relu_input":  # the ReLU's input also feeds skip
            return self.fc2(F.relu(h)) + self.skip(h)
        if self.kind == "relu_module_input":  # the same with a ReLU module
            return self.fc2(self.act(h)) + self.skip(h)
        return self.fc2(F.relu(self.bn(h))) + self.skip(h)  # the producer's output too


@pytest.mark.parametrize("kind", ["relu_input", "relu_module_input", "producer_output"])
def test_a_unit_alive_through_a_second_path_gets_no_consumer(run_dir: Path, kind: str) -> None:
    # Before: fc2 was named the consumer, the repair said "the function is unchanged" and
    # the outputs changed (by 1.67 at bias -6; 9380 at bias -50, then a non-finite loss).
    torch.manual_seed(0)
    model = SecondConsumer(kind)
    with torch.no_grad():
        model.fc1.bias[:4] = -60.0  # four units silent after the ReLU, alive through skip
        model.bn.bias[:4] = -60.0
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = batches(1, seed=1)[0]
    changed = []
    with Monitor(
        model,
        optimizer,
        run_dir,
        check_every=1,
        repair=True,
        repair_min_values=1,
        silent_min_values=1,
    ) as monitor:
        for step in range(3):
            F.cross_entropy(model(x), y).backward()
            with torch.no_grad():
                before = model(x)
            monitor.step()
            with torch.no_grad():
                if not torch.equal(model(x), before):
                    changed.append(step)
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    manifest = events(lines, "manifest")[0]
    producers = {p["layer"]: p for p in manifest["producers"]}
    assert producers["fc1"]["consumer"] is None
    assert "fc1" not in manifest["repair"]["function_preserving"]
    repairs = events(lines, "repair")
    assert repairs and all("function changes" in r["method"] for r in repairs)
    assert changed == [r["step"] for r in repairs]  # as the record says: the function changed


def one_step_run(model: nn.Module, run_dir: Path) -> list[dict[str, object]]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with Monitor(model, optimizer, run_dir, check_every=1, repair=True) as monitor:
        x, y = batches(1, seed=1)[0]
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        monitor.step(loss)
    return read_run(run_dir)


def test_a_dropout_that_hands_its_input_on_is_no_consumer(run_dir: Path) -> None:
    """``nn.Dropout(p=0.0)`` (a common config value) returns its input itself: the
    Linear after it is still the consumer of the units before it."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Flatten(), nn.Linear(3 * 8 * 8, 16), nn.ReLU(), nn.Dropout(0.0), nn.Linear(16, 4)
    )
    lines = one_step_run(model, run_dir)
    producers = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}
    assert producers["1"]["consumer"] == "4"


class Generator(nn.Module):
    """A DCGAN-style generator: transposed convolutions, BatchNorm and ReLU (4x4 -> 8x8)."""

    def __init__(self) -> None:
        super().__init__()
        self.up1 = nn.ConvTranspose2d(8, 16, 4, bias=False)  # 1x1 -> 4x4
        self.bn1 = nn.BatchNorm2d(16)
        self.relu1 = nn.ReLU()
        self.up2 = nn.ConvTranspose2d(16, 3, 4, stride=2, padding=1)  # 4x4 -> 8x8

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Images from codes (N, 8, 1, 1)."""
        return torch.tanh(self.up2(self.relu1(self.bn1(self.up1(z)))))


def test_transposed_convolutions_are_producers_certified_and_repaired_in_place(
    run_dir: Path,
) -> None:
    """A transposed convolution's weight is (in, out, ...): its output channels are its
    weight's second axis, and a transposed consumer's input channels its first."""
    torch.manual_seed(0)
    model = Generator()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1)
    codes = [torch.randn(16, 8, 1, 1, generator=g) for _ in range(6)]
    target = torch.rand(16, 3, 8, 8, generator=g) * 2 - 1
    probe = torch.randn(4, 8, 1, 1, generator=g)
    outputs = []
    with Monitor(model, optimizer, run_dir, check_every=2, repair=True) as monitor:
        for step, z in enumerate(codes):
            if step == 4:
                with torch.no_grad():  # as a bad restore would leave them
                    model.bn1.weight[[3, 9]] = 0.0
                    model.bn1.bias[[3, 9]] = -1.0
                    for p in (model.bn1.weight, model.bn1.bias):
                        for value in optimizer.state[p].values():
                            if value.shape == p.shape:
                                value[[3, 9]] = 0.0
            F.mse_loss(model(z), target).backward()
            if step == 4:
                with torch.no_grad():
                    outputs.append(model(probe))
            monitor.step()
            if step == 4:
                with torch.no_grad():
                    outputs.append(model(probe))
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    producers = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}
    assert set(producers) == {"up1", "up2"}  # before: no producer at all
    assert (producers["up1"]["batchnorm"], producers["up1"]["consumer"]) == ("bn1", "up2")
    assert [(c["layer"], c["channels"]) for c in events(lines, "certificate")] == [("up1", [3, 9])]
    repair = events(lines, "repair")
    assert [(r["step"], r["layer"], r["channels"]) for r in repair] == [(4, "up1", [3, 9])]
    assert "up2 zeroed" in repair[0]["method"]
    torch.testing.assert_close(outputs[1], outputs[0], rtol=0, atol=1e-6)
    # the new incoming weights are up1.weight[:, c]; up2's input channels are its weight[c]
    assert bool(model.up1.weight[:, 3].ne(0).any())
    assert model.up2.weight.shape == (16, 3, 4, 4)
    rows = metrics(run_dir)
    assert rows[0]["stuck"]["up1"] == [0, 0, 0, 0] and len(rows[0]["stuck"]) == 2


class WrappedOptimizer(torch.optim.Optimizer):
    """A framework's optimizer wrapper, as accelerate's AcceleratedOptimizer (the Hugging
    Face Trainer's) and Lightning's LightningOptimizer are: an Optimizer holding the real one."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer

    @property
    def state(self):  # type: ignore[override]
        return self.optimizer.state

    @property
    def param_groups(self):  # type: ignore[override]
        return self.optimizer.param_groups

    def step(self, closure=None):  # type: ignore[override]
        return self.optimizer.step(closure)

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none)


def dead_channels_run(optimizer_of: Callable[[nn.Module], torch.optim.Optimizer], run_dir: Path):
    torch.manual_seed(0)
    model = TinyCNN()
    with torch.no_grad():
        model.bn2.weight[:4] = 0.0
        model.bn2.bias[:4] = -0.1
    optimizer = optimizer_of(model)
    with Monitor(model, optimizer, run_dir, check_every=1) as monitor:
        train(model, optimizer, monitor, 3)
    return read_run(run_dir)


def test_an_optimizer_in_a_framework_wrapper_is_known_by_the_one_inside(run_dir: Path) -> None:
    # Before: "optimizer AcceleratedOptimizer (LightningSGD) is not one whose update ... is
    # known": under the HF Trainer and Lightning no channel was ever certified.
    lines = dead_channels_run(
        lambda m: WrappedOptimizer(torch.optim.SGD(m.parameters(), lr=0.01)), run_dir
    )
    assert lines[0]["optimizer"] == "SGD"
    assert events(lines, "certificate_refused") == []
    assert [c["channels"] for c in events(lines, "certificate")] == [[0, 1, 2, 3]]


def test_lightnings_optimizer_is_known_by_the_one_inside(run_dir: Path) -> None:
    lightning = pytest.importorskip("lightning.pytorch.core.optimizer")
    lines = dead_channels_run(
        lambda m: lightning.LightningOptimizer(torch.optim.SGD(m.parameters(), lr=0.01)),
        run_dir,
    )
    assert [c["channels"] for c in events(lines, "certificate")] == [[0, 1, 2, 3]]


@pytest.mark.parametrize(
    ("make", "entry", "fresh"),
    [
        (lambda ps: torch.optim.Rprop(ps, lr=0.01), "step_size", 0.01),
        (lambda ps: torch.optim.Adagrad(ps, lr=0.01, initial_accumulator_value=0.5), "sum", 0.5),
    ],
    ids=["rprop", "adagrad"],
)
def test_a_repair_resets_state_to_what_a_new_parameter_gets_not_to_zero(
    run_dir: Path, make: Callable[..., torch.optim.Optimizer], entry: str, fresh: float
) -> None:
    # Rprop's step sizes start at lr: zeroed by a repair, the repaired units and the
    # outgoing weights ReDo zeroed never moved again (a repair that froze what it mended)
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = make(model.parameters())
    with torch.no_grad():
        model.fc1.bias[:4] = -100.0  # four hidden units never fire: silent
    options = {"repair_patience": 2, "repair_min_values": 64, "silent_min_values": 64}
    with Monitor(model, optimizer, run_dir, check_every=2, repair=True, **options) as monitor:
        for step, (x, y) in enumerate(batches(8)):
            F.cross_entropy(model(x), y).backward()
            monitor.step(F.cross_entropy(model(x), y).detach())
            if step == 2:  # the repair's check
                state = optimizer.state[model.fc2.weight][entry]
                assert torch.equal(state[:, :4], torch.full_like(state[:, :4], fresh))
                assert torch.equal(model.fc2.weight[:, :4], torch.zeros_like(state[:, :4]))
            optimizer.step()
            optimizer.zero_grad()
    assert [r["step"] for r in events(read_run(run_dir), "repair")] == [2]
    assert (model.fc2.weight[:, :4] != 0).all()  # the mended units' weights train again
