"""GPT-like dump pairs for the table tests: the demo's transformer, widened to ``blocks``
layers, dumped by graphboard's probe (golden plain, target with the demo's two changes)."""

from __future__ import annotations

from pathlib import Path

from graphboard.demo import GOLDEN, TARGET, train_one_step


def dump_pair(root: Path, blocks: int, task: str) -> tuple[Path, Path]:
    """(target, golden) dump roots of one step, each holding step0/rank0."""
    train_one_step(GOLDEN, root / "golden", blocks, task)
    train_one_step(TARGET, root / "target", blocks, task)
    return root / "target", root / "golden"
