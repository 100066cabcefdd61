"""The build core's stages on their own: each per-task stage called alone gives what the
whole build writes; planning is cheap and repeatable; parts built anywhere merge into the file
run_build writes; a failed task or merge leaves nothing behind."""

from __future__ import annotations

import gc
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from fixture_cases import fixture_path
from graphboard.errors import CompareError, DumpError, LayoutError
from graphboard.executor import Executor
from graphboard.pipeline import BuildOptions, plan_build, run_build, run_part, stages
from graphboard.pipeline.finish import finish_build
from graphboard.pipeline.task import run_task
from graphboard.store import schema
from graphboard.store.sink import open_sink
from part_rows import node_row
from vis_db_support import assert_same_vis_db, nodes_per_graph

HERE = Executor(processes=False)  # tasks run in this process, as a Celery worker runs them


def test_planning_lists_the_tasks_in_order_and_is_repeatable(tmp_path: Path) -> None:
    ddp2 = fixture_path("convnet-ddp2")
    options = BuildOptions(target=ddp2 / "target", golden=ddp2 / "golden", output_dir=tmp_path)
    first, again = plan_build(options), plan_build(options)
    assert [(task.step, task.rank) for task in first.tasks] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [(task.step, task.rank, task.target.path) for task in again.tasks] == [
        (task.step, task.rank, task.target.path) for task in first.tasks
    ]
    assert not list(tmp_path.iterdir())  # planning writes nothing


def test_planning_refuses_what_cannot_build(tmp_path: Path) -> None:
    (tmp_path / "rank0").mkdir()
    (tmp_path / "rank0" / "dump.json").write_text("{}")
    with pytest.raises(LayoutError, match=r"missing construct\.json"):
        plan_build(BuildOptions(target=tmp_path, output_dir=tmp_path / "out"))
    stats = fixture_path("convnet-stats")
    with pytest.raises(CompareError, match="point both at the same level"):
        plan_build(
            BuildOptions(
                target=stats / "target",
                golden=stats / "golden" / "step0" / "rank0",
                output_dir=tmp_path / "out",
            )
        )


def test_parts_built_one_by_one_merge_into_what_run_build_writes(tmp_path: Path) -> None:
    ddp2 = fixture_path("convnet-ddp2")
    options = BuildOptions(
        target=ddp2 / "target", golden=ddp2 / "golden", output_dir=tmp_path / "staged"
    )
    plan = plan_build(options)
    parts = [tmp_path / f"part{index}.db" for index in range(len(plan.tasks))]
    results = [
        HERE.run(run_task, task, options, part)
        for task, part in zip(plan.tasks, parts, strict=True)
    ]
    staged = finish_build(plan, results, parts)
    assert not any(part.exists() for part in parts)  # merged, then removed
    whole = run_build(
        BuildOptions(target=ddp2 / "target", golden=ddp2 / "golden", output_dir=tmp_path / "whole")
    )
    assert nodes_per_graph(staged.path) == nodes_per_graph(whole.path)
    assert staged.steps == whole.steps and staged.ranks == whole.ranks


def test_a_failed_merge_leaves_no_file(tmp_path: Path) -> None:
    stats = fixture_path("convnet-stats")
    options = BuildOptions(
        target=stats / "target", output_dir=tmp_path / "out", output_name="x.vis.db"
    )
    plan = plan_build(options)
    part = tmp_path / "part0.db"
    result = HERE.run(run_task, plan.tasks[0], options, part)
    part.write_bytes(b"not a database")
    with pytest.raises(Exception, match="file is not a database"):
        finish_build(plan, [result], [part])
    assert list((tmp_path / "out").iterdir()) == [] and not part.exists()


