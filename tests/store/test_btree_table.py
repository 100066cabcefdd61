"""A compare's part, tb_nodes written by the compiled writer (graphboard_btree._btree, the
package packages/graphboard-btree), holds the rows SQLite would index the same way. (The
writer on its own, case by case and at random: the package's tests; both sinks: test_sink.py.)"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fixture_cases import fixture_path
from graphboard.pipeline import BuildOptions, plan_build
from graphboard.pipeline.task import run_task
from graphboard.store import compiled_sink, schema


@pytest.fixture(autouse=True)
def _compiled_writer() -> None:
    if not compiled_sink.available():
        pytest.skip("graphboard_btree._btree is not installed (or GRAPHBOARD_PURE is set)")


def test_a_compare_part_is_the_rows_sqlite_would_index_the_same_way(tmp_path: Path) -> None:
    root = fixture_path("layer-mapping")
    options = BuildOptions(target=root / "target", golden=root / "golden", output_dir=tmp_path)
    part = tmp_path / "part.db"
    run_task(plan_build(options).tasks[0], options, part)
    with sqlite3.connect(part) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        rows = conn.execute("SELECT * FROM tb_nodes ORDER BY rowid").fetchall()
        stored_sql = conn.execute("SELECT name, sql FROM sqlite_schema ORDER BY name").fetchall()
        walks = {
            name: conn.execute(
                f"SELECT rowid FROM tb_nodes INDEXED BY {name} ORDER BY {', '.join(columns)}, rowid"
            ).fetchall()
            for name, columns in schema.MSPROBE_INDEX_COLUMNS.items()
        }
    assert len(rows) > 100
    with sqlite3.connect(tmp_path / "sqlite.db") as theirs:
        schema.create_tables(theirs)
        schema.create_indexes(theirs)
        marks = ", ".join("?" * len(schema.TB_NODES_COLUMNS))
        theirs.executemany(f"INSERT INTO tb_nodes VALUES ({marks})", rows)
        assert (
            theirs.execute("SELECT name, sql FROM sqlite_schema ORDER BY name").fetchall()
            == stored_sql
        )
        for name, walk in walks.items():
            columns = ", ".join(schema.MSPROBE_INDEX_COLUMNS[name])
            assert (
                theirs.execute(
                    f"SELECT rowid FROM tb_nodes INDEXED BY {name} ORDER BY {columns}, rowid"
                ).fetchall()
                == walk
            )
