"""The reader: stored rows re-score to the stored verdicts (the derived columns: test_columns),
wide nodes page by keyset, name search counts exactly."""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from graphboard.compare.engine import compare_pair
from graphboard.compare.result import DataMode
from graphboard.graph.model import ROOT_NAME, Graph, Node, NodeType, node_type_of
from graphboard.store import writer
from graphboard.store.graph_views import GraphKey
from graphboard.store.name_index import NameIndex
from graphboard.store.reader import (
    Source,
    compile_search_regex,
    node_data,
    open_vis_db,
    overlay,
    required_literal,
    summaries,
    tree,
)
from graphboard.store.sink import open_sink

BuildFn = Callable[..., Path]


@pytest.mark.parametrize(
    ("case", "mode"),
    [
        ("convnet-stats", DataMode.SUMMARY),
        ("convnet-md5", DataMode.MD5),
        ("convnet-tensor", DataMode.TENSOR),
    ],
)
def test_stored_rows_rescore_to_the_stored_verdicts(
    built: BuildFn, tmp_path: Path, case: str, mode: DataMode
) -> None:
    """Parameters rebuilt from display strings give the builder's verdict for every pair:
    manual matching scores exactly as a build would."""
    path = built(case)
    npu, bench = GraphKey("NPU", 0, 0), GraphKey("Bench", 0, 0)
    checked = 0
    with open_vis_db(path, tmp_path) as db:
        assert db.config().mode is mode
        view = overlay.graph_view(db, npu)
        for order, name in enumerate(view.names):
            summary = summaries.summaries_by_order(db, npu, [order])[0]
            if not summary.matched or summary.node_type == NodeType.API_COLLECTION:
                continue
            stored_t, stored_g = (
                node_data.stored_data(db, npu, name),
                node_data.stored_data(db, bench, summary.counterpart or ""),
            )
            assert stored_t is not None and stored_g is not None
            target = Node(
                name,
                NodeType(summary.node_type),
                params=node_data.params(db, npu, name) if stored_t[0] or stored_t[1] else None,
            )
            golden = Node(
                summary.counterpart or "",
                NodeType(summary.node_type),
                params=node_data.params(db, bench, summary.counterpart or ""),
            )
            comparison = compare_pair(target, golden, mode, stored_t[2] or "", stored_g[2] or "")
            precision = comparison.precision_index if comparison is not None else None
            assert precision == summary.precision_index, name
            checked += 1
    assert checked > 50


def test_msprobe_files_are_opened_read_only_with_derived_columns(
    built: BuildFn, tmp_path: Path
) -> None:
    root = tmp_path / "data"
    root.mkdir()
    source = root / "m.vis.db"
    with sqlite3.connect(built("convnet-stats")) as ours, sqlite3.connect(source) as copy:
        ours.backup(copy)
        copy.executescript("DROP TABLE gb_arrays; DROP TABLE gb_graphs; DROP TABLE gb_meta;")
    before = source.read_bytes()
    cache = tmp_path / "cache"
    with open_vis_db(source, cache) as db:
        assert db.source is Source.MSPROBE
        assert summaries.summary(db, GraphKey("NPU", 0, 0), "Functional.gelu.0.forward") is not None
        assert not db.writable
    assert source.read_bytes() == before
    assert sorted(path.name for path in root.iterdir()) == ["m.vis.db"]
    assert len(list(cache.glob("*.columns.db"))) == 1
    with open_vis_db(source, cache):  # the second open reuses it
        pass
    assert len(list(cache.glob("*.columns.db"))) == 1


def _wide_graph(children: int) -> Graph:
    root = Node(ROOT_NAME, NodeType.MODULE)
    nodes = {ROOT_NAME: root}
    for index in range(children):
        name = f"Tensor.add.{index}.forward"
        node = Node(name, node_type_of(name))
        node.attach(root)
        nodes[name] = node
    graph = Graph("NPU", 0, 0, root, nodes)
    graph.number()
    return graph


