"""Tiny models and a training step shared by the probe tests (and their spawned workers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from graphboard import probe
from graphboard.dump.layout import discover
from graphboard.graph.builder import build_graph
from graphboard.graph.model import Graph


class ResidualBlock(nn.Module):
    """Two convs and a skip; one ReLU module called twice."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.conv2(y) + x)


class TinyNet(nn.Module):
    """Nested Sequential / ModuleList modules, an inplace ReLU, a module called twice."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(inplace=True)
        )
        self.blocks = nn.ModuleList([ResidualBlock(4)])
        self.head = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3))

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.stem(images)
        for block in self.blocks:
            x = block(x)
        x = torch.flatten(x.mean(dim=(2, 3), keepdim=True), 1)
        return F.cross_entropy(self.head(x), labels)


def make_run(seed: int = 0) -> tuple[TinyNet, torch.optim.Optimizer, torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    model = TinyNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = torch.randn(2, 3, 5, 5)
    labels = torch.tensor([0, 2])
    return model, optimizer, images, labels


def train_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, images: torch.Tensor, labels: torch.Tensor
) -> torch.Tensor:
    optimizer.zero_grad()
    loss = model(images, labels)
    loss.backward()
    optimizer.step()
    return loss.detach()


def dump_one_step(
    out_dir: Path, *, seed: int = 0, level: str = "mix", task: str = "statistics"
) -> Path:
    """One training step of a fresh TinyNet under the probe; returns the rank folder."""
    model, optimizer, images, labels = make_run(seed)
    with probe.dump(model, out_dir, step=0, level=level, task=task) as recording:
        train_step(model, optimizer, images, labels)
    return recording.rank_dir


def load(rank_dir: Path, name: str) -> Any:
    return json.loads((rank_dir / name).read_text())


def build(dump_root: Path) -> Graph:
    layout = discover(dump_root)
    assert len(layout.ranks) == 1
    return build_graph(layout.ranks[0])
