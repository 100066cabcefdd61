"""``graphboard worker`` (Celery, prefork) stopped while a build runs, for real: PostgreSQL
catalog, Redis broker, the worker in its own process, signals sent to it.

A warm shutdown (SIGTERM) lets the running build finish: the job is done, its file complete.
A cold shutdown (SIGQUIT) unwinds the build in the pool's child: no temporary file, no process
left within 2 s, the job still ``running`` and its message back on the queue, so the next
worker builds it again (attempt 2). The same for a part of a fanned-out multi-rank build.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ci_support import auth, new_token, wait_job
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.app import create_app
from graphboard.server.settings import Settings
from services import postgres_server, redis_server
from stopping_support import assert_all_gone, descendants, synthetic_dump, wait_for
from vis_db_support import nodes_per_graph
from worker_support import worker_process

pytestmark = pytest.mark.services

JOB_SECONDS = 120.0  # bounds for waits, never asserted on


@pytest.fixture(scope="module")
def services() -> Iterator[tuple[str, str]]:
    with postgres_server() as database, redis_server() as broker:
        yield database, broker


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synthetic")
    synthetic_dump(root / "target", "target")
    synthetic_dump(root / "golden", "golden")
    synthetic_dump(root / "ranked", "target", ranks=2)
    return root


@pytest.fixture(scope="module")
def reference(
    dumps: Path, tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[str, int, int, int]]:
    """Nodes per graph of the single-rank compare, built by graph_build's own path."""
    options = BuildOptions(
        target=dumps / "target",
        golden=dumps / "golden",
        output_dir=tmp_path_factory.mktemp("reference"),
    )
    return nodes_per_graph(run_build(options).path)


@pytest.fixture
def settings(services: tuple[str, str], dumps: Path, tmp_path: Path) -> Settings:
    database, broker = services
    data = tmp_path / "data"
    # hard links: a symbolic link would lead outside the data dir, which a job may not
    shutil.copytree(dumps, data / "syn", copy_function=os.link)
    return Settings(data_dir=data, database_url=database, broker_url=broker)


def start_worker(settings: Settings, log: Path) -> subprocess.Popen[bytes]:
    """``graphboard worker`` with one pool child, once it consumes the queue; the leader of
    a process group of its own, as a service manager starts it."""
    worker = worker_process(settings, log, 1, start_new_session=True)
    wait_for(lambda: b" ready." in log.read_bytes(), 60, f"the worker to start ({log})")
    return worker


