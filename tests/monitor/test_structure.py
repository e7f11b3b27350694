"""Structure learnt from the dataflow: pairs, relu_after, sole consumers, consumers."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

from tests.monitor.conftest import TinyCNN, TinyMLP, batches, events, metrics, read_run, train
from tests.monitor.test_events import sgd, zero_block2
from trainrecord.monitor import Monitor


class Block(nn.Module):
    """A ResNet basic block: one ReLU module used twice, in place, the second after an add."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """relu(bn2(conv2(relu(bn1(conv1(x))))) + x)."""
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + x)


class MiniResNet(nn.Module):
    """Stem, two basic blocks, pooling and a head."""

    def __init__(self, c: int = 4) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True)
        )
        self.layer = nn.Sequential(Block(c), Block(c))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores."""
        return self.fc(torch.flatten(self.pool(self.layer(self.stem(x))), 1))


def one_step(model: nn.Module, run_dir: Path, **kwargs: object) -> list[dict]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with Monitor(model, optimizer, run_dir, check_every=1, **kwargs) as monitor:
        scores = model(torch.randn(8, 3, 8, 8))  # DataParallel: on cuda:0 where a GPU is
        loss = F.cross_entropy(scores, torch.randint(0, 2, (8,), device=scores.device))
        loss.backward()
        monitor.step(loss)
        optimizer.step()
    return read_run(run_dir)


def test_resnet_block_pairs_inplace_relu_and_residual_add(run_dir: Path) -> None:
    torch.manual_seed(0)
    lines = one_step(MiniResNet(), run_dir)
    structure = events(lines, "structure")[0]
    assert structure["pairs"] == {
        "stem.0": "stem.1",
        "layer.0.conv1": "layer.0.bn1",
        "layer.0.conv2": "layer.0.bn2",
        "layer.1.conv1": "layer.1.bn1",
        "layer.1.conv2": "layer.1.bn2",
    }
    # the ReLU after the residual add receives the add's output, not bn2's
    assert structure["relu_after"] == ["stem.1", "layer.0.bn1", "layer.1.bn1"]
    producers = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}
    assert producers["stem.0"]["certifiable"] is True
    assert producers["stem.0"]["consumer"] is None  # its ReLU output also feeds the residual
    assert producers["layer.0.conv1"]["certifiable"] is True
    assert producers["layer.0.conv1"]["consumer"] == "layer.0.conv2"
    assert producers["layer.0.conv2"]["certifiable"] is False
    assert "no ReLU" in producers["layer.0.conv2"]["reason"]
    assert producers["fc"]["certifiable"] is False


