"""The second process that writes a task's part: the same file as writing in-process, and
its failures reported with the file's name, never swallowed."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any, TypeVar

import pytest

from fixture_cases import fixture_path
from graphboard.errors import DumpError, StoreError
from graphboard.pipeline import BuildOptions, plan_build, process_task, run_build
from graphboard.store import writer
from graphboard.store.insert_process import BATCH_ROWS, InsertProcess, can_fork
from graphboard.store.part_file import PartFile
from graphboard.store.statements import NodeWriter
from graphboard.target_rows import SPLIT_MIN_NODES
from part_rows import node_row

T = TypeVar("T")
_TABLES = ("tb_nodes", "tb_stack", "gb_graphs", "gb_arrays")


def _contents(path: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(path) as conn:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in _TABLES
        }


@pytest.mark.parametrize(
    ("case", "compare", "flags"),
    [
        ("convnet-stats", True, {"overflow_check": True}),
        ("convnet-md5", True, {}),
        ("convnet-overflow", False, {"overflow_check": True}),  # a build: the target alone
        # Golden rows are written before the match: renamed modules leave some unmatched
        # (default), or matched to a node at another path (-lm, -fm); their links are fixed.
        ("layer-mapping", True, {}),
        ("layer-mapping", True, {"layer_mapping": "mapping.yaml"}),
        ("layer-mapping", True, {"fuzzy_match": True}),
    ],
)
def test_a_task_written_by_a_second_process_is_the_file_written_in_process(
    tmp_path: Path, case: str, compare: bool, flags: dict[str, Any]
) -> None:
    root = fixture_path(case)
    if "layer_mapping" in flags:
        flags["layer_mapping"] = root / flags["layer_mapping"]
    options = BuildOptions(
        target=root / "target",
        golden=root / "golden" if compare else None,
        output_dir=tmp_path,
        **flags,
    )
    task = plan_build(options).tasks[0]
    in_process, in_background = tmp_path / "in_process.db", tmp_path / "in_background.db"
    process_task(task, options, in_process, parallel_write=False)
    _in_fresh_process(process_task, task, options, in_background, True)
    expected = _contents(in_process)
    assert len(expected["tb_nodes"]) > 100
    assert _contents(in_background) == expected
    # A lone task's part is the whole file: it carries msprobe's indexes.
    assert _indexes(in_process) == _indexes(in_background) == {f"index{n}" for n in range(1, 8)}
    for path in (in_process, in_background):
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def _in_fresh_process(function: Callable[..., T], *args: Any) -> T:
    """Run a call in a new, single-threaded interpreter: a process running other threads
    (the test session keeps servers alive) writes in-process, never forking (can_fork)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(function, *args).result()


def _indexes(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        )
        return {name for (name,) in rows}


def test_calls_run_in_the_order_sent_across_batches(tmp_path: Path) -> None:
    path = tmp_path / "rows.db"
    writer_process = InsertProcess(path, PartFile)
    count = BATCH_ROWS * 3 + 7
    writer_process.insert_nodes(node_row(n) for n in range(count))
    writer_process.execute("INSERT INTO tb_stack VALUES (?, ?)", ("first", "[]"))
    writer_process.executemany(
        "INSERT INTO tb_stack VALUES (?, ?)", ((f"s{n}", "[]") for n in range(count))
    )
    writer_process.close()
    with sqlite3.connect(path) as conn:
        nodes = conn.execute("SELECT node_order FROM tb_nodes ORDER BY rowid").fetchall()
        stacks = conn.execute("SELECT id FROM tb_stack ORDER BY rowid").fetchall()
    assert nodes == [(n,) for n in range(count)]
    assert stacks == [("first",)] + [(f"s{n}",) for n in range(count)]


def test_a_failing_statement_is_raised_with_the_file_and_sqlites_reason(tmp_path: Path) -> None:
    path = tmp_path / "broken.db"
    writer_process = InsertProcess(path, PartFile)
    writer_process.executemany("INSERT INTO no_such_table VALUES (?)", [(1,), (2,)])
    with pytest.raises(StoreError, match=rf"{path}: .*no such table: no_such_table"):
        # the part runs its statements when it closes: the error surfaces then
        for _ in range(200):
            writer_process.executemany("INSERT INTO tb_stack VALUES (?, ?)", [("a", "b")])
        writer_process.close()


