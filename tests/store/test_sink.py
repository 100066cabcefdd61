"""Both part sinks (store/sink.py), the compiled B-tree writer when it is built and SQLite in
Python, make the tables SQLite itself would hold from the same rows: row for row and column
for column (with each value's type), the same indexes, a clean ``PRAGMA integrity_check``;
and both refuse the same rows, naming the file, the row and what was expected."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fixture_cases import FIXTURES
from graphboard.errors import StoreError
from graphboard.store import compiled_sink, schema, sink
from graphboard.store.sink import PartSink
from graphboard.store.sqlite_sink import SqliteSink
from part_rows import node_row

OpenSink = Callable[[Path, bool], PartSink]

SINKS: dict[str, OpenSink] = {
    "compiled": lambda path, indexed: compiled_sink.CompiledSink(path, indexed),
    "sqlite": SqliteSink,
}


@pytest.fixture(params=list(SINKS))
def open_part(request: pytest.FixtureRequest) -> OpenSink:
    if request.param == "compiled" and not compiled_sink.available():
        pytest.skip("graphboard_btree._btree is not installed (or GRAPHBOARD_PURE is set)")
    return SINKS[request.param]


_STACK_INSERT = "INSERT INTO tb_stack (id, stack_info) VALUES (?, ?)"
_TYPED = ", ".join(f"{column}, typeof({column})" for column in schema.TB_NODES_COLUMNS)


def _sqlite_made(path: Path, rows: list[tuple[Any, ...]], indexed: bool) -> None:
    """What SQLite makes of the rows by itself, from schema.py's DDL."""
    with sqlite3.connect(path) as conn:
        schema.create_tables(conn)
        if indexed:
            schema.create_indexes(conn)
        marks = ", ".join("?" * len(schema.TB_NODES_COLUMNS))
        conn.executemany(f"INSERT INTO tb_nodes VALUES ({marks})", rows)
        conn.execute(_STACK_INSERT, ("s0", '["a.py"]'))
    conn.close()


