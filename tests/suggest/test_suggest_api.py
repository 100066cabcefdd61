"""The suggestions API on a real app (FastAPI's TestClient) over a renamed compare: list for a
graph and a subtree, accept one, accept all above a confidence, reject one (and it stays
rejected), with the server's refusals."""

from __future__ import annotations

import gc
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ci_support import with_viewer_token
from graphboard.server.app import create_app
from graphboard.server.settings import Settings
from renamed_dumps import RenamedCompare

Q = {"step": 0, "rank": 0}
BLOCK = ("Module.blocks.1.Block.forward.0", "Module.layers.1.TransformerLayer.forward.0")
MLP = ("Module.blocks.1.mlp.Sequential.forward.0", "Module.layers.1.ffn.MLP.forward.0")


@pytest.fixture
def client(renamed: Callable[[int], RenamedCompare], tmp_path: Path) -> Iterator[TestClient]:
    shutil.copy2(renamed(2).renamed, tmp_path / "run.vis.db")
    shutil.copy2(renamed(2).original, tmp_path / "original.vis.db")
    with TestClient(create_app(Settings(data_dir=tmp_path))) as served:
        with_viewer_token(served)
        yield served


def _list(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get("/api/graphs/run/suggestions", params={**Q, **params})
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def _pairs(found: dict[str, Any]) -> dict[str, str]:
    return {s["target"]: s["golden"] for s in found["suggestions"]}


def _node(client: TestClient, name: str) -> dict[str, Any]:
    response = client.get("/api/graphs/run/path", params={**Q, "side": "NPU", "name": name})
    assert response.status_code == 200, response.text
    node: dict[str, Any] = response.json()["node"]
    return node


def test_list_for_the_graph_and_a_subtree(client: TestClient) -> None:
    found = _list(client)
    assert len(found["suggestions"]) == 139 and found["fused"] == []
    assert _pairs(found)[BLOCK[0]] == BLOCK[1]
    first = found["suggestions"][0]
    assert set(first) == {"step", "rank", "target", "golden", "confidence", "reason"}
    below = _list(client, under=BLOCK[0])
    assert 0 < len(below["suggestions"]) < len(found["suggestions"])
    assert all(
        ".blocks.1." in s["target"] or s["target"].startswith(("Functional", "Tensor", "Torch"))
        for s in below["suggestions"]
    )  # the block itself and what runs inside it
    assert not any(".blocks.0." in s["target"] for s in below["suggestions"])
    assert _pairs(below)[MLP[0]] == MLP[1]
    assert _list(client, min_confidence=0.99)["suggestions"] == [
        s for s in found["suggestions"] if s["confidence"] >= 0.99
    ]


def test_accept_one_then_all_above(client: TestClient) -> None:
    accepted = client.post(
        "/api/graphs/run/suggestions/accept", json={**Q, "target": BLOCK[0], "golden": BLOCK[1]}
    )
    assert accepted.status_code == 200, accepted.text
    assert [p["target"] for p in accepted.json()["pairs"]] == [BLOCK[0]]
    node = _node(client, BLOCK[0])
    assert node["matched"] and node["manual"] and node["counterpart"] == BLOCK[1]
    assert BLOCK[0] not in _pairs(_list(client))  # matched now: no longer proposed
    again = client.post(
        "/api/graphs/run/suggestions/accept", json={**Q, "target": BLOCK[0], "golden": BLOCK[1]}
    )
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_matched"
    everything = client.post(
        "/api/graphs/run/suggestions/accept-all", json={**Q, "min_confidence": 0.6}
    )
    assert everything.status_code == 200, everything.text
    body = everything.json()
    assert body["total"] == body["matched"] == 138 and body["failed"] == []
    assert _list(client)["suggestions"] == []
    assert _node(client, MLP[0])["manual"]
    # msprobe's rules, which rescore accepted (manual) matches; the default dtype-aware rules
    # withhold a re-paired node's verdict until a rebuild (docs/dtype-aware.md §6)
    ruled = {**Q, "side": "NPU", "rules": "msprobe"}
    first = client.get("/api/graphs/run/first-error", params=ruled).json()
    original = client.get("/api/graphs/original/first-error", params=ruled).json()
    assert first["node"]["name"] == original["node"]["name"] == "Functional.gelu.1.forward"
    undone = client.post("/api/graphs/run/matches/undo", params=Q)
    assert undone.status_code == 200, undone.text
    assert _node(client, MLP[0])["matched"] is False  # the whole accept-all was one action
    assert _node(client, BLOCK[0])["manual"]  # the earlier accept stands


def test_reject_is_remembered(client: TestClient, tmp_path: Path) -> None:
    rejected = client.post(
        "/api/graphs/run/suggestions/reject", json={**Q, "target": MLP[0], "golden": MLP[1]}
    )
    assert rejected.status_code == 200, rejected.text
    assert _pairs(_list(client, min_confidence=0)).get(MLP[0]) != MLP[1]
    # a restart of the server (a new app on the same file) still leaves it out
    with TestClient(create_app(Settings(data_dir=tmp_path))) as other:
        with_viewer_token(other)
        response = other.get("/api/graphs/run/suggestions", params={**Q, "min_confidence": 0})
        assert _pairs(response.json()).get(MLP[0]) != MLP[1]


def test_refusals(client: TestClient, tmp_path: Path) -> None:
    missing = client.get("/api/graphs/run/suggestions", params={"step": 4, "rank": 0})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "unknown_graph_part"
    unknown = client.get(
        "/api/graphs/run/suggestions", params={**Q, "under": "Module.nope.forward.0"}
    )
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_node"
    bad = client.get("/api/graphs/run/suggestions", params={**Q, "min_confidence": 3})
    assert bad.status_code == 422
    (tmp_path / "run.vis.db").chmod(0o444)
    try:
        refused = client.post(
            "/api/graphs/run/suggestions/reject", json={**Q, "target": MLP[0], "golden": MLP[1]}
        )
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "read_only"
    finally:
        (tmp_path / "run.vis.db").chmod(0o644)


def test_a_suggestions_request_leaves_the_collector_alone(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31: the collector is the whole interpreter's, and a server's other requests run
    meanwhile on other threads; a request must never pause it (this one did, gc.disable)."""

    def refused() -> None:
        raise AssertionError("a request paused the cyclic collector")

    monkeypatch.setattr(gc, "disable", refused)
    assert _pairs(_list(client))[BLOCK[0]] == BLOCK[1]
