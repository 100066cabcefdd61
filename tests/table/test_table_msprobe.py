"""The table against msprobe compare's own: the shared fixtures' results kept beside the test
(expected/, small), and GPT-like probe dumps of 2 and 48 layers compared by msprobe live
(slow; skipped without GRAPHBOARD_MSPROBE_BIN or msprobe on PATH)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpt_dumps import dump_pair
from table_support import MsprobeTable, assert_agrees, msprobe_compare

from fixture_cases import fixture_path
from graphboard.pipeline import BuildOptions, run_build
from graphboard.store.reader import open_vis_db
from graphboard.table.rows import CompareTable, build_table

EXPECTED = Path(__file__).with_name("expected")


def table_of(target: Path, golden: Path, out: Path) -> CompareTable:
    result = run_build(BuildOptions(target=target, golden=golden, output_dir=out))
    with open_vis_db(result.path, out) as db:
        return build_table(db, 0, 0)


@pytest.mark.parametrize("case", ["convnet-stats", "convnet-md5", "convnet-tensor"])
def test_fixture_tables_agree_with_msprobe_compare(tmp_path: Path, case: str) -> None:
    root = fixture_path(case)
    table = table_of(root / "target", root / "golden", tmp_path)
    kept = json.loads((EXPECTED / f"msprobe_compare_{case}.json").read_text())
    expected = MsprobeTable(kept["header"], {name: result for name, result in kept["rows"]})
    assert_agrees(table, expected, share=1.0)  # every Result, in fact
    # msprobe's row order, but for backward records graphboard places by the graph
    names = [name for name, _result in kept["rows"]]
    assert table.column("NPU Name")[:200] == names[:200]


@pytest.mark.slow
@pytest.mark.parametrize("task", ["statistics", "md5", "tensor"])
@pytest.mark.parametrize("blocks", [2, 48])
def test_gpt_tables_agree_with_msprobe_compare(tmp_path: Path, blocks: int, task: str) -> None:
    target, golden = dump_pair(tmp_path / "dumps", blocks, task)
    expected = msprobe_compare(
        target / "step0" / "rank0" / "dump.json",
        golden / "step0" / "rank0" / "dump.json",
        tmp_path / "msprobe",
    )
    table = table_of(target, golden, tmp_path / "ours")
    assert len(table) > 40 * blocks  # every layer's parameters, forward and backward
    assert_agrees(table, expected)
