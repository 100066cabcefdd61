"""A file that fails its check refuses writes as it refuses reads (issue 30, point 2): before,
``suggestions/reject`` and a ``.vis.config`` import answered 200 on a file whose reads
answered 422, adding tables to it."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from fastapi.testclient import TestClient
from write_routes import GRAPH, STEP_RANK, WRITES

from ci_support import with_viewer_token
from graphboard.server.app import create_app
from graphboard.server.settings import Settings

PAGE_DAMAGE = b"\xff" * 400  # over a page's cell pointers: every cell points off the page


def damage_nodes(path: Path) -> None:
    """Overwrite part of a tb_nodes leaf page, as a bad disk or a torn copy would."""
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'tb_nodes'"
        ).fetchone()[0]
    conn.close()
    with path.open("r+b") as handle:
        handle.seek(page_size * (root + 4 - 1) + 100)  # a leaf below the root, past its header
        handle.write(PAGE_DAMAGE)


def test_a_damaged_file_refuses_every_write_as_it_refuses_reads(fresh_data_dir: Path) -> None:
    file = fresh_data_dir / f"{GRAPH}.vis.db"
    damage_nodes(file)
    conn = sqlite3.connect(file)
    try:
        checked = conn.execute("PRAGMA integrity_check").fetchone()[0]
    except sqlite3.DatabaseError as error:  # damage the check itself trips on
        checked = str(error)
    conn.close()
    assert checked != "ok"
    before = hashlib.sha256(file.read_bytes()).hexdigest()
    with TestClient(create_app(Settings(data_dir=fresh_data_dir))) as client:
        with_viewer_token(client)
        read = client.get(f"/api/graphs/{GRAPH}/children", params={**STEP_RANK, "side": "NPU"})
        assert read.status_code == 422, read.text  # how its reads answer
        codes = {}
        for method, path, params, body in WRITES:
            response = client.request(
                method, f"/api/graphs/{GRAPH}/{path}", params=params, json=body
            )
            assert response.status_code == 422, (path, response.text)
            error = response.json()["error"]
            codes[path] = error["code"]
            message = error["message"]
            assert message.startswith("layer-mapping.vis.db: "), message
            assert "\n" not in message and len(message) < 600, message
        # a write that reads the damage first (accept-all's proposals) fails as that read
        # does; every other fails the check before it writes anything
        assert codes.pop("suggestions/accept-all") in ("unreadable_file", "damaged_file")
        assert set(codes.values()) == {"damaged_file"}, codes
    assert hashlib.sha256(file.read_bytes()).hexdigest() == before  # nothing written
    assert not Path(f"{file}-journal").exists()


def test_damage_made_after_a_sound_write_is_still_found(fresh_data_dir: Path) -> None:
    """A file found sound is remembered by its identity; damage from elsewhere changes that."""
    file = fresh_data_dir / f"{GRAPH}.vis.db"
    method, path, params, body = WRITES[0]
    with TestClient(create_app(Settings(data_dir=fresh_data_dir))) as client:
        with_viewer_token(client)
        response = client.request(method, f"/api/graphs/{GRAPH}/{path}", params=params, json=body)
        assert response.status_code == 200, response.text
        damage_nodes(file)
        method, path, params, body = WRITES[1]
        response = client.request(method, f"/api/graphs/{GRAPH}/{path}", params=params, json=body)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == "damaged_file"
