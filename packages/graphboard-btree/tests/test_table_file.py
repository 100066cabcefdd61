"""A table written straight into SQLite's format (graphboard_btree._btree) must be the file
SQLite itself would hold: the same rows and types, every index in SQLite's order, and a clean
``PRAGMA integrity_check``; index keys spilled to disk, a write that fails, a key twice and a
file past 1 GiB, case by case. (Random tables: test_btree_fuzz.py; graphboard's tb_nodes
written through it: graphboard's tests/store/test_btree_table.py and test_sink.py.)"""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

_btree = pytest.importorskip("graphboard_btree._btree", reason="graphboard-btree is not installed")

_DDL = (
    "CREATE TABLE t (id TEXT PRIMARY KEY, a INTEGER, b TEXT, c INTEGER, d TEXT, e INTEGER)",
    "CREATE INDEX i1 ON t (a, b)",
    "CREATE INDEX i2 ON t (d, c)",
    "CREATE INDEX i3 ON t (c)",
)
_INDEXES = [(True, (0,)), (False, (1, 2)), (False, (4, 3)), (False, (3,))]
# the columns of each index, to walk it in SQLite's order
_ORDERS = {
    "sqlite_autoindex_t_1": "id",
    "i1": "a, b, rowid",
    "i2": "d, c, rowid",
    "i3": "c, rowid",
}


def _version() -> int:
    major, minor, patch = sqlite3.sqlite_version_info
    return major * 1_000_000 + minor * 1_000 + patch


def _schema_rows() -> list[tuple[str, str, str, str | None]]:
    conn = sqlite3.connect(":memory:")
    for statement in _DDL:
        conn.execute(statement)
    return conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid"
    ).fetchall()


def _text(rng: random.Random, long: bool) -> str:
    length = rng.choice((0, 10, 900, 1200, 5000, 20000) if long else (0, 1, 5, 30, 200))
    return "".join(rng.choices("ab\x00é字", k=length))  # NUL, 2- and 3-byte UTF-8


def _rows(count: int, seed: int, long: bool) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    integers = [None, 0, 1, -1, 127, 128, -129, 2**40, -(2**63), 2**63 - 1, 3.0, -0.0]
    return [
        (
            f"id{n:07d}" + _text(rng, False),
            rng.choice(integers),
            rng.choice([None, _text(rng, long)]),
            rng.choice([0, 1, 2, None, -5]),
            rng.choice([None, _text(rng, long), ""]),
            rng.choice([0.5, 2.0, None, 7, 1e300, float("inf"), float("nan")]),  # unindexed
        )
        for n in range(count)
    ]


def _sqlite_made(path: Path, rows: list[tuple[Any, ...]], page_size: int) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA page_size={page_size}")
    for statement in _DDL:
        conn.execute(statement)
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    return conn


