"""Jobs on dump folders under the data dir: the listing (/api/dumps), and POST /api/jobs
with the same checks as an upload, confined to the data dir."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ci_support import auth, new_token, wait_job
from fixture_cases import fixture_path
from graphboard.server.app import create_app
from graphboard.server.settings import Settings


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("folders")
    stats = fixture_path("convnet-stats")
    shutil.copytree(stats / "target", root / "runs" / "stats" / "target")
    shutil.copytree(stats / "golden", root / "runs" / "stats" / "golden")
    broken = root / "runs" / "broken" / "step0" / "rank0"
    broken.mkdir(parents=True)
    (broken / "dump.json").write_text("{}")
    (root / "maps").mkdir()
    (root / "maps" / "mapping.yaml").write_text("{}\n")
    (root / ".hidden" / "rank0").mkdir(parents=True)
    return root


@pytest.fixture(scope="module")
def client(data: Path) -> Iterator[tuple[TestClient, str]]:
    settings = Settings(data_dir=data)
    token = new_token(settings)
    with TestClient(create_app(settings)) as test_client:
        yield test_client, token


def test_dump_folders_are_listed_with_their_shape_or_why_not(
    client: tuple[TestClient, str],
) -> None:
    http, token = client
    listing = http.get("/api/dumps", headers=auth(token)).json()
    folders = {item["path"]: item for item in listing["folders"]}
    target = folders["runs/stats/target"]
    assert (target["kind"], target["steps"], target["ranks"], target["error"]) == (
        "steps",
        [0],
        [0],
        None,
    )
    assert folders["runs/stats/target/step0/rank0"]["kind"] == "rank"
    broken = folders["runs/broken"]
    assert broken["kind"] is None and "missing construct.json, stack.json" in broken["error"]
    assert broken["error"].startswith("runs/broken/step0/rank0: ")
    assert not any(path.startswith(".") for path in folders)
    assert listing["layer_mappings"] == ["maps/mapping.yaml"]
    assert listing["truncated"] is False


def test_a_job_on_folders_under_the_data_dir(client: tuple[TestClient, str], data: Path) -> None:
    http, token = client
    created = http.post(
        "/api/jobs",
        headers=auth(token),
        json={"target": "runs/stats/target", "golden": "runs/stats/golden"},
    )
    assert created.status_code == 201, created.text
    job = wait_job(http, created.json()["job_id"], token)
    assert job["status"] == "done", job
    assert (job["source"], job["target"], job["golden"]) == (
        "data_dir",
        "runs/stats/target",
        "runs/stats/golden",
    )
    assert (data / f"{job['graph']}.vis.db").is_file()
    verdict = http.get(  # msprobe's counts (the default, dtype-aware: test_dtype_rules_api)
        f"/api/jobs/{job['id']}/verdict", params={"rules": "msprobe"}, headers=auth(token)
    ).json()
    assert verdict["counts"]["error"] == 1
    assert (data / "runs" / "stats" / "target").is_dir()  # never purged: not an upload


@pytest.mark.parametrize(
    ("body", "status", "code", "says"),
    [
        ({"target": "../etc"}, 422, "invalid_folder", "'..'"),
        ({"target": "/etc"}, 422, "invalid_folder", "no such folder"),
        ({"target": ".hidden"}, 422, "invalid_folder", "hidden"),
        ({"target": "runs/nothing"}, 422, "invalid_folder", "no such folder"),
        ({"target": "runs/broken"}, 422, "invalid_dump", "runs/broken/step0/rank0: missing"),
        ({"target": "runs/stats/target", "fuzzy_match": True}, 422, "needs_golden", "golden"),
        (
            {"target": "runs/stats/target", "golden": "runs/stats/golden", "layer_mapping": "runs"},
            422,
            "invalid_folder",
            "not a .yaml file",
        ),
        ({"target": "runs/stats/target", "extra": 1}, 422, "invalid_parameters", "extra"),
    ],
)
def test_bad_job_requests(
    client: tuple[TestClient, str], body: dict[str, object], status: int, code: str, says: str
) -> None:
    http, token = client
    response = http.post("/api/jobs", headers=auth(token), json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and says in error["message"], error


def test_a_job_the_runner_cannot_take_is_failed_with_the_reason(data: Path) -> None:
    settings = Settings(data_dir=data)
    token = new_token(settings)
    app = create_app(settings)
    with TestClient(app) as http:

        def broker_down(_job_id: str) -> None:
            raise ConnectionError("redis://broker:6379 refused the connection")

        app.state.runner.submit = broker_down
        refused = http.post("/api/jobs", headers=auth(token), json={"target": "runs/stats/target"})
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert (
            error["code"] == "runner_unavailable" and "refused the connection" in error["message"]
        )
        job = http.get(f"/api/jobs/{error['details']['job_id']}", headers=auth(token)).json()
        assert job["status"] == "failed" and "could not queue the build" in job["error"]


def test_the_api_documents_the_upload_form_and_the_token(client: tuple[TestClient, str]) -> None:
    http, _token = client
    spec = http.get("/openapi.json").json()
    body = spec["paths"]["/api/uploads"]["post"]["requestBody"]["content"]["multipart/form-data"]
    assert {"target", "golden", "layer_mapping", "fuzzy_match", "overflow_check"} <= set(
        body["schema"]["properties"]
    )
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert {"401", "413", "422"} <= set(spec["paths"]["/api/uploads"]["post"]["responses"])


@pytest.fixture
def linked(tmp_path: Path) -> Iterator[tuple[Path, TestClient, str]]:
    """A data dir whose dumps reach out through links at every depth a build reads."""
    rank = fixture_path("convnet-stats") / "target" / "step0" / "rank0"
    outside = tmp_path / "outside"
    shutil.copytree(rank, outside / "rank0")
    root = tmp_path / "data"
    shutil.copytree(rank, root / "runs" / "real" / "step0" / "rank0")

    def dump(name: str) -> Path:
        folder = root / "runs" / name / "step0" / "rank0"
        shutil.copytree(rank, folder)
        return folder

    (root / "runs" / "step-link").mkdir()
    (root / "runs" / "step-link" / "step0").symlink_to(outside, target_is_directory=True)
    (root / "runs" / "rank-link" / "step0").mkdir(parents=True)
    (root / "runs" / "rank-link" / "step0" / "rank0").symlink_to(outside / "rank0")
    (dump("file-link") / "dump.json").unlink()
    (root / "runs" / "file-link" / "step0" / "rank0" / "dump.json").symlink_to(
        outside / "rank0" / "dump.json"
    )
    tensors = dump("tensor-link") / "dump_tensor_data"
    tensors.mkdir()
    (tensors / "Functional.conv2d.0.forward.output.0.pt").symlink_to(
        outside / "rank0" / "dump.json"
    )
    (root / "runs" / "inside-link" / "step0").mkdir(parents=True)
    (root / "runs" / "inside-link" / "step0" / "rank0").symlink_to(
        root / "runs" / "real" / "step0" / "rank0"
    )
    settings = Settings(data_dir=root)
    token = new_token(settings)
    with TestClient(create_app(settings)) as http:
        yield root, http, token


@pytest.mark.parametrize(
    ("target", "link"),
    [
        ("runs/step-link", "runs/step-link/step0"),
        ("runs/rank-link", "runs/rank-link/step0/rank0"),
        ("runs/rank-link/step0", "runs/rank-link/step0/rank0"),
        ("runs/file-link", "runs/file-link/step0/rank0/dump.json"),
        ("runs/file-link/step0/rank0", "runs/file-link/step0/rank0/dump.json"),
        (
            "runs/tensor-link",
            "runs/tensor-link/step0/rank0/dump_tensor_data/Functional.conv2d.0.forward.output.0.pt",
        ),
    ],
)
def test_a_link_out_of_the_data_dir_inside_a_dump_is_refused(
    linked: tuple[Path, TestClient, str], target: str, link: str
) -> None:
    _root, http, token = linked
    for body in ({"target": target}, {"target": "runs/real", "golden": target}):
        response = http.post("/api/jobs", headers=auth(token), json=body)
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        field = "golden" if "golden" in body else "target"
        assert error["code"] == "invalid_folder"
        assert error["message"] == (
            f"{field}: {link!r} is a symbolic link leading outside the data dir"
        )


def test_a_link_that_stays_inside_the_data_dir_is_followed(
    linked: tuple[Path, TestClient, str],
) -> None:
    _root, http, token = linked
    created = http.post(
        "/api/jobs", headers=auth(token), json={"target": "runs/inside-link", "golden": "runs/real"}
    )
    assert created.status_code == 201, created.text
    assert wait_job(http, created.json()["job_id"], token)["status"] == "done"
