"""Fine-tuning a tiny decoder-only language model the ways people do, under the Monitor.

The model: token and learned position embeddings, two pre-LayerNorm blocks (causal
attention, a GELU MLP), a final LayerNorm and an lm_head tied to the token embedding
(about 10k parameters, sequences of 8 tokens). Each test pretrains it briefly on
arithmetic progressions of tokens and fine-tunes it on steeper ones: a healthy run, which
must stay quiet. What they pin:

* LoRA in the PEFT layout (``lora_A`` and ``lora_B`` Linear modules, ``lora_B`` zero at
  the start): the zero product leaves every ``lora_B`` output channel one value (0) at
  the first check while its gradient is not zero; those channels start from zero, they
  are not stuck (every ``lora_B`` was reported "all channels stuck" at step 0 before);
* a padded batch whose every label is ``ignore_index`` gives a NaN loss (a mean over no
  token) and all-zero gradients: ``nonfinite_loss`` says so, and the once-per-run
  ``no_gradients``, whose advice (move ``step()``) is wrong there, stays for a real
  misplacement later;
* a frozen base is named in the manifest's notes (its layers are not checked).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from tests.monitor.conftest import events, metrics, read_run
from trainrecord.monitor import Monitor

VOCAB, WIDTH, LENGTH, HEADS = 16, 16, 8, 2


class Block(nn.Module):
    """Pre-LayerNorm causal self-attention and a GELU MLP, each a residual branch."""

    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.fc, self.act, self.out = (
            nn.Linear(WIDTH, 2 * WIDTH),
            nn.GELU(),
            nn.Linear(2 * WIDTH, WIDTH),
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """x + attention(ln1(x)), then + mlp(ln2(x)); ``mask``: 1 for tokens, 0 for padding."""
        b, n, _ = x.shape
        q, k, v = (
            t.view(b, n, HEADS, WIDTH // HEADS).transpose(1, 2)
            for t in self.qkv(self.ln1(x)).split(WIDTH, -1)
        )
        allowed = torch.ones(n, n, dtype=torch.bool).tril()
        if mask is not None:
            allowed = allowed & mask[:, None, None, :].bool()
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        x = x + self.proj(attended.transpose(1, 2).reshape(b, n, WIDTH))
        return x + self.out(self.act(self.fc(self.ln2(x))))


class TinyLM(nn.Module):
    """Decoder-only: embeddings, two blocks, LayerNorm, lm_head tied to the embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, WIDTH), nn.Embedding(LENGTH, WIDTH)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.ln_f = nn.LayerNorm(WIDTH)
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.lm_head.weight = self.tok.weight
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)

    def forward(self, idx: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Next-token logits."""
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.ln_f(x))


class LoRA(nn.Module):
    """PEFT's layout: the frozen base Linear, ``lora_A`` and ``lora_B`` (zero) Linears."""

    def __init__(self, base: nn.Linear, rank: int = 4) -> None:
        super().__init__()
        self.base_layer = base.requires_grad_(False)
        self.lora_A = nn.Linear(base.in_features, rank, bias=False)
        self.lora_B = nn.Linear(rank, base.out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The base's output plus the low-rank update, scaled by alpha / rank = 2."""
        return self.base_layer(x) + 2.0 * self.lora_B(self.lora_A(x))


def progressions(
    generator: torch.Generator, steep: bool, batch: int = 8
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token sequences start + stride * i (mod VOCAB) and their next tokens; strides 1-2,
    or 3-4 when ``steep`` (the fine-tuning task)."""
    start = torch.randint(0, VOCAB, (batch, 1), generator=generator)
    stride = torch.randint(1, 3, (batch, 1), generator=generator) + (2 if steep else 0)
    seq = (start + stride * torch.arange(LENGTH + 1)) % VOCAB
    return seq[:, :-1], seq[:, 1:]


def pretrained() -> TinyLM:
    """The model after 60 steps of AdamW on the gentle progressions."""
    torch.manual_seed(0)
    model = TinyLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    for _ in range(60):
        x, y = progressions(generator, steep=False)
        F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1)).backward()
        optimizer.step()
        optimizer.zero_grad()
    return model


def fine_tune(
    model: nn.Module,
    run_dir: Path,
    steps: int,
    check_every: int,
    all_ignored_at: int | None = None,
    zero_grad_first_at: int | None = None,
) -> list[float]:
    """AdamW over the trainable parameters, padded batches (a random length per sequence,
    labels ignore_index=-100 past it), clip_grad_norm_ after step(); at ``all_ignored_at``
    every label is ignored, at ``zero_grad_first_at`` zero_grad() runs before step()."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=3e-3)
    generator = torch.Generator().manual_seed(1)
    losses = []
    with Monitor(model, optimizer, run_dir, check_every=check_every, log=False) as monitor:
        for step in range(steps):
            x, y = progressions(generator, steep=True)
            lengths = torch.randint(LENGTH // 2, LENGTH + 1, (x.shape[0],), generator=generator)
            mask = (torch.arange(LENGTH)[None] < lengths[:, None]).long()
            y = y.masked_fill(mask == 0, -100)
            if step == all_ignored_at:
                y = torch.full_like(y, -100)
            logits = model(x.masked_fill(mask == 0, 0), mask)
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1), ignore_index=-100)
            loss.backward()
            if step == zero_grad_first_at:
                optimizer.zero_grad(set_to_none=False)
            monitor.step(loss)
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
    return losses


def with_lora(model: TinyLM) -> TinyLM:
    """The model frozen, LoRA on every block's qkv and proj."""
    model.requires_grad_(False)
    for block in model.blocks:
        assert isinstance(block, Block)
        block.qkv, block.proj = LoRA(block.qkv), LoRA(block.proj)
    return model


def test_lora_zero_initialised_b_is_not_stuck_at_the_first_check(run_dir: Path) -> None:
    model = with_lora(pretrained())
    losses = fine_tune(model, run_dir, steps=12, check_every=1)
    assert losses[-1] < losses[0]  # it learns
    lines = read_run(run_dir)
    rows = metrics(run_dir)
    # At the first check every lora_B channel is one value, 0, and its gradient is not:
    # the step moves it (lora_A's own gradient is exactly 0 then, within the warm-up).
    assert rows[0]["grad"]["blocks.0.qkv.lora_A"] == 0.0
    assert rows[0]["grad"]["blocks.0.qkv.lora_B"] > 0.0
    assert rows[0]["stuck"]["blocks.0.qkv.lora_B"] == [0, 0, 0, 0]
    assert events(lines, "channels") == []
    assert events(lines, "alarm") == []


def test_the_frozen_base_is_named_in_the_manifest(run_dir: Path) -> None:
    model = with_lora(pretrained())
    fine_tune(model, run_dir, steps=1, check_every=1)
    manifest = events(read_run(run_dir), "manifest")[0]
    assert "blocks.0.qkv.base_layer" not in manifest["layers"]
    frozen = [n for n in manifest["notes"] if n.startswith("frozen")]
    assert len(frozen) == 1
    assert "blocks.0.qkv.base_layer" in frozen[0] and "tok, pos" in frozen[0]
    assert "lora_A" not in frozen[0]


def test_a_zero_layer_without_a_gradient_is_still_flat(run_dir: Path) -> None:
    # The same zero lora_B, but lora_A frozen at zero too: nothing moves B (its gradient
    # is A x = 0), so its channels are stuck, and said so.
    model = with_lora(pretrained())
    for module in model.modules():
        if isinstance(module, LoRA):
            nn.init.zeros_(module.lora_A.weight)
            module.lora_A.requires_grad_(False)
    fine_tune(model, run_dir, steps=3, check_every=1)
    lines = read_run(run_dir)
    stuck = {e["layer"]: e["level"] for e in events(lines, "channels")}
    assert stuck["blocks.0.qkv.lora_B"] == "all"
    assert metrics(run_dir)[0]["stuck"]["blocks.0.qkv.lora_B"] == [0, 3 * WIDTH, 0, 0]


def test_a_batch_with_every_label_ignored_is_a_nan_loss_not_a_misplaced_step(
    run_dir: Path,
) -> None:
    losses = fine_tune(
        pretrained(), run_dir, steps=9, check_every=2, all_ignored_at=2, zero_grad_first_at=6
    )
    assert math.isnan(losses[2])
    lines = read_run(run_dir)
    assert [e["step"] for e in events(lines, "nonfinite_loss")] == [2]
    # The check at step 2 had all-zero gradients under the NaN loss: counted, no advice;
    # the check at step 6, after zero_grad(), is the misplacement the event is for.
    said = events(lines, "no_gradients")
    assert [e["step"] for e in said] == [6]
    assert "zero_grad" in said[0]["message"]
    assert lines[-1]["counts"]["checks_without_gradients"] == 2


def adapter_added_later(run_dir: Path, train_b: bool) -> list[dict[str, Any]]:
    """Training under the Monitor (10 checks, past its warm-up), then LoRA added and a new
    AdamW over it and the final LayerNorm (``train_b``: False keeps every lora_B frozen at
    zero)."""
    torch.manual_seed(0)
    model = TinyLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    with Monitor(model, optimizer, run_dir, check_every=2, log=False) as monitor:
        for step in range(26):
            if step == 20:
                with_lora(model)
                model.ln_f.requires_grad_(True)  # LoRA and the final norm trained
                if not train_b:
                    for module in model.modules():
                        if isinstance(module, LoRA):
                            module.lora_B.requires_grad_(False)
                params = [p for p in model.parameters() if p.requires_grad]
                optimizer = torch.optim.AdamW(params, lr=3e-3)
                monitor.set_optimizer(optimizer)
            x, y = progressions(generator, steep=False)
            loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
            loss.backward()
            monitor.step(loss)
            optimizer.step()
            optimizer.zero_grad()
    return read_run(run_dir)


def test_lora_added_after_the_warm_up_raises_no_alarm(run_dir: Path) -> None:
    # lora_A's gradient is exactly 0 at its first check (lora_B is 0): every lora_A was
    # alarmed no_gradient at step 20 and cleared at step 22 before.
    lines = adapter_added_later(run_dir, train_b=True)
    assert metrics(run_dir)[10]["grad"]["blocks.0.qkv.lora_A"] == 0.0
    assert events(lines, "alarm") == []
    assert events(lines, "channels") == []


def test_a_new_layer_whose_gradient_stays_zero_is_alarmed_at_its_second_check(
    run_dir: Path,
) -> None:
    lines = adapter_added_later(run_dir, train_b=False)
    alarms = events(lines, "alarm")
    assert {(a["layer"], a["step"], a["diagnosis"]) for a in alarms} == {
        (f"blocks.{b}.{p}.lora_A", 22, "no_gradient") for b in (0, 1) for p in ("qkv", "proj")
    }
