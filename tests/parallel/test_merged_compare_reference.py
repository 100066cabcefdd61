"""Merged compares (both sides merged with their own flags, fuzzy matching forced, msprobe's
parallel-merge rule set) against msprobe's merged compares of the same real dumps: every
target node's precision_index, overflow level and match; the TP2 run with one wrong layer
shows that layer first against the TP1 golden."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from parallel_dumps import LAYOUTS, CompareFn, DumpFn

from graphboard.merge.flags import parallel_options
from graphboard.pipeline import BuildOptions, run_build

# docs/differences.md, "Parallel merge": a collection of a rank the golden lacks is unmatched
# (no verdict); msprobe gives it 0 without a counterpart. So are the gathered collections the
# golden lacks (a VPP target has one a chunk hand-over, its golden fewer).
RANK_COLLECTION = re.compile(r"^Apis_Between_Modules_(Rank\d+|All_Ranks)\.\d+$")


def _documented(name: str, ours: tuple[Any, ...], theirs: tuple[Any, ...]) -> bool:
    return (
        bool(RANK_COLLECTION.match(name)) and ours == (None, None, []) and theirs == (0, None, [])
    )


def _compare(parallel_dump: DumpFn, target: str, golden: str, out: Path) -> Path:
    first, second = LAYOUTS[target], LAYOUTS[golden]
    parallel = parallel_options(
        rank_size=[first.ranks, second.ranks],
        tp=[first.tp, second.tp],
        pp=[first.pp, second.pp],
        vpp=[first.vpp, second.vpp],
        compare=True,
    )
    options = BuildOptions(
        target=parallel_dump(target, "mix").root,
        golden=parallel_dump(golden, "mix").root,
        output_dir=out,
        parallel=parallel,
    )
    return run_build(options).path


def _verdicts(path: Path) -> dict[tuple[int, str], tuple[Any, ...]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {
            (rank, name): (precision, overflow, json.loads(link or "[]"))
            for rank, name, precision, overflow, link in conn.execute(
                "SELECT rank, node_name, precision_index, overflow_level, matched_node_link"
                " FROM tb_nodes WHERE data_source = 'NPU'"
            )
        }


@pytest.mark.parametrize(
    ("target", "golden"),
    [
        ("tp2-wrong", "tp1"),
        ("tp2pp2", "tp1"),
        ("pp2", "tp2"),
        ("pp2vpp2", "pp2-listed"),
        ("pp2vpp2", "tp1-listed"),
    ],
)
def test_a_merged_compare_is_msprobes(
    target: str,
    golden: str,
    parallel_dump: DumpFn,
    parallel_compare_reference: CompareFn,
    tmp_path: Path,
) -> None:
    ours = _verdicts(_compare(parallel_dump, target, golden, tmp_path))
    theirs = _verdicts(parallel_compare_reference(target, golden, "mix"))
    assert ours.keys() == theirs.keys()
    differing = [
        (key, ours[key], theirs[key])
        for key in sorted(ours)
        if ours[key] != theirs[key] and not _documented(key[1], ours[key], theirs[key])
    ]
    assert differing == [], differing[:5]
    assert sum(1 for verdict in ours.values() if verdict[0] is not None) > 100


def test_the_wrong_layer_is_the_first_error(parallel_dump: DumpFn, tmp_path: Path) -> None:
    path = _compare(parallel_dump, "tp2-wrong", "tp1", tmp_path)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        (first,) = conn.execute(
            "SELECT first_error FROM gb_graphs WHERE data_source = 'NPU'"
        ).fetchone()
    assert first == "Module.decoder.layers.1.mlp.MLP.forward.0"
