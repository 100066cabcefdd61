"""The reader's parts, each asked alone on real built files: opening (the connection is the
VisDb's), saving manual matches (commit, rollback, refusal, undo), a node's stored data as
the heatmap reads it, and the decoding of stored text."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Mapping
from pathlib import Path

import orjson
import pytest

from fixture_cases import BuildFn
from graphboard.compare.result import Level, label_of_code
from graphboard.store import matches
from graphboard.store.reader import (
    GraphKey,
    VisDb,
    WriteRefused,
    listing,
    manual_matches,
    node_data,
    open_vis_db,
    opening,
    summaries,
    tree,
)
from graphboard.store.reader import overlay as reader_overlay
from graphboard.store.reader.stored import json_or

NPU = GraphKey("NPU", 0, 0)


@pytest.fixture
def compare_copy(built: BuildFn, tmp_path: Path) -> Path:
    """A compare of convnet-stats that a test may write to."""
    path = tmp_path / "data" / "compare.vis.db"
    path.parent.mkdir()
    shutil.copy(built("convnet-stats"), path)
    return path


def _matched_node(db: VisDb) -> tuple[str, int, str]:
    """(name, node_order, counterpart) of the first matched target node holding parameters."""
    for stored in node_data.stored_nodes(db, NPU):
        summary = summaries.summary(db, NPU, stored.name)
        assert summary is not None
        if summary.matched and summary.counterpart and stored.input_data:
            return stored.name, stored.node_order, summary.counterpart
    raise AssertionError("convnet-stats has a matched target node with inputs")


def _unpaired(name: str, order: int, input_data: Mapping[str, object]) -> matches.OverlayRow:
    """The overlay row of a target node a user unpaired, its inputs rescored as given."""
    return matches.OverlayRow(
        "NPU", 0, 0, name, order, True, False, None, None, None, None, 0,
        orjson.dumps(input_data).decode(), None,
    )  # fmt: skip


def test_closing_a_vis_db_closes_its_connection(compare_copy: Path, tmp_path: Path) -> None:
    with open_vis_db(compare_copy, tmp_path / "cache") as db:
        conn = db.conn
        assert tree.root(db, NPU) is not None
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


def test_an_action_is_recorded_shown_and_undone_through_the_reader(
    compare_copy: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    with open_vis_db(compare_copy, cache) as db:
        name, order, counterpart = _matched_node(db)
        before = listing.graphs(db)[0]
        stored = node_data.dicts_of(db, NPU, [order], "input_data")[order]
    rescored = {key: {**value, "marked": True} for key, value in stored.items()}
    with open_vis_db(compare_copy, cache, writable=True) as db, manual_matches.matching_write(db):
        action_id = manual_matches.record_action(db,
            "unmatch", 0, 0, (name, counterpart), {"twins": False},
            [_unpaired(name, order, rescored)], [(name, counterpart)],
        )  # fmt: skip
    with open_vis_db(compare_copy, cache) as db:
        summary = summaries.summary(db, NPU, name)
        assert summary is not None and summary.manual and summary.matched is False
        # the rescored dicts stand in for the build's wherever a node's data is read
        assert node_data.dicts_of(db, NPU, [order], "input_data") == {order: rescored}
        node = node_data.node(db, NPU, name)
        assert node is not None and node.input_data == rescored
        build = node_data.stored_data(db, NPU, name)  # the build's own, as tb_nodes holds it
        assert build is not None and build[0] == stored
        after = listing.graphs(db)[0]
        assert before.matched is not None and before.unmatched is not None
        assert (after.matched, after.unmatched) == (before.matched - 1, before.unmatched + 1)
        history = reader_overlay.match_history(db, 0, 0)
        assert [(item.id, item.kind, item.pairs) for item in history] == [
            (action_id, "unmatch", [[name, counterpart]])
        ]
    with open_vis_db(compare_copy, cache, writable=True) as db:
        with manual_matches.matching_write(db):
            undone = manual_matches.undo_last_action(db, 0, 0)
        with manual_matches.matching_write(db):
            again = manual_matches.undo_last_action(db, 0, 0)
    assert undone is not None and undone[0].id == action_id and undone[0].undone_at
    assert undone[1] == 1 and again is None
    with open_vis_db(compare_copy, cache) as db:
        summary = summaries.summary(db, NPU, name)
        assert summary is not None and not summary.manual and summary.matched is True
        assert node_data.dicts_of(db, NPU, [order], "input_data") == {order: stored}
        assert listing.graphs(db)[0] == before


def test_a_matching_write_whose_block_fails_leaves_the_file_as_it_was(
    compare_copy: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    with open_vis_db(compare_copy, cache, writable=True) as db:
        name, order, counterpart = _matched_node(db)
        with pytest.raises(RuntimeError), manual_matches.matching_write(db):
            manual_matches.record_action(db,
                "unmatch", 0, 0, (name, counterpart), {},
                [_unpaired(name, order, {})], [(name, counterpart)],
            )  # fmt: skip
            raise RuntimeError("the request failed after writing")
    with open_vis_db(compare_copy, cache) as db:
        summary = summaries.summary(db, NPU, name)
        assert summary is not None and summary.matched is True and not summary.manual
        assert reader_overlay.match_history(db, 0, 0) == []


def test_a_file_another_writer_holds_refuses_the_write_naming_it(
    compare_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even the first match of a file, which creates graphboard's tables, is refused with
    the file's name, not an SQLite error: busy, once the (shortened) wait runs out."""
    monkeypatch.setattr(opening, "BUSY_SECONDS", 0.2)
    other = sqlite3.connect(compare_copy, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with open_vis_db(compare_copy, tmp_path / "cache", writable=True) as db:
            held = r"^compare\.vis\.db: another connection held the file"
            with (
                pytest.raises(WriteRefused, match=held) as refused,
                manual_matches.matching_write(db),
            ):
                pass
            assert refused.value.busy
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_the_calls_of_one_module_are_the_names_under_it_only(
    built: BuildFn, tmp_path: Path
) -> None:
    with open_vis_db(built("convnet-stats"), tmp_path) as db:
        every = node_data.module_names(db, NPU)
        names = [name for _order, name in every]
        assert "Module.blocks.0.conv1.Conv2d.forward.0" in names
        prefixes = {name.rsplit(".", cut)[0] for name in names for cut in (1, 2, 3, 4)}
        for prefix in sorted(prefixes):
            expected = sorted(item for item in every if item[1].startswith(prefix + "."))
            assert sorted(node_data.module_names(db, NPU, prefix)) == expected, prefix
        orders = node_data.orders_of_names(db, NPU, [*names[:3], "no.such.node"])
        assert orders == {name: order for order, name in every[:3]}


def test_stored_text_decodes_to_a_default_when_empty_or_not_json() -> None:
    assert json_or('{"a": [1]}', {}) == {"a": [1]}
    assert json_or("", []) == [] and json_or(None, None) is None and json_or("{", 7) == 7
    assert [label_of_code(code) for code in (None, -1, 0, 1, 2)] == [
        None, None, Level.PASS.label, Level.WARNING.label, Level.ERROR.label,
    ]  # fmt: skip
