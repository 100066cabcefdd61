"""Name search (substring and regex) and verdict filters, both paged with totals."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from served_files import Q

from graphboard.compare.result import level_of_precision
from graphboard.server.app import create_app
from graphboard.server.settings import Settings


def _names(
    data_dir: Path, graph: str, side: str = "NPU", step: int = 0, rank: int = 0
) -> list[tuple[str, Any, Any, int]]:
    """(name, precision, overflow, child count) of every node, straight from tb_nodes."""
    with sqlite3.connect(f"file:{data_dir / graph}.vis.db?mode=ro", uri=True) as conn:
        return [
            (name, precision, overflow, 0 if not sub_nodes else sub_nodes.count('"') // 2)
            for name, precision, overflow, sub_nodes in conn.execute(
                "SELECT node_name, precision_index, overflow_level, sub_nodes FROM tb_nodes "
                "WHERE data_source=? AND step=? AND rank=?",
                (side, step, rank),
            )
        ]


def _pages(
    client: TestClient, graph: str, what: str, limit: int, **params: Any
) -> tuple[list[dict], list[dict]]:
    items: list[dict] = []
    bodies: list[dict] = []
    cursor = None
    while True:
        query = {**Q, **params, "limit": limit}
        if cursor is not None:
            query["cursor"] = cursor
        response = client.get(f"/api/graphs/{graph}/{what}", params=query)
        assert response.status_code == 200, response.text
        body = response.json()
        bodies.append(body)
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items, bodies


@pytest.mark.parametrize(
    "graph", ["ours/convnet-stats", "msprobe/convnet-stats", "msprobe/deep/resnet50-build"]
)
@pytest.mark.parametrize("text", ["relu", "RELU", "conv", ".0.", "e", "Module.blocks.0.conv1"])
def test_substring_search_is_case_insensitive_paged_and_counted(
    client: TestClient, data_dir: Path, graph: str, text: str
) -> None:
    expected = {name for name, *_rest in _names(data_dir, graph) if text.lower() in name.lower()}
    items, bodies = _pages(client, graph, "search", limit=7, q=text)
    assert {item["name"] for item in items} == expected
    assert len(items) == len(expected)
    assert all(body["total"] == len(expected) for body in bodies)
    exec_orders = [item["exec_order"] for item in items]
    assert exec_orders == sorted(exec_orders), "execution order"


@pytest.mark.parametrize(
    "pattern",
    [
        r"conv\d\.Conv2d",
        r"^Functional\.",
        r"forward\.0$",
        r"Tensor\.__(add|mul)__",
        r"relu.*backward",
    ],
)
def test_regex_search(client: TestClient, data_dir: Path, pattern: str) -> None:
    compiled = re.compile(pattern, re.IGNORECASE)
    expected = {
        name for name, *_rest in _names(data_dir, "ours/convnet-stats") if compiled.search(name)
    }
    items, bodies = _pages(client, "ours/convnet-stats", "search", limit=5, q=pattern, regex=True)
    assert {item["name"] for item in items} == expected
    assert bodies[0]["total"] == len(expected)


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("(", "missing )"),
        ("[a-", "missing ]"),
        (r"(relu)\.\1", "no backreferences"),
        ("conv(?=1)", "invalid perl operator: (?="),
        ("x" * 300, "longer than 256 characters"),
        ("[^.]{1000}" * 3, "too complex"),
    ],
)
def test_a_refused_regex_is_422(client: TestClient, pattern: str, says: str) -> None:
    response = client.get(
        "/api/graphs/ours/convnet-stats/search", params={**Q, "q": pattern, "regex": True}
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_regex" and error["message"].startswith("q: ")
    assert says in error["message"] and "\n" not in error["message"]


@pytest.mark.parametrize(
    ("pattern", "holds"),
    [
        ("(.|.)*!", lambda name: "!" in name),
        (".*.*.*!", lambda name: "!" in name),
        (r"(?:(\w|\.)*)*!", lambda name: "!" in name),
        ("(a+)+$", lambda name: name.lower().endswith("a")),
        (r"(\w*)*0\.forward", lambda name: "0.forward" in name.lower()),
    ],
)
def test_catastrophic_regexes_are_answered(
    client: TestClient, data_dir: Path, pattern: str, holds: Any
) -> None:
    """Python's re backtracks for ever on these: RE2 answers them, in linear time."""
    expected = {name for name, *_rest in _names(data_dir, "ours/convnet-stats") if holds(name)}
    items, bodies = _pages(client, "ours/convnet-stats", "search", limit=50, q=pattern, regex=True)
    assert {item["name"] for item in items} == expected
    assert bodies[0]["total"] == len(expected)


