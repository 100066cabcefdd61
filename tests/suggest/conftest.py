"""Renamed compares made in the session from dumps graphboard's probe writes (graphboard.demo's
transformer), and the shared layer-mapping fixture built without its mapping."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from renamed_dumps import RenamedCompare, renamed_compare

DIFFER_IN = {2: 1, 48: 30}  # the block whose GELU the target computes with tanh


@pytest.fixture(scope="session")
def renamed(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], RenamedCompare]:
    """``renamed(blocks)``: the pair of compares for that many blocks, made once a session."""
    cache: dict[int, RenamedCompare] = {}

    def make(blocks: int) -> RenamedCompare:
        if blocks not in cache:
            root = tmp_path_factory.mktemp(f"renamed-{blocks}")
            cache[blocks] = renamed_compare(root, blocks, DIFFER_IN[blocks])
        return cache[blocks]

    return make


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"
