"""A mistyped ``--rank_size`` fails fast with one line, before allocating anything sized by
it (issue 30, point 5: 400000000 allocated 15.7 GB before its error, 10**12 was a
MemoryError traceback)."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

import pytest

from fixture_cases import fixture_path
from test_cli import COMMAND

MEMORY_LIMIT = 2 << 30  # far below what a list of 400M ranks takes, far above a real start


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.mark.parametrize("rank_size", [400_000_000, 10**12])
def test_a_huge_rank_size_fails_in_one_line(rank_size: int, tmp_path: Path) -> None:
    dump = fixture_path("convnet-ddp2", "target")
    done = subprocess.run(
        [
            *COMMAND,
            "-tp",
            str(dump),
            "-o",
            str(tmp_path / "out"),
            "--rank_size",
            str(rank_size),
            "--tp",
            "1",
            "--pp",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("graph_build: error: ")
    assert f"holds 2 rank folder(s) (rank0, rank1) but --rank_size {rank_size}" in lines[0]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