def test_a_node_with_100000_children_pages_by_keyset(tmp_path: Path) -> None:
    path = tmp_path / "wide.vis.db"
    part = open_sink(path, True)
    writer.write_graphs(part, [(_wide_graph(100_000), None)], None)
    part.close()
    conn = writer.open_db(path)
    writer.write_config(conn, writer.ConfigRow("build", "", None, 1, False, None, [0], [0]))
    writer.finalize(conn)
    key = GraphKey("NPU", 0, 0)
    with open_vis_db(path, tmp_path / "cache") as db:
        plan = " ".join(
            str(row)
            for row in db.conn.execute(
                "EXPLAIN QUERY PLAN SELECT node_name FROM tb_nodes WHERE step = 0 AND rank = 0 AND "
                "data_source = 'NPU' AND up_node = 'DefaultModel' AND node_order > 5 ORDER BY node_order LIMIT 10"
            )
        )
        assert "index1" in plan and "TEMP B-TREE" not in plan
        seen = 0
        cursor = None
        while True:
            page = tree.children(db, key, ROOT_NAME, after=cursor, limit=5000)
            assert [node.name for node in page.items] == [
                f"Tensor.add.{seen + i}.forward" for i in range(len(page.items))
            ]
            seen += len(page.items)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == 100_000
        last = tree.children(db, key, ROOT_NAME, after=99_990, limit=3)
        assert [node.node_order for node in last.items] == [99_991, 99_992, 99_993]


def test_name_index_counts_names_not_occurrences() -> None:
    names = [
        "Module.a.forward.0",
        "Tensor.add.forward",
        "module.A.Forward.1",
        "x",
        "forward.forward",
    ]
    index = NameIndex(names)
    for needle in ("forward", "A", "Module.a", ".", "zzz", "forward.forward", "x"):
        expected = [i for i, name in enumerate(names) if needle.lower() in name.lower()]
        hits, total = index.substring(needle, None, 100)
        assert (hits, total) == (expected, len(expected)), needle
        assert list(index.containing(needle)) == expected
    first, total = index.substring("forward", None, 1)
    assert total == 4 and first == [0, 1]  # one extra hit says there is a next page
    rest, _total = index.substring("forward", 1, 10)
    assert rest == [2, 4]
    assert index.substring("a\nb", None, 5) == ([], 0)


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        ("linear", "linear"),
        (r"Module\.layers\.\d+\.mlp", "Module.layers."),
        ("ab?cdef", "cdef"),
        ("a{2}bcd", "bcd"),
        ("(abc)def", "def"),
        ("abc|def", None),
        ("x.yz", None),
        ("[abc]defg", "defg"),
        ("abc+de", "abc"),
    ],
)
def test_required_literal(pattern: str, literal: str | None) -> None:
    assert required_literal(pattern) == literal
    found = required_literal(pattern)
    if found is not None:  # every name a pattern can match contains the literal
        for name in (
            "Module.layers.12.mlp",
            "abcdef",
            "acdef",
            "aabcd",
            "abcdef",
            "adefg",
            "abbcd",
        ):
            if re.search(pattern, name):
                assert found.lower() in name.lower()


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)", "(?<=a)b", "(", "a" * 300])
def test_refused_patterns(pattern: str) -> None:
    with pytest.raises(ValueError):
        compile_search_regex(pattern)


def test_a_file_that_is_not_a_vis_db(tmp_path: Path) -> None:
    from graphboard.errors import StoreError

    plain = tmp_path / "plain.vis.db"
    with sqlite3.connect(plain) as conn:
        conn.execute("CREATE TABLE other (x)")
    with pytest.raises(StoreError, match=r"not a \.vis\.db"), open_vis_db(plain, tmp_path):
        pass
    junk = tmp_path / "junk.vis.db"
    junk.write_text("hello")
    with pytest.raises(StoreError, match="not an SQLite database"), open_vis_db(junk, tmp_path):
        pass
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)
