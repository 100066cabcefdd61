"""The CI API over real HTTP (uvicorn on loopback): upload the shared fixtures as archives,
follow the job, read the verdict, open the result through the read API; and every way an
upload is refused, with its status and message."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ci_support import (
    auth,
    live_server,
    member,
    new_token,
    tar_gz,
    tar_members,
    upload,
    wait_job,
    zip_folder,
)
from fixture_cases import fixture_path
from graphboard.server.settings import Settings

LIMITS = {"max_upload_bytes": 5_000_000, "max_unpacked_bytes": 20_000_000, "max_archive_files": 500}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    data = tmp_path_factory.mktemp("ci-data")
    return Settings(data_dir=data, **LIMITS)


@pytest.fixture(scope="module")
def token(settings: Settings) -> str:
    return new_token(settings)


@pytest.fixture(scope="module")
def client(settings: Settings, token: str) -> Iterator[httpx.Client]:
    with live_server(settings) as base, httpx.Client(base_url=base, timeout=60) as http:
        yield http


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("archives")
    stats, ddp2 = fixture_path("convnet-stats"), fixture_path("convnet-ddp2")
    return {
        "stats-target": tar_gz(stats / "target", folder / "stats-target.tar.gz"),
        "stats-golden": tar_gz(stats / "golden", folder / "stats-golden.tar.gz"),
        "stats-golden-zip": zip_folder(stats / "golden", folder / "stats-golden.zip"),
        "ddp2-target": tar_gz(ddp2 / "target", folder / "ddp2-target.tar.gz"),
        "ddp2-golden": tar_gz(ddp2 / "golden", folder / "ddp2-golden.tar.gz"),
    }


def _error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["code"] == code, body
    return str(body["message"])


def test_compare_upload_builds_and_gives_a_verdict(
    client: httpx.Client, token: str, archives: dict[str, Path], settings: Settings
) -> None:
    created = upload(
        client,
        token,
        archives["stats-target"],
        archives["stats-golden"],
        overflow_check=True,
    )
    assert created.status_code == 201, created.text
    job_id = created.json()["job_id"]
    assert created.json()["status_url"] == f"/api/jobs/{job_id}"
    job = wait_job(client, job_id, token)
    assert job["status"] == "done", job
    assert job["progress"] == 100 and job["error"] is None
    assert job["graph"] == f"builds/compare_{job_id}" and job["overflow_check"]
    assert (settings.builds_dir / f"compare_{job_id}.vis.db").is_file()

    verdict = client.get(  # msprobe's counts (the default, dtype-aware: test_dtype_rules_api)
        f"/api/jobs/{job_id}/verdict", params={"rules": "msprobe"}, headers=auth(token)
    ).json()
    assert verdict["counts"] == {"pass": 82, "warning": 8, "error": 1, "unmatched": 0}
    assert verdict["overflow"] == {"medium": 0, "high": 0, "critical": 0}
    first = verdict["first_error"]
    assert (first["name"], first["side"], first["step"], first["rank"], first["level"]) == (
        "Functional.gelu.0.forward",
        "target",
        0,
        0,
        "error",
    )
    assert first["worst_metric"]["result"] == "error"
    assert "scalar arguments differ" in first["worst_metric"]["message"]
    assert verdict["url"] == (
        f"/?graph=builds%2Fcompare_{job_id}&step=0&rank=0&node=Functional.gelu.0.forward"
    )
    # The result is served by the read API like any other file.
    graph = job["graph"]
    children = client.get(
        f"/api/graphs/{graph}/children", params={"side": "NPU", "step": 0, "rank": 0}
    )
    assert children.status_code == 200 and children.json()["items"]
    located = client.get(
        f"/api/graphs/{graph}/first-error",
        params={"side": "NPU", "step": 0, "rank": 0, "rules": "msprobe"},  # as the verdict's
    ).json()
    assert located["node"]["name"] == first["name"]
    listed = client.get("/api/jobs", headers=auth(token)).json()["jobs"]
    assert job_id in [item["id"] for item in listed]
    # Its unpacked dumps are removed once the job has ended.
    upload_id = created.json()["upload_id"]
    assert not (settings.uploads_dir / upload_id).exists()


def test_multi_rank_zip_and_tar_upload(
    client: httpx.Client, token: str, archives: dict[str, Path]
) -> None:
    created = upload(client, token, archives["ddp2-target"], archives["ddp2-golden"])
    assert created.status_code == 201, created.text
    job = wait_job(client, created.json()["job_id"], token)
    assert job["status"] == "done", job
    verdict = client.get(  # msprobe's counts
        f"/api/jobs/{job['id']}/verdict", params={"rules": "msprobe"}, headers=auth(token)
    ).json()
    assert verdict["steps"] == [0, 1] and verdict["ranks"] == [0, 1]
    assert verdict["counts"]["error"] == 4  # one per (step, rank), summed
    peers = client.get(
        f"/api/graphs/{job['graph']}/children", params={"side": "Bench", "step": 1, "rank": 1}
    )
    assert peers.status_code == 200

    zipped = upload(client, token, archives["stats-target"], archives["stats-golden-zip"])
    assert zipped.status_code == 201, zipped.text
    assert wait_job(client, zipped.json()["job_id"], token)["status"] == "done"


def test_a_build_only_upload_and_the_viewer_url(
    client: httpx.Client, token: str, archives: dict[str, Path]
) -> None:
    created = upload(client, token, archives["stats-target"])
    job = wait_job(client, created.json()["job_id"], token)
    assert job["status"] == "done" and job["graph"].startswith("builds/build_")
    verdict = client.get(f"/api/jobs/{job['id']}/verdict", headers=auth(token)).json()
    assert verdict["graph_type"] == "build" and verdict["first_error"] is None
    assert verdict["counts"] == {"pass": 0, "warning": 0, "error": 0, "unmatched": 0}
    assert verdict["url"] == f"/?graph=builds%2Fbuild_{job['id']}"
    assert client.get(verdict["url"]).status_code == 200


# --- refused uploads ---------------------------------------------------------------------------


def test_path_traversal_is_refused_naming_the_member(
    client: httpx.Client, token: str, tmp_path: Path, settings: Settings
) -> None:
    archive = tar_members(
        tmp_path / "evil.tar.gz",
        [(member("dump/construct.json"), b"{}"), (member("dump/../../evil.txt"), b"x")],
    )
    message = _error(upload(client, token, archive), 400, "unsafe_member")
    assert "dump/../../evil.txt" in message and "'..'" in message
    assert not (settings.state_root / "evil.txt").exists()
    assert list(settings.uploads_dir.iterdir()) == []  # nothing of a refused upload is kept


def test_links_are_refused_naming_the_member(
    client: httpx.Client, token: str, tmp_path: Path
) -> None:
    archive = tar_members(
        tmp_path / "link.tar.gz",
        [(member("dump/stack.json", tarfile.SYMTYPE, linkname="/etc/passwd"), None)],
    )
    message = _error(upload(client, token, archive), 400, "unsafe_member")
    assert "'dump/stack.json' is a symbolic link" in message


def test_a_bomb_is_refused_with_413(client: httpx.Client, token: str, tmp_path: Path) -> None:
    archive = tmp_path / "bomb.tar.gz"
    size = 200 << 20  # 200 MiB of zeros in a ~200 KB upload
    with tarfile.open(archive, "w:gz") as handle:
        handle.addfile(member("dump/dump.json", size=size), io.BytesIO(bytes(size)))
    assert archive.stat().st_size < LIMITS["max_upload_bytes"]
    message = _error(upload(client, token, archive), 413, "archive_too_large")
    assert "dump/dump.json" in message and "20000000 unpacked bytes" in message
    many = tar_members(
        tmp_path / "many.tar.gz", [(member(f"dump/{index}"), b"") for index in range(600)]
    )
    assert "file limit" in _error(upload(client, token, many), 413, "archive_too_large")


def test_an_upload_over_the_size_limit_is_refused(
    client: httpx.Client, token: str, tmp_path: Path
) -> None:
    big = tmp_path / "big.tar.gz"
    big.write_bytes(os.urandom(LIMITS["max_upload_bytes"] + 1000))
    message = _error(upload(client, token, big), 413, "upload_too_large")
    assert str(LIMITS["max_upload_bytes"]) in message


def test_a_dump_without_construct_json_is_refused_before_queueing(
    client: httpx.Client, token: str, tmp_path: Path
) -> None:
    archive = tar_members(
        tmp_path / "partial.tar.gz",
        [
            (member("run/step0/rank0/dump.json"), b"{}"),
            (member("run/step0/rank0/stack.json"), b"{}"),
        ],
    )
    before = client.get("/api/jobs", headers=auth(token)).json()["jobs"]
    message = _error(upload(client, token, archive), 422, "invalid_dump")
    assert message.startswith("target/run/step0/rank0: missing construct.json"), message
    assert "found dump.json, stack.json" in message
    assert client.get("/api/jobs", headers=auth(token)).json()["jobs"] == before


def test_other_bad_forms(
    client: httpx.Client, token: str, archives: dict[str, Path], tmp_path: Path
) -> None:
    no_target = client.post(
        "/api/uploads",
        headers=auth(token),
        files={"golden": ("g.tar.gz", archives["stats-golden"].read_bytes())},
    )
    assert "target" in _error(no_target, 422, "missing_target")
    not_form = client.post("/api/uploads", headers=auth(token), json={"target": "x"})
    _error(not_form, 415, "unsupported_media_type")
    fuzzy_alone = upload(client, token, archives["stats-target"], fuzzy_match=True)
    assert "needs a golden dump" in _error(fuzzy_alone, 422, "needs_golden")
    bad_flag = client.post(
        "/api/uploads",
        headers=auth(token),
        files={"target": ("t.tar.gz", archives["stats-target"].read_bytes())},
        data={"overflow_check": "perhaps"},
    )
    assert "overflow_check" in _error(bad_flag, 422, "invalid_parameters")
    unknown = client.post(
        "/api/uploads",
        headers=auth(token),
        files={"target": ("t.tar.gz", archives["stats-target"].read_bytes())},
        data={"colour": "red"},
    )
    _error(unknown, 400, "unknown_field")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    assert "not a .tar.gz" in _error(upload(client, token, text), 400, "bad_archive")


def test_a_failed_build_says_why_and_leaves_no_file(
    client: httpx.Client, token: str, tmp_path: Path, settings: Settings
) -> None:
    source = fixture_path("convnet-stats", "target")
    broken = tmp_path / "broken"
    (broken / "step0" / "rank0").mkdir(parents=True)
    for name in ("construct.json", "stack.json"):
        (broken / "step0" / "rank0" / name).write_bytes(
            (source / "step0" / "rank0" / name).read_bytes()
        )
    (broken / "step0" / "rank0" / "dump.json").write_text('{"task": "statistics", "data": {')
    created = upload(client, token, tar_gz(broken, tmp_path / "broken.tar.gz"))
    assert created.status_code == 201, created.text
    job = wait_job(client, created.json()["job_id"], token)
    assert job["status"] == "failed" and job["graph"] is None
    assert job["error"].startswith("target/broken/step0/rank0/dump.json: "), job["error"]
    leftovers = [path.name for path in settings.builds_dir.iterdir() if job["id"] in path.name]
    assert leftovers == []
    assert not [path for path in settings.builds_dir.iterdir() if path.name.startswith(".")]
    refused = client.get(f"/api/jobs/{job['id']}/verdict", headers=auth(token))
    assert "the job failed: target/broken/step0/rank0/dump.json" in _error(
        refused, 409, "job_failed"
    )


def test_a_layer_mapping_upload_matches_renamed_modules(
    client: httpx.Client, token: str, tmp_path: Path
) -> None:
    case = fixture_path("layer-mapping")
    target = tar_gz(case / "target", tmp_path / "target.tar.gz")
    golden = tar_gz(case / "golden", tmp_path / "golden.tar.gz")
    unmatched = {}
    for mapping in (None, case / "mapping.yaml"):
        files = {
            "target": ("target.tar.gz", target.read_bytes()),
            "golden": ("golden.tar.gz", golden.read_bytes()),
        }
        if mapping is not None:
            files["layer_mapping"] = ("mapping.yaml", mapping.read_bytes())
        created = client.post("/api/uploads", headers=auth(token), files=files)
        assert created.status_code == 201, created.text
        job = wait_job(client, created.json()["job_id"], token)
        assert job["status"] == "done", job
        verdict = client.get(f"/api/jobs/{job['id']}/verdict", headers=auth(token)).json()
        unmatched[mapping is not None] = verdict["counts"]["unmatched"]
    assert unmatched[True] < unmatched[False]
    bad = client.post(
        "/api/uploads",
        headers=auth(token),
        files={
            "target": ("target.tar.gz", target.read_bytes()),
            "golden": ("golden.tar.gz", golden.read_bytes()),
            "layer_mapping": ("mapping.yaml", b"TopLayer: [unclosed"),
        },
    )
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_dump", bad.text
    assert "layer_mapping.yaml" in bad.json()["error"]["message"]
