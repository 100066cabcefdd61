"""For the heatmap tests: a small synthetic GPT dump (bench/make_synthetic_dump.py) and the
type of the ``open_db`` fixture."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from graphboard.store.reader import VisDb

MAKER = Path(__file__).resolve().parents[2] / "bench" / "make_synthetic_dump.py"
GPT_LAYERS = 3

OpenFn = Callable[[Path], AbstractContextManager[VisDb]]


def synthetic_gpt(folder: Path, variant: str, *, layers: int, ranks: int, steps: int) -> Path:
    """A dump root (step<s>/rank<r>) of the synthetic transformer."""
    subprocess.run(
        [
            *(sys.executable, str(MAKER), "--layers", str(layers), "--ranks", str(ranks)),
            *("--steps", str(steps), "--variant", variant, "--out", str(folder)),
        ],
        check=True,
        capture_output=True,
    )
    return folder