def test_a_regex_search_past_its_time_limit_is_422(data_dir: Path) -> None:
    with TestClient(create_app(Settings(data_dir=data_dir, search_seconds=1e-9))) as slow:
        response = slow.get(
            "/api/graphs/ours/convnet-stats/search", params={**Q, "q": "relu", "regex": True}
        )
        assert response.status_code == 422
        error = response.json()["error"]
        assert error["code"] == "search_too_slow" and "time limit" in error["message"]
        # a substring search has no such limit
        plain = slow.get("/api/graphs/ours/convnet-stats/search", params={**Q, "q": "relu"})
        assert plain.status_code == 200 and plain.json()["total"] > 0


def test_search_with_no_hit_and_bad_query(client: TestClient) -> None:
    body = client.get(
        "/api/graphs/ours/convnet-stats/search", params={**Q, "q": "zzzz-nothing"}
    ).json()
    assert body == {"items": [], "next_cursor": None, "total": 0}
    assert (
        client.get("/api/graphs/ours/convnet-stats/search", params={**Q, "q": ""}).status_code
        == 422
    )
    assert client.get("/api/graphs/ours/convnet-stats/search", params=Q).status_code == 422


def _bucket(precision: Any) -> str | None:
    level = level_of_precision(precision)
    return None if level is None else level.label


@pytest.mark.parametrize("graph", ["ours/convnet-stats", "msprobe/convnet-stats"])
def test_filter_by_precision_bucket(client: TestClient, data_dir: Path, graph: str) -> None:
    rows = _names(data_dir, graph)
    for buckets in (["error"], ["warning"], ["error", "warning"], ["pass", "warning", "error"]):
        expected = {name for name, precision, *_rest in rows if _bucket(precision) in buckets}
        # msprobe's rules: tb_nodes' precision_index is theirs
        items, bodies = _pages(client, graph, "filter", limit=4, precision=buckets, rules="msprobe")
        assert {item["name"] for item in items} == expected, buckets
        assert bodies[0]["total"] == len(expected)
        for bucket in buckets:
            assert bodies[0]["counts"][bucket] == sum(
                1 for _n, p, *_r in rows if _bucket(p) == bucket
            )
        assert [item["exec_order"] for item in items] == sorted(
            item["exec_order"] for item in items
        )


@pytest.mark.parametrize(
    "graph", ["ours/convnet-stats", "msprobe/convnet-stats", "msprobe/convnet-overflow"]
)
def test_filter_by_overflow_level(client: TestClient, data_dir: Path, graph: str) -> None:
    rows = _names(data_dir, graph)
    levels = ["medium", "high", "critical"]
    expected = {name for name, _p, overflow, _c in rows if overflow in levels}
    items, bodies = _pages(client, graph, "filter", limit=10, overflow=levels)
    assert {item["name"] for item in items} == expected
    assert all(item["overflow"] in levels for item in items)
    assert bodies[0]["counts"] == {
        level: sum(1 for row in rows if row[2] == level) for level in levels
    }


def test_filter_unmatched_and_leaves_only(client: TestClient, data_dir: Path) -> None:
    items, bodies = _pages(client, "msprobe/layer-mapping", "filter", limit=5, unmatched=True)
    assert bodies[0]["total"] == len(items) == 27
    assert all(item["matched"] is False for item in items)
    leaves, leaf_bodies = _pages(
        client, "msprobe/layer-mapping", "filter", limit=5, unmatched=True, leaves_only=True
    )
    assert {item["name"] for item in leaves} == {
        item["name"] for item in items if item["child_count"] == 0
    }
    assert leaf_bodies[0]["total"] == len(leaves)
    root = client.get("/api/graphs/msprobe/layer-mapping/children", params=Q).json()["parent"]
    assert root["rollup"]["unmatched_leaves"] == len(leaves)


def test_filter_total_counts_a_node_once(client: TestClient, data_dir: Path) -> None:
    rows = _names(data_dir, "ours/convnet-stats")
    expected = {
        name
        for name, p, overflow, _c in rows
        if _bucket(p) == "error" or overflow in ("medium", "high", "critical")
    }
    items, bodies = _pages(
        client,
        "ours/convnet-stats",
        "filter",
        limit=3,
        precision=["error"],
        overflow=["medium", "high", "critical"],
        rules="msprobe",  # tb_nodes' precision_index is msprobe's
    )
    assert {item["name"] for item in items} == expected
    assert bodies[0]["total"] == len(expected) == len(items)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"precision": "fatal"},
        {"overflow": "huge"},
        {"unmatched": "maybe"},
        {"precision": "error", "cursor": "x"},
    ],
)
def test_filter_bad_parameters(client: TestClient, params: dict[str, Any]) -> None:
    response = client.get("/api/graphs/ours/convnet-stats/filter", params={**Q, **params})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_parameters"
