"""A compare of a real overflowing fp16 run (issue 30): layer 1's MLP output past 65504, so its
statistics hold inf and -inf (Max inf, Min -inf, Mean NaN) and every node after it NaN, dumped
by msprobe's own dumper, against the same model in fp32, and against itself (inf and -inf on
both sides). It crashed before with "ValueError: -inf + inf in fsum" and wrote nothing; msprobe
builds both. Our file must hold msprobe's rows with its precision and overflow levels.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dtype_dumps import Dumps, dtype_dumps
from graphboard.pipeline import BuildOptions, run_build
from msprobe_runner import graph_visualize

__all__ = ["dtype_dumps"]

Row = tuple[str, int, int, str]


def _levels(path: Path) -> dict[Row, tuple[object, object]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {
            (side, step, rank, name): (precision, overflow)
            for side, step, rank, name, precision, overflow in conn.execute(
                "SELECT data_source, step, rank, node_name, precision_index, overflow_level"
                " FROM tb_nodes"
            )
        }


@pytest.mark.parametrize("golden", ["overflow-fp32", "overflow"])
def test_an_overflowing_fp16_compare_builds_msprobes_rows_and_levels(
    dtype_dumps: Dumps, tmp_path: Path, golden: str
) -> None:
    target = dtype_dumps.dump("msprobe", "gpt", 2, "overflow")
    golden_dump = dtype_dumps.dump("msprobe", "gpt", 2, golden)
    ours = run_build(
        BuildOptions(
            target=target, golden=golden_dump, output_dir=tmp_path / "ours", overflow_check=True
        )
    ).path
    theirs = graph_visualize(
        tmp_path / "msprobe", "-tp", str(target), "-gp", str(golden_dump), "-oc"
    )
    our_levels, their_levels = _levels(ours), _levels(theirs)
    assert our_levels.keys() == their_levels.keys()
    overflowing = [row for row, (_precision, level) in their_levels.items() if level]
    assert any(row[0] == "NPU" for row in overflowing), "the target should overflow"
    differing = {
        row: (our_levels[row], their_levels[row])
        for row in their_levels
        if our_levels[row] != their_levels[row]
    }
    assert not differing, (
        f"{len(differing)} rows differ from msprobe's: {list(differing.items())[:5]}"
    )
