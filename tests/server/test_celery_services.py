"""The team-server setup for real: PostgreSQL for the catalog (migrations run on it), Redis
as the broker, and a ``graphboard worker`` process (Celery) building the jobs, a multi-rank
build fanned out as one task per (step, rank) plus a merge."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient
from sqlalchemy import select, text

from ci_support import auth, new_token, tar_gz, upload, wait_job
from fixture_cases import fixture_path
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.app import create_app
from graphboard.server.catalog import Catalog
from graphboard.server.catalog.models import Base, JobPart
from graphboard.server.catalog.session import alembic_config
from graphboard.server.settings import Settings
from services import postgres_server, redis_server
from vis_db_support import nodes_per_graph
from worker_support import worker_process

pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def services() -> Iterator[tuple[str, str]]:
    with postgres_server() as database, redis_server() as broker:
        yield database, broker


@pytest.fixture(scope="module")
def settings(services: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> Settings:
    database, broker = services
    return Settings(
        data_dir=tmp_path_factory.mktemp("team-data"), database_url=database, broker_url=broker
    )


@pytest.fixture(scope="module")
def worker(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``graphboard worker`` in its own process; its log file."""
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    process = worker_process(settings, log, 2)
    try:
        yield log
    finally:
        process.send_signal(signal.SIGTERM)  # Celery's warm shutdown
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def test_the_catalog_migrations_run_on_postgresql(settings: Settings) -> None:
    catalog = Catalog(settings.catalog_url)
    catalog.migrate()
    head = ScriptDirectory.from_config(alembic_config(settings.catalog_url)).get_current_head()
    with catalog.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == head
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
        tables = set(conn.execute(text("SELECT tablename FROM pg_tables")).scalars())
    assert {"api_tokens", "uploads", "jobs", "job_parts"} <= tables
    catalog.dispose()


def test_a_multi_rank_build_fans_out_on_celery_workers(
    settings: Settings, worker: Path, tmp_path: Path
) -> None:
    token = new_token(settings)
    ddp2 = fixture_path("convnet-ddp2")
    target = tar_gz(ddp2 / "target", tmp_path / "target.tar.gz")
    golden = tar_gz(ddp2 / "golden", tmp_path / "golden.tar.gz")
    app = create_app(settings)
    with TestClient(app) as client:
        created = upload(client, token, target, golden)
        assert created.status_code == 201, created.text
        job = wait_job(client, created.json()["job_id"], token, timeout=180)
        assert job["status"] == "done", (job, worker.read_text()[-3000:])
        assert job["runner"] == "celery"
        assert (job["parts_total"], job["parts_done"]) == (4, 4)
        verdict = client.get(  # msprobe's counts (the default, dtype-aware, also flags the
            # collectives whose peers' data differ: docs/dtype-aware.md §6)
            f"/api/jobs/{job['id']}/verdict",
            params={"rules": "msprobe"},
            headers=auth(token),
        ).json()
        assert verdict["counts"]["error"] == 4 and verdict["ranks"] == [0, 1]
        page = client.get(
            f"/api/graphs/{job['graph']}/children", params={"side": "NPU", "step": 1, "rank": 1}
        )
        assert page.status_code == 200 and page.json()["items"]
        with app.state.catalog.session() as session:
            parts = session.scalars(select(JobPart).where(JobPart.job_id == job["id"])).all()
        assert sorted((part.step, part.rank) for part in parts) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert not (settings.work_dir / job["id"]).exists()  # parts merged and removed
    # The fanned-out file holds what graph_build writes for the same dumps.
    fanned_out = settings.data_root / f"{job['graph']}.vis.db"
    local = run_build(
        BuildOptions(target=ddp2 / "target", golden=ddp2 / "golden", output_dir=tmp_path / "ref")
    )
    assert nodes_per_graph(fanned_out) == nodes_per_graph(local.path)
    assert "graphboard.build_part" in worker.read_text()


def test_single_rank_and_failing_jobs_on_celery(
    settings: Settings, worker: Path, tmp_path: Path
) -> None:
    token = new_token(settings)
    stats = fixture_path("convnet-stats")
    broken = tmp_path / "broken"
    shutil.copytree(fixture_path("convnet-ddp2", "target"), broken)
    (broken / "step1" / "rank1" / "dump.json").chmod(0o644)  # the fixtures are read-only
    (broken / "step1" / "rank1" / "dump.json").write_text('{"data": {')
    with TestClient(create_app(settings)) as client:
        single = upload(
            client,
            token,
            tar_gz(stats / "target", tmp_path / "t.tar.gz"),
            tar_gz(stats / "golden", tmp_path / "g.tar.gz"),
        )
        job = wait_job(client, single.json()["job_id"], token, timeout=180)
        assert job["status"] == "done", (job, worker.read_text()[-3000:])
        assert job["parts_total"] == 0  # one task: built whole by the first worker
        failing = upload(client, token, tar_gz(broken, tmp_path / "broken.tar.gz"))
        assert failing.status_code == 201, failing.text
        failed = wait_job(client, failing.json()["job_id"], token, timeout=180)
    assert failed["status"] == "failed"
    assert failed["error"].startswith("target/broken/step1/rank1/dump.json: "), failed["error"]
    # The failing part records its error first (so the job names the cause, not a part that
    # then lost its folder), then removes the job's folder: give it a moment.
    folder = settings.work_dir / failed["id"]
    deadline = time.monotonic() + 30
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not folder.exists()
    assert not [path for path in settings.builds_dir.iterdir() if failed["id"] in path.name]
