"""run_build's stages on their own, as a distributed runner uses them: planning is cheap and
repeatable, parts built anywhere merge into the file run_build writes, and a failed merge
leaves nothing behind."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

import graphboard.pipeline as pipeline
from fixture_cases import fixture_path
from graphboard.errors import CompareError, LayoutError
from graphboard.pipeline import BuildOptions, finish_build, plan_build, process_task, run_build
from vis_db_support import nodes_per_graph


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
        process_task(task, options, part) for task, part in zip(plan.tasks, parts, strict=True)
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
    result = process_task(plan.tasks[0], options, part)
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
    gc.disable()  # only process_task's own garbage is counted below
    try:
        result = process_task(plan.tasks[0], options, tmp_path / "part0.db")
        unreachable = gc.collect()
    finally:
        if was_enabled:
            gc.enable()
    assert result.match is not None and result.match["target_matched"] > 0
    assert unreachable < 50, f"{unreachable} objects were only collectable as cycles"


@pytest.mark.parametrize("one_shot", [True, False])
def test_a_one_shot_build_keeps_only_its_last_tasks_graphs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, one_shot: bool
) -> None:
    """graph_build skips freeing the graphs it would free just before exiting; the graphs of
    earlier tasks are freed as before, or a many-rank build would hold every rank at once."""
    kept: list[Any] = []
    monkeypatch.setattr(pipeline, "_KEPT_UNTIL_EXIT", kept)
    ddp2 = fixture_path("convnet-ddp2")
    options = BuildOptions(
        target=ddp2 / "target",
        golden=ddp2 / "golden",
        output_dir=tmp_path,
        workers=1,
        one_shot=one_shot,
    )
    try:
        run_build(options)
    finally:
        gc.unfreeze()  # keeping graphs freezes the collector's view of this test process
    if one_shot:
        assert [(graph.side, graph.step, graph.rank) for graph in kept] == [
            ("NPU", 1, 1),
            ("Bench", 1, 1),
        ]
        assert all(graph.nodes for graph in kept)  # whole, not released
    else:
        assert kept == []
