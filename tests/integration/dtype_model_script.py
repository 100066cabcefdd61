"""Dump one forward and backward of a small GPT- or Llama-style model, for the dtype-aware tests.

Run as a program, by the project's Python (``--dumper graphboard``: graphboard's probe) or by
msprobe's (``--dumper msprobe``: ``msprobe.pytorch.PrecisionDebugger``), so the same code and
seed give a golden run (fp32) and targets (bf16 / fp16, optionally with one planted error):

    python dtype_model_script.py OUT --arch gpt --layers 4 --dtype bf16 [--scale-mlp 2]
        [--mlp-factor 1.05] [--gelu tanh] [--dumper msprobe] [--level mix] [--task statistics]
        [--attention masked|finfo|sdpa] [--rotary OFFSET] [--autocast]

``--attention``: ``masked`` (the default) fills the causal mask with ``-inf`` inside the
attention; ``finfo`` passes the attention module an additive mask filled with
``torch.finfo(dtype).min``, as ``transformers``' eager attention does; ``sdpa`` passes it
``None`` and calls ``scaled_dot_product_attention(is_causal=True)``, as its sdpa attention does.
``--rotary OFFSET``: rotary position embeddings (Llama's: the frequencies a buffer cast with the
model, the angles of positions OFFSET.. in fp32). ``--autocast``: an fp32 model run under
``torch.autocast("cpu", torch.bfloat16)``.

The weights are made in fp32 from the seed and then cast, so every run holds the same model.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional

WIDTH, HEADS, VOCAB, TOKENS = 32, 4, 64, 12
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


class RMSNorm(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Rotary(nn.Module):
    """Llama's rotary embedding: a frequency buffer (cast with the model), angles in fp32."""

    def __init__(self, offset: int) -> None:
        super().__init__()
        head = WIDTH // HEADS
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head, 2).float() / head))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.offset = offset

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        positions = torch.arange(self.offset, self.offset + x.shape[1]).float()
        angles = positions[:, None] * self.inv_freq.float()[None, :]
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos().to(x.dtype), angles.sin().to(x.dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-second, first), dim=-1) * sin


