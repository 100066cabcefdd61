"""Writing the .vis.db: a complete file under its final name or nothing; unique default
names; msprobe's tables exactly as msprobe declares them; graphboard's own metadata."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import graphboard
import graphboard.pipeline.finish as build_finish
import graphboard.pipeline.plan as build_plan
from dumpmaker import (
    BuildFn,
    assert_nothing_written,
    frame,
    output_folder,
    reference_db,
    tiny_model,
    write_dump_root,
)
from graphboard.errors import DumpError, GraphboardError, StoreError
from graphboard.pipeline import BuildOptions, BuildResult, run_build
from graphboard.store import schema, writer

MSPROBE_TABLES = ("tb_nodes", "tb_stack", "tb_config")
FIXED_NOW = datetime(2026, 1, 2, 3, 4, 5)


def _build(target: Path, out: Path, **options: Any) -> BuildResult:
    options.setdefault("workers", 1)
    return run_build(BuildOptions(target=target, output_dir=out, **options))


def _rows(path: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, params).fetchall()


def _meta(path: Path) -> dict[str, Any]:
    return {key: json.loads(value) for key, value in _rows(path, "SELECT key, value FROM gb_meta")}


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every build starts in the same second."""

    class FixedDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> FixedDatetime:
            return cls.fromtimestamp(FIXED_NOW.timestamp(), tz)

    monkeypatch.setattr(build_plan, "datetime", FixedDatetime)


# --- write protocol ---------------------------------------------------------------------------


def _bad_rank_among_good_ones(root: Path) -> Path:
    write_dump_root(root, {(0, rank): tiny_model() for rank in range(3)})
    dump_json = root / "step0" / "rank1" / "dump.json"
    dump_json.write_text(dump_json.read_text()[:500])  # truncated
    return dump_json


@pytest.mark.parametrize("workers", [1, 2])
def test_a_rank_failing_among_good_ones_leaves_nothing_behind(tmp_path: Path, workers: int) -> None:
    """Rank 0's part file is written before rank 1 fails (in-process); with two workers the
    error comes back from a worker process and still names the file and the line."""
    bad = _bad_rank_among_good_ones(tmp_path / "dump")
    out = output_folder(tmp_path)
    with pytest.raises(DumpError) as caught:
        _build(tmp_path / "dump", out, workers=workers)
    assert str(caught.value).startswith(f"{bad}: the JSON document ends early at line ")
    assert caught.value.path == str(bad)
    assert_nothing_written(out)


def test_a_failure_while_finishing_the_file_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(conn: sqlite3.Connection) -> None:
        conn.close()
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(writer, "finalize", disk_full)
    write_dump_root(tmp_path / "dump", {(0, rank): tiny_model() for rank in range(2)})
    out = output_folder(tmp_path)
    # one line naming the file, as the command prints it
    with pytest.raises(
        StoreError, match=rf"^{re.escape(str(out))}/build_\d+\.vis\.db: .*disk is full$"
    ):
        _build(tmp_path / "dump", out)
    assert_nothing_written(out)


