"""Overhead of the training monitor on a ResNet-18 on CPU, both stems, measured side by side.

Two ResNet-18s (defined here; torchvision is not needed): the ImageNet stem (7x7 stride-2
conv and max-pool: a cheap step on 32x32 inputs, the hard case for the monitor's share) and
the CIFAR stem (3x3 stride-1 conv, no pool: a step about ten times dearer). For each stem,
identical copies of the model, each trained with its own kinds of step:

* the Monitor's copy (``check_every=3``, its defaults: the logging sink on, the diary
  writer's fsync policy): a *plain* step (forward, backward, optimizer step, zero_grad; the
  monitor not called), a *non-check* step (the same plus ``monitor.step(loss)``), the
  non-check step before a check (*arming*: it installs the check's hooks) and a *check*
  (forward hooks for channel statistics, per-layer norms in one batched pass, alarms, a
  metrics row);
* the floor's copy: a plain step and a *floor* step, only what no check can leave out, with
  the Monitor's own parts: the channel statistics' hooks and one read of every gradient;
* the bare floor's copy: a plain step and a step with only what the issue's design asks of
  any monitor, none of this one's bookkeeping: forward hooks of its own taking each
  BatchNorm's and Linear's per-channel max and min, and one read of every gradient (a
  bound from below for any implementation on the machine it runs on);
* a per-step monitor of the wandb.watch kind (*hooks*: a hook on every parameter takes its
  gradient norm at every step), compared with the Monitor copy's plain step.

A round takes every kind of step on every copy, copy by copy, the order of the copies
alternating; every few rounds of the ImageNet stem, one round of the CIFAR stem. Drifting
machine load hits all kinds alike, and each ratio pairs steps on the same copy of the
model in the same round (copies of one model placed elsewhere in memory differ by up to half a
percent): the median over rounds (on a loaded machine, the ratio of the fastest steps). A
check's cost is its step over the plain step, plus what installing its hooks added to the
step before it (the arming step over the non-check step).

Printed per stem, with the issue's target and PASS/MISS: the non-check step (within 1 % of
plain), the check step (at most 5 % more than plain, channel statistics included), the
amortised overhead at the default ``check_every`` (at most 0.5 %); and, without a target,
the cost of a check as a multiple of one ``_foreach_norm`` pass over all gradients, the
check's parts timed directly (``monitor.step()``, the hooks, installing them), its floor
(the Monitor's gradient read and the hooks, timed alone and as steps of their own), the
metrics file's fsync (for information: every check of a real run at ``check_every=50``
asks for one, and the diary writers' background thread does it, not the training thread)
and the per-step hook monitor.

    python bench/monitor_overhead.py [--quick] [--threads N] [--stem imagenet|cifar|both]
        [--device cuda]
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from trainrecord.monitor import Monitor
from trainrecord.monitor.channels import ActivationProbe, channel_dim, channel_extremes
from trainrecord.monitor.gradients import GradientNorms, parameter_layers

DEFAULT_CHECK_EVERY = 50


class BasicBlock(nn.Module):
    """ResNet basic block."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))."""
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class ResNet18(nn.Module):
    """ResNet-18 (11.7M parameters) with the ImageNet stem or a CIFAR stem."""

    def __init__(self, classes: int = 10, stem: str = "imagenet") -> None:
        super().__init__()
        if stem == "imagenet":
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.maxpool: nn.Module = nn.MaxPool2d(3, 2, 1)
        else:
            self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            self.maxpool = nn.Identity()
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        layers, cin = [], 64
        for i, cout in enumerate((64, 128, 256, 512)):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores."""
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


DEVICE = torch.device("cpu")


def clock() -> float:
    """time.perf_counter(), after the device's queued work is done (on a GPU)."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize(DEVICE)
    return time.perf_counter()


class FloorCheck:
    """What no check that reads inline can leave out, with the Monitor's own parts: the
    channel statistics' forward hooks on every BatchNorm and Linear, and the model's own
    (installed before the step's forward, removed after it), and one gradient read (the
    Monitor's norm pass)."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.watched = {
            name: module
            for name, module in model.named_modules()
            if isinstance(module, (nn.BatchNorm2d, nn.Linear))
        }
        self.norms = GradientNorms(parameter_layers(model))
        self.probe: ActivationProbe | None = None

    def arm(self) -> None:
        """Install the hooks for this step's forward."""
        self.probe = ActivationProbe(self.watched, self.model)
        self.probe.install()

    def step(self, loss: torch.Tensor) -> None:
        """Remove the hooks, read the gradients."""
        assert self.probe is not None
        self.probe.remove()
        self.norms.compute()


