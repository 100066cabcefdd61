"""The API answers in its own words: a side is ``target`` or ``golden`` in every response body
(issue 31, item 6). msprobe's ``NPU`` / ``Bench`` stay only inside msprobe's own format: the
compare table's column headers and cells (its CSV), a parameter's stored fields, the
comparison's metric names and a row's messages as msprobe stored them, and the ``.vis.config``
export."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from served_files import Q

TARGET = {**Q, "side": "target"}
GOLDEN = {**Q, "side": "golden"}
NODE = "Functional.gelu.0.forward"
MSPROBE_WORD = re.compile(r"\b(NPU|Bench|BENCH)\b")
SIDE_KEY = re.compile(r"(?i)\b(npu|bench)\b|^(npu|bench)_|_(npu|bench)$")

# Where msprobe's words are msprobe's format, passed through as it is: (path of keys, with
# "*" for any list index or dict key) -> why.
MSPROBE_FORMAT = {
    ("columns", "*"): "the table's headers are msprobe compare's (NPU Name, Bench max ...)",
    ("items", "*", "cells", "*"): "the table's cells are msprobe compare's CSV cells",
    ("rows", "*", "target", "fields"): "a parameter's fields as msprobe stored them",
    ("rows", "*", "golden", "fields"): "a parameter's fields as msprobe stored them",
    ("rows", "*", "comparison"): "the metrics as msprobe's compare names them",
    ("rows", "*", "messages"): "a row's messages as msprobe's file holds them (its Err_message)",
}


def _exempt(path: tuple[str, ...]) -> bool:
    for prefix in MSPROBE_FORMAT:
        if len(path) >= len(prefix) and all(
            want in ("*", got) for want, got in zip(prefix, path, strict=False)
        ):
            return True
    return False


def _msprobe_words(body: Any, path: tuple[str, ...] = ()) -> Iterator[str]:
    """Every place in a JSON body where a side is spelled msprobe's way."""
    if _exempt(path):
        return
    if isinstance(body, dict):
        for key, value in body.items():
            if SIDE_KEY.search(key):
                yield f"{'/'.join(path)}: key {key!r}"
            if key == "side" and value not in ("target", "golden"):
                yield f"{'/'.join(path)}: side {value!r}"
            yield from _msprobe_words(value, (*path, key))
    elif isinstance(body, list):
        for item in body:
            yield from _msprobe_words(item, (*path, "*"))
    elif isinstance(body, str) and MSPROBE_WORD.search(body):
        yield f"{'/'.join(path)}: {body!r}"


def _answers(client: TestClient, graph: str) -> Iterator[tuple[str, Any]]:
    base = f"/api/graphs/{graph}"
    reads: list[tuple[str, dict[str, Any]]] = [
        ("/api/graphs", {}),
        (f"{base}/config", {}),
        (f"{base}/children", TARGET),
        (f"{base}/children", GOLDEN),
        (f"{base}/node", {**TARGET, "name": NODE}),
        (f"{base}/node", {**GOLDEN, "name": NODE}),
        (f"{base}/path", {**GOLDEN, "name": NODE}),
        (f"{base}/first-error", TARGET),
        (f"{base}/worst", {**TARGET, "name": "DefaultModel"}),
        (f"{base}/search", {**GOLDEN, "q": "gelu"}),
        (f"{base}/filter", {**TARGET, "precision": "error"}),
        (f"{base}/matches", Q),
        (f"{base}/matches/history", Q),
        (f"{base}/suggestions", Q),
        (f"{base}/heatmap", {"rows": "module", "cols": "pass", "statistic": "norm"}),
        (
            f"{base}/heatmap",
            {"rows": "module", "cols": "pass", "statistic": "norm", "side": "golden"},
        ),
        (f"{base}/table", Q),
        (f"{base}/diagnosis", {}),
    ]
    for url, params in reads:
        response = client.get(url, params=params)
        assert response.status_code == 200, (url, params, response.text)
        yield f"{url} {params}", response.json()


@pytest.mark.parametrize("graph", ["ours/convnet-stats", "msprobe/convnet-stats"])
def test_no_answer_spells_a_side_as_msprobe_does(client: TestClient, graph: str) -> None:
    found = [
        f"{what}: {where}"
        for what, body in _answers(client, graph)
        for where in _msprobe_words(body)
    ]
    assert not found, "\n".join(found)


def test_a_graph_and_a_node_answer_with_their_side(client: TestClient) -> None:
    listing = client.get("/api/graphs/ours/convnet-stats/config").json()
    assert [graph["side"] for graph in listing["graphs"]] == ["target", "golden"]
    detail = client.get(
        "/api/graphs/ours/convnet-stats/node", params={**GOLDEN, "name": NODE}
    ).json()
    assert (detail["target"]["side"], detail["golden"]["side"]) == ("target", "golden")


@pytest.mark.parametrize("alias", ["NPU", "Bench"])
def test_a_request_in_msprobes_words_is_answered_in_ours(client: TestClient, alias: str) -> None:
    detail = client.get(
        "/api/graphs/ours/convnet-stats/node", params={**Q, "side": alias, "name": NODE}
    )
    assert detail.status_code == 200, detail.text
    assert not list(_msprobe_words(detail.json()))


def test_a_refusal_names_the_side_in_our_words(client: TestClient) -> None:
    missing = client.get(
        "/api/graphs/ours/convnet-stats/node", params={**Q, "side": "Bench", "name": "nowhere"}
    )
    assert missing.status_code == 404
    assert missing.json()["error"]["message"].startswith("no golden node 'nowhere'")
    absent = client.get("/api/graphs/ours/convnet-stats/children", params={**GOLDEN, "step": 7})
    assert absent.status_code == 404
    assert absent.json()["error"]["message"].startswith("the file has no golden graph")
    heatmap = client.get(
        "/api/graphs/ours/convnet-stats/heatmap",
        params={"rows": "module", "cols": "pass", "statistic": "error", "side": "Bench"},
    )
    assert heatmap.status_code == 422
    assert "side=golden" in heatmap.json()["error"]["message"]
    assert not MSPROBE_WORD.search(heatmap.json()["error"]["message"])


def test_the_openapi_models_name_the_sides_in_our_words(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for model in ("GraphStatsOut", "NodeSideOut", "FirstErrorOut"):
        side = schemas[model]["properties"]["side"]
        assert {"enum": ["target", "golden"], "type": "string"} in side["anyOf"], side
        assert "NPU" not in str(side) and "Bench" not in str(side)
