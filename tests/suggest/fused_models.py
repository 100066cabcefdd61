"""Two small models doing the same work, one with fused projections (``qkv``, ``gate_up``)
and one with them split (``q``/``k``/``v``, ``gate``/``up``), dumped by graphboard's probe."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from graphboard import probe
from integration.test_probe_compare_msprobe import WIDTH
from integration.test_probe_compare_msprobe import Attention as FusedAttention

HIDDEN = 16


class SplitAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(WIDTH, WIDTH)
        self.k = nn.Linear(WIDTH, WIDTH)
        self.v = nn.Linear(WIDTH, WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.q(x), self.k(x), self.v(x)
        return self.proj(torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v)


class FusedMlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate_up = nn.Linear(WIDTH, 2 * HIDDEN)
        self.down = nn.Linear(HIDDEN, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(nn.functional.silu(gate) * up)


class SplitMlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(WIDTH, HIDDEN)
        self.up = nn.Linear(WIDTH, HIDDEN)
        self.down = nn.Linear(HIDDEN, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(nn.functional.silu(self.gate(x)) * self.up(x))


class Layer(nn.Module):
    def __init__(self, fused: bool) -> None:
        super().__init__()
        self.attention = FusedAttention() if fused else SplitAttention()
        self.mlp = FusedMlp() if fused else SplitMlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(x)
        return x + self.mlp(x)


def dump(root: Path, fused: bool) -> Path:
    torch.manual_seed(0)
    model = Layer(fused)
    x = torch.randn(2, 5, WIDTH)
    with probe.dump(model, root, step=0, level="mix", task="statistics"):
        model(x).square().mean().backward()
    return root
