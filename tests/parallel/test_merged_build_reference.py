"""graph_build's merged builds (the whole staged core: plan, the merge stage, rows, sink) against
msprobe's merged files of the same real dumps, cell by cell: every node, its type, parent,
children in order, node_order, micro step, parallel_merge_info, input and output display data,
and with -oc its overflow level. The file also opens as msprobe's tables (tb_nodes,
tb_stack, tb_config)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from parallel_dumps import LAYOUTS, DumpFn, ReferenceFn

from graphboard.merge.flags import parallel_options
from graphboard.pipeline import BuildOptions, run_build

COLUMNS = (
    "node_type",
    "up_node",
    "sub_nodes",
    "node_order",
    "micro_step_id",
    "parallel_merge_info",
    "input_data",
    "output_data",
    "overflow_level",
)
JSON_COLUMNS = {"sub_nodes", "parallel_merge_info", "input_data", "output_data"}


def _cells(path: Path) -> dict[tuple[int, str], dict[str, Any]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        query = f"SELECT step, rank, node_name, {', '.join(COLUMNS)} FROM tb_nodes"
        return {
            (rank, name): {
                column: json.loads(value or "[]") if column in JSON_COLUMNS else value
                for column, value in zip(COLUMNS, values, strict=True)
            }
            for _step, rank, name, *values in conn.execute(query)
        }


def _build(root: Path, name: str, out: Path, overflow_check: bool) -> Path:
    layout = LAYOUTS[name]
    parallel = parallel_options(
        rank_size=[layout.ranks], tp=[layout.tp], pp=[layout.pp], vpp=[layout.vpp], compare=False
    )
    options = BuildOptions(
        target=root, output_dir=out, overflow_check=overflow_check, parallel=parallel
    )
    return run_build(options).path


@pytest.mark.parametrize(
    ("name", "level", "overflow_check"),
    [
        ("tp2", "mix", False),
        ("sp", "mix", False),
        ("pp2", "mix", False),
        ("tp2pp2", "mix", True),
        ("tp2pp2", "L0", False),
        ("dp2tp2", "mix", False),
        ("pp2vpp2", "mix", True),
        ("pp2vpp2", "L0", False),
    ],
)
def test_a_merged_build_is_msprobes_file(
    name: str,
    level: str,
    overflow_check: bool,
    parallel_dump: DumpFn,
    parallel_reference: ReferenceFn,
    tmp_path: Path,
) -> None:
    made = parallel_dump(name, level)
    ours = _cells(_build(made.root, name, tmp_path, overflow_check))
    theirs = _cells(parallel_reference(name, level, *(["-oc"] if overflow_check else [])))
    assert sorted(ours.keys() - theirs.keys()) == []
    assert sorted(theirs.keys() - ours.keys()) == []
    assert sorted({rank for rank, _ in ours}) == [r.main_rank for r in _replicas(name)]
    differing = [
        (key, column, ours[key][column], theirs[key][column])
        for key in sorted(ours)
        for column in COLUMNS
        if ours[key][column] != theirs[key][column]
    ]
    assert differing == [], differing[:5]


def _replicas(name: str) -> list[Any]:
    from graphboard.merge.flags import ParallelFlags
    from graphboard.merge.layout import generated_replicas

    layout = LAYOUTS[name]
    return generated_replicas(ParallelFlags(layout.ranks, layout.tp, layout.pp))


def test_a_merged_build_keeps_no_cross_rank_links(parallel_dump: DumpFn, tmp_path: Path) -> None:
    """Replicas are not ranks: as msprobe, no communication op is linked across them (the
    links would name ranks that were merged away)."""
    path = _build(parallel_dump("dp2tp2").root, "dp2tp2", tmp_path, False)
    with sqlite3.connect(path) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        assert {"tb_nodes", "tb_stack", "tb_config"} <= tables
        if "gb_links" in tables:
            assert conn.execute("SELECT COUNT(*) FROM gb_links").fetchone() == (0,)
        meta = dict(conn.execute("SELECT key, value FROM gb_meta"))
    assert "not in the dump" not in json.dumps(meta)


def test_a_full_merge_is_msprobes_but_for_the_apis_msprobe_loses(
    parallel_dump: DumpFn, parallel_reference: ReferenceFn, tmp_path: Path
) -> None:
    """TP x PP x DP (msprobe's full strategy). msprobe names the between-module APIs of the
    second TP chain's own first stage as the main rank's, so they overwrite each other in its
    file; graphboard suffixes them ``_rank<r>`` (docs/differences.md) and keeps them. Every
    other cell is msprobe's, and the nodes both have come in msprobe's order."""
    made = parallel_dump("dp2tp2pp2", "mix")
    ours = _cells(_build(made.root, "dp2tp2pp2", tmp_path, False))
    theirs = _cells(parallel_reference("dp2tp2pp2", "mix"))
    assert sorted(theirs.keys() - ours.keys()) == []
    extra = sorted(ours.keys() - theirs.keys())
    collection = re.compile(r"^Apis_Between_Modules_Rank(\d+)\.\d+$")

    def suffixed_in_its_rank_collection(key: tuple[int, str]) -> bool:
        found = collection.match(ours[key]["up_node"])
        return found is not None and f"_rank{found.group(1)}." in key[1]

    assert extra and all(suffixed_in_its_rank_collection(key) for key in extra), extra[:5]
    renamed = {ours[key]["up_node"] for key in extra}
    differing = [
        (key, column)
        for key in sorted(theirs)
        for column in COLUMNS
        if column != "node_order"
        and not (column == "sub_nodes" and key[1] in renamed)
        and ours[key][column] != theirs[key][column]
    ]
    assert differing == [], differing[:5]
    for rank in sorted({rank for rank, _ in theirs}):
        shared = [key for key in theirs if key[0] == rank]
        by_ours = sorted(shared, key=lambda key: ours[key]["node_order"])
        by_theirs = sorted(shared, key=lambda key: theirs[key]["node_order"])
        assert by_ours == by_theirs
