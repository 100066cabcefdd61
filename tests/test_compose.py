"""docker-compose.yml and the Dockerfile: the team server's services, wired as the code
expects. ``docker compose config`` validates the file where the compose plugin is installed;
without it (this machine has the Docker CLI but no compose plugin and no engine) the file is
parsed with PyYAML and checked here."""

from __future__ import annotations

import re
import shutil
import subprocess
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


def _compose_plugin() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    return probe.returncode == 0


def test_docker_compose_config_accepts_the_file() -> None:
    if not _compose_plugin():
        pytest.skip("the docker compose plugin is not installed; test_compose_services checks it")
    done = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


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


def test_dockerfile_installs_torch_first_then_the_project() -> None:
    lines = [line.strip() for line in (REPO / "Dockerfile").read_text().splitlines()]
    installs = [line for line in lines if line.startswith("RUN pip install")]
    assert installs == ["RUN pip install torch==2.13.0", "RUN pip install ."]
    assert any(line.startswith("COPY frontend") for line in lines)
    assert "GRAPHBOARD_TEMPLATES_DIR=/app/frontend/templates" in (REPO / "Dockerfile").read_text()
    ignored = (REPO / ".dockerignore").read_text()
    assert "!backend/" in ignored and "!frontend/" in ignored
