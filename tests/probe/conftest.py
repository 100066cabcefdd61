"""Dumps shared by several probe test modules (each costs a few seconds to produce)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp
from probe_dist_worker import WORLD_SIZE, run_rank


@pytest.fixture(scope="session")
def ddp_dump_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-rank gloo run dumped at level mix: ``<root>/step0/rank{0,1}``."""
    if not dist.is_available():
        pytest.skip("torch built without torch.distributed")
    root = tmp_path_factory.mktemp("ddp")
    store = root.parent / f"{root.name}.store"  # a file store: no port to race for
    mp.spawn(run_rank, args=(f"file://{store}", str(root / "dump")), nprocs=WORLD_SIZE, join=True)
    return root / "dump"