def _written(open_part: OpenSink, path: Path, rows: list[tuple[Any, ...]], indexed: bool) -> None:
    part = open_part(path, indexed)
    part.insert_nodes(rows[: len(rows) // 3])
    part.insert_nodes(iter(rows[len(rows) // 3 :]))  # any iterable, in pieces
    part.finish_nodes()
    part.execute(_STACK_INSERT, ("s0", '["a.py"]'))
    part.close()


def _tables(path: Path) -> dict[str, Any]:
    with sqlite3.connect(path) as conn:
        found = {
            "integrity": conn.execute("PRAGMA integrity_check").fetchall(),
            "nodes": conn.execute(f"SELECT rowid, {_TYPED} FROM tb_nodes ORDER BY id").fetchall(),
            "stacks": conn.execute("SELECT * FROM tb_stack ORDER BY id").fetchall(),
            "schema": conn.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name"
            ).fetchall(),
        }
    conn.close()
    return found


def _assert_same_tables(
    open_part: OpenSink, tmp_path: Path, rows: list[tuple[Any, ...]], indexed: bool
) -> None:
    ours, theirs = tmp_path / "ours.db", tmp_path / "theirs.db"
    _written(open_part, ours, rows, indexed)
    _sqlite_made(theirs, rows, indexed)
    found, expected = _tables(ours), _tables(theirs)
    assert found["integrity"] == [("ok",)]
    assert len(found["nodes"]) == len(rows)
    for name in ("nodes", "stacks", "schema"):
        assert found[name] == expected[name], name


_REFERENCE_DBS = sorted(FIXTURES.glob("*/*/*.vis.db"))


@pytest.mark.parametrize(
    "reference", _REFERENCE_DBS, ids=[f"{p.parts[-3]}/{p.parts[-2]}" for p in _REFERENCE_DBS]
)
@pytest.mark.parametrize("indexed", [True, False])
def test_a_shared_fixture_rows_make_the_tables_sqlite_would(
    open_part: OpenSink, tmp_path: Path, reference: Path, indexed: bool
) -> None:
    with sqlite3.connect(reference) as conn:
        rows = conn.execute("SELECT * FROM tb_nodes ORDER BY rowid").fetchall()
    conn.close()
    assert rows
    _assert_same_tables(open_part, tmp_path, rows, indexed)


def test_odd_values_make_the_tables_sqlite_would(open_part: OpenSink, tmp_path: Path) -> None:
    long_text = "é字\x00" * 3000  # spills onto overflow pages, in the table and in index1
    rows = [
        node_row(0, precision_index=0.25, up_node=None, sub_nodes=None),
        node_row(1, precision_index=1.0, node_order=1.0),  # whole reals are stored as integers
        node_row(2, precision_index=float("nan"), overflow_level="high"),  # NaN is NULL
        node_row(3, micro_step_id=2**63 - 1, modified=-(2**63), up_node=long_text),
        node_row(4, precision_index=float("inf"), matched_node_link=long_text),
        node_row(5, node_name="Module.layer.\x00.forward", is_distributed=True),
        node_row(6, input_data="", output_data=None, dump_data_dir="/d"),
    ]
    rows += [node_row(n, node_name=f"Functional.relu.{n}.forward") for n in range(7, 5000)]
    rows.sort(key=lambda row: row[0])  # id order, as the writer gives them
    _assert_same_tables(open_part, tmp_path, rows, indexed=True)


def test_an_empty_part_is_a_valid_file(open_part: OpenSink, tmp_path: Path) -> None:
    _assert_same_tables(open_part, tmp_path, [], indexed=True)


def _refused(open_part: OpenSink, path: Path, rows: list[tuple[Any, ...]]) -> str:
    """The StoreError a sink gives for ``rows``: at the insert or, at the latest, the close."""
    part = open_part(path, True)
    with pytest.raises(StoreError) as raised:
        part.insert_nodes(rows)
        part.close()
    part.abandon()
    return str(raised.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"up_node": 7}, "column 5: expected a str or None, got 7"),
        ({"node_order": "zero"}, "column 2: expected an int, a float or None, got 'zero'"),
        ({"node_order": 2**63}, f"column 2: {2**63} does not fit 64 bits"),
        ({"modified": b"0"}, "column 14: expected an int, a float or None, got b'0'"),
        ({"graph_id": None}, "column 1: expected a str, got None"),  # NOT NULL columns
        ({"step": None}, "column 19: expected an int or a float, got None"),
        # NaN is stored as NULL (test_odd_values...), which SQLite refuses there too
        (
            {"step": float("nan")},
            "column 19: got nan, stored as NULL, which the column may not hold",
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_file_row_and_column(
    open_part: OpenSink, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    path = tmp_path / "typed.db"
    rows = [node_row(n) for n in range(3000)]
    rows[2500] = node_row(2500, **change)
    found = _refused(open_part, path, rows)
    assert found == (
        f"{path}: a tb_nodes row cannot be stored: row 'NPU_0_0_Module.layer.2500.forward', "
        + message
    )


def test_a_row_that_is_not_a_tuple_of_the_columns_is_refused(
    open_part: OpenSink, tmp_path: Path
) -> None:
    path = tmp_path / "short.db"
    found = _refused(open_part, path, [node_row(0), node_row(1)[:-1]])
    assert found.startswith(
        f"{path}: a tb_nodes row cannot be stored: expected a row: a tuple of 22 values, got ("
    )


def test_two_rows_with_one_id_are_refused_naming_the_file_and_the_id(
    open_part: OpenSink, tmp_path: Path
) -> None:
    path = tmp_path / "twice.db"
    rows = [node_row(n) for n in range(2500)] + [node_row(1)]
    assert _refused(open_part, path, rows) == (
        f"{path}: writing the nodes table: two rows have the same unique key "
        "'NPU_0_0_Module.layer.1.forward'"
    )


def test_an_existing_file_is_never_overwritten(open_part: OpenSink, tmp_path: Path) -> None:
    path = tmp_path / "there.db"
    path.write_bytes(b"keep me")
    with pytest.raises(StoreError) as raised:
        open_part(path, True)
    assert str(raised.value) == f"{path}: cannot create the file: File exists"
    assert path.read_bytes() == b"keep me"


def test_a_folder_that_cannot_hold_the_file_is_named(open_part: OpenSink, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    path = tmp_path / "a-file" / "part.db"
    with pytest.raises(StoreError) as raised:
        open_part(path, True)
    assert str(raised.value) == f"{path}: cannot create the file: Not a directory"


# A full disk, made real for one process: a file size limit (and SIGXFSZ ignored, so the
# write fails instead of killing the process).
_FULL_DISK = """
import resource, signal, sys
sys.path.insert(0, {tests!r})
from part_rows import node_row
from graphboard.errors import StoreError
import test_sink
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
part = test_sink.SINKS[sys.argv[1]](__import__("pathlib").Path(sys.argv[2]), True)
try:
    part.insert_nodes(node_row(n, input_data="x" * 500) for n in range(20000))
    part.close()
except StoreError as error:
    print(error)
    part.abandon()
"""


@pytest.mark.parametrize("kind", list(SINKS))
def test_a_full_disk_is_an_error_naming_the_file(kind: str, tmp_path: Path) -> None:
    if kind == "compiled" and not compiled_sink.available():
        pytest.skip("graphboard_btree._btree is not installed (or GRAPHBOARD_PURE is set)")
    path = tmp_path / "full.db"
    tests = str(Path(__file__).resolve().parent)
    script = _FULL_DISK.format(tests=str(Path(tests).parent))
    done = subprocess.run(
        [sys.executable, "-c", script, kind, str(path)],
        capture_output=True,
        text=True,
        cwd=tests,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout + done.stderr
    named, _, reason = lines[0].partition(": ")
    assert named == str(path)
    # SQLite's words for a failed write (it does not say why), the compiled writer's errno
    assert re.search("disk I/O error|database or disk is full|File too large", reason), reason


def _one_row_finished(open_part: OpenSink, path: Path) -> PartSink:
    part = open_part(path, True)
    part.insert_nodes([node_row(0)])
    part.finish_nodes()
    return part


def test_statements_run_after_the_nodes_are_finished_and_rows_are_refused(
    open_part: OpenSink, tmp_path: Path
) -> None:
    path = tmp_path / "early.db"
    part = _one_row_finished(open_part, path)
    part.finish_nodes()  # twice is harmless
    part.executemany(_STACK_INSERT, iter([("s", "[]"), ("t", "[]")]))
    with pytest.raises(
        StoreError,
        match=rf"^{path}: a tb_nodes row cannot be stored: the table is already finished",
    ):
        part.insert_nodes([node_row(1)])
    part.close()
    found = _tables(path)
    assert found["integrity"] == [("ok",)]
    assert [row[0] for row in found["nodes"]] == [1]
    assert found["stacks"] == [("s", "[]"), ("t", "[]")]


def test_the_compiled_sink_takes_a_statement_s_rows_only_at_the_close(tmp_path: Path) -> None:
    """It keeps what executemany is given as it is, not a copy: a million-node graph's
    gb_params rows would otherwise all be held until the close."""
    if not compiled_sink.available():
        pytest.skip("graphboard_btree._btree is not installed (or GRAPHBOARD_PURE is set)")
    taken: list[str] = []

    def stacks() -> Any:
        for name in ("s", "t"):
            taken.append(name)
            yield (name, "[]")

    path = tmp_path / "late.db"
    part = _one_row_finished(compiled_sink.CompiledSink, path)
    part.executemany(_STACK_INSERT, stacks())
    assert taken == []
    part.close()
    assert taken == ["s", "t"]
    assert _tables(path)["stacks"] == [("s", "[]"), ("t", "[]")]


def test_a_failing_statement_is_an_error_naming_the_file(
    open_part: OpenSink, tmp_path: Path
) -> None:
    path = tmp_path / "bad.db"
    part = _one_row_finished(open_part, path)
    with pytest.raises(StoreError) as raised:
        part.execute("INSERT INTO gb_nowhere VALUES (1)")
        part.execute(_STACK_INSERT, ("s", "[]"))
        part.close()
    part.abandon()
    assert str(raised.value) == f"{path}: no such table: gb_nowhere"


def test_an_error_in_the_rows_leaves_the_part_to_abandon(
    open_part: OpenSink, tmp_path: Path
) -> None:
    def rows() -> Any:
        yield node_row(0)
        raise RuntimeError("the formatting failed")

    part = open_part(tmp_path / "broken.db", True)
    with pytest.raises(RuntimeError, match="the formatting failed"):
        part.insert_nodes(rows())
    part.abandon()


def test_open_sink_takes_the_compiled_writer_only_when_it_is_built(tmp_path: Path) -> None:
    part = sink.open_sink(tmp_path / "chosen.db", True)
    expected = compiled_sink.CompiledSink if compiled_sink.available() else SqliteSink
    assert type(part) is expected
    part.abandon()


def test_the_pure_path_forced_writes_through_sqlite(tmp_path: Path) -> None:
    script = (
        "from graphboard.store import sink, sqlite_sink; import pathlib, sys\n"
        "part = sink.open_sink(pathlib.Path(sys.argv[1]), True)\n"
        "print(type(part) is sqlite_sink.SqliteSink); part.abandon()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "pure.db")],
        capture_output=True,
        text=True,
        check=True,
        env={"GRAPHBOARD_PURE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.stdout == "True\n", done.stderr


def test_the_sqlite_sink_writes_large_pages_and_no_journal(tmp_path: Path) -> None:
    """A part is private until renamed (store/sqlite_sink.py's BUILD_PRAGMAS): no journal file
    beside it while it is written nor after, and 16 KiB pages, which a later open keeps."""
    path = tmp_path / "tuned.db"
    part = SqliteSink(path, True)
    part.insert_nodes([node_row(n, input_data="x" * 6000) for n in range(100)])
    part.finish_nodes()
    assert [found.name for found in tmp_path.iterdir()] == ["tuned.db"]
    part.close()
    assert [found.name for found in tmp_path.iterdir()] == ["tuned.db"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA page_size").fetchone() == (16384,)
        assert conn.execute("SELECT count(*) FROM tb_nodes").fetchone() == (100,)
    conn.close()


class _WatchedTable:
    """The real compiled table, its calls recorded, its index build held until ``release``
    is set: a build that is still running when the part is stopped."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self.release = threading.Event()
        self.calls: list[str] = []

    @property
    def rows(self) -> int:
        return int(self.table.rows)

    def append(self, rows: Any) -> None:
        self.table.append(rows)

    def finish(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append("finish")
        self.release.wait()
        self.table.finish(*args, **kwargs)
        self.calls.append("finished")

    def close(self) -> None:
        self.calls.append("close")
        self.table.close()


def test_a_stop_while_the_indexes_are_built_never_frees_the_table_under_them(
    tmp_path: Path,
) -> None:
    """Issue 30: SIGTERM mid-compare segfaulted now and then. The stop (a signal handler's
    exception, as stopping.py raises) came while close() waited for the index thread; on
    Python 3.11 an interrupted Thread.join marks the thread ended, so abandon() closed the
    table while the thread still built its indexes. abandon() must neither wait for that
    thread nor close the table under it: the thread closes it once done."""
    if not compiled_sink.available():
        pytest.skip("graphboard_btree._btree is not installed (or GRAPHBOARD_PURE is set)")
    part = compiled_sink.CompiledSink(tmp_path / "stopped.db", True)
    watched = _WatchedTable(part._table)
    part._table = watched
    part.insert_nodes(node_row(order) for order in range(100))

    def stop(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)  # while close() waits: finish is held
        with pytest.raises(KeyboardInterrupt):
            part.close()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    part.abandon()  # returns at once, the build still held
    assert watched.calls == ["finish"]
    watched.release.set()
    for thread in threading.enumerate():
        if thread.name == "tb_nodes indexes":
            thread.join()
    assert watched.calls == ["finish", "finished", "close"]
