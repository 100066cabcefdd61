"""The table's rows from real files: graphboard's builds of the shared fixtures and msprobe's
own .vis.db files, in each data mode."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

from fixture_cases import BuildFn, reference_db
from graphboard.compare.result import DataMode
from graphboard.store.reader import open_vis_db
from graphboard.table.columns import STARTS_HERE, msprobe_columns, table_columns
from graphboard.table.rows import NA, CompareTable, TableError, TableTooSlow, build_table


def table(path: Path, cache: Path) -> CompareTable:
    with open_vis_db(path, cache) as db:
        return build_table(db, 0, 0)


def rows_of(found: CompareTable) -> list[dict[str, str]]:
    return [dict(zip(found.columns, cells, strict=True)) for cells in found.cells]


def test_statistics_rows_carry_the_stored_values(built: BuildFn, tmp_path: Path) -> None:
    found = table(built("convnet-stats"), tmp_path)
    assert found.mode is DataMode.SUMMARY
    assert found.columns == table_columns(DataMode.SUMMARY)
    rows = {row["NPU Name"]: row for row in rows_of(found)}
    approximate = rows["Functional.gelu.0.forward.input.approximate"]
    assert approximate["Result"] == "error"  # tanh against none: scalar arguments differ
    assert approximate["NPU max"] == "tanh"
    gelu_in = rows["Functional.gelu.0.forward.input.0"]
    assert gelu_in["NPU Dtype"] == "torch.float32" and gelu_in["NPU Tensor Shape"] == "[4, 32]"
    assert gelu_in["Max diff"] == "2.562999725341797e-05"
    assert gelu_in["Bench max"] == "1.7663465738296509"
    assert found.nodes[found.column("NPU Name").index("Functional.gelu.0.forward.input.0")] == (
        "Functional.gelu.0.forward"
    )


def test_a_null_leaf_passes_as_msprobe_passes_it(built: BuildFn, tmp_path: Path) -> None:
    rows = {row["NPU Name"]: row for row in rows_of(table(built("convnet-stats"), tmp_path))}
    bias = rows["Functional.conv2d.0.forward.input.2"]  # bias=None
    assert (bias["Requires_grad Consistent"], bias["Result"]) == ("True", "pass")
    assert bias["NPU Dtype"] == NA


def test_the_stack_is_on_each_node_s_first_row_only(built: BuildFn, tmp_path: Path) -> None:
    found = table(built("convnet-stats"), tmp_path)
    stacks = found.column("NPU_Stack_Info")
    first_rows = [i for i, node in enumerate(found.nodes) if i == 0 or found.nodes[i - 1] != node]
    assert all(stacks[i] == NA for i in range(len(found)) if i not in set(first_rows))
    frames = ast.literal_eval(stacks[0])  # str() of the frame list, as msprobe writes it
    assert isinstance(frames, list) and frames[0].startswith("File ")


def test_divergence_marks_the_rows_of_the_node_where_it_starts(
    built: BuildFn, tmp_path: Path
) -> None:
    found = table(built("convnet-stats"), tmp_path)
    marked = {
        node for node, mark in zip(found.nodes, found.column(STARTS_HERE), strict=True) if mark
    }
    assert "Functional.gelu.0.forward" in marked  # its inputs agree, its argument does not
    assert set(found.column(STARTS_HERE)) <= {"", "warning", "error"}
    for node, mark in zip(found.nodes, found.column(STARTS_HERE), strict=True):
        assert bool(mark) == (node in marked)


def test_tensor_rows_name_both_files(built: BuildFn, tmp_path: Path) -> None:
    found = table(built("convnet-tensor"), tmp_path)
    assert found.columns[: len(msprobe_columns(DataMode.TENSOR))] == msprobe_columns(
        DataMode.TENSOR
    )
    rows = {row["NPU Name"]: row for row in rows_of(found)}
    row = rows["Functional.conv2d.0.forward.input.0"]
    assert row["Data_name"] == str(
        ["Functional.conv2d.0.forward.input.0.pt", "Functional.conv2d.0.forward.input.0.pt"]
    )
    assert row["Cosine"] == "1.0"
    assert rows["Functional.conv2d.0.forward.input.2"]["Data_name"] == str(["-1", "-1"])


def test_unmatched_nodes_have_no_bench_side(built: BuildFn, tmp_path: Path) -> None:
    rows = rows_of(table(built("layer-mapping"), tmp_path))
    renamed = [row for row in rows if ".conv_a." in row["NPU Name"]]
    assert renamed
    for row in renamed:
        assert row["Bench Name"] == NA and row["Bench max"] == NA
        # msprobe's cells where nothing was compared
        assert (row["Requires_grad Consistent"], row["Result"], row["Err_message"]) == (
            "False",
            "pass",
            "[]",
        )


def test_msprobe_s_own_file_gives_the_same_rows(tmp_path: Path) -> None:
    found = table(reference_db("convnet-stats", "reference"), tmp_path)
    rows = {row["NPU Name"]: row for row in rows_of(found)}
    assert rows["Functional.gelu.0.forward.input.approximate"]["Result"] == "error"
    assert len(found) > 300


def test_a_build_has_no_table(built: BuildFn, tmp_path: Path) -> None:
    with (
        open_vis_db(built("convnet-stats", compare=False), tmp_path) as db,
        pytest.raises(TableError, match=r"a build, not a compare"),
    ):
        build_table(db, 0, 0)


def test_an_absent_graph_is_named(built: BuildFn, tmp_path: Path) -> None:
    with (
        open_vis_db(built("convnet-stats"), tmp_path) as db,
        pytest.raises(TableError, match=r"no graph for step 3, rank 0 \(steps \[0\]"),
    ):
        build_table(db, 3, 0)


def test_a_build_past_its_deadline_stops(built: BuildFn, tmp_path: Path) -> None:
    with (
        open_vis_db(built("convnet-stats"), tmp_path) as db,
        pytest.raises(TableTooSlow, match=r"step 0, rank 0 took too long"),
    ):
        build_table(db, 0, 0, deadline=time.monotonic() - 1)
