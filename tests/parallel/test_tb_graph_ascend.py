"""graph_build's files open in tb_graph_ascend (msprobe's TensorBoard plugin, version 8.3.2,
run as an external program): the merged TP2 build, the merged TP2-vs-TP1 compare, and a plain
compare of a shared fixture. Through the plugin's own routes, as its viewer asks them: the run
is listed, the graph and its config load, the root's children are the ones graphboard's reader
gives, a node's detail comes back with its input and output data (and, in a compare, its
counterpart's), the node list is complete. One TensorBoard for the module."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from parallel_dumps import LAYOUTS, DumpFn, compare_flags

from fixture_cases import fixture_path
from graphboard.cli import graph_build_main
from graphboard.store.reader import GraphKey, open_vis_db, tree
from tb_graph_ascend_runner import TbGraphAscend


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TbGraphAscend]:
    running = TbGraphAscend(tmp_path_factory.mktemp("tb-graph-ascend") / "logdir")
    try:
        yield running
    finally:
        running.stop()


def _graph_build(out: Path, *argv: str | Path) -> Path:
    out.mkdir()
    assert graph_build_main([*map(str, argv), "-o", str(out)]) == 0
    (written,) = out.glob("*.vis.db")
    return written


def _ours(path: Path, rank: int, side: str, cache: Path) -> tuple[list[str], int]:
    """graphboard's own reading of a graph: the root's children in order, and its node count."""
    with open_vis_db(path, cache) as db:
        key = GraphKey(side, 0, rank)
        root = tree.root(db, key)
        assert root is not None, f"{path.name}: no {side} root at rank {rank}"
        children = [name for name, _type in tree.child_names(db, key, root.name)]
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM tb_nodes WHERE step = 0 AND rank = ? AND data_source = ?",
            (rank, side),
        ).fetchone()
    return children, int(count)


def _a_node_with_data(
    path: Path, rank: int, matched: bool, merged: bool
) -> tuple[str, dict[str, Any]]:
    """The first target node (in node_order) with input and output data (for a compare, with
    a counterpart; for a merged file, merged from several ranks), with its stored row."""
    query = (
        "SELECT node_name, input_data, output_data, matched_node_link, parallel_merge_info"
        " FROM tb_nodes WHERE step = 0 AND rank = ? AND data_source = 'NPU'"
        " AND input_data NOT IN ('', '{}') AND output_data NOT IN ('', '{}')"
        + (" AND matched_node_link NOT IN ('', '[]')" if matched else "")
        + (" AND parallel_merge_info NOT IN ('', '[]')" if merged else "")
        + " ORDER BY node_order LIMIT 1"
    )
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        row = conn.execute(query, (rank,)).fetchone()
    assert row is not None, f"{path.name}: no target node with data at rank {rank}"
    name, *cells = row
    columns = ("input_data", "output_data", "matched_node_link", "parallel_merge_info")
    return name, {
        column: json.loads(cell or "null") for column, cell in zip(columns, cells, strict=True)
    }


def _leaves_with_a_verdict(path: Path, rank: int) -> list[str]:
    """Target leaves with a precision_index, in node_order, as graphboard wrote them."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT node_name, sub_nodes, precision_index FROM tb_nodes"
            " WHERE step = 0 AND rank = ? AND data_source = 'NPU' ORDER BY node_order",
            (rank,),
        ).fetchall()
    return [
        name
        for name, children, precision in rows
        if not json.loads(children or "[]") and precision is not None and 0 <= float(precision) <= 1
    ]


def _opens(
    board: TbGraphAscend, path: Path, run: str, *, compare: bool, merged: bool, cache: Path
) -> None:
    graph = board.open(path, run)
    assert graph.config["isSingleGraph"] is (not compare), graph.config
    assert graph.config["ranks"], f"{path.name}: the plugin finds no rank in tb_config"
    rank = graph.config["ranks"][0]
    assert graph.meta["rank"] == rank
    sides = ("NPU", "Bench") if compare else ("NPU",)
    for side in sides:
        children, count = _ours(path, rank, side, cache)
        assert children, f"{path.name}: the {side} root has no children"
        assert graph.root_children(side) == children
        listed = graph.node_list()["npuNodeList" if side == "NPU" else "benchNodeList"]
        assert len(listed) == count
    name, stored = _a_node_with_data(path, rank, matched=compare, merged=merged)
    detail = graph.node_detail(name)
    shown = detail["npu"]
    # The plugin joins tb_nodes to tb_stack on stack_id: a node without its stack row is empty.
    assert shown, f"{name}: the plugin's node detail is empty"
    assert shown["node_name"] == name
    assert shown["input_data"] == stored["input_data"]
    assert shown["output_data"] == stored["output_data"]
    assert shown["stack_info"] is not None
    assert shown["parallel_merge_info"] == (stored["parallel_merge_info"] or [])
    assert bool(shown["parallel_merge_info"]) is merged
    if compare:
        counterpart = detail["bench"]
        assert counterpart, f"{name}: the plugin found no counterpart"
        assert counterpart["node_name"] == stored["matched_node_link"][-1]
        assert counterpart["input_data"] and counterpart["output_data"]
        # The search compares precision_index as a number: a value stored as text is missed.
        with_a_verdict = _leaves_with_a_verdict(path, rank)
        assert with_a_verdict, f"{path.name}: no target leaf with a precision_index"
        assert graph.search_by_precision([[0, 1]]) == with_a_verdict


def test_a_merged_tp2_build_opens(
    board: TbGraphAscend, parallel_dump: DumpFn, tmp_path: Path
) -> None:
    made = parallel_dump("tp2", "mix")
    path = _graph_build(tmp_path / "out", "-tp", made.root, *LAYOUTS["tp2"].merge_flags())
    _opens(board, path, "merged-tp2", compare=False, merged=True, cache=tmp_path / "cache")


def test_a_merged_tp2_against_tp1_compare_opens(
    board: TbGraphAscend, parallel_dump: DumpFn, tmp_path: Path
) -> None:
    target, golden = parallel_dump("tp2", "mix"), parallel_dump("tp1", "mix")
    flags = compare_flags(LAYOUTS["tp2"], LAYOUTS["tp1"])
    path = _graph_build(tmp_path / "out", "-tp", target.root, "-gp", golden.root, *flags)
    _opens(board, path, "merged-tp2-vs-tp1", compare=True, merged=True, cache=tmp_path / "cache")


def test_a_plain_compare_opens(board: TbGraphAscend, tmp_path: Path) -> None:
    case = fixture_path("convnet-stats")
    path = _graph_build(tmp_path / "out", "-tp", case / "target", "-gp", case / "golden")
    _opens(board, path, "convnet-stats", compare=True, merged=False, cache=tmp_path / "cache")