@pytest.mark.parametrize(
    ("count", "page_size", "long", "threads"),
    [
        (0, 4096, False, 1),  # an empty table: empty root pages
        (0, 4096, False, 3),
        (1, 4096, False, 1),
        (3000, 512, False, 1),  # small pages: trees several levels deep
        (3000, 512, False, 2),  # ... and more unused pages than one freelist trunk lists
        (2000, 512, True, 1),  # rows and index keys spill onto overflow pages
        (2000, 512, True, 3),
        (5000, 1024, True, 2),
        (20000, 4096, False, 1),
        (20000, 4096, False, 4),  # more threads than indexes to build at the end
        (3000, 65536, True, 2),
    ],
)
def test_the_table_and_its_indexes_are_what_sqlite_would_hold(
    tmp_path: Path, count: int, page_size: int, long: bool, threads: int
) -> None:
    rows = _rows(count, seed=count + page_size, long=long)
    rows.sort(key=lambda row: row[0]) if count % 2 else None  # presorted keys, and not
    ours = tmp_path / "ours.db"
    table = _btree.TableFile(str(ours), "TITITI", _INDEXES, page_size)
    table.append(rows[: count // 2])
    table.append(iter(rows[count // 2 :]))
    assert table.rows == count
    table.finish(_schema_rows(), _version(), threads=threads)
    theirs = _sqlite_made(tmp_path / "theirs.db", rows, page_size)
    with sqlite3.connect(ours) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        query = "SELECT rowid, *, typeof(a), typeof(c), typeof(e) FROM t ORDER BY rowid"
        assert conn.execute(query).fetchall() == theirs.execute(query).fetchall()
        for index, order in _ORDERS.items():
            walk = f"SELECT rowid FROM t INDEXED BY {index} ORDER BY {order}"
            if index.startswith("sqlite_"):
                walk = f"SELECT rowid FROM t WHERE id > '' ORDER BY {order}"
            assert conn.execute(walk).fetchall() == theirs.execute(walk).fetchall()
        assert conn.execute("PRAGMA page_size").fetchone() == (page_size,)
        # and SQLite can go on writing into it
        conn.execute("INSERT INTO t VALUES ('zz', 5, 'x', 1, 'y', 2)")
        conn.execute("CREATE TABLE more (n INTEGER)")
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    theirs.close()


@pytest.mark.parametrize("spill_bytes", [1, 700, 1 << 16])
def test_index_keys_spilled_to_files_give_the_same_table_and_leave_nothing(
    tmp_path: Path, spill_bytes: int
) -> None:
    """Past ``spill_bytes`` an index's keys go to an unnamed file beside the table's and are
    read back to be sorted: the file is byte for byte the one kept in memory gives (one
    thread: page numbers are then taken in one order), SQLite's own with several."""
    rows = _rows(3000, seed=11, long=True)
    written = {}
    for name, spill in (("memory", None), ("spilled", spill_bytes)):
        path = tmp_path / f"{name}.db"
        extra = {} if spill is None else {"spill_bytes": spill}
        table = _btree.TableFile(str(path), "TITITI", _INDEXES, 1024, **extra)
        table.append(rows)
        table.finish(_schema_rows(), _version(), threads=1)
        written[name] = path.read_bytes()
    assert written["spilled"] == written["memory"]
    threaded = tmp_path / "threaded.db"
    table = _btree.TableFile(str(threaded), "TITITI", _INDEXES, 1024, spill_bytes=spill_bytes)
    table.append(rows)
    table.finish(_schema_rows(), _version(), threads=3)
    theirs = _sqlite_made(tmp_path / "theirs.db", rows, 1024)
    with sqlite3.connect(threaded) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        for index, order in _ORDERS.items():
            walk = f"SELECT rowid FROM t INDEXED BY {index} ORDER BY {order}"
            if index.startswith("sqlite_"):
                walk = f"SELECT rowid FROM t WHERE id > '' ORDER BY {order}"
            assert conn.execute(walk).fetchall() == theirs.execute(walk).fetchall()
    theirs.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "memory.db",
        "spilled.db",
        "theirs.db",
        "threaded.db",
    ]


def test_a_duplicate_key_among_spilled_ones_is_refused_naming_it(tmp_path: Path) -> None:
    rows = _rows(500, seed=3, long=False)
    rows.append(rows[17])
    table = _btree.TableFile(str(tmp_path / "t.db"), "TITITI", _INDEXES, 4096, spill_bytes=64)
    table.append(rows)
    with pytest.raises(ValueError, match="two rows have the same unique key 'id0000017"):
        table.finish(_schema_rows(), _version(), threads=2)
    table.close()


def test_spill_bytes_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="spill_bytes must be at least 1"):
        _btree.TableFile(str(tmp_path / "t.db"), "TITITI", _INDEXES, 4096, spill_bytes=0)


# A full disk for one process: a file size limit, SIGXFSZ ignored so the write fails instead.
_FULL_DISK = """
import resource, signal, sys
from graphboard_btree import _btree
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 21, resource.RLIM_INFINITY))
table = _btree.TableFile(sys.argv[1], "tTi", [(True, (0,)), (False, (2, 1))], spill_bytes=int(sys.argv[2]))
try:
    table.append((f"id{n:08d}", "x" * 500, n % 7) for n in range(30000))
    table.finish([("table", "t", "t", "CREATE TABLE t (a, b, c)"), ("index", "i0", "t", None),
                  ("index", "i1", "t", None)], 3045000)
except OSError as error:
    print(error)
table.close()
"""


@pytest.mark.parametrize("spill_bytes", [1024, 8 << 20], ids=["keys spilled", "keys held"])
def test_a_write_that_fails_behind_is_raised_to_the_caller(
    tmp_path: Path, spill_bytes: int
) -> None:
    """Pages and spilled keys are written by the table's own thread: a write of it that fails
    (here past a file size limit) is raised by the next call, and the table still closes."""
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(tmp_path / "t.db"), str(spill_bytes)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == "cannot write: File too large" or done.stdout.strip() == (
        "cannot write index keys: File too large"
    ), done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rows", "key_bytes"),
    [(1100, 10), (1015, 6000)],
    ids=["table pages cross 1 GiB", "index pages cross 1 GiB"],
)
def test_a_table_past_one_gib_leaves_sqlites_lock_byte_page_unused(
    tmp_path: Path, rows: int, key_bytes: int
) -> None:
    """SQLite never stores anything in the page holding the bytes at 1 GiB (its file locks):
    a file that used it failed integrity_check ("2nd reference to page 262145") from a
    million records a side on."""
    big = tmp_path / "big.db"
    try:
        _write_past_one_gib(big, rows, key_bytes)
    finally:
        big.unlink(missing_ok=True)  # pytest keeps its last runs' folders: not a GiB each


def _write_past_one_gib(big: Path, rows: int, key_bytes: int) -> None:
    payload = "p" * (1 << 20)  # unindexed: overflow pages, about 257 a row
    table = _btree.TableFile(str(big), "TTT", [(True, (0,)), (False, (2,))], 4096)
    table.append((f"{n:06d}", payload, f"{n % 7}" * key_bytes + f"{n:06d}") for n in range(rows))
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id TEXT PRIMARY KEY, big TEXT, k TEXT)")
    conn.execute("CREATE INDEX k ON t (k)")
    schema_rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema").fetchall()
    table.finish(schema_rows, _version(), threads=2)
    assert big.stat().st_size > 1 << 30
    with sqlite3.connect(big) as written:
        assert written.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert written.execute("SELECT count(*), max(length(big)) FROM t").fetchone() == (
            rows,
            1 << 20,
        )
