"""Throw-away redis-server and PostgreSQL servers for tests, from the Debian packages that
``scripts/setup --dev`` installs, on free ports in temporary folders. Tests skip (saying
what is missing) when the binaries are not installed."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from ci_support import free_port


def find_binary(name: str) -> str | None:
    """On PATH, or where Debian's postgresql packages put it (not on PATH by default)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return candidates[0] if candidates else None


@contextmanager
def redis_server() -> Iterator[str]:
    binary = find_binary("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    folder = Path(tempfile.mkdtemp(prefix="graphboard-redis-"))
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(folder),
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "yes",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def postgres_server() -> Iterator[str]:
    """A PostgreSQL cluster on a unix socket in a temporary folder; its SQLAlchemy URL."""
    initdb, pg_ctl = find_binary("initdb"), find_binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL (initdb, pg_ctl) is not installed (apt-get install postgresql)")
    # Not under pytest's tmp dir: that is private to root, and the server runs as postgres.
    root = Path(tempfile.mkdtemp(prefix="graphboard-pg-"))
    as_postgres: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser")
        os.chmod(root, 0o777)
        as_postgres = ["runuser", "-u", "postgres", "--"]
    data, port = root / "data", free_port()
    subprocess.run(
        [*as_postgres, initdb, "-D", str(data), "-A", "trust", "-U", "graphboard"],
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {root} -c listen_addresses=''"
    subprocess.run(
        [
            *as_postgres,
            pg_ctl,
            "-D",
            str(data),
            "-o",
            options,
            "-w",
            "-l",
            str(root / "log"),
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://graphboard@/postgres?host={root}&port={port}"
    finally:
        subprocess.run(
            [*as_postgres, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)