def test_model_outputs_are_the_graph_when_no_loss_tensor_is_given(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = MiniResNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with Monitor(model, optimizer, run_dir, check_every=1) as monitor:
        loss = F.cross_entropy(model(torch.randn(8, 3, 8, 8)), torch.randint(0, 2, (8,)))
        loss.backward()
        monitor.step(float(loss.detach()))
    structure = events(read_run(run_dir), "structure")[0]
    assert structure["graph"] == "model outputs"
    assert structure["pairs"]["layer.0.conv1"] == "layer.0.bn1"


def test_ddp_prefix_is_not_in_layer_names_and_fsdp_is_refused(run_dir: Path) -> None:
    from trainrecord.monitor import UnsupportedModel  # where the README's FSDP note sends users
    from trainrecord.monitor.distributed import unwrap

    model = MiniResNet()
    wrapped = nn.DataParallel(model)
    inner, kind, ddp = unwrap(wrapped)
    assert inner is model and kind == "DataParallel" and ddp is None
    lines = one_step(wrapped, run_dir)
    assert all(not name.startswith("module.") for name in lines[0]["layers"])

    class FullyShardedDataParallel(nn.Module):  # what the monitor sees of an FSDP wrapper
        pass

    with pytest.raises(UnsupportedModel, match="FSDP") as refused:
        Monitor(FullyShardedDataParallel(), None, run_dir / "fsdp")
    assert isinstance(refused.value, TypeError)
    assert not (run_dir / "fsdp").exists()


class TokenModel(nn.Module):
    """Embedding, LayerNorm and a Linear-ReLU-Linear on (batch, tokens, features)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.norm = nn.LayerNorm(8)
        self.up = nn.Linear(8, 16)
        self.act = nn.ReLU()
        self.down = nn.Linear(16, 20)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Next-token scores."""
        return self.down(self.act(self.up(self.norm(self.embed(tokens)))))


@pytest.mark.parametrize("producers", [True, False])
def test_token_model_with_and_without_producers(run_dir: Path, producers: bool) -> None:
    torch.manual_seed(0)
    model = TokenModel() if producers else nn.Sequential(nn.Embedding(20, 8), nn.LayerNorm(8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with Monitor(model, optimizer, run_dir, check_every=1) as monitor:
        for _ in range(4):
            tokens = torch.randint(0, 20, (4, 6))
            out = model(tokens)
            loss = (
                F.cross_entropy(out.reshape(-1, 20), tokens.reshape(-1))
                if producers
                else out.square().mean()
            )
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    assert [line["event"] for line in lines] == ["run_start", "structure", "manifest", "run_end"]
    if producers:
        assert events(lines, "structure")[0]["relu_after"] == ["up"]
        rows = [r for r in metrics(run_dir)]
        assert set(rows[0]["stuck"]) == {"up", "down"}
        assert rows[0]["stuck"]["up"] == [0, 0, 0, 0]


class Unbatched(nn.Module):
    """A Conv2d fed one unbatched image (C, H, W): its channels are dimension 0 there."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.act = nn.ReLU()
        self.head = nn.Linear(4 * 6 * 6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores of one image, shaped (1, 2)."""
        return self.head(self.act(self.conv(x)).flatten().unsqueeze(0))


def test_an_unbatched_convolution_is_measured_on_its_channel_axis(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = Unbatched()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with Monitor(model, optimizer, run_dir, check_every=1) as monitor:
        for _ in range(3):
            loss = F.cross_entropy(model(torch.randn(3, 8, 8)), torch.randint(0, 2, (1,)))
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    rows = metrics(run_dir)
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert all(r["stuck"]["conv"] == [0, 0, 0, 0] for r in rows)
    with torch.no_grad():  # channel 2 silent: a bias far below what its weights can reach
        model.conv.bias[2] = -1e3
    # 36 values per channel (6 x 6 positions, one sample) are enough: the channel axis's
    with Monitor(
        model, optimizer, run_dir / "silent", check_every=1, log=False, silent_min_values=36
    ) as monitor:
        loss = F.cross_entropy(model(torch.randn(3, 8, 8)), torch.randint(0, 2, (1,)))
        loss.backward()
        monitor.step(loss)
    assert metrics(run_dir / "silent")[0]["stuck"]["conv"] == [0, 0, 1, 0]


@pytest.mark.parametrize("loss_given", [True, False])
def test_gradient_accumulation_learns_the_structure_of_one_forward_pass(
    run_dir: Path, loss_given: bool
) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    micro = 4  # the check step runs four forward passes before step()
    with Monitor(model, optimizer, run_dir, check_every=2, warmup=3) as monitor:
        for step in range(16):
            if step == 8:
                zero_block2(model, optimizer)
            for x, y in batches(micro, batch=8, seed=step):
                loss = F.cross_entropy(model(x), y) / micro
                loss.backward()
            monitor.step(loss if loss_given else None)
            optimizer.step()
            optimizer.zero_grad()
    lines = read_run(run_dir)
    producers = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}
    # as with one forward pass per step: each ReLU is its layer's only consumer, no layer is
    # "called four times per forward pass"
    assert producers["block1.0"]["certifiable"] and producers["conv2"]["certifiable"]
    assert producers["conv2"]["consumer"] == "head"
    assert not events(lines, "certificate_refused")
    assert [(c["step"], c["layer"]) for c in events(lines, "certificate")] == [(8, "conv2")]


class Scaled(nn.Module):
    """A model that owns parameters itself (as a ViT owns pos_embedding and cls_token)."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = nn.Parameter(torch.zeros(1, 12))
        self.fc = nn.Linear(12, 3)
        self.temperature = nn.Parameter(torch.ones(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x + self.offset) * self.temperature


def test_parameters_the_model_owns_itself_are_layers_of_their_own(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = Scaled()
    x, y = torch.randn(16, 12), torch.randint(0, 3, (16,))
    with Monitor(model, None, run_dir, check_every=1, warmup=0) as monitor:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        expected = {n: p.grad.norm().item() for n, p in model.named_parameters()}
        monitor.step(loss)
        model.zero_grad()
        model.fc(x).sum().backward()  # the model's own parameters get no gradient
        monitor.step()
    lines = read_run(run_dir)
    assert lines[0]["layers"] == ["offset", "temperature", "fc"]
    grads = metrics(run_dir)[0]["grad"]
    assert grads["offset"] == pytest.approx(expected["offset"], rel=1e-6)
    assert grads["temperature"] == pytest.approx(expected["temperature"], rel=1e-6)
    alarms = {a["layer"]: (a["kind"], a["diagnosis"]) for a in events(lines, "alarm")}
    assert alarms == {
        "offset": ("Parameter", "no_gradient"),
        "temperature": ("Parameter", "no_gradient"),
    }


class FunctionalCNN(TinyCNN):
    """TinyCNN with its second ReLU written as a function, in place or not."""

    def __init__(self, inplace: bool = False, second_consumer: bool = False) -> None:
        super().__init__(second_consumer=second_consumer)
        self.inplace = inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn2(self.conv2(self.block1(x)))
        if self.second_consumer:
            return self.head(self.flatten(self.pool(F.relu(y) + 0.1 * y)))
        out = torch.relu_(y) if self.inplace else F.relu(y)
        return self.head(self.flatten(self.pool(out)))


def story(run: list[dict[str, object]]) -> list[tuple[object, ...]]:
    """What a run wrote, line by line: event, step, layer, count."""
    return [(x["event"], x.get("step"), x.get("layer"), x.get("count")) for x in run]


def zeroed_story(run_dir: Path, model: TinyCNN) -> list[dict[str, object]]:
    """The zeroed-block scenario (block 2 zeroed at step 10) on ``model``."""
    optimizer = sgd(model)
    with Monitor(model, optimizer, run_dir, check_every=2, warmup=3, repair=True) as monitor:
        train(model, optimizer, monitor, 10)
        zero_block2(model, optimizer)
        train(model, optimizer, monitor, 10, seed=1)
    return read_run(run_dir)


@pytest.mark.parametrize("inplace", [False, True])
def test_a_functional_relu_is_a_relu_for_the_channel_checks(tmp_path: Path, inplace: bool) -> None:
    torch.manual_seed(0)
    lines = zeroed_story(tmp_path / "functional", FunctionalCNN(inplace=inplace))
    torch.manual_seed(0)
    modules = zeroed_story(tmp_path / "modules", TinyCNN())
    conv2 = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}["conv2"]
    assert (conv2["relu"], conv2["certifiable"], conv2["consumer"]) == ("F.relu", True, "head")
    assert "bn2" not in events(lines, "structure")[0]["relu_after"]  # lists ReLU modules only

    assert story(lines) == story(modules)  # certificate, channels, repair: the same run
    assert [(r["layer"], r["count"]) for r in events(lines, "repair")] == [("conv2", 8)]


def test_a_functional_relu_with_a_second_consumer_is_not_certifiable(run_dir: Path) -> None:
    torch.manual_seed(0)
    lines = zeroed_story(run_dir, FunctionalCNN(second_consumer=True))
    conv2 = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}["conv2"]
    assert conv2["relu"] == "F.relu" and not conv2["certifiable"]
    assert "not the only consumer" in conv2["reason"]
    assert not events(lines, "certificate")


class Attention(nn.Module):
    """Self-attention (whose out_proj is never called as a module) and a ReLU block."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.fc = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.attn(x, x, x)
        return self.head(torch.relu(self.fc(y)).mean(1))


def test_producers_the_hooks_never_see_are_marked_unmeasured(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = Attention()
    with Monitor(model, None, run_dir, check_every=1) as monitor:
        loss = F.cross_entropy(model(torch.randn(4, 5, 8)), torch.tensor([0, 1, 2, 0]))
        loss.backward()
        monitor.step(loss)
    manifest = events(read_run(run_dir), "manifest")[0]
    measured = {p["layer"]: p["measured"] for p in manifest["producers"]}
    assert measured == {"attn.out_proj": False, "fc": True, "head": True}
    assert any("no channel statistics for attn.out_proj" in n for n in manifest["notes"])
    fc = {p["layer"]: p for p in manifest["producers"]}["fc"]
    assert fc["relu"] == "F.relu" and fc["certifiable"]  # torch.relu, consumed by nothing else


def test_a_frozen_batchnorm_in_a_training_model_is_measured(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    with Monitor(model, optimizer, run_dir, check_every=2, warmup=3) as monitor:
        model.bn2.eval()  # frozen statistics, as in fine-tuning; the model itself trains
        train(model, optimizer, monitor, 6)
        with torch.no_grad():
            model.conv2.weight.zero_()
            model.bn2.bias.fill_(-1.0)  # every channel below zero before relu2
        train(model, optimizer, monitor, 2, seed=1)
    lines = read_run(run_dir)
    conv2 = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}["conv2"]
    assert conv2["measured"]
    assert metrics(run_dir)[-1]["stuck"]["conv2"][2] > 0  # silent channels seen
    refused = events(lines, "certificate_refused")
    assert [r["layer"] for r in refused] == ["conv2"] and "eval mode" in refused[0]["reason"]


class Checkpointed(TinyCNN):
    """TinyCNN with both blocks under activation checkpointing (run again in backward)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = checkpoint(self.block1, x, use_reentrant=False)
        y = checkpoint(lambda t: self.relu2(self.bn2(self.conv2(t))), x, use_reentrant=False)
        return self.head(self.flatten(self.pool(y)))


def test_activation_checkpointing_gives_the_run_of_the_plain_model(tmp_path: Path) -> None:
    torch.manual_seed(0)
    lines = zeroed_story(tmp_path / "checkpointed", Checkpointed())
    torch.manual_seed(0)
    plain = zeroed_story(tmp_path / "plain", TinyCNN())

    assert story(lines) == story(plain)
    producers = events(lines, "manifest")[0]["producers"]
    assert [(p["layer"], p["certifiable"], p["consumer"]) for p in producers] == [
        ("block1.0", True, "conv2"),
        ("conv2", True, "head"),
        ("head", False, None),
    ]


def test_a_model_with_uninitialised_lazy_modules_is_refused_clearly(run_dir: Path) -> None:
    model = nn.Sequential(nn.LazyConv2d(4, 3), nn.BatchNorm2d(4), nn.ReLU())
    with pytest.raises(ValueError, match="dry run"):
        Monitor(model, None, run_dir)
    assert not run_dir.exists() or not any(run_dir.iterdir())
    model(torch.randn(2, 3, 8, 8))  # the dry run: now it can be monitored
    with Monitor(model, None, run_dir) as monitor:
        assert monitor.producers == ["0"]


def test_a_batch_of_one_sample_proves_nothing_about_channels(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyMLP()
    optimizer = sgd(model)
    with Monitor(model, optimizer, run_dir, check_every=1, repair=True) as monitor:
        train(model, optimizer, monitor, 12, batch=1)  # Linear outputs (1, C): one value each
    lines = read_run(run_dir)
    assert not events(lines, "channels") and not events(lines, "repair")
    assert {p["layer"]: p["measured"] for p in events(lines, "manifest")[0]["producers"]} == {
        "fc1": False,
        "fc2": False,
    }
    assert all(counts == [0, 0, 0, 0] for r in metrics(run_dir) for counts in r["stuck"].values())


def test_a_model_trained_in_eval_mode_is_measured(run_dir: Path) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    model.eval()  # fine-tuning with every BatchNorm frozen
    with Monitor(model, optimizer, run_dir, check_every=2, warmup=3) as monitor:
        train(model, optimizer, monitor, 4)
        with torch.no_grad():
            model.conv2.weight.zero_()
            model.bn2.bias.fill_(-1.0)
        train(model, optimizer, monitor, 2, seed=1)
    lines = read_run(run_dir)
    assert all(p["measured"] for p in events(lines, "manifest")[0]["producers"])
    assert metrics(run_dir)[-1]["stuck"]["conv2"][2] == 8  # every channel silent


def hooks_on(model: nn.Module) -> int:
    """Hooks stored on a model's modules."""
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def test_saving_or_copying_the_model_while_a_check_is_armed_carries_no_hook(
    tmp_path: Path,
) -> None:
    torch.manual_seed(0)
    model = TinyCNN()
    optimizer = sgd(model)
    with Monitor(model, optimizer, tmp_path / "run", check_every=5) as monitor:
        for epoch in range(2):  # an epoch of 5 steps: each ends with the next check armed
            train(model, optimizer, monitor, 5, seed=epoch)
            torch.save(model, tmp_path / f"model{epoch}.pt")  # the whole module, pickled
            teacher = copy.deepcopy(model)  # an EMA or teacher copy
            assert hooks_on(model) == hooks_on(teacher) == 0
            teacher(batches(1)[0][0])  # the copy's forward is none of the monitor's business
    loaded = torch.load(tmp_path / "model1.pt", weights_only=False)
    assert hooks_on(loaded) == 0
    assert [r["step"] for r in metrics(tmp_path / "run")] == [0, 5]
    assert events(read_run(tmp_path / "run"), "structure")  # the checks still measured


def test_a_sync_batchnorm_is_paired_like_a_batchnorm(tmp_path: Path) -> None:
    """``nn.SyncBatchNorm.convert_sync_batchnorm(model)``, the usual step before DDP (in
    one process it computes as a BatchNorm): the same pairs, certificate and repair."""
    torch.manual_seed(0)
    synced = nn.SyncBatchNorm.convert_sync_batchnorm(TinyCNN())
    lines = zeroed_story(tmp_path / "sync", synced)
    torch.manual_seed(0)
    plain = zeroed_story(tmp_path / "plain", TinyCNN())
    assert type(synced.bn2).__name__ == "SyncBatchNorm"
    assert events(lines, "structure")[0]["pairs"] == {"block1.0": "block1.1", "conv2": "bn2"}

    assert story(lines) == story(plain)
    assert [(r["layer"], r["count"]) for r in events(lines, "repair")] == [("conv2", 8)]


class MobileBlock(TinyCNN):
    """TinyCNN with MobileNet's ReLU6 after each BatchNorm."""

    def __init__(self) -> None:
        super().__init__()
        self.block1[2] = nn.ReLU6(inplace=True)
        self.relu2 = nn.ReLU6()


def test_a_relu6_is_a_relu_for_the_channel_checks(tmp_path: Path) -> None:
    torch.manual_seed(0)
    lines = zeroed_story(tmp_path / "relu6", MobileBlock())
    torch.manual_seed(0)
    plain = zeroed_story(tmp_path / "relu", TinyCNN())
    assert events(lines, "structure")[0]["relu_after"] == ["block1.1", "bn2"]
    conv2 = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}["conv2"]
    assert (conv2["relu"], conv2["certifiable"], conv2["consumer"]) == ("relu2", True, "head")

    assert story(lines) == story(plain)  # certificate, channels, repair: as with ReLU


def conv_block(norm: nn.Module, activation: nn.Module) -> nn.Sequential:
    """Conv2d (8 channels), ``norm``, ``activation``, pooled into a Linear classifier."""
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        norm,
        activation,
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 4),
    )


@pytest.mark.parametrize(
    ("norm", "kind"),
    [
        (nn.GroupNorm(2, 8), "GroupNorm"),
        (nn.InstanceNorm2d(8, affine=True), "InstanceNorm2d"),
        (nn.GroupNorm(8, 8), "GroupNorm"),
    ],
)
def test_a_norm_that_is_not_batchnorm_is_named_in_the_reason_and_never_certified(
    run_dir: Path, norm: nn.Module, kind: str
) -> None:
    # Before: "no ReLU receives the output of 0 unmodified", with the ReLU right there
    # behind a GroupNorm. Such a norm is not paired (the record's field is batchnorm); a
    # channel it silences (gamma 0, beta < 0) is never certified.
    torch.manual_seed(0)
    model = conv_block(norm, nn.ReLU())
    with torch.no_grad():
        model[1].weight[:2] = 0.0
        model[1].bias[:2] = -1.0
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with Monitor(model, optimizer, run_dir, check_every=1, repair=True) as monitor:
        train(model, optimizer, monitor, 3)
    lines = read_run(run_dir)
    producer = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}["0"]
    assert producer["batchnorm"] is None and producer["relu"] is None
    assert producer["reason"] == (
        f"the output of 0 goes through the {kind} 1, which is not paired (only a BatchNorm "
        "is: the record's batchnorm field), so no ReLU receives it unmodified"
    )
    assert events(lines, "certificate") == [] and events(lines, "repair") == []


@pytest.mark.parametrize(
    ("activation", "kind"), [(nn.GELU(), "GELU"), (nn.Hardswish(), "Hardswish")]
)
def test_a_producer_before_another_activation_has_a_reason_naming_it(
    run_dir: Path, activation: nn.Module, kind: str
) -> None:
    # Before: "no ReLU (module or F.relu) receives the output of 1", with a GELU right there.
    torch.manual_seed(0)
    lines = one_check(conv_block(nn.BatchNorm2d(8), activation), run_dir)
    producer = {p["layer"]: p for p in events(lines, "manifest")[0]["producers"]}["0"]
    assert producer["batchnorm"] == "1" and not producer["certifiable"]
    assert producer["reason"] == (
        f"the output of 1 goes to the {kind} 2, not a ReLU (only a ReLU's zero output means "
        "no gradient flows back)"
    )


def one_check(model: nn.Module, run_dir: Path) -> list[dict[str, object]]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with Monitor(model, optimizer, run_dir, check_every=1) as monitor:
        train(model, optimizer, monitor, 1)
    return read_run(run_dir)
