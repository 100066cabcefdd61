"""Jobs survive a server restart: queued ones are built by the next server, running ones are
queued again (until job_attempts runs, then failed with the reason); a build process that
dies fails its job and leaves no file; a killed server's jobs all finish after a restart."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from ci_support import auth, free_port, new_token, serve_process, tar_gz, upload, wait_job
from fixture_cases import fixture_path
from graphboard.server.app import create_app
from graphboard.server.catalog import Catalog
from graphboard.server.catalog.models import Job
from graphboard.server.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def _data(tmp_path: Path) -> Settings:
    shutil.copytree(fixture_path("convnet-stats", "target"), tmp_path / "data" / "stats")
    return Settings(data_dir=tmp_path / "data")


def _queue_without_building(settings: Settings, token: str) -> str:
    """A server that accepted a job and died before building it: the app's lifespan (and
    so its runner) never starts."""
    client = TestClient(create_app(settings))
    created = client.post("/api/jobs", headers=auth(token), json={"target": "stats"})
    assert created.status_code == 201, created.text
    return str(created.json()["job_id"])


def _set(settings: Settings, job_id: str, **values: object) -> None:
    catalog = Catalog(settings.catalog_url)
    with catalog.session() as session:
        session.execute(update(Job).where(Job.id == job_id).values(**values))
        session.commit()
    catalog.dispose()


def test_a_queued_job_is_built_by_the_next_server(tmp_path: Path) -> None:
    settings = _data(tmp_path)
    token = new_token(settings)
    job_id = _queue_without_building(settings, token)
    with TestClient(create_app(settings)) as client:
        job = wait_job(client, job_id, token)
    assert job["status"] == "done" and job["attempts"] == 1


def test_a_running_job_is_queued_again_after_a_restart(tmp_path: Path) -> None:
    settings = _data(tmp_path)
    token = new_token(settings)
    job_id = _queue_without_building(settings, token)
    _set(settings, job_id, status="running", attempts=1, owner="local:1")
    leftover = settings.builds_dir / f".build_{job_id}.vis.db.1.abcd.tmp"
    leftover.parent.mkdir(parents=True, exist_ok=True)
    leftover.write_bytes(b"half a file")
    with TestClient(create_app(settings)) as client:
        job = wait_job(client, job_id, token)
    assert job["status"] == "done" and job["attempts"] == 2
    assert not leftover.exists()


def test_a_job_that_keeps_dying_is_failed_with_the_reason(tmp_path: Path) -> None:
    settings = Settings(data_dir=_data(tmp_path).data_dir, job_attempts=2)
    token = new_token(settings)
    job_id = _queue_without_building(settings, token)
    _set(settings, job_id, status="running", attempts=2, owner="local:1")
    with TestClient(create_app(settings)) as client:
        job = wait_job(client, job_id, token)
    assert job["status"] == "failed"
    assert "the server stopped while it was building" in job["error"]


def test_a_build_process_that_dies_fails_its_job(tmp_path: Path) -> None:
    """Kill the build process mid-build: the job fails with the exit code, no temporary file
    stays behind, and the next job gets a fresh process."""
    sys.path.insert(0, str(REPO / "tests" / "e2e"))
    from wide_dump import write_wide_dump

    data = tmp_path / "data"
    write_wide_dump(data / "wide", 60_000)  # a build of a few seconds
    shutil.copytree(fixture_path("convnet-stats", "target"), data / "stats")
    settings = Settings(data_dir=data, job_workers=1)
    token = new_token(settings)
    with TestClient(create_app(settings)) as client:
        created = client.post("/api/jobs", headers=auth(token), json={"target": "wide"})
        job_id = created.json()["job_id"]
        deadline = time.monotonic() + 60
        while True:
            job = client.get(f"/api/jobs/{job_id}", headers=auth(token)).json()
            if job["status"] == "running":
                break
            assert job["status"] == "queued" and time.monotonic() < deadline, job
            time.sleep(0.05)
        catalog = Catalog(settings.catalog_url)
        with catalog.session() as session:
            owner = session.get(Job, job_id).owner  # type: ignore[union-attr]
        catalog.dispose()
        assert owner is not None and owner.startswith("local:")
        os.kill(int(owner.split(":")[1]), signal.SIGKILL)
        job = wait_job(client, job_id, token)
        assert job["status"] == "failed"
        assert "the build process died (exit code -9" in job["error"], job["error"]
        assert [path.name for path in settings.builds_dir.iterdir()] == []
        after = client.post("/api/jobs", headers=auth(token), json={"target": "stats"})
        assert wait_job(client, after.json()["job_id"], token)["status"] == "done"


@pytest.mark.slow
def test_jobs_of_a_killed_server_all_finish_after_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    settings = Settings(data_dir=data)
    token = new_token(settings)
    stats = fixture_path("convnet-stats")
    target = tar_gz(stats / "target", tmp_path / "target.tar.gz")
    golden = tar_gz(stats / "golden", tmp_path / "golden.tar.gz")
    port = free_port()
    server = serve_process(data, port)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            ids = []
            for _ in range(6):
                created = upload(client, token, target, golden)
                assert created.status_code == 201, created.text
                ids.append(created.json()["job_id"])
    finally:
        server.send_signal(signal.SIGKILL)  # no shutdown: jobs stay queued or running
        server.wait(timeout=10)
    server = serve_process(data, port)
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            jobs = [wait_job(client, job_id, token) for job_id in ids]
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    assert [job["status"] for job in jobs] == ["done"] * 6, jobs


def test_a_restart_sweeps_what_a_crash_left_in_the_uploads_folder(tmp_path: Path) -> None:
    stats = fixture_path("convnet-stats")
    data = tmp_path / "data"
    data.mkdir()
    kept = Settings(data_dir=data, keep_uploads=True)
    token = new_token(kept)
    archive = tar_gz(stats / "target", tmp_path / "target.tar.gz")
    with TestClient(create_app(kept)) as client:
        created = upload(client, token, archive)
        assert wait_job(client, created.json()["job_id"], token)["status"] == "done"
    finished = kept.uploads_dir / created.json()["upload_id"]
    assert finished.is_dir()  # kept: as if the server died before removing it
    old_orphan, new_orphan = kept.uploads_dir / "cut-off", kept.uploads_dir / "arriving"
    for folder in (old_orphan, new_orphan):
        (folder / "target").mkdir(parents=True)
    day_ago = time.time() - 24 * 3600
    os.utime(old_orphan, (day_ago, day_ago))
    with TestClient(create_app(Settings(data_dir=data))):
        pass
    assert not finished.exists() and not old_orphan.exists()
    assert new_orphan.exists()  # may be an upload another server is receiving
