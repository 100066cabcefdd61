"""Each rank's own statistics of a merged node (gb_rank_stats) from real TP2 and TP2xPP2 dumps:
every stored value is the rank's own dump.json statistic (read here, not through graphboard's
parser), an unmerged build has no such table, and the node API serves the breakdown on both
sides of a merged compare."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from parallel_dumps import LAYOUTS, DumpFn

from graphboard.merge.flags import parallel_options
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.app import create_app
from graphboard.server.settings import Settings
from graphboard.store import rank_stats

LAYER = re.compile(r"(layers\.)(\d+)(\.)")
RANK_SUFFIX = re.compile(r"^([^.]+\.[^.]+)_rank\d+\.")
Stats = tuple[Any, Any, Any, Any]


def _merged_build(parallel_dump: DumpFn, name: str, out: Path) -> Path:
    layout = LAYOUTS[name]
    parallel = parallel_options(
        rank_size=[layout.ranks], tp=[layout.tp], pp=[layout.pp], compare=False
    )
    options = BuildOptions(
        target=parallel_dump(name, "mix").root, output_dir=out, parallel=parallel
    )
    return run_build(options).path


def _flat(value: Any, key: str, out: dict[str, Stats], grad: bool = False) -> None:
    """A dump.json record's leaves by msprobe's parameter key (input.0, output.0.1,
    parameters.weight; a parameters_grad record's ``weight``), each as (Max, Min, Mean, Norm)."""
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        out[key] = (value.get("Max"), value.get("Min"), value.get("Mean"), value.get("Norm"))
    elif isinstance(value, dict):
        for name, item in value.items():
            _flat(item, f"{key}.{name}" if key else name, out, grad)
    elif isinstance(value, list) and grad and len(value) == 1:
        _flat(value[0], key, out, grad)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _flat(item, f"{key}.{index}", out, grad)


def _rank_records(root: Path, rank: int) -> dict[str, dict[str, Stats]]:
    data = json.loads((root / "step0" / f"rank{rank}" / "dump.json").read_text())["data"]
    records: dict[str, dict[str, Stats]] = {}
    for name, record in data.items():
        leaves: dict[str, Stats] = {}
        if "parameters_grad" in name:
            _flat(record, "", leaves, grad=True)
        else:
            for section, prefix in (
                ("input_args", "input"),
                ("input_kwargs", "input"),
                ("input", "input"),  # a backward record
                ("output", "output"),
                ("parameters", "parameters"),
            ):
                if record.get(section) is not None:
                    _flat(record[section], prefix, leaves)
        records[name] = leaves
    return records


def _layers(records: dict[str, dict[str, Stats]]) -> int:
    return len({int(found.group(2)) for name in records for found in LAYER.finditer(name)})


def _dumped_name(name: str, offset: int) -> str:
    """The name a merged node had in its rank's dump: a later pipeline stage's layers were
    renumbered after the earlier stages' and its APIs suffixed ``_rank<r>`` (merge/pp.py)."""
    name = RANK_SUFFIX.sub(r"\1.", name)
    return LAYER.sub(lambda found: f"{found[1]}{int(found[2]) - offset}{found[3]}", name)


def _stored(path: Path) -> dict[tuple[str, str], dict[str, list[Any]]]:
    """(graph_id, node name) -> parameter key -> [(rank, Max, Min, Mean, Norm)]."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        names = {
            (graph_id, order): name
            for graph_id, order, name in conn.execute(
                "SELECT graph_id, node_order, node_name FROM tb_nodes"
            )
        }
        found: dict[tuple[str, str], dict[str, list[Any]]] = {}
        for graph_id, data in conn.execute(f"SELECT graph_id, data FROM {rank_stats.TABLE}"):
            for order, ranks in rank_stats.decode(data).items():
                found[graph_id, names[graph_id, order]] = ranks
        return found


# dp2tp2: two replicas, two task parts: the table comes through the part merge
@pytest.mark.parametrize("name", ["tp2", "tp2pp2", "dp2tp2"])
def test_each_ranks_stored_statistics_are_its_own_dump(
    name: str, parallel_dump: DumpFn, tmp_path: Path
) -> None:
    layout = LAYOUTS[name]
    root = parallel_dump(name, "mix").root
    stored = _stored(_merged_build(parallel_dump, name, tmp_path))
    records = {rank: _rank_records(root, rank) for rank in range(layout.ranks)}
    first_stage_layers = _layers(records[0])
    checked, ranks_seen, mismatched = 0, set(), []
    for (_graph, node), by_key in stored.items():
        for key, entries in by_key.items():
            assert len(entries) == layout.tp, (node, key, entries)
            for rank, *statistics in entries:
                stage = (rank // layout.tp) % layout.pp
                dumped = _dumped_name(node, first_stage_layers * stage)
                own = records[rank][dumped][key]
                checked += 1
                ranks_seen.add(rank)
                if tuple(statistics) != own:
                    mismatched.append((node, key, rank, statistics, own))
    assert mismatched == [], mismatched[:3]
    assert checked > 100
    assert ranks_seen == set(range(layout.ranks))
    assert {graph for graph, _node in stored} == {
        f"NPU_0_{rank}" for rank in range(0, layout.ranks, layout.tp * layout.pp)
    }


def test_an_unmerged_build_has_no_rank_statistics(parallel_dump: DumpFn, tmp_path: Path) -> None:
    path = run_build(
        BuildOptions(target=parallel_dump("tp2", "mix").root, output_dir=tmp_path)
    ).path
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert rank_stats.TABLE not in tables
    assert "gb_params" in tables  # a graphboard file, only without the breakdown


def _number(value: Any) -> Any:
    return value if value is None or isinstance(value, int | float) else str(value).lower()


def test_a_merged_compare_serves_both_sides_breakdowns(
    parallel_dump: DumpFn, tmp_path: Path
) -> None:
    """tp2pp2 against tp2, both merged: a node merged on both sides gets, per parameter, each
    side's ranks beside its merged statistics, as stored."""
    target, golden = LAYOUTS["tp2pp2"], LAYOUTS["tp2"]
    parallel = parallel_options(
        rank_size=[target.ranks, golden.ranks],
        tp=[target.tp, golden.tp],
        pp=[target.pp, golden.pp],
        compare=True,
    )
    data = tmp_path / "data"
    (data / "merged").mkdir(parents=True)
    path = run_build(
        BuildOptions(
            target=parallel_dump("tp2pp2", "mix").root,
            golden=parallel_dump("tp2", "mix").root,
            output_dir=tmp_path / "out",
            parallel=parallel,
        )
    ).path
    path.rename(data / "merged" / "tp2pp2-vs-tp2.vis.db")
    stored = _stored(data / "merged" / "tp2pp2-vs-tp2.vis.db")
    both = sorted(
        node
        for graph, node in stored
        if graph == "NPU_0_0" and ("Bench_0_0", node) in stored and "ParallelLinear" in node
    )
    assert both, "no node merged on both sides"
    node = both[0]
    with TestClient(create_app(Settings(data_dir=data))) as client:
        response = client.get(
            "/api/graphs/merged/tp2pp2-vs-tp2/node",
            params={"name": node, "side": "NPU", "step": 0, "rank": 0},
        )
    assert response.status_code == 200, response.text
    rows = response.json()["rows"]
    for side, graph in (("target", "NPU_0_0"), ("golden", "Bench_0_0")):
        served = {
            row["key"]: row[side]["ranks"]
            for row in rows
            if row[side] is not None and row[side]["ranks"] is not None
        }
        expected = {
            key: [
                {
                    "rank": rank,
                    "max": _number(top),
                    "min": _number(bottom),
                    "mean": _number(mean),
                    "norm": _number(norm),
                }
                for rank, top, bottom, mean, norm in entries
            ]
            for key, entries in stored[graph, node].items()
        }
        assert served == expected, side
        assert all(row[side]["stats"] is not None for row in rows if row[side] is not None)
    unmerged = [row for row in rows if row["target"] and row["target"]["ranks"] is None]
    assert all(row["key"] not in stored["NPU_0_0", node] for row in unmerged)
