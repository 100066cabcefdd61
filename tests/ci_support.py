"""What the upload, job, ci-check and browser tests (and the benchmarks) share: archives of the
shared fixtures, tokens, a real uvicorn server in a thread or ``graphboard serve`` in a process,
and waiting for jobs."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from graphboard.server.app import create_app
from graphboard.server.catalog import Catalog, tokens
from graphboard.server.settings import Settings
from stopping_support import default_stop_signals

JOB_TIMEOUT = 120.0


def tar_gz(folder: Path, dest: Path, arcname: str | None = None) -> Path:
    with tarfile.open(dest, "w:gz") as archive:
        archive.add(folder, arcname=arcname or folder.name)
    return dest


def zip_folder(folder: Path, dest: Path, arcname: str | None = None) -> Path:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"{arcname or folder.name}/{path.relative_to(folder)}")
    return dest


def tar_members(dest: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    """A .tar.gz of hand-made members (for archives no honest tool writes)."""
    with tarfile.open(dest, "w:gz") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return dest


def member(name: str, kind: bytes = tarfile.REGTYPE, **fields: Any) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for field, value in fields.items():
        setattr(info, field, value)
    return info


def new_token(settings: Settings, name: str = "test") -> str:
    catalog = Catalog(settings.catalog_url)
    try:
        with catalog.session() as session:
            return tokens.create(session, name).token
    finally:
        catalog.dispose()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def wait_job(client: Any, job_id: str, token: str, timeout: float = JOB_TIMEOUT) -> dict[str, Any]:
    """Poll GET /api/jobs/{id} until the job ends (client: httpx or TestClient)."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(f"/api/jobs/{job_id}", headers=auth(token))
        assert response.status_code == 200, response.text
        job: dict[str, Any] = response.json()
        if job["status"] in ("done", "failed"):
            return job
        assert time.monotonic() < deadline, f"job {job_id} did not end: {job}"
        time.sleep(0.1)


def upload(
    client: Any,
    token: str,
    target: Path,
    golden: Path | None = None,
    **flags: Any,
) -> httpx.Response:
    handles = {"target": target.open("rb")}
    if golden is not None:
        handles["golden"] = golden.open("rb")
    try:
        files = {field: (f"{field}.tar.gz", handle) for field, handle in handles.items()}
        data = {name: str(value).lower() for name, value in flags.items()}
        response: httpx.Response = client.post(
            "/api/uploads", headers=auth(token), files=files, data=data
        )
        return response
    finally:
        for handle in handles.values():
            handle.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_process(data_dir: Path, port: int, **env: str) -> subprocess.Popen[bytes]:
    """``graphboard serve`` in a child process (``env``: more GRAPHBOARD_* settings), once it
    answers. The probe asks for a file that is not there: no file is opened, so the first
    request a caller makes still finds the server cold."""
    graphboard = str(Path(sys.executable).with_name("graphboard"))
    process = subprocess.Popen(
        [graphboard, "serve", "--data-dir", str(data_dir), "--port", str(port)],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=default_stop_signals,  # the stop tests send it SIGINT and SIGHUP
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/graphs/none/config", timeout=1)
            return process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"graphboard serve did not start on port {port}")


def with_viewer_token(client: Any) -> Any:
    """A started TestClient that writes as the viewer's browser does: with the token of the
    URL `graphboard serve` prints, as a bearer header."""
    client.headers["Authorization"] = f"Bearer {client.app.state.viewer_token}"
    return client


# base URL of each live server -> the token its viewer URL carries (None: writes need none)
VIEWER_TOKENS: dict[str, str | None] = {}


def viewer_query(base: str) -> dict[str, str]:
    """The ``token`` query the URL `graphboard serve` prints carries, for a live server."""
    token = VIEWER_TOKENS.get(base)
    return {"token": token} if token else {}


def viewer_bearer(base: str) -> dict[str, str]:
    """The Authorization header of a live server's viewer token (for writes)."""
    return {"Authorization": f"Bearer {VIEWER_TOKENS[base]}"}


@contextmanager
def live_server(settings: Settings) -> Iterator[str]:
    """create_app(settings) served by uvicorn on a loopback port, in a thread; its viewer
    token (what `graphboard serve` prints in its URL) is in ``VIEWER_TOKENS[base]``."""
    import uvicorn

    app = create_app(settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    VIEWER_TOKENS[base] = app.state.viewer_token
    try:
        yield base
    finally:
        VIEWER_TOKENS.pop(base, None)
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
