"""A small, always-run version of bench/bench_uploads.py: concurrent uploads against a real
``graphboard serve``; every job completes, none is lost (also across a kill -9 restart)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_cases import fixture_path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench(*args: str) -> dict[str, object]:
    fixture_path("convnet-stats")
    done = subprocess.run(
        [sys.executable, str(BENCH / "bench_uploads.py"), "--json", *args],
        cwd=BENCH,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    figures: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\nbench_uploads {' '.join(args)}: {figures}")
    return figures


def test_concurrent_uploads_all_complete() -> None:
    figures = _bench("--uploads", "8")
    assert (figures["accepted"], figures["done"], figures["failed"], figures["lost"]) == (
        8,
        8,
        0,
        0,
    )


@pytest.mark.slow
def test_concurrent_uploads_survive_a_killed_server() -> None:
    figures = _bench("--uploads", "8", "--restart")
    assert figures["restarted"] is True
    assert (figures["done"], figures["lost"]) == (8, 0)
