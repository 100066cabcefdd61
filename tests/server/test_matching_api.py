"""Manual matching through the API: scored like the builder, saved beside msprobe's tables,
undoable, exportable as msprobe's .vis.config, with precise refusals."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from served_files import BuildFn, fixture_path, reference_db
from served_files import Q as NODE_QUERY

from ci_support import with_viewer_token
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.app import create_app
from graphboard.server.settings import Settings
from graphboard.store.msprobe_columns import columns_file_path

# msprobe's rules: they rescore a manual match like the builder; the dtype-aware rules (the
# default) withhold a re-paired node's verdict until a rebuild (docs/dtype-aware.md §6)
Q = {**NODE_QUERY, "rules": "msprobe"}
GRAPH = "ours/layer-mapping"
STEP_RANK = {"step": 0, "rank": 0}
LINEAR = ("Module.classifier.0.Linear.forward.0", "Module.head.0.Linear.forward.0")
LINEAR_BACKWARD = ("Module.classifier.0.Linear.backward.0", "Module.head.0.Linear.backward.0")
HEAD = ("Module.classifier.Sequential.forward.0", "Module.head.Sequential.forward.0")


@pytest.fixture(scope="module")
def mapped(tmp_path_factory: pytest.TempPathFactory, built: BuildFn) -> Iterator[TestClient]:
    """What the builder makes of layer-mapping *with* the mapping file (-lm mapping.yaml)."""
    mapping = fixture_path("layer-mapping", "mapping.yaml")
    root = tmp_path_factory.mktemp("mapped")
    shutil.copyfile(built("layer-mapping", layer_mapping=mapping), root / "lm.vis.db")
    shutil.copyfile(reference_db("layer-mapping", "reference-lm"), root / "msprobe-lm.vis.db")
    with TestClient(create_app(Settings(data_dir=root))) as client:
        with_viewer_token(client)
        yield client


def _node(client: TestClient, graph: str, name: str, side: str = "NPU") -> dict[str, Any]:
    response = client.get(f"/api/graphs/{graph}/path", params={**Q, "side": side, "name": name})
    assert response.status_code == 200, response.text
    node: dict[str, Any] = response.json()["node"]
    return node


def _detail(client: TestClient, graph: str, name: str) -> dict[str, Any]:
    response = client.get(f"/api/graphs/{graph}/node", params={**Q, "name": name})
    assert response.status_code == 200, response.text
    detail: dict[str, Any] = response.json()
    return detail


def _match(client: TestClient, graph: str, pair: tuple[str, str], **options: Any) -> Any:
    return client.post(
        f"/api/graphs/{graph}/matches",
        json={**STEP_RANK, "target": pair[0], "golden": pair[1], **options},
    )


def _unmatch(client: TestClient, graph: str, pair: tuple[str, str], **options: Any) -> Any:
    return client.delete(
        f"/api/graphs/{graph}/matches",
        params={**STEP_RANK, "target": pair[0], "golden": pair[1], **options},
    )


def _undo(client: TestClient, graph: str) -> Any:
    return client.post(f"/api/graphs/{graph}/matches/undo", params=STEP_RANK)


def test_match_scores_like_the_builder_then_unmatch_and_undo(
    fresh_client: TestClient, mapped: TestClient
) -> None:
    before = _node(fresh_client, GRAPH, LINEAR[0])
    assert before["matched"] is False and before["color"] == "#C7C7C7"
    assert before["precision_index"] is None

    response = _match(fresh_client, GRAPH, LINEAR)
    assert response.status_code == 200, response.text
    body = response.json()
    assert [(pair["target"], pair["golden"]) for pair in body["pairs"]] == [LINEAR, LINEAR_BACKWARD]
    assert body["skipped"] == []

    for target, golden in (LINEAR, LINEAR_BACKWARD):
        ours = _node(fresh_client, GRAPH, target)
        builder = _node(mapped, "lm", target)  # built with -lm: the builder paired them itself
        assert ours["matched"] is True and ours["counterpart"] == golden == builder["counterpart"]
        assert ours["precision_index"] == builder["precision_index"]
        assert ours["level"] == builder["level"]
        assert ours["color"] == builder["color"]
        assert ours["introduced"] == builder["introduced"]
        assert ours["manual"] is True and builder["manual"] is False
        assert _node(fresh_client, GRAPH, golden, side="Bench")["counterpart"] == target
        rows = {row["key"]: row for row in _detail(fresh_client, GRAPH, target)["rows"]}
        expected = {row["key"]: row for row in _detail(mapped, "lm", target)["rows"]}
        assert rows == expected  # every metric, result and message, paired by name
    msprobe = _node(mapped, "msprobe-lm", LINEAR[0])
    assert msprobe["color"] == _node(fresh_client, GRAPH, LINEAR[0])["color"]

    unmatched = _unmatch(fresh_client, GRAPH, LINEAR)
    assert unmatched.status_code == 200, unmatched.text
    assert [(pair["target"], pair["golden"]) for pair in unmatched.json()["pairs"]] == [
        LINEAR,
        LINEAR_BACKWARD,
    ]
    after = _node(fresh_client, GRAPH, LINEAR[0])
    assert (
        after["matched"] is False
        and after["precision_index"] is None
        and after["color"] == "#C7C7C7"
    )
    assert all(not row["comparison"] for row in _detail(fresh_client, GRAPH, LINEAR[0])["rows"])

    undone = _undo(fresh_client, GRAPH)  # undo the unmatch: matched again
    assert undone.status_code == 200, undone.text
    assert undone.json()["undone"]["kind"] == "unmatch" and undone.json()["restored_nodes"] == 4
    assert (
        _node(fresh_client, GRAPH, LINEAR[0])["precision_index"]
        == _node(mapped, "lm", LINEAR[0])["precision_index"]
    )
    assert _undo(fresh_client, GRAPH).json()["undone"]["kind"] == "match"  # and the match
    assert _node(fresh_client, GRAPH, LINEAR[0]) == before
    nothing = _undo(fresh_client, GRAPH)
    assert nothing.status_code == 409 and nothing.json()["error"]["code"] == "nothing_to_undo"

    history = fresh_client.get(f"/api/graphs/{GRAPH}/matches/history", params=STEP_RANK).json()[
        "actions"
    ]
    assert [action["kind"] for action in history] == ["match", "unmatch"]
    assert all(action["undone_at"] for action in history)
    assert history[0]["pairs"] == [list(LINEAR), list(LINEAR_BACKWARD)]


def _subtree(client: TestClient, graph: str, name: str) -> list[dict[str, Any]]:
    nodes = [_node(client, graph, name)]
    todo = [name]
    while todo:
        page = client.get(
            f"/api/graphs/{graph}/children", params={**Q, "parent": todo.pop()}
        ).json()
        nodes += page["items"]
        todo += [item["name"] for item in page["items"]]
    return nodes


def test_descendants_and_twins_follow_and_roll_ups_match_the_builder(
    fresh_client: TestClient, mapped: TestClient
) -> None:
    root_before = _node(fresh_client, GRAPH, "DefaultModel")
    response = _match(fresh_client, GRAPH, HEAD, descendants=True)
    assert response.status_code == 200, response.text
    paired = {pair["target"] for pair in response.json()["pairs"]}
    for top in (
        "Module.classifier.Sequential.forward.0",
        "Module.classifier.Sequential.backward.0",
    ):
        ours = _subtree(fresh_client, GRAPH, top)
        assert {node["name"] for node in ours} <= paired
        for node in ours:
            builder = _node(mapped, "lm", node["name"])
            for field in ("matched", "counterpart", "precision_index", "level", "color", "rollup"):
                assert node[field] == builder[field], (node["name"], field)
    leaves = sum(1 for name in paired if _node(fresh_client, GRAPH, name)["child_count"] == 0)
    root_after = _node(fresh_client, GRAPH, "DefaultModel")
    assert (
        root_after["rollup"]["unmatched_leaves"]
        == root_before["rollup"]["unmatched_leaves"] - leaves
    )
    unmatched = fresh_client.get(
        f"/api/graphs/{GRAPH}/filter", params={**Q, "unmatched": True}
    ).json()
    assert unmatched["total"] == 27 - len(paired)
    listed = {f["id"]: f for f in fresh_client.get("/api/graphs").json()["files"]}[GRAPH]
    assert listed["unmatched"] == 27 - len(paired)

    removed = _unmatch(fresh_client, GRAPH, HEAD, descendants=True)
    assert removed.status_code == 200, removed.text
    assert {pair["target"] for pair in removed.json()["pairs"]} == paired
    assert _node(fresh_client, GRAPH, "DefaultModel") == root_before


def _tb_dump(path: Path) -> list[Any]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return [
            conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            for table in ("tb_nodes", "tb_stack", "tb_config")
        ]


def test_matching_an_msprobe_file_leaves_its_tables_as_written(
    fresh_client: TestClient, fresh_data_dir: Path, mapped: TestClient
) -> None:
    path = fresh_data_dir / "msprobe/layer-mapping.vis.db"
    before = _tb_dump(path)
    assert _match(fresh_client, "msprobe/layer-mapping", LINEAR).status_code == 200
    node = _node(fresh_client, "msprobe/layer-mapping", LINEAR[0])
    reference = _node(mapped, "msprobe-lm", LINEAR[0])  # msprobe's own -lm build
    assert node["matched"] is True and node["precision_index"] == reference["precision_index"]
    assert node["color"] == reference["color"]
    assert _tb_dump(path) == before
    with sqlite3.connect(path) as conn:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
    assert {"gb_match_overlay", "gb_match_actions", "gb_match_undo"} <= tables
    cache = fresh_data_dir / ".graphboard/cache"
    # The columns file derived before the write was restamped for the file as it is now.
    assert list(cache.glob("*.columns.db")) == [columns_file_path(path, cache)]
    assert not [
        p for p in fresh_data_dir.rglob("*") if p.name.endswith(("-wal", "-shm", "-journal"))
    ]


@pytest.mark.parametrize(
    ("pair", "status", "code"),
    [
        (
            ("Module.classifier.0.Linear.forward.0", "Functional.linear.0.forward"),
            409,
            "type_mismatch",
        ),
        (
            ("Module.stem.0.Conv2d.forward.0", "Module.head.0.Linear.forward.0"),
            409,
            "already_matched",
        ),
        (
            ("Module.classifier.0.Linear.forward.0", "Module.stem.0.Conv2d.forward.0"),
            409,
            "already_matched",
        ),
        (("Module.nope.forward.0", "Module.head.0.Linear.forward.0"), 404, "unknown_node"),
        (("Module.classifier.0.Linear.forward.0", "Module.nope.forward.0"), 404, "unknown_node"),
    ],
)
def test_refusals_say_why(
    fresh_client: TestClient, pair: tuple[str, str], status: int, code: str
) -> None:
    response = _match(fresh_client, GRAPH, pair)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert pair[0] in error["message"] or pair[1] in error["message"]


def test_unmatching_a_pair_that_is_not_one(fresh_client: TestClient) -> None:
    response = _unmatch(
        fresh_client, GRAPH, ("Module.stem.0.Conv2d.forward.0", "Module.head.0.Linear.forward.0")
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "not_matched"
    assert "Module.stem.0.Conv2d.forward.0" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "body",
    [
        {"step": 0, "rank": 0, "target": LINEAR[0]},
        {"step": -1, "rank": 0, "target": LINEAR[0], "golden": LINEAR[1]},
        {"step": 0, "rank": 0, "target": "", "golden": LINEAR[1]},
        {"step": 0, "rank": 0, "target": LINEAR[0], "golden": LINEAR[1], "extra": 1},
        {
            "step": 0,
            "rank": 0,
            "target": LINEAR[0],
            "golden": LINEAR[1],
            "descendants": "sometimes",
        },
    ],
)
def test_bad_match_bodies_are_422(fresh_client: TestClient, body: dict[str, Any]) -> None:
    response = fresh_client.post(f"/api/graphs/{GRAPH}/matches", json=body)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_parameters"


def test_unknown_step_rank_and_file(fresh_client: TestClient) -> None:
    response = fresh_client.post(
        f"/api/graphs/{GRAPH}/matches",
        json={"step": 3, "rank": 0, "target": LINEAR[0], "golden": LINEAR[1]},
    )
    assert response.status_code == 404 and response.json()["error"]["code"] == "unknown_graph_part"
    assert _match(fresh_client, "ours/missing", LINEAR).status_code == 404


def test_a_read_only_file_cannot_be_matched(fresh_client: TestClient, fresh_data_dir: Path) -> None:
    path = fresh_data_dir / f"{GRAPH}.vis.db"
    os.chmod(path, 0o444)
    try:
        response = _match(fresh_client, GRAPH, LINEAR)
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "read_only"
        listed = {f["id"]: f for f in fresh_client.get("/api/graphs").json()["files"]}
        assert listed[GRAPH]["writable"] is False
    finally:
        os.chmod(path, 0o644)
    os.chmod(path.parent, 0o555)
    try:
        response = _match(fresh_client, GRAPH, LINEAR)
        assert response.status_code == 403
        assert "journal" in response.json()["error"]["message"]
    finally:
        os.chmod(path.parent, 0o755)
    assert _node(fresh_client, GRAPH, LINEAR[0])["matched"] is False


def test_a_build_cannot_be_matched_nor_a_server_with_matching_off(
    tmp_path: Path, fresh_data_dir: Path, built: BuildFn
) -> None:
    shutil.copyfile(
        built("convnet-overflow", compare=False, overflow_check=True),
        fresh_data_dir / "build.vis.db",
    )
    with TestClient(create_app(Settings(data_dir=fresh_data_dir))) as client:
        with_viewer_token(client)
        response = _match(
            client, "build", ("Functional.conv2d.0.forward", "Functional.conv2d.0.forward")
        )
        assert response.status_code == 409 and response.json()["error"]["code"] == "not_a_compare"
    settings = Settings(data_dir=fresh_data_dir, allow_matching=False)
    with TestClient(create_app(settings)) as client:
        with_viewer_token(client)
        response = _match(client, GRAPH, LINEAR)
        assert (
            response.status_code == 403 and response.json()["error"]["code"] == "matching_disabled"
        )


def test_tensor_mode_rescores_from_the_tensor_files(fresh_client: TestClient) -> None:
    graph, name = "ours/convnet-tensor", "Functional.conv2d.1.forward"
    original = _node(fresh_client, graph, name)
    rows = _detail(fresh_client, graph, name)["rows"]
    assert original["matched"] and any("Cosine" in row["comparison"] for row in rows)
    assert _unmatch(fresh_client, graph, (name, name)).status_code == 200
    response = _match(fresh_client, graph, (name, name))
    assert response.status_code == 200, response.text
    again = _node(fresh_client, graph, name)
    assert (again["precision_index"], again["level"], again["color"]) == (
        original["precision_index"],
        original["level"],
        original["color"],
    )
    assert _detail(fresh_client, graph, name)["rows"] == rows


def test_a_missing_tensor_file_is_named(tmp_path: Path) -> None:
    case = fixture_path("convnet-tensor")
    dumps = tmp_path / "dumps"
    shutil.copytree(case / "target", dumps / "target")
    shutil.copytree(case / "golden", dumps / "golden")
    data = tmp_path / "data"
    result = run_build(
        BuildOptions(
            target=dumps / "target",
            golden=dumps / "golden",
            output_dir=data,
            output_name="t.vis.db",
        )
    )
    name = "Functional.conv2d.1.forward"
    lost = dumps / "golden/step0/rank0/dump_tensor_data" / f"{name}.output.0.pt"
    lost.unlink()
    with TestClient(create_app(Settings(data_dir=data))) as client:
        with_viewer_token(client)
        assert result.path.name == "t.vis.db"
        assert _unmatch(client, "t", (name, name)).status_code == 200
        response = _match(client, "t", (name, name), twins=False)
        assert response.status_code == 409
        error = response.json()["error"]
        assert error["code"] == "missing_tensor_file"
        assert f"{name}.output.0.pt" in error["message"] and "Bench" in error["message"]


def test_vis_config_export_and_import(fresh_client: TestClient) -> None:
    second = ("Module.classifier.3.Linear.forward.0", "Module.head.3.Linear.forward.0")
    assert _match(fresh_client, GRAPH, LINEAR).status_code == 200
    assert _match(fresh_client, GRAPH, second, twins=False).status_code == 200
    exported = fresh_client.get(f"/api/graphs/{GRAPH}/matches/vis-config", params=STEP_RANK)
    assert exported.status_code == 200
    assert 'filename="layer-mapping_0_0.vis.config"' in exported.headers["content-disposition"]
    config = exported.json()
    assert config == {
        LINEAR[0]: LINEAR[1],
        second[0]: second[1],
        LINEAR_BACKWARD[0]: LINEAR_BACKWARD[1],
    }
    listed = fresh_client.get(f"/api/graphs/{GRAPH}/matches", params=STEP_RANK).json()["pairs"]
    assert {(pair["target"], pair["golden"]) for pair in listed} == set(config.items())
    _undo(fresh_client, GRAPH)
    _undo(fresh_client, GRAPH)
    assert (
        fresh_client.get(f"/api/graphs/{GRAPH}/matches/vis-config", params=STEP_RANK).json() == {}
    )

    bad = {
        "Module.nope.forward.0": "Module.head.1.LayerNorm.forward.0",
        "Module.stem.0.Conv2d.forward.0": "Module.stem.0.Conv2d.forward.0",
    }
    imported = fresh_client.post(
        f"/api/graphs/{GRAPH}/matches/vis-config", params=STEP_RANK, json={**config, **bad}
    )
    assert imported.status_code == 200, imported.text
    body = imported.json()
    assert body["total"] == 5 and body["matched"] == 3
    assert {(item["target"], item["code"]) for item in body["failed"]} == {
        ("Module.nope.forward.0", "unknown_node"),
        ("Module.stem.0.Conv2d.forward.0", "already_matched"),
    }
    assert (
        fresh_client.get(f"/api/graphs/{GRAPH}/matches/vis-config", params=STEP_RANK).json()
        == config
    )
    assert (
        fresh_client.post(
            f"/api/graphs/{GRAPH}/matches/vis-config", params=STEP_RANK, json=["not", "a", "map"]
        ).status_code
        == 422
    )


def test_concurrent_matches_on_one_file_all_land(fresh_client: TestClient) -> None:
    pairs = [
        (f"Module.classifier.{index}.{cls}.forward.0", f"Module.head.{index}.{cls}.forward.0")
        for index, cls in enumerate(("Linear", "LayerNorm", "GELU", "Linear"))
    ]
    statuses: list[int] = []

    def run(pair: tuple[str, str]) -> None:
        statuses.append(_match(fresh_client, GRAPH, pair).status_code)

    threads = [threading.Thread(target=run, args=(pair,)) for pair in pairs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 4
    assert all(_node(fresh_client, GRAPH, target)["matched"] for target, _golden in pairs)
    history = fresh_client.get(f"/api/graphs/{GRAPH}/matches/history", params=STEP_RANK).json()[
        "actions"
    ]
    assert len(history) == 4


def test_readers_keep_reading_while_a_writer_matches(
    fresh_client: TestClient, fresh_data_dir: Path
) -> None:
    stop = threading.Event()
    failures: list[str] = []
    reads = 0

    def read() -> None:
        nonlocal reads
        while not stop.is_set():
            response = fresh_client.get(
                f"/api/graphs/{GRAPH}/children", params={**Q, "parent": HEAD[0]}
            )
            if response.status_code != 200:
                failures.append(response.text)
            state = {item["name"]: item["matched"] for item in response.json()["items"]}
            if state.get(LINEAR[0]) is None:
                failures.append(f"no {LINEAR[0]} in {state}")
            reads += 1

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for _ in range(5):
            assert _match(fresh_client, GRAPH, LINEAR).status_code == 200
            assert _unmatch(fresh_client, GRAPH, LINEAR).status_code == 200
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert failures == [] and reads > 0
    assert not [
        p for p in fresh_data_dir.rglob("*") if p.name.endswith(("-wal", "-shm", "-journal"))
    ]


def test_the_compare_table_shows_a_pair_made_by_hand(fresh_client: TestClient) -> None:
    """The table reads a node's data as the node view does: a manual pairing's rescored
    parameters stand in for the stored ones."""

    def linear_rows() -> dict[str, tuple[str, str, str]]:
        reply = fresh_client.get(
            f"/api/graphs/{GRAPH}/table", params={**STEP_RANK, "name": LINEAR[0], "limit": 50}
        )
        assert reply.status_code == 200, reply.text
        page = reply.json()
        at = [page["columns"].index(name) for name in ("Bench Name", "Result", "MaxRelativeErr")]
        return {
            item["cells"][0].removeprefix(LINEAR[0] + "."): tuple(item["cells"][i] for i in at)
            for item in page["items"]
        }

    before = linear_rows()
    assert before and {bench for bench, _result, _error in before.values()} == {"N/A"}
    assert _match(fresh_client, GRAPH, LINEAR).status_code == 200
    after = linear_rows()
    assert after.keys() == before.keys()
    assert all(bench == f"{LINEAR[1]}.{key}" for key, (bench, _r, _e) in after.items())
    # ... scored as the node view scores them: the rescored rows, not the build's unpaired ones
    rows = {row["key"]: row for row in _detail(fresh_client, GRAPH, LINEAR[0])["rows"]}
    for key, (_bench, result, error) in after.items():
        assert (result, error) == (rows[key]["result"], rows[key]["comparison"]["MaxRelativeErr"])
        assert error != "N/A"
