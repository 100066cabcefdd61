"""The merge stage (TP, PP, TP+PP, DP replicas) in memory against msprobe's merged files of
the same real dumps: every node of the module hierarchy has msprobe's ``parallel_merge_info``
and merged statistics, and keeps each rank's own statistics beside them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from parallel_dumps import LAYOUTS, DumpFn, ReferenceFn

from graphboard.dump.layout import discover
from graphboard.graph.model import TARGET_SIDE
from graphboard.merge.flags import parallel_options
from graphboard.merge.plan import plan_merge
from graphboard.merge.stage import MergedGraph, merge_replica

STATISTICS = (("Max", "max"), ("Min", "min"), ("Mean", "mean"), ("Norm", "norm"))


def _reference(path: Path) -> dict[tuple[int, str], tuple[list[str], dict[str, Any]]]:
    rows: dict[tuple[int, str], tuple[list[str], dict[str, Any]]] = {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        for rank, name, info, inputs, outputs in conn.execute(
            "SELECT rank, node_name, parallel_merge_info, input_data, output_data FROM tb_nodes"
        ):
            data = {**json.loads(inputs or "{}"), **json.loads(outputs or "{}")}
            rows[rank, name] = (json.loads(info or "[]"), data)
    return rows


def _merged(made_root: Path, name: str) -> list[MergedGraph]:
    layout = LAYOUTS[name]
    options = parallel_options(
        rank_size=[layout.ranks], tp=[layout.tp], pp=[layout.pp], compare=False
    )
    assert options is not None
    plan = plan_merge(options, discover(made_root), None, [])
    return [
        merge_replica(options.target, task.target, task.target_ranks, TARGET_SIDE, task.step)
        for task in plan.tasks
    ]


def _shown(value: object) -> str:
    return "null" if value is None else str(value)  # as msprobe's display strings


@pytest.mark.parametrize(
    ("name", "level"),
    [
        ("tp2", "mix"),
        ("sp", "mix"),
        ("dp2tp2", "mix"),
        ("tp2", "L0"),
        ("pp2", "mix"),
        ("tp2pp2", "mix"),
        ("tp2pp2", "L0"),
    ],
)
def test_merged_statistics_and_provenance_are_msprobes(
    name: str, level: str, parallel_dump: DumpFn, parallel_reference: ReferenceFn
) -> None:
    reference = _reference(parallel_reference(name, level))
    differences: list[str] = []
    compared = merged_nodes = 0
    for merged in _merged(parallel_dump(name, level).root, name):
        rank = merged.graph.rank
        for node in merged.graph.walk():
            theirs = reference.get((rank, node.name))
            if theirs is None or node.parent is None:
                continue  # API collections: renamed across ranks (not merged yet)
            compared += 1
            info, data = theirs
            ours = merged.merges.get(node.name)
            if (ours.info if ours else []) != info:
                differences.append(
                    f"{node.name}: parallel_merge_info {ours.info if ours else []} != {info}"
                )
            merged_nodes += bool(info)
            for param in node.params or ():
                shown = data.get(param.full_name(node.name))
                if shown is None:
                    continue
                for label, field in STATISTICS:
                    if label in shown and _shown(getattr(param, field)) != shown[label]:
                        differences.append(
                            f"{node.name} {param.key} {label}: {getattr(param, field)} != {shown[label]}"
                        )
    assert compared > 100 and (merged_nodes > 50 or level == "L0" or LAYOUTS[name].tp == 1)
    assert differences == [], "\n".join(differences[:20])


def test_each_rank_keeps_its_own_statistics(parallel_dump: DumpFn) -> None:
    (merged,) = _merged(parallel_dump("tp2").root, "tp2")
    name = "Module.decoder.layers.0.self_attention.linear_proj.RowParallelLinear.forward.0"
    node = merged.graph.nodes[name]
    ranks = merged.merges[name].ranks["input.0"]
    assert [rank for rank, *_ in ranks] == [0, 1]
    maxima = [ranks[0][1], ranks[1][1]]
    merged_max = next(param.max for param in node.params or () if param.key == "input.0")
    assert merged_max == max(maxima) and maxima[0] != maxima[1]


def _structure(path: Path) -> dict[tuple[int, str], tuple[str, list[str], int]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {
            (rank, name): (parent or "", json.loads(children or "[]"), order)
            for rank, name, parent, children, order in conn.execute(
                "SELECT rank, node_name, up_node, sub_nodes, node_order FROM tb_nodes"
            )
        }


@pytest.mark.parametrize("name", ["tp2", "dp2tp2", "pp2", "tp2pp2", "sp"])
def test_merged_structure_is_msprobes(
    name: str, parallel_dump: DumpFn, parallel_reference: ReferenceFn
) -> None:
    """The same nodes, each under the same parent, children in the same order, numbered in
    the same node_order: the API collections of every rank gathered as msprobe does."""
    reference = _structure(parallel_reference(name))
    ours: dict[tuple[int, str], tuple[str, list[str], int]] = {}
    for merged in _merged(parallel_dump(name).root, name):
        for node in merged.graph.walk():
            parent = node.parent.name if node.parent is not None else ""
            children = [child.name for child in node.children]
            ours[merged.graph.rank, node.name] = (parent, children, node.order)
    assert sorted(ours.keys() - reference.keys()) == []
    assert sorted(reference.keys() - ours.keys()) == []
    differing = [key for key in sorted(ours) if ours[key] != reference[key]]
    assert differing == [], [(key, ours[key], reference[key]) for key in differing[:5]]
