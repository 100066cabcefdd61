"""Heatmap inputs: graphboard's compare of the shared fixtures and of a small synthetic GPT
(2 ranks x 2 steps), opened through the store's reader."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from trends_support import GPT_LAYERS, OpenFn, synthetic_gpt

from fixture_cases import BuildFn
from graphboard.pipeline import BuildOptions, run_build
from graphboard.store.reader import VisDb, open_vis_db


@pytest.fixture(scope="session")
def gpt_compare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("gpt")
    shape = {"layers": GPT_LAYERS, "ranks": 2, "steps": 2}
    golden = synthetic_gpt(work / "golden", "golden", **shape)
    target = synthetic_gpt(work / "target", "target", **shape)
    return run_build(BuildOptions(target=target, golden=golden, output_dir=work / "out")).path


@pytest.fixture(scope="session")
def ddp2_compare(built: BuildFn) -> Path:
    return built("convnet-ddp2", compare=True)


@pytest.fixture
def open_db(tmp_path: Path) -> Iterator[OpenFn]:
    def opened(path: Path) -> AbstractContextManager[VisDb]:
        return open_vis_db(path, tmp_path / "cache")

    yield opened