def test_a_child_that_dies_is_reported_not_waited_for(tmp_path: Path) -> None:
    writer_process = InsertProcess(tmp_path / "killed.db", PartFile)
    pid = writer_process._pid
    assert pid is not None
    os.kill(pid, 9)
    with pytest.raises(StoreError, match="the process writing the database failed"):
        for _ in range(200):
            writer_process.executemany("INSERT INTO tb_stack VALUES (?, ?)", [("a", "b")] * 100)
        writer_process.close()


def test_abort_stops_the_child(tmp_path: Path) -> None:
    writer_process = InsertProcess(tmp_path / "aborted.db", PartFile)
    pid = writer_process._pid
    assert pid is not None
    writer_process.abort()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)  # already reaped: no zombie left behind
    writer_process.abort()  # twice is harmless
    with pytest.raises(StoreError, match="already closed"):
        writer_process.execute("SELECT 1")


def test_a_part_merged_into_another_file_has_only_its_primary_key(tmp_path: Path) -> None:
    for name, indexed in (("whole.db", True), ("merged.db", False)):
        part = writer.open_part(tmp_path / name, in_background=False, indexed=indexed)
        part.insert_nodes(node_row(n) for n in range(10))
        part.close()
    assert len(_indexes(tmp_path / "whole.db")) == 7
    assert _indexes(tmp_path / "merged.db") == set()
    with sqlite3.connect(tmp_path / "merged.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT count(*) FROM tb_nodes").fetchone() == (10,)


def test_a_broken_golden_dump_is_reported_as_itself_and_leaves_nothing(tmp_path: Path) -> None:
    """The inserting process reads the golden dump too; its failure must not hide the
    reader's own error, nor leave a part file behind."""
    root = fixture_path("convnet-stats")
    golden = tmp_path / "golden"
    shutil.copytree(root / "golden", golden)
    dump = next(golden.rglob("dump.json"))
    dump.chmod(0o644)
    dump.write_text('{"task": "statistics", "data": {"Module.a.A.forward.0": ')
    out = tmp_path / "out"
    options = BuildOptions(target=root / "target", golden=golden, output_dir=out)
    with pytest.raises(DumpError, match=rf"{dump}: the JSON document ends early"):
        _in_fresh_process(run_build, options)
    assert list(out.iterdir()) == []


def _reply_then_write(conn: NodeWriter, reply: Callable[[Any], None]) -> None:
    reply({"handed": list(range(100_000))})  # larger than the pipe: sent from a thread
    conn.execute("CREATE TABLE t (n INTEGER)")
    conn.execute("INSERT INTO t VALUES (1)")


def _fail_before_replying(conn: NodeWriter, reply: Callable[[Any], None]) -> None:
    raise ValueError("the first job broke")


def test_the_first_job_hands_over_a_value_and_writes_first(tmp_path: Path) -> None:
    path = tmp_path / "job.db"
    writer_process = InsertProcess(path, PartFile, _reply_then_write)
    writer_process.execute("INSERT INTO t VALUES (2)")  # runs after the job's rows
    assert writer_process.first_reply() == {"handed": list(range(100_000))}
    writer_process.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT n FROM t ORDER BY rowid").fetchall() == [(1,), (2,)]


def test_a_first_job_that_fails_hands_over_nothing_and_is_reported(tmp_path: Path) -> None:
    writer_process = InsertProcess(tmp_path / "job.db", PartFile, _fail_before_replying)
    assert writer_process.first_reply() is None
    with pytest.raises(StoreError, match="the first job broke"):
        writer_process.close()


def test_a_reply_never_asked_for_holds_nothing_up(tmp_path: Path) -> None:
    path = tmp_path / "job.db"
    writer_process = InsertProcess(path, PartFile, _reply_then_write)
    # The reply is larger than its pipe and never read: the child must serve the statements
    # and end all the same (it once waited for the reply to be read first).
    writer_process.executemany("INSERT INTO t VALUES (?)", [(n,) for n in range(20_000)])
    writer_process.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (20_001,)


def _first_half(part: NodeWriter) -> None:
    part.insert_nodes(node_row(n) for n in range(BATCH_ROWS * 2 + 3))


def _second_half(part: NodeWriter) -> None:
    part.insert_nodes(node_row(n) for n in range(BATCH_ROWS * 2 + 3, BATCH_ROWS * 5))


def _broken_half(part: NodeWriter) -> None:
    part.insert_nodes([node_row(0)])
    raise RuntimeError("the helper broke")


