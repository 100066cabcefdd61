"""``graphboard demo``: a real model dumped twice, compared, and served, in about a minute.

The golden run trains a small transformer for one step in float32. The target run is the
same model with two deliberate changes, the kind a port to new hardware brings: block 0's
GELU uses the tanh approximation, and block 1's attention softmax is computed in bfloat16.
Both runs are dumped with graphboard's probe and compared with the overflow check on; the
viewer then shows where the numbers start to differ.

Each demo replaces the one before: the dumps are made afresh and, once the new compare is
written, the earlier files the demo made from the same folder are removed, so the viewer's
``/`` (the first file) opens the new one. A file is the demo's when its ``gb_meta`` says it
was made by ``graphboard demo`` from this folder's dumps; anything else is left alone.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from graphboard import probe
from graphboard.pipeline import BuildOptions, BuildResult, run_build

VOCAB, WIDTH, HEADS, BLOCKS, BATCH, TOKENS = 64, 32, 4, 2, 4, 16


@dataclass(frozen=True, slots=True)
class Variant:
    gelu_tanh_in_block: int | None = None
    bf16_softmax_in_block: int | None = None


GOLDEN = Variant()
TARGET = Variant(gelu_tanh_in_block=0, bf16_softmax_in_block=1)


class Attention(nn.Module):
    def __init__(self, bf16_softmax: bool) -> None:
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.bf16_softmax = bf16_softmax

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, _ = x.shape
        q, k, v = self.qkv(x).view(batch, tokens, 3, HEADS, WIDTH // HEADS).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-2, -1)) / (WIDTH // HEADS) ** 0.5
        if self.bf16_softmax:  # the "new kernel": softmax in low precision
            weights = torch.softmax(scores.to(torch.bfloat16), dim=-1).to(torch.float32)
        else:
            weights = torch.softmax(scores, dim=-1)
        mixed = torch.matmul(weights, v).transpose(1, 2).reshape(batch, tokens, WIDTH)
        return self.proj(mixed)


class Block(nn.Module):
    def __init__(self, gelu_tanh: bool, bf16_softmax: bool) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH)
        self.attention = Attention(bf16_softmax)
        self.norm2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(
            nn.Linear(WIDTH, 4 * WIDTH),
            nn.GELU(approximate="tanh" if gelu_tanh else "none"),
            nn.Linear(4 * WIDTH, WIDTH),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    def __init__(self, variant: Variant, blocks: int = BLOCKS) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList(
            Block(variant.gelu_tanh_in_block == index, variant.bf16_softmax_in_block == index)
            for index in range(blocks)
        )
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def train_one_step(
    variant: Variant, dump_root: Path, blocks: int = BLOCKS, task: str = "statistics"
) -> float:
    """One SGD step, dumped (``task``: statistics, md5 or tensor); the same seed gives both
    runs the same weights and data."""
    torch.manual_seed(1234)
    model = TinyTransformer(variant, blocks)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    tokens = torch.randint(0, VOCAB, (BATCH, TOKENS))
    labels = torch.randint(0, VOCAB, (BATCH, TOKENS))
    with probe.dump(model, dump_root, step=0, level="mix", task=task):
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))
        loss.backward()
        optimizer.step()
    return float(loss.detach())


DEMO_COMMAND = ["graphboard", "demo"]


def build_demo(out: Path) -> BuildResult:
    """Dump both runs into ``out``, compare them into ``out/graphs`` and remove the earlier
    demo files there (:func:`earlier_demo_files`)."""
    for run in ("golden", "target"):
        shutil.rmtree(out / run, ignore_errors=True)
    golden_loss = train_one_step(GOLDEN, out / "golden")
    target_loss = train_one_step(TARGET, out / "target")
    print(f"demo: golden loss {golden_loss:.6f}, target loss {target_loss:.6f}")
    result = run_build(
        BuildOptions(
            target=out / "target",
            golden=out / "golden",
            output_dir=out / "graphs",
            overflow_check=True,
            command=DEMO_COMMAND,
        )
    )
    for earlier in earlier_demo_files(out, result.path):
        for part in (earlier, *(earlier.with_name(earlier.name + s) for s in SIDE_FILES)):
            part.unlink(missing_ok=True)
        print(f"demo: removed the earlier demo file {earlier.name}")
    return result


SIDE_FILES = ("-wal", "-shm", "-journal")  # SQLite's companions of a file


def earlier_demo_files(out: Path, keep: Path) -> list[Path]:
    """The .vis.db files in ``out/graphs`` other than ``keep`` that a demo made from
    ``out``'s dumps (gb_meta's command and target), read without writing; a file that cannot
    be read so is not the demo's."""
    target = str((out / "target").resolve())  # as gb_meta stores it
    found = []
    for path in sorted((out / "graphs").glob("*.vis.db")):
        if path == keep:
            continue
        try:
            conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
            try:
                meta = dict(
                    conn.execute(
                        "SELECT key, value FROM gb_meta WHERE key IN ('command', 'inputs')"
                    )
                )
            finally:
                conn.close()
            made_by = json.loads(meta.get("command", "null"))
            inputs = json.loads(meta.get("inputs", "null")) or {}
        except (sqlite3.Error, ValueError):
            continue
        if made_by == DEMO_COMMAND and inputs.get("target") == target:
            found.append(path)
    return found