class BareFloor:
    """The least any monitor of the issue's design can do at a check, with none of the
    Monitor's bookkeeping: a forward hook of its own on every BatchNorm and Linear that
    takes the per-channel max and min (the Monitor's ``channel_extremes``), installed
    before the step's forward and removed after it, and one read of every gradient (the
    Monitor's norm pass). What it costs bounds the check step from below on this machine,
    whatever the implementation."""

    def __init__(self, model: nn.Module) -> None:
        self.watched = [m for m in model.modules() if isinstance(m, (nn.BatchNorm2d, nn.Linear))]
        self.norms = GradientNorms(parameter_layers(model))
        self.handles: list[Any] = []

    @staticmethod
    def _hook(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        channel_extremes(output.detach(), channel_dim(module, output))

    def arm(self) -> None:
        """Install the hooks for this step's forward."""
        self.handles = [m.register_forward_hook(self._hook) for m in self.watched]

    def step(self, loss: torch.Tensor) -> None:
        """Remove the hooks, read the gradients."""
        for handle in self.handles:
            handle.remove()
        self.norms.compute()


class HookMonitor:
    """wandb.watch-like: a hook on every parameter takes its gradient norm every step."""

    def __init__(self, model: nn.Module) -> None:
        self.norms: dict[str, float] = {}
        for name, p in model.named_parameters():
            p.register_hook(self._hook(name))

    def _hook(self, name: str) -> Callable[[torch.Tensor], None]:
        def hook(grad: torch.Tensor) -> None:
            self.norms[name] = grad.norm().item()

        return hook

    def step(self, loss: torch.Tensor) -> None:
        """Record the loss, as such monitors do every step."""
        self.norms["loss"] = loss.item()


@dataclass
class Timing:
    """One timed step, whole and in parts."""

    total: float
    forward: float
    monitor: float
    optimizer: float


class Copy:
    """One copy of the model with its optimizer and monitor, and the kinds of step each
    round takes on it, in order: a step kind is a name and whether the monitor is called
    (a plain step on the copy does not call it)."""

    def __init__(
        self,
        model: nn.Module,
        data: tuple[torch.Tensor, torch.Tensor],
        monitor: Callable[[nn.Module, torch.optim.Optimizer], Any] | None,
        kinds: list[tuple[str, bool]],
    ) -> None:
        self.model = model
        self.x, self.y = data
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        self.monitor = monitor(model, self.optimizer) if monitor else None
        self.kinds = kinds

    def step(self, call: bool) -> Timing:
        """One timed training step, calling the monitor or not."""
        arm = getattr(self.monitor, "arm", None)
        if call and arm is not None:
            arm()
        start = clock()
        loss = F.cross_entropy(self.model(self.x), self.y)
        forward = clock()
        loss.backward()
        before = clock()
        if call and self.monitor is not None:
            self.monitor.step(loss)
        after = clock()
        self.optimizer.step()
        self.optimizer.zero_grad()
        end = clock()
        return Timing(end - start, forward - start, after - before, end - after)


def foreach_norm_time(
    model: nn.Module, data: tuple[torch.Tensor, torch.Tensor], repeats: int
) -> tuple[float, float]:
    """Median and fastest time of one torch._foreach_norm pass over all gradients (then
    one ``.tolist()``), each right after a backward pass as in a training step."""

    def one_pass() -> None:
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        torch.stack(torch._foreach_norm(grads)).tolist()

    return after_backward(model, data, repeats, one_pass)


def monitor_norm_time(
    model: nn.Module, data: tuple[torch.Tensor, torch.Tensor], repeats: int
) -> tuple[float, float]:
    """The same for the Monitor's own gradient read (``GradientNorms.compute``: BLAS dots
    on the CPU, one _foreach_norm on a GPU), which every check pays."""
    norms = GradientNorms(parameter_layers(model))
    return after_backward(model, data, repeats, lambda: norms.compute())


def after_backward(
    model: nn.Module,
    data: tuple[torch.Tensor, torch.Tensor],
    repeats: int,
    work: Callable[[], object],
) -> tuple[float, float]:
    """Median and fastest time of ``work()``, each right after a backward pass."""
    times = []
    for _ in range(repeats):
        F.cross_entropy(model(data[0]), data[1]).backward()
        start = clock()
        work()
        times.append(clock() - start)
        model.zero_grad()
    return statistics.median(times), min(times)


def fsync_time(directory: Path, repeats: int) -> float:
    """Median time of one small append and fsync in ``directory`` (the metrics file's case)."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    times = []
    try:
        for _ in range(repeats):
            os.write(fd, b'{"step":0}\n')
            start = time.perf_counter()
            os.fsync(fd)
            times.append(time.perf_counter() - start)
    finally:
        os.close(fd)
    return statistics.median(times)


def verdict(value: float, target: float) -> str:
    """PASS when ``value`` is at most ``target``."""
    return "PASS" if value <= target else "MISS"


class Group:
    """The model copies of one stem, their steps, and the figures computed from them."""

    def __init__(self, stem: str, data: tuple[torch.Tensor, torch.Tensor], tmp: Path) -> None:
        self.stem = stem
        self.data = data
        self.base = ResNet18(stem=stem).to(DEVICE)
        self.where = where = tmp / stem
        self.copies = [
            # steps 3k+1 and 3k+2 are not checks (the first compares one gradient with the
            # check's, a few microseconds; the second installs the hooks for the check to
            # come), 3k+3 is a check
            Copy(
                copy.deepcopy(self.base),
                data,
                lambda m, o: Monitor(m, o, where / "check", check_every=3),
                [("plain", False), ("non-check", True), ("arming", True), ("check", True)],
            ),
            Copy(
                copy.deepcopy(self.base),
                data,
                lambda m, o: FloorCheck(m),
                [("floor plain", False), ("floor", True)],
            ),
            Copy(
                copy.deepcopy(self.base),
                data,
                lambda m, o: BareFloor(m),
                [("bare plain", False), ("bare floor", True)],
            ),
            Copy(copy.deepcopy(self.base), data, lambda m, o: HookMonitor(m), [("hooks", True)]),
        ]
        self.times: dict[str, list[Timing]] = {name: [] for c in self.copies for name, _ in c.kinds}
        self.figures: dict[str, float] = {}

    def warm_up(self) -> None:
        """Untimed steps: every monitor's first check (step 0, which learns the structure),
        then two rounds' worth of steps of every kind."""
        for c in self.copies:
            if isinstance(c.monitor, Monitor):
                c.step(True)
            for _ in range(2):
                for _, call in c.kinds:
                    c.step(call)

    def round(self, index: int) -> None:
        """One timed step of every kind, copy by copy, the order of the copies alternating."""
        for c in self.copies if index % 2 == 0 else self.copies[::-1]:
            for name, call in c.kinds:
                self.times[name].append(c.step(call))

    def finish(self, norm_repeats: int, fsync: float) -> None:
        """Time the norm pass and the counter alone, close the monitors, compute figures.

        A check's cost in a round is its step's time over the plain step's on the same
        copy, plus what installing its hooks added to the step before it (the arming step
        over the non-check step)."""
        norm_median, norm_fastest = foreach_norm_time(
            copy.deepcopy(self.base), self.data, norm_repeats
        )
        read_median, read_fastest = monitor_norm_time(
            copy.deepcopy(self.base), self.data, norm_repeats
        )
        tiny = nn.Linear(4, 4)
        with Monitor(tiny, None, self.where / "counter", check_every=10**9) as counter:
            counter.step()  # step 0, its only check
            calls = 100_000
            start = time.perf_counter()
            for _ in range(calls):  # what a non-check step adds, timed directly: the counter
                counter.step()
            step_call = (time.perf_counter() - start) / calls
        for c in self.copies:
            if isinstance(c.monitor, Monitor):
                c.monitor.close()
        t = {name: [x.total for x in timings] for name, timings in self.times.items()}
        median = {n: statistics.median(v) for n, v in t.items()}
        fastest = {n: min(v) for n, v in t.items()}
        loaded = median["plain"] > 1.3 * fastest["plain"]
        ratio: dict[str, float] = {}
        if loaded:  # other processes took the CPU for much of the run: uncontended steps
            plain, norm, read = fastest["plain"], norm_fastest, read_fastest
            for name, base in (
                ("non-check", "plain"),
                ("floor", "floor plain"),
                ("bare floor", "bare plain"),
            ):
                ratio[name] = fastest[name] / fastest[base]
            ratio["hooks"] = fastest["hooks"] / fastest["plain"]
            extra = fastest["arming"] - fastest["non-check"]
            ratio["check"] = (fastest["check"] + extra) / fastest["plain"]
        else:
            plain, norm, read = median["plain"], norm_median, read_median
            for name, base in (
                ("non-check", "plain"),
                ("floor", "floor plain"),
                ("bare floor", "bare plain"),
                ("hooks", "plain"),
            ):
                ratio[name] = statistics.median(
                    a / b for a, b in zip(t[name], t[base], strict=True)
                )
            rows = zip(t["check"], t["plain"], t["arming"], t["non-check"], strict=True)
            ratio["check"] = statistics.median((c + a - n) / p for c, p, a, n in rows)
        check_cost = (ratio["check"] - 1) * plain
        every = DEFAULT_CHECK_EVERY

        def paired(name: str, base: str, part: str) -> float:
            """Median over rounds of a part of a step over the same part of ``base``'s."""
            pairs = zip(self.times[name], self.times[base], strict=True)
            return statistics.median(getattr(a, part) - getattr(b, part) for a, b in pairs)

        call = statistics.median(x.monitor for x in self.times["check"])
        hooks = paired("check", "plain", "forward")
        arming = paired("arming", "non-check", "monitor")
        self.figures = {
            "loaded": float(loaded),
            "rounds": float(len(t["plain"])),
            "plain": plain,
            "plain_median": median["plain"],
            "plain_fastest": fastest["plain"],
            "norm": norm,
            "read": read,
            "non_check": ratio["non-check"] - 1,
            "step_call": step_call,
            "check": ratio["check"] - 1,
            "check_cost": check_cost,
            "check_norms": check_cost / norm,
            # non-check steps add exactly the counter, timed alone (their ratio is the same
            # work plus the machine's noise); a check's fsync is on a background thread
            "amortised": check_cost / every / plain + (every - 1) / every * step_call / plain,
            "hooks_monitor": ratio["hooks"] - 1,
            "floor_loop": ratio["floor"] - 1,
            "bare_floor": ratio["bare floor"] - 1,
            "direct_call": call,
            "direct_hooks": hooks,
            "direct_arming": arming,
            "direct": (call + hooks + arming) / plain,
            # what no check can avoid: reading every gradient once and the channel
            # statistics' hooks
            "floor": read / plain + hooks / plain,
            "fsync": fsync / plain,
        }


def main() -> int:
    """Run the benchmark and print the figures, both stems side by side."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (3-7 min, 2 cores)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
    parser.add_argument("--stem", choices=("imagenet", "cifar", "both"), default="both")
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds of the ImageNet stem (default 160, --quick 48); the CIFAR stem runs "
        "a quarter as many",
    )
    parser.add_argument(
        "--device", default="cpu", help="torch device, e.g. cuda (default cpu; timings synchronise)"
    )
    args = parser.parse_args()
    global DEVICE
    DEVICE = torch.device(args.device)
    # every copy trains on one repeated batch, so gradients do vanish and the monitor says
    # so: its logging sink runs as by default, its warning lines are not printed here
    logging.getLogger("trainrecord.monitor").setLevel(logging.ERROR)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rounds = args.rounds or (48 if args.quick else 160)
    data = (
        torch.randn(args.batch, 3, 32, 32, device=DEVICE),
        torch.randint(0, 10, (args.batch,), device=DEVICE),
    )
    tmp = Path(tempfile.mkdtemp(prefix="trainrecord-bench-"))
    stems = ("imagenet", "cifar") if args.stem == "both" else (args.stem,)
    groups = [Group(stem, data, tmp) for stem in stems]
    every = {"imagenet": 1, "cifar": 4}
    if len(groups) == 1:
        every[stems[0]] = 1
    print(
        f"ResNet-18 ({sum(p.numel() for p in groups[0].base.parameters()) / 1e6:.1f}M "
        f"parameters), batch {args.batch} of 3x32x32, torch {torch.__version__}, "
        f"{args.threads} threads, device {DEVICE}; "
        + ", ".join(f"{g.stem} stem {len(range(0, rounds, every[g.stem]))} rounds" for g in groups)
        + "; each round every kind of step on each copy of that stem's model, interleaved"
    )
    for group in groups:
        group.warm_up()
    for index in range(rounds):
        for group in groups:
            if index % every[group.stem] == 0:
                group.round(index // every[group.stem])
    fsync = fsync_time(tmp, 10 if args.quick else 30)
    for group in groups:
        group.finish(10 if args.quick else 30, fsync)
    report(groups)
    return 0


def report(groups: list[Group]) -> None:
    """The figures in one table, a column per stem, with targets and PASS/MISS."""
    every = DEFAULT_CHECK_EVERY
    figures = [g.figures for g in groups]
    width = 30

    def row(label: str, cells: list[str], target: str = "") -> None:
        print(f"{label:<44}" + "".join(f"{c:>{width}}" for c in cells) + f"   {target}")

    print()
    row("", [f"{g.stem} stem" for g in groups], "target")
    row(
        "plain step: median / fastest",
        [f"{f['plain_median'] * 1e3:.1f} / {f['plain_fastest'] * 1e3:.1f} ms" for f in figures],
    )
    row(
        "ratios from",
        ["fastest steps (loaded)" if f["loaded"] else "paired medians" for f in figures],
    )
    row(
        "one _foreach_norm pass (share of a step)",
        [f"{f['norm'] * 1e3:.2f} ms ({f['norm'] / f['plain']:.1%})" for f in figures],
    )
    row(
        "non-check step vs plain",
        [f"{f['non_check']:+.2%} {verdict(f['non_check'], 0.01)}" for f in figures],
        "<= +1%",
    )
    row(
        "  monitor.step() there, timed alone",
        [f"{f['step_call'] * 1e6:.2f} us ({f['step_call'] / f['plain']:.4%})" for f in figures],
    )
    row(
        "check step vs plain",
        [f"{f['check']:+.2%} {verdict(f['check'], 0.05)}" for f in figures],
        "<= +5% (channel statistics included)",
    )
    row(
        "cost of a check / one _foreach_norm pass",
        [f"{f['check_cost'] * 1e3:.2f} ms = {f['check_norms']:.1f} x" for f in figures],
        "(no target; 1 x is the norm pass alone)",
    )
    row(
        "  timed directly: step() + hooks + arming",
        [
            f"{f['direct_call'] * 1e3:.2f} + {f['direct_hooks'] * 1e3:.2f} + "
            f"{f['direct_arming'] * 1e3:.2f} ms = {f['direct']:.1%}"
            for f in figures
        ],
        "(medians: monitor.step(), what the hooks add to the forward pass and installing "
        "them to the step before, paired on the same copy; share of the plain step)",
    )
    row(
        "  of which: the gradient read + hooks",
        [
            f"{f['read'] * 1e3:.2f} + {f['direct_hooks'] * 1e3:.2f} ms = {f['floor']:.1%}"
            for f in figures
        ],
        "(the Monitor's norm pass timed alone, and the hooks: the check's floor)",
    )
    row(
        "  the floor as a loop: hooks + gradient read",
        [f"{f['floor_loop']:+.2%}" for f in figures],
        "(every step, nothing else: what a check costs at the least)",
    )
    row(
        "  the design's least: bare hooks + read",
        [f"{f['bare_floor']:+.2%}" for f in figures],
        "(every step: hooks of its own taking each BatchNorm's and Linear's max and min, "
        "one gradient read, no bookkeeping: a bound from below for any implementation)",
    )
    row(
        "  metrics fsync at a real run's check",
        [f"{f['fsync']:.2%}" for f in figures],
        "(done on the diary writers' background thread, not in the step)",
    )
    row(
        f"amortised at check_every={every}",
        [f"{f['amortised']:+.3%} {verdict(f['amortised'], 0.005)}" for f in figures],
        "<= +0.5% (one check and 49 counters)",
    )
    row(
        "per-step hook monitor (wandb.watch kind)",
        [f"{f['hooks_monitor']:+.2%}" for f in figures],
        "(for comparison: every step)",
    )
    print(
        "\n(ratios: median over rounds of each kind of step's time over the plain step on the "
        "same copy in the same round, or of the fastest steps when the machine was loaded (median plain step "
        "> 1.3 x the fastest); on a loaded machine differences below ~1% are within the "
        "spread)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
