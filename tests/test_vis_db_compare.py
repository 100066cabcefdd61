"""vis_db_support's comparison of two .vis.db files, on a real multi-rank compare and copies of
it changed one way each: what differs is named by table, row key and column."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from fixture_cases import BuildFn
from vis_db_support import assert_same_vis_db, vis_db_differences

LABELS = ("built", "changed")


@pytest.fixture
def pair(built: BuildFn, tmp_path: Path) -> tuple[Path, Path]:
    """(a build of convnet-ddp2, a copy of it to change)."""
    original = built("convnet-ddp2")
    copy = tmp_path / original.name
    shutil.copy2(original, copy)
    return original, copy


def _change(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


def test_a_copy_is_the_same(pair: tuple[Path, Path]) -> None:
    assert vis_db_differences(*pair, LABELS) == []


def test_when_and_how_long_a_build_ran_are_not_compared(pair: tuple[Path, Path]) -> None:
    built, changed = pair
    with sqlite3.connect(built) as conn:
        links = json.loads(
            conn.execute("SELECT value FROM gb_meta WHERE key = 'links'").fetchone()[0]
        )
    conn.close()
    links["seconds"] = {"total": 99.0}
    _change(
        changed,
        "UPDATE gb_meta SET value = '\"2000-01-01T00:00:00\"' WHERE key = 'created_at'",
        "UPDATE gb_meta SET value = '[\"elsewhere\"]' WHERE key = 'command'",
        "UPDATE gb_meta SET value = '{}' WHERE key = 'timings'",
        f"UPDATE gb_meta SET value = '{json.dumps(links)}' WHERE key = 'links'",
    )
    assert_same_vis_db(built, changed, LABELS)


def test_a_changed_cell_is_named_by_table_row_key_and_column(pair: tuple[Path, Path]) -> None:
    built, changed = pair
    _change(
        changed,
        "UPDATE tb_nodes SET output_data = output_data || ' ' WHERE id = ("
        "SELECT id FROM tb_nodes WHERE output_data != '{}' ORDER BY id LIMIT 1)",
        "UPDATE gb_meta SET value = '[0]' WHERE key = 'steps'",
    )
    with sqlite3.connect(built) as conn:
        (node,) = conn.execute(
            "SELECT id FROM tb_nodes WHERE output_data != '{}' ORDER BY id LIMIT 1"
        ).fetchone()
    conn.close()
    found = vis_db_differences(built, changed, LABELS)
    assert len(found) == 2, found
    assert found[0].startswith("gb_meta row {'key': 'steps'}: column value: differs at offset 2")
    assert found[1].startswith(f"tb_nodes row {{'id': '{node}'}}: column output_data: differs")
    with pytest.raises(AssertionError, match="column output_data"):
        assert_same_vis_db(built, changed, LABELS)


def test_missing_rows_are_named_by_key_and_rows_of_a_table_without_one_by_content(
    pair: tuple[Path, Path],
) -> None:
    built, changed = pair
    _change(
        changed,
        "DELETE FROM tb_stack WHERE id = (SELECT max(id) FROM tb_stack)",
        "UPDATE gb_comm_nodes SET verdict = 'changed' WHERE rowid = 1",
    )
    found = vis_db_differences(built, changed, LABELS)
    assert [line.split(",")[0] for line in found] == [
        "gb_comm_nodes: 1 row(s) only in built",
        "gb_comm_nodes: 1 row(s) only in changed",
        "tb_stack: 1 row(s) only in built",
    ]
    assert "'changed'" in found[1]


def test_a_dropped_index_is_a_schema_difference(pair: tuple[Path, Path]) -> None:
    built, changed = pair
    _change(changed, "DROP INDEX index7")
    assert vis_db_differences(built, changed, LABELS) == [
        "schema: only in built: [('index', 'index7', 'tb_nodes')]"
    ]