def stop(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.kill()
        worker.wait(timeout=10)


def submit(settings: Settings, token: str, body: dict[str, str]) -> str:
    with TestClient(create_app(settings)) as client:
        created = client.post("/api/jobs", headers=auth(token), json=body)
    assert created.status_code == 201, created.text
    return str(created.json()["job_id"])


def job_now(settings: Settings, token: str, job_id: str) -> dict[str, object]:
    with TestClient(create_app(settings)) as client:
        response = client.get(f"/api/jobs/{job_id}", headers=auth(token))
    assert response.status_code == 200, response.text
    return dict(response.json())


def files_of(folder: Path, job_id: str) -> list[str]:
    if not folder.exists():
        return []
    return sorted(path.name for path in folder.iterdir() if job_id in path.name)


def stopped_mid_build(
    settings: Settings,
    token: str,
    body: dict[str, str],
    building: Callable[[str], bool],
    send: Callable[[subprocess.Popen[bytes]], None],
    log: Path,
) -> tuple[str, int | None]:
    """Submit a job to a fresh worker, ``send`` it a signal once ``building(job id)``, and
    return when it has exited (the job id, its exit status) and every process it had has
    ended (CHILDREN_GONE_SECONDS)."""
    worker = start_worker(settings, log)
    try:
        job_id = submit(settings, token, body)
        wait_for(lambda: building(job_id), 60, "the build")
        children = descendants(worker.pid)
        assert children, "the pool's child"
        send(worker)
        worker.wait(timeout=JOB_SECONDS)
    finally:
        stop(worker)
    assert_all_gone(children)
    return job_id, worker.returncode


def built_again(settings: Settings, token: str, job_id: str, log: Path) -> dict[str, object]:
    """The stopped job as the next worker ends it (it takes the job's message again)."""
    assert job_now(settings, token, job_id)["status"] == "running"
    worker = start_worker(settings, log)
    try:
        with TestClient(create_app(settings)) as client:
            job = wait_job(client, job_id, token, timeout=JOB_SECONDS)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        stop(worker)
    assert job["status"] == "done", (job, log.read_text()[-3000:])
    return job


COMPARE = {"target": "syn/target", "golden": "syn/golden"}


def compare_building(settings: Settings) -> Callable[[str], bool]:
    """The compare's temporary file is there: it is mid-build."""
    return lambda job_id: files_of(settings.builds_dir, job_id) != []


def test_a_warm_shutdown_lets_the_running_build_finish(
    settings: Settings, reference: list[tuple[str, int, int, int]], tmp_path: Path
) -> None:
    token = new_token(settings)
    log = tmp_path / "worker.log"
    job_id, status = stopped_mid_build(
        settings,
        token,
        COMPARE,
        compare_building(settings),
        lambda worker: worker.send_signal(signal.SIGTERM),
        log,
    )
    assert status == 0, log.read_text()[-3000:]
    job = job_now(settings, token, job_id)
    assert job["status"] == "done" and job["attempts"] == 1, (job, log.read_text()[-3000:])
    assert files_of(settings.builds_dir, job_id) == [f"compare_{job_id}.vis.db"]
    assert nodes_per_graph(settings.data_root / f"{job['graph']}.vis.db") == reference


@pytest.mark.parametrize(
    "how",
    ["SIGQUIT", "SIGTERM to the group"],
)
def test_a_cold_shutdown_unwinds_the_build_and_the_next_worker_builds_it_again(
    settings: Settings, reference: list[tuple[str, int, int, int]], tmp_path: Path, how: str
) -> None:
    """SIGQUIT: Celery's cold shutdown. SIGTERM to the group: systemd's ``stop``
    (KillMode=control-group) signals every process at once, so the pool's child is stopped
    mid-build while the worker shuts down warm. Either way the task must count as lost (its
    message put back), not failed: a failure would be acknowledged, and the job would stay
    ``running`` with no message left to build it."""

    def send(worker: subprocess.Popen[bytes]) -> None:
        if how == "SIGQUIT":
            worker.send_signal(signal.SIGQUIT)
        else:
            os.killpg(worker.pid, signal.SIGTERM)

    token = new_token(settings)
    job_id, _ = stopped_mid_build(
        settings, token, COMPARE, compare_building(settings), send, tmp_path / "worker.log"
    )
    assert files_of(settings.builds_dir, job_id) == []
    assert job_now(settings, token, job_id)["attempts"] == 1
    job = built_again(settings, token, job_id, tmp_path / "again.log")
    assert job["attempts"] == 2
    assert files_of(settings.builds_dir, job_id) == [f"compare_{job_id}.vis.db"]
    assert nodes_per_graph(settings.data_root / f"{job['graph']}.vis.db") == reference


def test_a_cold_shutdown_mid_part_leaves_no_part_file_and_the_parts_are_built_again(
    settings: Settings, tmp_path: Path
) -> None:
    token = new_token(settings)
    parts = settings.work_dir
    job_id, _ = stopped_mid_build(
        settings,
        token,
        {"target": "syn/ranked"},
        lambda job_id: (parts / job_id / "part0.db").exists(),
        lambda worker: worker.send_signal(signal.SIGQUIT),
        tmp_path / "worker.log",
    )
    # No half-written part: a part file stays only with its result (a part that finished).
    left = files_of(parts / job_id, "part")
    assert [name for name in left if name.endswith(".db")] == [
        name.replace(".result", ".db") for name in left if name.endswith(".result")
    ], left
    assert files_of(settings.builds_dir, job_id) == []
    job = built_again(settings, token, job_id, tmp_path / "again.log")
    assert (job["parts_total"], job["parts_done"]) == (2, 2)
    assert not (parts / job_id).exists()
    assert files_of(settings.builds_dir, job_id) == [f"build_{job_id}.vis.db"]
