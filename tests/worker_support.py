"""``graphboard worker`` (Celery) in a process of its own, for the tests of the team setup."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from graphboard.server.settings import Settings


def worker_process(
    settings: Settings, log: Path, concurrency: int, **popen: Any
) -> subprocess.Popen[bytes]:
    """The worker on the settings' catalog and broker, its output in ``log``."""
    env = {
        **os.environ,
        "GRAPHBOARD_DATABASE_URL": str(settings.database_url),
        "GRAPHBOARD_BROKER_URL": str(settings.broker_url),
    }
    command = [
        str(Path(sys.executable).with_name("graphboard")),
        "worker",
        "--data-dir",
        str(settings.data_dir),
        "--concurrency",
        str(concurrency),
    ]
    with log.open("wb") as output:
        return subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, **popen)
