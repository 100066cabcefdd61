"""``graphboard serve`` stopped while its build process is building: the build's temporary
files are removed, every process the server started ends, and the job stays ``running`` in
the catalog, for the next start to queue again (tests/server/test_job_restart.py)."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import httpx
import pytest

from ci_support import auth, free_port, new_token, serve_process
from graphboard.server.catalog import Catalog
from graphboard.server.catalog.models import Job
from graphboard.server.settings import Settings
from stopping_support import assert_all_gone, descendants, synthetic_dump, wait_for


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synthetic")
    synthetic_dump(root / "target", "target")
    synthetic_dump(root / "golden", "golden")
    return root


@pytest.mark.parametrize(
    "signum",
    [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
    ids=lambda signum: signal.Signals(signum).name,
)
def test_a_server_stopped_mid_build_leaves_no_file_and_no_child(
    dumps: Path, tmp_path: Path, signum: int
) -> None:
    data = tmp_path / "data"
    # hard links: a symbolic link would lead outside the data dir, which a job may not
    shutil.copytree(dumps, data / "syn", copy_function=os.link)
    settings = Settings(data_dir=data, job_workers=1)
    token = new_token(settings)
    port = free_port()
    server = serve_process(data, port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            created = client.post(
                "/api/jobs",
                headers=auth(token),
                json={"target": "syn/target", "golden": "syn/golden"},
            )
            assert created.status_code == 201, created.text
            job_id = created.json()["job_id"]
        builds = settings.builds_dir
        wait_for(
            lambda: builds.is_dir() and any(builds.iterdir()), 60, "the build's temporary file"
        )
        children = descendants(server.pid)
        assert len(children) >= 2, children  # the build process and the one reading the golden side
        server.send_signal(signum)
        server.wait(timeout=60)
    finally:
        server.kill()
        server.wait()
    assert server.returncode == 128 + signum
    assert_all_gone(children)
    assert list(builds.iterdir()) == []
    catalog = Catalog(settings.catalog_url)
    with catalog.session() as session:
        job = session.get(Job, job_id)
        assert job is not None and job.status == "running"  # queued again by the next start
    catalog.dispose()
