"""Where the shared msprobe fixtures are, importable from any test: ``from fixture_cases import ...``.

(``from conftest import`` is ambiguous once several folders have a conftest.py.)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

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