def test_an_interrupted_build_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(*_args: Any, **_kwargs: Any) -> None:
        raise KeyboardInterrupt

    # the last stage of a build (pipeline/finish.py)
    monkeypatch.setattr(build_finish, "link_ranks", interrupt)
    tiny_model().write(tmp_path / "rank0")
    out = output_folder(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        _build(tmp_path / "rank0", out)
    assert_nothing_written(out)


def test_the_file_appears_under_its_name_only_when_complete(tmp_path: Path) -> None:
    """While the build runs, the output folder holds a hidden temp file and no .vis.db."""
    write_dump_root(tmp_path / "dump", {(0, rank): tiny_model() for rank in range(2)})
    out = output_folder(tmp_path)
    seen: dict[str, list[str]] = {}

    def progress(_fraction: float, message: str) -> None:
        seen[message] = sorted(entry.name for entry in out.iterdir())

    result = run_build(BuildOptions(target=tmp_path / "dump", output_dir=out, workers=1), progress)
    during = seen["indexing"]
    assert not any(name.endswith(".vis.db") for name in during)
    assert any(re.fullmatch(r"\.build_\d{14}\.vis\.db\.\d+\.[0-9a-f]{8}\.tmp", n) for n in during)
    assert sorted(entry.name for entry in out.iterdir()) == sorted([result.path.name, "keep.txt"])
    assert not list(out.glob("*-wal")) and not list(out.glob("*-shm"))
    assert _rows(result.path, "PRAGMA journal_mode") == [("delete",)]
    assert _rows(result.path, "PRAGMA integrity_check") == [("ok",)]


# --- names ------------------------------------------------------------------------------------


def test_default_names_are_unique_for_builds_in_the_same_second(
    tmp_path: Path, fixed_clock: None
) -> None:
    tiny_model().write(tmp_path / "rank0")
    paths = [_build(tmp_path / "rank0", tmp_path / "out").path for _ in range(3)]
    stamp = FIXED_NOW.strftime("%Y%m%d%H%M%S")
    assert [path.name for path in paths] == [
        f"build_{stamp}.vis.db",
        f"build_{stamp}_2.vis.db",
        f"build_{stamp}_3.vis.db",
    ]
    for path in paths:  # three complete files, none overwritten
        assert _rows(path, "SELECT graph_type FROM tb_config") == [("build",)]
    assert sorted(entry.name for entry in (tmp_path / "out").iterdir()) == sorted(
        path.name for path in paths
    )


def test_a_compare_is_named_compare_with_its_start_time(tmp_path: Path, fixed_clock: None) -> None:
    tiny_model().write(tmp_path / "target" / "rank0")
    tiny_model(loss=2.0).write(tmp_path / "golden" / "rank0")
    result = _build(
        tmp_path / "target" / "rank0", tmp_path / "out", golden=tmp_path / "golden" / "rank0"
    )
    assert result.path.name == f"compare_{FIXED_NOW.strftime('%Y%m%d%H%M%S')}.vis.db"


def test_builds_back_to_back_on_the_real_clock_both_keep_their_files(tmp_path: Path) -> None:
    tiny_model().write(tmp_path / "rank0")
    first = _build(tmp_path / "rank0", tmp_path / "out").path
    second = _build(tmp_path / "rank0", tmp_path / "out").path
    assert first != second and first.is_file() and second.is_file()
    assert re.fullmatch(r"build_\d{14}(_\d+)?\.vis\.db", second.name)


def test_a_given_name_is_used_and_never_overwrites(tmp_path: Path) -> None:
    tiny_model().write(tmp_path / "rank0")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.vis.db").write_text("someone's file")
    result = _build(tmp_path / "rank0", tmp_path / "out", output_name="mine.vis.db")
    assert result.path.name == "mine_2.vis.db"
    assert (tmp_path / "out" / "mine.vis.db").read_text() == "someone's file"


def test_the_output_folder_is_created(tmp_path: Path) -> None:
    tiny_model().write(tmp_path / "rank0")
    result = _build(tmp_path / "rank0", tmp_path / "a" / "b" / "c")
    assert result.path.parent == tmp_path / "a" / "b" / "c"


def test_an_output_path_that_is_a_file_is_reported(tmp_path: Path) -> None:
    tiny_model().write(tmp_path / "rank0")
    (tmp_path / "taken").write_text("")
    with pytest.raises(GraphboardError, match=r"taken: cannot create the output folder"):
        _build(tmp_path / "rank0", tmp_path / "taken")


# --- msprobe's tables -------------------------------------------------------------------------


def _table_shapes(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Columns (position, name, declared type, not null, default, primary key) per table."""
    return {table: _rows(path, f"PRAGMA table_info({table})") for table in MSPROBE_TABLES}


def _index_shapes(path: Path) -> dict[str, tuple[Any, ...]]:
    """Every index on msprobe's tables: its table, uniqueness, origin and columns in order."""
    shapes: dict[str, tuple[Any, ...]] = {}
    for table in MSPROBE_TABLES:
        for _seq, name, unique, origin, partial in _rows(path, f"PRAGMA index_list({table})"):
            columns = [row[2] for row in _rows(path, f"PRAGMA index_info({name})")]
            shapes[name] = (table, unique, origin, partial, columns)
    return shapes


def _index_sql(path: Path) -> dict[str, str]:
    rows = _rows(
        path, "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    )
    return {name: re.sub(r"\s+", " ", sql.replace("IF NOT EXISTS ", "")) for name, sql in rows}


def test_msprobe_tables_have_exactly_msprobes_columns_and_indexes(built: BuildFn) -> None:
    ours, theirs = built("convnet-stats"), reference_db("convnet-stats")
    assert _table_shapes(ours) == _table_shapes(theirs)
    assert [row[1] for row in _table_shapes(ours)["tb_nodes"]] == list(schema.TB_NODES_COLUMNS)
    assert _index_shapes(ours) == _index_shapes(theirs)
    assert {
        name: sql for name, sql in _index_sql(ours).items() if name.startswith("index")
    } == _index_sql(theirs)


def test_graphboard_tables_are_all_prefixed_gb(built: BuildFn) -> None:
    tables = {
        name
        for (name,) in _rows(
            built("convnet-stats"), "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
    }
    assert set(MSPROBE_TABLES) <= tables
    assert all(name.startswith("gb_") for name in tables - set(MSPROBE_TABLES))


def _hand_made(tmp_path: Path) -> BuildResult:
    dump = tiny_model()
    dump.add("Distributed.all_reduce.0.forward", None, stack=[frame("train.py", 30, "step")])
    dump.add("Torch.sum.1.forward", None, stack=[frame("train.py", 10, "step")])  # shared
    dump.grad("Module.lost.BatchNorm2d.parameters_grad.0")  # no backward anywhere: rescued
    dump.add("Torch.mm.9.forward", "Module.ghost.G.backward.0")  # an orphan
    write_dump_root(tmp_path / "dump", {(3, 0): dump, (3, 1): tiny_model()})
    return _build(tmp_path / "dump", tmp_path / "out")


def test_node_rows_are_written_as_msprobe_writes_them(tmp_path: Path) -> None:
    result = _hand_made(tmp_path)
    rows = {
        row[3]: row
        for row in _rows(
            result.path,
            "SELECT id, graph_id, node_order, node_name, node_type, typeof(node_type), up_node,"
            " sub_nodes, precision_index, overflow_level, micro_step_id, matched_node_link,"
            " parallel_merge_info, matched_distributed, modified, data_source, dump_data_dir,"
            " step, rank, is_distributed FROM tb_nodes WHERE rank = 0",
        )
    }
    root = rows["DefaultModel"]
    assert root[:8] == (
        "NPU_3_0_DefaultModel",
        "NPU_3_0",
        len(rows) - 1,  # post-order: the root last
        "DefaultModel",
        "0",
        "text",
        "",
        json.dumps(
            [
                "Module.net.Net.forward.0",
                "Torch.sum.0.forward",
                "Module.net.Net.backward.0",
                "Apis_Between_Modules.0",
                "Module.lost.BatchNorm2d.parameters_grad.0",
                "Module.ghost.G.backward.0",
            ],
            separators=(",", ":"),
        ),
    )
    leaf = rows["Functional.linear.0.forward"]
    assert leaf[4:8] == ("1", "text", "Module.net.fc.Linear.forward.0", "")
    assert rows["Apis_Between_Modules.0"][4] == "9"
    assert rows["Distributed.all_reduce.0.forward"][-1] == 1
    assert {row[-1] for name, row in rows.items() if not name.startswith("Distributed")} == {0}
    for row in rows.values():
        assert row[8:10] == (None, None)  # no precision, no overflow in a build
        assert row[10] == 0 and row[11] == "[]" and row[12] == "" and row[13] == "{}"
        assert row[14:] == (0, "NPU", None, 3, 0, row[-1])
    assert sorted(row[2] for row in rows.values()) == list(range(len(rows)))
    children_before_parent = all(rows[row[6]][2] > row[2] for row in rows.values() if row[6])
    assert children_before_parent


def test_stacks_are_stored_once_per_graph_and_every_node_points_at_one(tmp_path: Path) -> None:
    result = _hand_made(tmp_path)
    stacks = dict(_rows(result.path, "SELECT id, stack_info FROM tb_stack"))
    nodes = _rows(result.path, "SELECT graph_id, node_name, stack_id FROM tb_nodes")
    assert all(
        stack_id in stacks and stack_id.startswith(graph + "_") for graph, _, stack_id in nodes
    )
    by_name = {(graph, name): json.loads(stacks[stack_id]) for graph, name, stack_id in nodes}
    shared = [frame("train.py", 10, "step")]
    assert by_name[("NPU_3_0", "Module.net.Net.forward.0")] == shared
    assert by_name[("NPU_3_0", "Torch.sum.1.forward")] == shared
    assert by_name[("NPU_3_0", "DefaultModel")] == []
    for graph in ("NPU_3_0", "NPU_3_1"):
        texts = [stacks[key] for key in stacks if key.startswith(graph + "_")]
        assert len(texts) == len(set(texts))  # each distinct stack once


def test_config_and_graph_rows_of_a_multi_rank_build(tmp_path: Path) -> None:
    result = _hand_made(tmp_path)
    assert _rows(result.path, "SELECT * FROM tb_config") == [
        ("1", "build", "", None, 1, 0, "null", "[0,1]", "[3]")
    ]
    graphs = {
        row[0]: row[1:]
        for row in _rows(
            result.path,
            "SELECT graph_id, data_source, step, rank, dump_dir, task, level, framework,"
            " node_count, micro_steps, matched, orphans, rescued_grads FROM gb_graphs",
        )
    }
    dump = tmp_path / "dump" / "step3"
    assert graphs["NPU_3_0"] == (
        "NPU",
        3,
        0,
        str(dump / "rank0"),
        "statistics",
        "mix",
        "pytorch",
        _rows(result.path, "SELECT COUNT(*) FROM tb_nodes WHERE rank = 0")[0][0],
        1,
        None,
        '["Module.ghost.G.backward.0"]',
        '["Module.lost.BatchNorm2d.parameters_grad.0"]',
    )
    assert graphs["NPU_3_1"][-2:] == ("[]", "[]")


# --- graphboard's metadata --------------------------------------------------------------------


def test_metadata_records_schema_version_inputs_and_flags(tmp_path: Path) -> None:
    tiny_model().write(tmp_path / "target" / "step0" / "rank0")
    tiny_model(loss=2.0).write(tmp_path / "golden" / "step0" / "rank0")
    result = run_build(
        BuildOptions(
            target=tmp_path / "target",
            golden=tmp_path / "golden",
            output_dir=tmp_path / "out",
            overflow_check=True,
            fuzzy_match=True,
            workers=1,
            command=["graph_build", "-tp", "target", "-gp", "golden", "-oc", "-fm"],
        )
    )
    meta = _meta(result.path)
    assert meta["schema"] == "graphboard.vis.db"
    assert meta["schema_version"] == schema.SCHEMA_VERSION
    assert meta["graphboard_version"] == graphboard.__version__
    assert meta["inputs"] == {
        "target": str((tmp_path / "target").resolve()),
        "golden": str((tmp_path / "golden").resolve()),
        "layer_mapping": None,
    }
    assert meta["flags"] == {
        "overflow_check": True,
        "fuzzy_match": True,
        "layer_mapping": False,
        "match_mode": "fuzzy",
    }
    assert meta["command"] == ["graph_build", "-tp", "target", "-gp", "golden", "-oc", "-fm"]
    assert meta["graph_type"] == "compare" and meta["data_mode"] == "summary"
    assert meta["steps"] == [0] and meta["ranks"] == [0]
    assert datetime.fromisoformat(meta["created_at"]) <= datetime.now()
    assert _rows(result.path, "SELECT graph_type, task, overflow_check FROM tb_config") == [
        ("compare", "summary", 1)
    ]


def test_metadata_of_a_plain_build(tmp_path: Path) -> None:
    tiny_model().write(tmp_path / "rank0")
    meta = _meta(_build(tmp_path / "rank0", tmp_path / "out").path)
    assert meta["inputs"]["golden"] is None
    assert meta["flags"] == {
        "overflow_check": False,
        "fuzzy_match": False,
        "layer_mapping": False,
        "match_mode": "default",
    }
    assert meta["graph_type"] == "build" and meta["data_mode"] is None


def _parts_of(folder: Path) -> Iterator[str]:
    return (entry.name for entry in folder.iterdir() if ".part" in entry.name)


def test_no_part_files_remain_after_a_multi_rank_build(tmp_path: Path) -> None:
    write_dump_root(
        tmp_path / "dump", {(step, rank): tiny_model() for step in (0, 1) for rank in (0, 1)}
    )
    result = _build(tmp_path / "dump", tmp_path / "out")
    assert list(_parts_of(tmp_path / "out")) == []
    assert _rows(result.path, "SELECT DISTINCT graph_id FROM tb_nodes ORDER BY graph_id") == [
        ("NPU_0_0",),
        ("NPU_0_1",),
        ("NPU_1_0",),
        ("NPU_1_1",),
    ]