def test_a_task_leaves_no_cyclic_garbage(tmp_path: Path) -> None:
    """A compare's graphs are freed by reference counting when its task ends, not left to the
    cyclic collector (which would stall on millions of objects when it resumes)."""
    stats = fixture_path("convnet-stats")
    options = BuildOptions(
        target=stats / "target", golden=stats / "golden", output_dir=tmp_path / "out"
    )
    plan = plan_build(options)
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()  # only the task's own garbage is counted below
    try:
        result = HERE.run(run_task, plan.tasks[0], options, tmp_path / "part0.db")
        unreachable = gc.collect()
    finally:
        if was_enabled:
            gc.enable()
    assert result.match is not None and result.match["target_matched"] > 0
    assert unreachable < 50, f"{unreachable} objects were only collectable as cycles"


def _tb_nodes(path: Path, graph_id: str) -> list[tuple[object, ...]]:
    """A graph's rows in the order they were written."""
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT * FROM tb_nodes WHERE graph_id = ? ORDER BY rowid", (graph_id,)
        ).fetchall()


@pytest.mark.parametrize("case", ["convnet-stats", "convnet-md5"])
def test_each_stage_called_alone_gives_the_rows_the_build_writes(tmp_path: Path, case: str) -> None:
    """read -> hierarchy -> match -> score -> rows, called one by one as a test or another
    runner may: the rows are the ones run_build stores for the same task."""
    root = fixture_path(case)
    options = BuildOptions(target=root / "target", golden=root / "golden", output_dir=tmp_path)
    task = plan_build(options).tasks[0]
    target_side, golden_side = stages.TaskSide.target_of(task), stages.TaskSide.golden_of(task)
    assert golden_side is not None
    target = stages.hierarchy(target_side, stages.read(target_side.dump))
    golden = stages.hierarchy(golden_side, stages.read(golden_side.dump))
    matched = stages.match(target, golden, options)
    assert matched.counts["target_matched"] > 0
    target.rule_verdicts = stages.score(target, golden, matched.mode)
    target_rows = [tuple(row) for row in stages.rows(target, golden, matched.mode)]
    golden_rows = [tuple(row) for row in stages.rows(golden, target, matched.mode)]
    built = run_build(options).path
    assert _first_difference(target_rows, _tb_nodes(built, target.graph_id)) is None
    assert _first_difference(golden_rows, _tb_nodes(built, golden.graph_id)) is None


def _first_difference(
    rows: list[tuple[object, ...]], stored: list[tuple[object, ...]]
) -> tuple[int, object, object] | None:
    """Where two row lists first differ (pytest's own diff of two long lists takes minutes)."""
    if rows == stored:
        return None
    for index, (row, stored_row) in enumerate(zip(rows, stored, strict=False)):
        if row != stored_row:
            return index, row, stored_row
    return min(len(rows), len(stored)), len(rows), len(stored)


def test_the_write_stage_writes_a_graphs_rows_and_stacks(tmp_path: Path) -> None:
    root = fixture_path("convnet-stats")
    options = BuildOptions(target=root / "target", output_dir=tmp_path)
    side = stages.TaskSide.target_of(plan_build(options).tasks[0])
    graph = stages.hierarchy(side, stages.read(side.dump))
    assert stages.write_part(tmp_path / "part.db", True, [(graph, None)], None) == (
        tmp_path / "part.db"
    )
    with sqlite3.connect(tmp_path / "part.db") as conn:
        assert conn.execute("SELECT count(*) FROM tb_nodes").fetchone() == (len(graph.nodes),)
        stack_ids = {row[0] for row in conn.execute("SELECT stack_id FROM tb_nodes")}
        stored = {row[0] for row in conn.execute("SELECT id FROM tb_stack")}
    assert stack_ids <= stored


@pytest.mark.parametrize("enabled", [True, False])
def test_a_task_leaves_the_cycle_collector_as_it_found_it(tmp_path: Path, enabled: bool) -> None:
    stats = fixture_path("convnet-stats")
    options = BuildOptions(target=stats / "target", output_dir=tmp_path)
    was_enabled = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        HERE.run(run_task, plan_build(options).tasks[0], options, tmp_path / "part0.db")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was_enabled else gc.disable)()


