"""Children pages, node details, paths, first error, worst descendant and cross-rank peers."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from served_files import NODE_ROUTES, Q

GRAPHS = [
    "ours/convnet-stats",
    "msprobe/convnet-stats",
    "ours/layer-mapping",
    "msprobe/layer-mapping",
]


def _get(client: TestClient, graph: str, what: str, **params: Any) -> Any:
    response = client.get(f"/api/graphs/{graph}/{what}", params={**Q, **params})
    assert response.status_code == 200, response.text
    return response.json()


def _all_children(client: TestClient, graph: str, limit: int, **params: Any) -> list[dict]:
    items: list[dict] = []
    cursor = None
    while True:
        page = _get(
            client,
            graph,
            "children",
            limit=limit,
            **params,
            **({"cursor": cursor} if cursor is not None else {}),
        )
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items


def _tb_children(data_dir: Path, graph: str, parent: str) -> list[str]:
    with sqlite3.connect(f"file:{data_dir / graph}.vis.db?mode=ro", uri=True) as conn:
        row = conn.execute(
            "SELECT sub_nodes FROM tb_nodes WHERE data_source='NPU' AND step=0 AND rank=0 AND node_name=?",
            (parent,),
        ).fetchone()
    return orjson.loads(row[0]) if row and row[0] else []


@pytest.mark.parametrize("graph", GRAPHS)
def test_children_of_the_root_in_sibling_order(
    client: TestClient, data_dir: Path, graph: str
) -> None:
    page = _get(client, graph, "children")
    root = page["parent"]
    assert root["name"] == "DefaultModel" and root["parent"] is None and root["depth"] == 0
    names = [item["name"] for item in page["items"]]
    assert names == _tb_children(data_dir, graph, "DefaultModel")
    assert root["child_count"] == len(names)
    orders = [item["node_order"] for item in page["items"]]
    assert orders == sorted(orders)
    for item in page["items"]:
        assert item["parent"] == "DefaultModel"
        assert item["depth"] == 1
        assert item["child_count"] == len(_tb_children(data_dir, graph, item["name"]))


@pytest.mark.parametrize("graph", GRAPHS)
def test_children_pages_add_up_to_all_children(client: TestClient, graph: str) -> None:
    whole = _get(client, graph, "children")["items"]
    assert [item["name"] for item in _all_children(client, graph, limit=2)] == [
        item["name"] for item in whole
    ]
    module = next(item["name"] for item in whole if item["child_count"] > 2)
    inner = _get(client, graph, "children", parent=module)["items"]
    assert [item["name"] for item in _all_children(client, graph, limit=1, parent=module)] == [
        item["name"] for item in inner
    ]


def test_node_fields_carry_verdicts_colours_and_rollups(client: TestClient) -> None:
    page = _get(client, "ours/convnet-stats", "children")
    root = page["parent"]
    assert root["matched"] is True and root["counterpart"] == "DefaultModel"
    assert root["rollup"]["worst_level"] == "error"
    assert root["rollup"]["error_leaves"] >= 1
    head = next(
        item for item in page["items"] if item["name"] == "Module.head.Sequential.forward.0"
    )
    assert head["type_name"] == "module" and head["type"] == 0
    gelu = _get(client, "ours/convnet-stats", "path", name="Functional.gelu.0.forward")["node"]
    assert gelu["level"] == "error" and gelu["precision_index"] == 1.0
    assert gelu["color"] == "#FF704D" and gelu["introduced"] == "error"
    bench = client.get(
        "/api/graphs/ours/convnet-stats/path",
        params={**Q, "side": "Bench", "name": "Functional.gelu.0.forward"},
    ).json()["node"]
    assert bench["color"] is None and bench["matched"] is True
    grey = _get(
        client, "msprobe/layer-mapping", "path", name="Module.classifier.0.Linear.forward.0"
    )["node"]
    assert grey["matched"] is False and grey["color"] == "#C7C7C7" and grey["counterpart"] is None


def test_msprobe_files_get_the_same_derived_columns(client: TestClient) -> None:
    # msprobe's rules on both: the default reads graphboard's file under dtype-aware
    ours = _get(client, "ours/convnet-stats", "children", rules="msprobe")
    theirs = _get(client, "msprobe/convnet-stats", "children", rules="msprobe")
    assert ours["parent"]["rollup"]["worst_node"] == theirs["parent"]["rollup"]["worst_node"]
    assert ours["parent"]["rollup"]["error_leaves"] == theirs["parent"]["rollup"]["error_leaves"]
    # graphboard keeps a parameters_grad node msprobe drops, so positions shift by one
    # after it; the order of the root's children is the same.
    shared = {item["name"] for item in theirs["items"]} & {item["name"] for item in ours["items"]}
    assert [
        i["name"]
        for i in sorted(ours["items"], key=lambda i: i["exec_order"])
        if i["name"] in shared
    ] == [
        i["name"]
        for i in sorted(theirs["items"], key=lambda i: i["exec_order"])
        if i["name"] in shared
    ]


def test_micro_step_filters_the_roots_children(client: TestClient) -> None:
    everything = _get(client, "ours/convnet-stats", "children")["items"]
    only = _get(client, "ours/convnet-stats", "children", micro_step=0)["items"]
    assert [item["name"] for item in only] == [
        item["name"] for item in everything if item["micro_step"] == 0
    ]
    assert _get(client, "ours/convnet-stats", "children", micro_step=7)["items"] == []


@pytest.mark.parametrize("graph", ["ours/convnet-stats", "msprobe/convnet-stats"])
def test_node_pairs_both_sides_by_parameter_name(client: TestClient, graph: str) -> None:
    detail = _get(client, graph, "node", name="Functional.gelu.0.forward")
    assert (
        detail["target"]["node"]["name"]
        == detail["golden"]["node"]["name"]
        == "Functional.gelu.0.forward"
    )
    assert detail["target"]["side"] == "target" and detail["golden"]["side"] == "golden"
    assert detail["target"]["stack"], "the stack of the call"
    rows = detail["rows"]
    assert [row["key"] for row in rows][:1] == ["input.0"]
    output = next(row for row in rows if row["key"] == "output.0")
    assert output["paired_by"] == "name" and output["role"] == "output"
    assert output["target"]["name"] == "Functional.gelu.0.forward.output.0"
    assert output["golden"]["name"] == "Functional.gelu.0.forward.output.0"
    assert {"Max", "Min", "Mean", "Norm", "dtype", "shape"} <= set(output["target"]["fields"])
    assert "NormRelativeErr" in output["comparison"] and output["result"] in (
        "pass",
        "warning",
        "error",
    )
    assert "Result" not in output["golden"]["fields"]
    from_bench = client.get(
        f"/api/graphs/{graph}/node",
        params={**Q, "side": "Bench", "name": "Functional.gelu.0.forward"},
    ).json()
    assert from_bench["rows"] == rows


def test_node_without_counterpart_has_one_side(client: TestClient) -> None:
    detail = _get(
        client, "msprobe/layer-mapping", "node", name="Module.classifier.0.Linear.forward.0"
    )
    assert detail["golden"] is None
    assert all(row["golden"] is None and row["paired_by"] is None for row in detail["rows"])
    build = _get(client, "ours/convnet-overflow", "node", name="Functional.conv2d.0.forward")
    assert build["golden"] is None and build["target"]["node"]["matched"] is None


@pytest.mark.parametrize("graph", GRAPHS)
def test_path_lists_ancestors_root_first(client: TestClient, graph: str) -> None:
    body = _get(client, graph, "path", name="Functional.conv2d.0.forward")
    assert [node["name"] for node in body["ancestors"]] == [
        "DefaultModel",
        "Module.stem.Sequential.forward.0",
        "Module.stem.0.Conv2d.forward.0",
    ]
    assert body["node"]["parent"] == "Module.stem.0.Conv2d.forward.0"
    root = _get(client, graph, "path", name="DefaultModel")
    assert root["ancestors"] == []


@pytest.mark.parametrize("graph", ["ours/convnet-stats", "msprobe/convnet-stats"])
def test_first_error_and_worst_descendant(client: TestClient, graph: str) -> None:
    """Under msprobe's rules, which the listing's first_error is (the default reads
    graphboard's file under dtype-aware: see test_dtype_rules_api)."""
    first = _get(client, graph, "first-error", rules="msprobe")
    assert first["node"]["name"] == "Functional.gelu.0.forward"
    assert first["node"]["introduced"] == "error"
    assert first["ancestors"][0]["name"] == "DefaultModel"
    worst = _get(client, graph, "worst", name="DefaultModel", rules="msprobe")
    assert worst["node"]["level"] == "error"
    root = _get(client, graph, "children", rules="msprobe")["parent"]
    assert worst["node"]["name"] == root["rollup"]["worst_node"]
    listed = client.get("/api/graphs").json()["files"]
    entry = next(item for item in listed if item["id"] == graph)
    assert entry["graphs"][0]["first_error"] == first["node"]["name"]


def test_no_first_error_in_a_clean_graph(client: TestClient) -> None:
    body = _get(client, "ours/layer-mapping", "first-error")
    assert body == {"node": None, "ancestors": []}
    bench = client.get(
        "/api/graphs/ours/layer-mapping/worst",
        params={**Q, "side": "Bench", "name": "DefaultModel"},
    ).json()
    assert bench["node"] is None


@pytest.mark.parametrize("graph", ["ours/convnet-ddp2", "msprobe/convnet-ddp2"])
def test_peers_of_a_send_on_another_rank(client: TestClient, graph: str) -> None:
    response = client.get(
        f"/api/graphs/{graph}/peers",
        params={"step": 1, "rank": 0, "name": "Distributed.send.0.forward"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["communication"] == "send"
    assert [(peer["rank"], peer["name"]) for peer in body["peers"]] == [
        (1, "Distributed.recv.0.forward")
    ]
    peer = body["peers"][0]["node"]
    assert peer["name"] == "Distributed.recv.0.forward" and peer["level"] in (
        "pass",
        "warning",
        "error",
    )
    if graph.startswith("ours/"):
        assert body["peers"][0]["verdict"] == "consistent"  # graphboard's gb_links
    else:
        assert body["peers"][0]["stored_precision"] is not None  # msprobe's annotation


def test_collective_peers_carry_graphboards_data_verdicts(client: TestClient) -> None:
    """An all_reduce's peers come from gb_peer_links (collectives are stored per group call)."""
    body = client.get(
        "/api/graphs/ours/convnet-ddp2/peers",
        params={"step": 0, "rank": 1, "name": "Distributed.all_reduce.0.forward"},
    ).json()
    assert body["communication"] == "send_receive"
    assert [(peer["rank"], peer["name"]) for peer in body["peers"]] == [
        (0, "Distributed.all_reduce.0.forward")
    ]
    assert body["peers"][0]["verdict"] == "consistent"


def test_peers_of_a_node_without_links_is_empty(client: TestClient) -> None:
    body = client.get(
        "/api/graphs/ours/convnet-stats/peers",
        params={"step": 0, "rank": 0, "name": "DefaultModel"},
    ).json()
    assert body["peers"] == [] and body["communication"] is None


@pytest.mark.parametrize(
    ("what", "params", "status", "code"),
    [
        ("children", {"parent": "Module.nope.forward.0"}, 404, "unknown_node"),
        ("node", {"name": "Module.nope.forward.0"}, 404, "unknown_node"),
        ("path", {"name": "x' OR '1'='1"}, 404, "unknown_node"),
        ("worst", {"name": "nope"}, 404, "unknown_node"),
        ("children", {"step": 9}, 404, "unknown_graph_part"),
        ("children", {"rank": 3}, 404, "unknown_graph_part"),
        ("children", {"side": "GPU"}, 422, "invalid_parameters"),
        ("children", {"step": -1}, 422, "invalid_parameters"),
        ("children", {"step": "one"}, 422, "invalid_parameters"),
        ("children", {"limit": 0}, 422, "invalid_parameters"),
        ("children", {"limit": 10**6}, 422, "invalid_parameters"),
        ("children", {"cursor": -5}, 422, "invalid_parameters"),
        ("children", {"micro_step": -1}, 422, "invalid_parameters"),
        ("node", {}, 422, "invalid_parameters"),
        ("node", {"name": ""}, 422, "invalid_parameters"),
        ("first-error", {"side": None}, 422, "invalid_parameters"),
        ("peers", {"name": "DefaultModel", "side": "Bench", "step": 4}, 404, "unknown_graph_part"),
    ],
)
def test_bad_parameters_and_unknown_nodes(
    client: TestClient, what: str, params: dict[str, Any], status: int, code: str
) -> None:
    query = {key: value for key, value in {**Q, **params}.items() if value is not None}
    response = client.get(f"/api/graphs/ours/convnet-stats/{what}", params=query)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["message"]


def test_unknown_file_is_404(client: TestClient) -> None:
    for what in NODE_ROUTES:
        response = client.get(
            f"/api/graphs/ours/nothing-here/{what}", params={**Q, "name": "x", "q": "x"}
        )
        assert response.status_code == 404, what
        assert response.json()["error"]["code"] == "unknown_graph"
    assert client.get("/api/nothing").status_code == 404


@pytest.mark.parametrize(
    ("route", "params"),
    [
        ("children", {}),
        ("node", {"name": "Functional.gelu.0.forward"}),
        ("path", {"name": "Functional.gelu.0.forward"}),
    ],
)
@pytest.mark.parametrize(("ours", "msprobes"), [("target", "NPU"), ("golden", "Bench")])
def test_a_side_is_named_target_or_golden_and_msprobes_words_are_aliases(
    client: TestClient, route: str, params: dict[str, Any], ours: str, msprobes: str
) -> None:
    url = f"/api/graphs/ours/convnet-stats/{route}"
    by_our_word = client.get(url, params={**Q, **params, "side": ours})
    by_msprobes = client.get(url, params={**Q, **params, "side": msprobes})
    assert by_our_word.status_code == 200, by_our_word.text
    assert by_our_word.content == by_msprobes.content  # the same bytes
    if route == "node":  # which spell the side in our word, however it was asked for
        assert f'"side":"{ours}"' in by_our_word.text
        assert f'"side":"{msprobes}"' not in by_our_word.text


def test_peers_take_target_as_their_default_side(client: TestClient) -> None:
    url = "/api/graphs/ours/convnet-ddp2/peers"
    params = {"step": 1, "rank": 0, "name": "Distributed.send.0.forward"}
    default = client.get(url, params=params)
    assert default.status_code == 200, default.text
    for side in ("target", "NPU"):
        assert client.get(url, params={**params, "side": side}).content == default.content


def test_an_unknown_side_is_refused_naming_the_accepted_words(client: TestClient) -> None:
    response = client.get("/api/graphs/ours/convnet-stats/children", params={**Q, "side": "gold"})
    assert response.status_code == 422
    assert all(word in response.text for word in ("target", "golden", "NPU", "Bench"))