class Attention(nn.Module):
    def __init__(self, attention: str) -> None:
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.attention = attention

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        rotary: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        batch, tokens, _ = x.shape
        q, k, v = self.qkv(x).view(batch, tokens, 3, HEADS, WIDTH // HEADS).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if rotary is not None:
            q, k = rotate(q, *rotary), rotate(k, *rotary)
        if self.attention == "sdpa":
            out = functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True)
        else:
            scores = q @ k.transpose(-2, -1)
            if mask is None:
                causal = torch.ones(tokens, tokens, dtype=torch.bool).triu(1)
                scores = scores.masked_fill(causal, float("-inf")) / math.sqrt(WIDTH // HEADS)
            else:
                scores = scores / math.sqrt(WIDTH // HEADS) + mask
            weights = torch.softmax(scores, dim=-1)
            out = weights @ v
        return self.proj(out.transpose(1, 2).reshape(batch, tokens, WIDTH))


class GptMlp(nn.Module):
    def __init__(self, gelu: str) -> None:
        super().__init__()
        self.fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.out = nn.Linear(4 * WIDTH, WIDTH)
        self.gelu = gelu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(functional.gelu(self.fc(x), approximate=self.gelu))

    def scale_output(self, factor: float) -> None:
        with torch.no_grad():  # the output's every element, with no extra call in the dump
            self.out.weight.mul_(factor)
            self.out.bias.mul_(factor)


class LlamaMlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(WIDTH, 3 * WIDTH, bias=False)
        self.up = nn.Linear(WIDTH, 3 * WIDTH, bias=False)
        self.down = nn.Linear(3 * WIDTH, WIDTH, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(functional.silu(self.gate(x)) * self.up(x))

    def scale_output(self, factor: float) -> None:
        with torch.no_grad():
            self.down.weight.mul_(factor)


class Block(nn.Module):
    def __init__(self, arch: str, gelu: str, attention: str) -> None:
        super().__init__()
        norm = nn.LayerNorm if arch == "gpt" else RMSNorm
        self.norm1, self.norm2 = norm(WIDTH), norm(WIDTH)
        self.attn = Attention(attention)
        self.mlp: GptMlp | LlamaMlp = GptMlp(gelu) if arch == "gpt" else LlamaMlp()

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        rotary: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        if self.attn.attention == "masked" and rotary is None:  # the original call
            x = x + self.attn(self.norm1(x))
        else:  # transformers' way: the mask (None for sdpa) and rotary passed by name
            x = x + self.attn(self.norm1(x), mask=mask, rotary=rotary)
        return x + self.mlp(self.norm2(x))


class Model(nn.Module):
    def __init__(
        self, arch: str, layers: int, gelu: str, attention: str = "masked", rotary: int = -1
    ) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList(Block(arch, gelu, attention) for _index in range(layers))
        self.norm = nn.LayerNorm(WIDTH) if arch == "gpt" else RMSNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.attention = attention
        self.rotary = Rotary(rotary) if rotary >= 0 else None

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        mask = None
        if self.attention == "finfo":  # transformers' eager mask: the dtype's lowest value
            causal = torch.ones(tokens.shape[1], tokens.shape[1], dtype=torch.bool).triu(1)
            mask = torch.zeros(causal.shape, dtype=x.dtype).masked_fill(
                causal, torch.finfo(x.dtype).min
            )
        rotary = self.rotary(x) if self.rotary is not None else None
        for block in self.blocks:
            x = block(x, mask=mask, rotary=rotary)
        return self.head(self.norm(x))


def _config(out: Path, level: str, task: str) -> Path:
    path = out.parent / f"{out.name}.config.json"
    section = {"scope": [], "list": [], "data_mode": ["all"]}
    if task == "statistics":
        section["summary_mode"] = "statistics"
    config = {
        "task": task,
        "dump_path": str(out),
        "rank": [],
        "step": [],
        "level": level,
        task: section,
    }
    path.write_text(json.dumps(config))
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--arch", choices=("gpt", "llama"), default="gpt")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    parser.add_argument("--gelu", choices=("none", "tanh"), default="none")
    parser.add_argument("--scale-mlp", type=int, default=None, help="layer whose MLP output x1.05")
    parser.add_argument("--mlp-factor", type=float, default=1.05, help="the --scale-mlp factor")
    parser.add_argument("--dumper", choices=("graphboard", "msprobe"), default="graphboard")
    parser.add_argument("--level", default="mix")
    parser.add_argument("--task", default="statistics")
    parser.add_argument("--attention", choices=("masked", "finfo", "sdpa"), default="masked")
    parser.add_argument("--rotary", type=int, default=-1, help="rotary embedding from position N")
    parser.add_argument("--autocast", action="store_true", help="fp32 model under bf16 autocast")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Model(args.arch, args.layers, args.gelu, args.attention, args.rotary)
    tokens = torch.randint(0, VOCAB, (2, TOKENS))
    labels = torch.randint(0, VOCAB, (2, TOKENS))
    model = model.to(DTYPES[args.dtype])
    if args.scale_mlp is not None:
        block = model.blocks[args.scale_mlp]
        assert isinstance(block, Block)
        block.mlp.scale_output(args.mlp_factor)

    def step() -> None:
        with torch.autocast("cpu", torch.bfloat16, enabled=args.autocast):
            logits = model(tokens)
        loss = functional.cross_entropy(logits.float().reshape(-1, VOCAB), labels.reshape(-1))
        loss.backward()

    args.out.mkdir(parents=True, exist_ok=True)
    if args.dumper == "graphboard":
        from graphboard import probe

        with probe.dump(model, args.out, step=0, level=args.level, task=args.task):
            step()
    else:
        from msprobe.pytorch import PrecisionDebugger  # msprobe's Python only

        debugger = PrecisionDebugger(config_path=str(_config(args.out, args.level, args.task)))
        debugger.start(model)
        step()
        debugger.stop()
        debugger.step()


if __name__ == "__main__":
    main()