def _in_two_in_order(path: Path) -> tuple[bool, bool, bool, list[tuple[int]], list[tuple[str]]]:
    writer_process = InsertProcess(path, PartFile)
    forks = can_fork()
    switch = sys.getswitchinterval()
    writer_process.in_two(_first_half, _second_half)
    draining = writer_process._drain is not None  # the held calls go out from a thread
    # sent while they may still be going out: these queue behind them
    writer_process.insert_nodes(node_row(n) for n in range(BATCH_ROWS * 5, BATCH_ROWS * 6))
    writer_process.execute("INSERT INTO tb_stack VALUES (?, ?)", ("after", "[]"))
    writer_process.close()
    restored = sys.getswitchinterval() == switch
    with sqlite3.connect(path) as conn:
        orders = conn.execute("SELECT node_order FROM tb_nodes ORDER BY rowid").fetchall()
        stacks = conn.execute("SELECT id FROM tb_stack").fetchall()
    return forks, draining, restored, orders, stacks


def test_work_in_two_arrives_in_order_as_if_done_one_after_the_other(tmp_path: Path) -> None:
    # in a fresh interpreter: the test session's threads would keep in_two from forking
    forked, draining, restored, orders, stacks = _in_fresh_process(
        _in_two_in_order, tmp_path / "two.db"
    )
    assert forked and draining and restored
    assert orders == [(n,) for n in range(BATCH_ROWS * 6)]
    assert stacks == [("after",)]


def _writer_killed_after_in_two(path: Path) -> str:
    writer_process = InsertProcess(path, PartFile)
    writer_process.in_two(_first_half, _second_half)
    assert writer_process._pid is not None
    os.kill(writer_process._pid, signal.SIGKILL)
    writer_process.execute("SELECT 1")  # queued behind the held calls, never read
    try:
        writer_process.close()
    except StoreError as error:
        return str(error)
    return ""


def test_a_writer_gone_while_held_calls_go_out_is_reported_not_waited_for(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gone.db"
    message = _in_fresh_process(_writer_killed_after_in_two, path)
    assert message == f"{path}: the process writing the database failed: status 9"


def _failing_helper(path: Path) -> tuple[str, bool, bool]:
    """(the error, whether the writing process was reaped, whether the part is closed)."""
    writer_process = InsertProcess(path, PartFile)
    writer_pid = writer_process._pid
    assert writer_pid is not None and can_fork()
    try:
        writer_process.in_two(_broken_half, _second_half)
    except StoreError as error:
        message = str(error)
    else:
        message = ""
    try:
        os.waitpid(writer_pid, 0)
        reaped = False
    except ChildProcessError:
        reaped = True  # the writing process was stopped and reaped: no zombie left
    writer_process.close()  # nothing left to wait for
    try:
        writer_process.execute("SELECT 1")
        closed = False
    except StoreError:
        closed = True
    return message, reaped, closed


def test_a_helper_that_fails_is_reported_and_stops_the_writing(tmp_path: Path) -> None:
    path = tmp_path / "broken.db"
    message, reaped, closed = _in_fresh_process(_failing_helper, path)
    assert message == f"{path}: the process formatting rows failed: the helper broke"
    assert reaped and closed


def test_a_graph_formatted_in_two_is_the_file_formatted_by_one(tmp_path: Path) -> None:
    """A synthetic transformer with more nodes than target_rows.SPLIT_MIN_NODES: half of its
    target is scored and formatted by a forked helper when written in the background."""
    maker = Path(__file__).resolve().parents[2] / "bench" / "make_synthetic_dump.py"
    for variant in ("golden", "target"):
        subprocess.run(
            [
                sys.executable,
                str(maker),
                "--layers",
                "40",
                "--out",
                str(tmp_path / variant),
                "--variant",
                variant,
            ],
            check=True,
            capture_output=True,
        )
    options = BuildOptions(
        target=tmp_path / "target", golden=tmp_path / "golden", output_dir=tmp_path
    )
    task = plan_build(options).tasks[0]
    in_process, in_background = tmp_path / "in_process.db", tmp_path / "in_background.db"
    process_task(task, options, in_process, parallel_write=False)
    _in_fresh_process(process_task, task, options, in_background, True)
    expected = _contents(in_process)
    assert len(expected["tb_nodes"]) > 2 * SPLIT_MIN_NODES
    assert _contents(in_background) == expected
