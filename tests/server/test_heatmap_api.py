"""GET /api/graphs/{graph}/heatmap over real files: graphboard's builds and msprobe's own,
every parameter validated (422 with a reason), infinities sent as "Infinity"."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

LAYERS = [
    "Module.stem.Sequential",
    "Module.blocks.0.ResidualBlock",
    "Module.pool.AdaptiveAvgPool2d",
    "Module.head.Sequential",
]


def _heatmap(client: TestClient, graph: str, **params: Any) -> Any:
    response = client.get(f"/api/graphs/{graph}/heatmap", params=params)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("graph", ["ours/convnet-ddp2", "msprobe/convnet-ddp2"])
def test_module_by_rank_of_a_compare(client: TestClient, graph: str) -> None:
    found = _heatmap(client, graph, rows="module", cols="rank", statistic="level", step=1)
    assert set(found) == {"rows", "cols", "values", "nodes", "depth", "depths", "step", "rank"}
    assert found["rows"] == LAYERS
    assert (found["cols"], found["step"], found["rank"], found["depth"]) == ([0, 1], 1, None, 1)
    assert found["nodes"][3] == ["Module.head.Sequential.forward.0"] * 2
    assert all(value in (0, 1, 2) for row in found["values"] for value in row)
    # the node behind a cell is the node the viewer opens
    node = client.get(
        f"/api/graphs/{graph}/node",
        params={"side": "NPU", "step": 1, "rank": 1, "name": found["nodes"][3][1]},
    ).json()
    level = node["target"]["node"]["rollup"]["worst_level"]
    assert found["values"][3][1] == {"pass": 0, "warning": 1, "error": 2}[level]


def test_precision_map_of_one_step_and_rank(client: TestClient) -> None:
    found = _heatmap(
        client, "ours/convnet-ddp2", rows="module", cols="pass", statistic="error", depth=2
    )
    assert found["cols"] == ["forward", "backward", "parameters_grad"]
    assert (found["step"], found["rank"]) == (0, 0)
    assert "Module.head.3.Linear" in found["rows"]
    row = found["rows"].index("Module.head.3.Linear")
    assert found["nodes"][row] == [
        "Module.head.3.Linear.forward.0",
        "Module.head.3.Linear.backward.0",
        "Module.head.3.Linear.parameters_grad.0",
    ]


def test_infinite_values_are_sent_as_infinity(client: TestClient) -> None:
    response = client.get(
        "/api/graphs/ours/convnet-overflow/heatmap",
        params={"rows": "module", "cols": "pass", "statistic": "max", "depth": 2},
    )
    assert response.status_code == 200, response.text
    assert '"Infinity"' in response.text or '"NaN"' in response.text


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"rows": "module", "cols": "step"}, "statistic"),
        ({"rows": "module", "cols": "step", "statistic": "median"}, "statistic"),
        ({"rows": "node", "cols": "step", "statistic": "norm"}, "rows"),
        ({"rows": "module", "cols": "step", "statistic": "norm", "depth": -1}, "depth"),
        ({"rows": "module", "cols": "step", "statistic": "norm", "side": "gold"}, "side"),
        ({"rows": "module", "cols": "step", "statistic": "norm", "pass": "sideways"}, "pass"),
        ({"rows": "step", "cols": "module", "statistic": "norm"}, "not a heatmap"),
        ({"rows": "module", "cols": "step", "statistic": "norm", "step": 1}, "step=1: every step"),
        (
            {"rows": "module", "cols": "rank", "statistic": "norm", "step": 9},
            "the file has steps [0, 1]",
        ),
        ({"rows": "rank", "cols": "step", "statistic": "norm"}, "module: required"),
        ({"rows": "module", "cols": "step", "statistic": "norm", "depth": 9}, "depth=9: no module"),
        ({"rows": "module", "cols": "step", "statistic": "level", "side": "diff"}, "side=diff"),
    ],
)
def test_bad_parameters_are_refused_with_a_reason(
    client: TestClient, params: dict[str, Any], reason: str
) -> None:
    response = client.get("/api/graphs/ours/convnet-ddp2/heatmap", params=params)
    assert response.status_code == 422, response.text
    assert reason in response.text


def test_a_build_refuses_compare_statistics(client: TestClient) -> None:
    response = client.get(
        "/api/graphs/ours/convnet-overflow/heatmap",
        params={"rows": "module", "cols": "step", "statistic": "error"},
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_heatmap"
    assert "needs a compare" in response.json()["error"]["message"]


def test_unknown_graph_is_404(client: TestClient) -> None:
    response = client.get(
        "/api/graphs/nope/heatmap", params={"rows": "module", "cols": "step", "statistic": "norm"}
    )
    assert response.status_code == 404


@pytest.mark.parametrize(("ours", "msprobes"), [("target", "NPU"), ("golden", "Bench")])
def test_the_heatmaps_side_is_target_or_golden_with_msprobes_words_as_aliases(
    client: TestClient, ours: str, msprobes: str
) -> None:
    params = {"rows": "module", "cols": "rank", "statistic": "max", "step": 1}
    url = "/api/graphs/ours/convnet-ddp2/heatmap"
    by_our_word = client.get(url, params={**params, "side": ours})
    assert by_our_word.status_code == 200, by_our_word.text
    assert by_our_word.content == client.get(url, params={**params, "side": msprobes}).content
