"""Every store a request can grow is validated and bounded (issue 30, point 5): rejections
only of what the file holds, and a match history of at most HISTORY_LIMIT actions."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from write_routes import GRAPH, PAIR, STEP_RANK

from ci_support import with_viewer_token
from graphboard.server.app import create_app
from graphboard.server.settings import Settings
from graphboard.store import matches


@pytest.fixture
def writer(fresh_data_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(data_dir=fresh_data_dir))) as client:
        yield with_viewer_token(client)


def test_only_what_the_file_holds_can_be_rejected(writer: TestClient, fresh_data_dir: Path) -> None:
    file = fresh_data_dir / f"{GRAPH}.vis.db"
    before = hashlib.sha256(file.read_bytes()).hexdigest()
    url = f"/api/graphs/{GRAPH}/suggestions/reject"
    for body, code in (
        ({**STEP_RANK, **PAIR, "target": "Module.made.up.forward.0"}, "unknown_node"),
        ({**STEP_RANK, **PAIR, "golden": "x" * 4000}, "unknown_node"),
        ({**STEP_RANK, **PAIR, "golden": PAIR["target"]}, "unknown_node"),  # a target name
        ({**PAIR, "step": 7, "rank": 0}, "unknown_graph_part"),
        ({**PAIR, "step": 0, "rank": 2**40}, "unknown_graph_part"),
    ):
        response = writer.post(url, json=body)
        assert response.status_code == 404, (body, response.text)
        assert response.json()["error"]["code"] == code
    assert hashlib.sha256(file.read_bytes()).hexdigest() == before  # nothing stored
    assert writer.post(url, json={**STEP_RANK, **PAIR}).status_code == 200


def test_the_match_history_keeps_the_latest_actions(
    writer: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(matches, "HISTORY_LIMIT", 4)
    url = f"/api/graphs/{GRAPH}/matches"
    for _round in range(3):  # six actions: match, unmatch, match, ...
        assert writer.post(url, json={**STEP_RANK, **PAIR}).status_code == 200
        assert writer.delete(url, params={**STEP_RANK, **PAIR}).status_code == 200
    assert writer.post(url, json={**STEP_RANK, **PAIR}).status_code == 200  # the 7th
    history = writer.get(f"{url}/history", params=STEP_RANK).json()["actions"]
    assert [action["kind"] for action in history] == ["unmatch", "match", "unmatch", "match"]
    assert len({action["id"] for action in history}) == 4
    for _undo in range(4):
        assert writer.post(f"{url}/undo", params=STEP_RANK).status_code == 200
    beyond = writer.post(f"{url}/undo", params=STEP_RANK)
    assert beyond.status_code == 409 and beyond.json()["error"]["code"] == "nothing_to_undo"
    # the state the forgotten actions left stands: after undoing the kept four, matched
    pairs = writer.get(url, params=STEP_RANK).json()["pairs"]
    assert (PAIR["target"], PAIR["golden"]) in {(p["target"], p["golden"]) for p in pairs}