@pytest.mark.parametrize("workers", [1, 2], ids=["one process", "golden read aside"])
def test_a_broken_golden_dump_is_reported_as_itself_and_leaves_nothing(
    tmp_path: Path, workers: int
) -> None:
    root = fixture_path("convnet-stats")
    golden = tmp_path / "golden"
    shutil.copytree(root / "golden", golden)
    dump = next(golden.rglob("dump.json"))
    dump.chmod(0o644)
    dump.write_text('{"task": "statistics", "data": {"Module.a.A.forward.0": ')
    out = tmp_path / "out"
    options = BuildOptions(target=root / "target", golden=golden, output_dir=out, workers=workers)
    with pytest.raises(DumpError, match=rf"{dump}: the JSON document ends early"):
        run_build(options)
    assert list(out.iterdir()) == []


def test_a_part_merged_into_another_file_has_only_its_primary_key(tmp_path: Path) -> None:
    for name, indexed in (("whole.db", True), ("merged.db", False)):
        part = open_sink(tmp_path / name, indexed)
        part.insert_nodes(node_row(n) for n in range(10))
        part.close()
    assert _indexes(tmp_path / "whole.db") == set(schema.MSPROBE_INDEX_COLUMNS)
    assert _indexes(tmp_path / "merged.db") == set()
    with sqlite3.connect(tmp_path / "merged.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT count(*) FROM tb_nodes").fetchone() == (10,)


def _indexes(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL"
            )
        }


def test_a_lone_compare_reading_its_golden_side_aside_writes_the_same_file(
    tmp_path: Path,
) -> None:
    """-w 2 on one (step, rank): the golden side is read by a second process while this one
    reads the target; the file is the one a single process writes."""
    root = fixture_path("convnet-stats")
    files = {}
    for workers in (1, 2):
        options = BuildOptions(
            target=root / "target",
            golden=root / "golden",
            output_dir=tmp_path / str(workers),
            workers=workers,
            overflow_check=True,
        )
        result = run_build(options)
        timings = json.loads(_meta(result.path)["timings"])["tasks"]["0/0"]
        assert ("wait for and build golden" in timings) is (workers == 2)
        files[workers] = result.path
    assert_same_vis_db(files[1], files[2], ("one process", "golden read aside"))


def _meta(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT key, value FROM gb_meta").fetchall())


def test_a_small_part_has_no_free_pages_and_the_same_size_each_time(tmp_path: Path) -> None:
    """Below THREADED_INDEX_ROWS the compiled sink builds its indexes on one thread: a second
    thread's unused run of page numbers would stay free mid-file, some builds and not others
    (which made the full-disk test of test_cli_errors flaky)."""
    root = fixture_path("convnet-stats")
    options = BuildOptions(target=root / "target", golden=root / "golden", output_dir=tmp_path)
    task = plan_build(options).tasks[0]
    sizes = set()
    for attempt in range(8):
        part = tmp_path / f"part{attempt}.db"
        HERE.run(run_task, task, options, part)
        with sqlite3.connect(part) as conn:
            assert conn.execute("PRAGMA freelist_count").fetchone() == (0,)
        sizes.add(part.stat().st_size)
    assert len(sizes) == 1


def test_a_fanned_out_part_has_only_its_primary_key(tmp_path: Path) -> None:
    """Celery's parts are merged into one file, indexed there: a part's own msprobe indexes
    would be built only to be thrown away (they were, before run_part)."""
    ddp2 = fixture_path("convnet-ddp2")
    options = BuildOptions(target=ddp2 / "target", golden=ddp2 / "golden", output_dir=tmp_path)
    plan = plan_build(options)
    result = run_part(plan, 1, tmp_path / "part1.db", HERE)
    assert (result.step, result.rank) == (plan.tasks[1].step, plan.tasks[1].rank)
    assert _indexes(tmp_path / "part1.db") == set()
