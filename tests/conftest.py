"""Shared test fixtures: the real msprobe dumps in ../shared/fixtures and builds of them."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from graphboard.pipeline import BuildOptions, run_build

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GRAPHBOARD_SHARED", REPO.parent / "shared"))
FIXTURES = SHARED / "fixtures"


def fixture_path(*parts: str) -> Path:
    path = FIXTURES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared fixture {path} is not available")
    return path


def reference_db(case: str, folder: str = "reference") -> Path:
    """msprobe's own .vis.db for a fixture case (its name carries a timestamp)."""
    found = sorted(fixture_path(case, folder).glob("*.vis.db"))
    assert len(found) == 1, f"expected one .vis.db in {case}/{folder}, found {found}"
    return found[0]


BuildFn = Callable[..., Path]


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
