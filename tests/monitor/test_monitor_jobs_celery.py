"""A monitor job on a Celery worker (``graphboard worker``, Redis as the broker): the worker's
task claims it and compares the runs in one piece (nothing to fan out), as the server's own
runner does (tests/monitor/test_monitor_jobs.py)."""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from monitor_runs import FAULT_STEP, MonitorRuns

from ci_support import auth, new_token, wait_job
from graphboard.server.app import create_app
from graphboard.server.settings import Settings
from services import redis_server
from worker_support import worker_process

pytestmark = pytest.mark.services


def test_a_monitor_job_runs_on_a_celery_worker(monitor_runs: MonitorRuns, tmp_path: Path) -> None:
    data = tmp_path / "data"
    for side, run in (("target", "scale"), ("golden", "golden")):
        shutil.copytree(monitor_runs.one_rank(run), data / side)
    with redis_server() as broker:
        settings = Settings(
            data_dir=data,
            database_url=f"sqlite:///{tmp_path / 'catalog.db'}",
            broker_url=broker,
        )
        token = new_token(settings)
        log = tmp_path / "worker.log"
        worker = worker_process(settings, log, 1)
        try:
            with TestClient(create_app(settings)) as client:
                created = client.post(
                    "/api/monitor/jobs",
                    headers=auth(token),
                    json={"target": "target", "golden": "golden"},
                )
                assert created.status_code == 201, created.text
                job = wait_job(client, created.json()["job_id"], token, timeout=180)
                assert job["status"] == "done", (job, log.read_text()[-3000:])
                assert (job["kind"], job["runner"], job["parts_total"]) == ("monitor", "celery", 0)
                verdict = client.get(f"/api/jobs/{job['id']}/verdict", headers=auth(token))
                first = verdict.json()["first_departure"]
                assert (first["step"], first["module"]) == (FAULT_STEP, "blocks.2.mlp")
        finally:
            worker.send_signal(signal.SIGTERM)  # Celery's warm shutdown
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait(timeout=10)
