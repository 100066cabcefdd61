"""Shared test fixtures: the real msprobe dumps in ../shared/fixtures and builds of them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixture_cases import FIXTURES, SHARED, BuildFn, fixture_path, reference_db
from graphboard.pipeline import BuildOptions, run_build

__all__ = ["FIXTURES", "SHARED", "BuildFn", "fixture_path", "reference_db"]

# FastAPI's TestClient sends "Host: testserver"; the server answers only to the names it knows
# (server/request_origin.py), so the tests' servers know that one too.
os.environ.setdefault("GRAPHBOARD_ALLOWED_HOSTS", '["testserver"]')


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuildFn:
    """Build (or compare) a fixture case once per session; returns the .vis.db path.

    ``built("convnet-stats", compare=True, overflow_check=True)``
    """
    cache: dict[tuple[object, ...], Path] = {}

    def build(case: str, compare: bool = True, **flags: object) -> Path:
        key = (case, compare, tuple(sorted(flags.items())))
        if key not in cache:
            root = fixture_path(case)
            target = root / "target" if (root / "target").exists() else root
            golden = root / "golden" if compare else None
            out = tmp_path_factory.mktemp(case.replace("/", "_"))
            result = run_build(BuildOptions(target=target, golden=golden, output_dir=out, **flags))  # type: ignore[arg-type]
            cache[key] = result.path
        return cache[key]

    return build
