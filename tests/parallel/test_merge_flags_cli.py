"""graph_build's parallel-merge flags on real parallel dumps: every misfit between the flags and
the rank folders a named one-line error before any work, an unequal data-parallel compare
paired replica by replica with a warning."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from parallel_dumps import DumpFn

from dumpmaker import assert_nothing_written, output_folder
from graphboard.dump.layout import discover
from graphboard.merge.flags import parallel_options
from graphboard.merge.plan import plan_merge
from test_cli import _error_line, graph_build


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return output_folder(tmp_path)


def test_rank_size_against_the_ranks_found(parallel_dump: DumpFn, out: Path) -> None:
    root = parallel_dump("tp2").root
    run = graph_build("-tp", root, "-o", out, "--rank_size", "4", "--tp", "2", "--pp", "1")
    assert _error_line(run) == (
        f"{root}: step 0 of the target dump holds 2 rank folder(s) (rank0, rank1) but"
        " --rank_size 4 expects rank0..rank3"
    )
    assert_nothing_written(out)


def test_the_golden_side_is_checked_too(parallel_dump: DumpFn, out: Path) -> None:
    target, golden = parallel_dump("tp2").root, parallel_dump("tp1").root
    flags = ["--rank_size", "2", "2", "--tp", "2", "2", "--pp", "1", "1"]
    run = graph_build("-tp", target, "-gp", golden, "-o", out, *flags)
    assert _error_line(run) == (
        f"{golden}: step 0 of the golden dump holds 1 rank folder(s) (rank0) but"
        " --rank_size 2 expects rank0..rank1"
    )
    assert_nothing_written(out)


def test_tp_times_pp_not_dividing_rank_size(parallel_dump: DumpFn, out: Path) -> None:
    root = parallel_dump("tp2pp2").root
    run = graph_build("-tp", root, "-o", out, "--rank_size", "4", "--tp", "2", "--pp", "3")
    assert _error_line(run) == (
        "--tp 2 x --pp 3 = 6 does not divide --rank_size 4: rank_size must be tp x pp x the"
        " data-parallel count"
    )
    assert_nothing_written(out)


def test_cp_is_refused_naming_what_is_supported(parallel_dump: DumpFn, out: Path) -> None:
    root = parallel_dump("tp2").root
    flags = ["--rank_size", "2", "--tp", "1", "--pp", "1", "--cp", "2"]
    assert _error_line(graph_build("-tp", root, "-o", out, *flags)) == (
        "--cp 2: context-parallel (CP) layouts cannot be merged yet; graphboard merges tensor"
        " (--tp), pipeline (--pp, --vpp) and data parallel layouts (--cp must be 1)"
    )
    assert_nothing_written(out)


def test_unequal_data_parallel_counts_are_compared_pairwise_with_a_warning(
    parallel_dump: DumpFn, out: Path
) -> None:
    target, golden = parallel_dump("dp2tp2").root, parallel_dump("tp2").root
    flags = ["--rank_size", "4", "2", "--tp", "2", "2", "--pp", "1", "1"]
    run = graph_build("-tp", target, "-gp", golden, "-o", out, *flags)
    assert run.returncode == 0, run.stderr
    assert (
        "graph_build: warning: the target has 2 data-parallel replica(s) (rank_size 4, tp 2,"
        " pp 1) and the golden 1 (rank_size 2, tp 2, pp 1): replicas 0..0 are compared"
        " pairwise; target replica(s) 1 (main rank 2) have no counterpart and are not compared"
    ) in run.stderr.splitlines()
    with sqlite3.connect(run.stdout.strip()) as conn:
        graphs = conn.execute(
            "SELECT DISTINCT data_source, rank FROM tb_nodes ORDER BY 1"
        ).fetchall()
    assert graphs == [("Bench", 0), ("NPU", 0)]


def test_unequal_data_parallel_counts_compare_the_common_replicas(parallel_dump: DumpFn) -> None:
    target, golden = parallel_dump("dp2tp2").root, parallel_dump("tp2").root
    options = parallel_options(rank_size=[4, 2], tp=[2, 2], pp=[1, 1], compare=True)
    assert options is not None
    warnings: list[str] = []
    plan = plan_merge(options, discover(target), discover(golden), warnings)
    assert [(task.step, task.rank, task.target.ranks) for task in plan.tasks] == [(0, 0, (0, 1))]
    assert plan.tasks[0].golden is not None and plan.tasks[0].golden.ranks == (0, 1)
    assert sorted(plan.tasks[0].target_ranks) == [0, 1]
    assert warnings == [
        "the target has 2 data-parallel replica(s) (rank_size 4, tp 2, pp 1) and the golden 1"
        " (rank_size 2, tp 2, pp 1): replicas 0..0 are compared pairwise; target replica(s)"
        " 1 (main rank 2) have no counterpart and are not compared"
    ]
