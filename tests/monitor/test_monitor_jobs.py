"""Monitor compares as jobs (POST /api/monitor/jobs, the job machinery of builds): two real
TrainerMon runs under the data dir, compared by the server's own runner; the job lists as a
monitor job opening the /monitor page, and its verdict (the CI API) is the summary and the
first departure, with the dump config and the .vis.db of that step (built here by a folder
job from a dump in the target run's folder; another run's dump of that step is not offered)."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from monitor_runs import FAULT_STEP, MonitorRuns

from ci_support import auth, live_server, new_token, tar_gz, wait_job
from fixture_cases import fixture_path
from graphboard.cli import graphboard_main
from graphboard.server.app import create_app
from graphboard.server.settings import Settings


def _dump_of_step(dest: Path, step: int) -> None:
    """A real msprobe dump (the convnet fixture's), filed as step ``step``."""
    stats = fixture_path("convnet-stats")
    for side in ("target", "golden"):
        shutil.copytree(stats / side / "step0", dest / side / f"step{step}")


@pytest.fixture(scope="module")
def data(monitor_runs: MonitorRuns, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("monitor-jobs")
    for side, run in (("target", "scale"), ("golden", "golden"), ("rerun", "rerun")):
        shutil.copytree(monitor_runs.one_rank(run), root / "exp" / side / "monitor")
    _dump_of_step(root / "exp" / "target" / "dump", FAULT_STEP)
    _dump_of_step(root / "other" / "dump", FAULT_STEP)  # another run's, same step
    return root


@pytest.fixture(scope="module")
def client(data: Path) -> Iterator[tuple[TestClient, str]]:
    settings = Settings(data_dir=data)
    token = new_token(settings)
    with TestClient(create_app(settings)) as test_client:
        yield test_client, token


def _done(http: TestClient, token: str, path: str, body: dict[str, str]) -> dict[str, object]:
    created = http.post(path, headers=auth(token), json=body)
    assert created.status_code == 201, created.text
    job = wait_job(http, created.json()["job_id"], token)
    assert job["status"] == "done", job
    return job


def test_runs_under_the_data_dir_are_listed(client: tuple[TestClient, str]) -> None:
    http, token = client
    assert http.get("/api/monitor/runs").status_code == 401  # needs the token, as /api/dumps
    runs = http.get("/api/monitor/runs", headers=auth(token)).json()
    assert runs == {
        "runs": [
            {"path": "exp/golden/monitor", "kind": "folder"},
            {"path": "exp/rerun/monitor", "kind": "folder"},
            {"path": "exp/target/monitor", "kind": "folder"},
        ],
        "truncated": False,
    }


def test_a_monitor_job_answers_with_the_first_departure_and_its_step_s_graph(
    client: tuple[TestClient, str], data: Path
) -> None:
    http, token = client
    for dump in ("exp/target/dump", "other/dump"):  # the dumps of step 20, built as folder jobs
        _done(http, token, "/api/jobs", {"target": f"{dump}/target", "golden": f"{dump}/golden"})
    job = _done(
        http,
        token,
        "/api/monitor/jobs",
        {"target": "exp/target/monitor", "golden": "exp/golden/monitor"},
    )
    assert job["kind"] == "monitor"
    assert (job["target"], job["golden"]) == ("exp/target/monitor", "exp/golden/monitor")
    file_id = f"builds/monitor_{job['id']}"
    assert (job["graph"], job["viewer_url"]) == (
        file_id,
        f"/monitor?file={file_id.replace('/', '%2F')}",
    )
    assert "first departure: step 20, blocks.2.mlp" in str(job["message"])
    listed = http.get("/api/jobs", headers=auth(token)).json()["jobs"]
    assert [j["kind"] for j in listed] == ["monitor", "build", "build"]
    verdict = http.get(f"/api/jobs/{job['id']}/verdict", headers=auth(token)).json()
    first = verdict["first_departure"]
    assert (verdict["kind"], verdict["departed"], verdict["file"]) == ("monitor", True, file_id)
    assert (first["step"], first["module"], first["metric"]) == (FAULT_STEP, "blocks.2.mlp", "actv")
    assert verdict["summary"] == job["message"]
    assert verdict["url"] == job["viewer_url"]
    config = http.get(verdict["dump_config_url"])
    assert json.loads(config.text)["step"] == [FAULT_STEP]
    builds = {b["target"]: b["graph"] for b in listed if b["kind"] == "build"}
    ours = builds["exp/target/dump/target"]
    assert verdict["graphs"] == [
        {
            "graph": ours,
            "match": "step and run",
            "url": f"/?graph={ours.replace('/', '%2F')}&step=20&rank=0",
        }
    ]
    assert http.get(f"/api/monitor/{file_id}/graphs").json()["graphs"] == verdict["graphs"]
    report = http.get(f"/api/monitor/{file_id}/report").json()["report"]
    assert report["first_departure"] == first


def test_the_same_configuration_departs_nowhere(client: tuple[TestClient, str]) -> None:
    http, token = client
    job = _done(
        http,
        token,
        "/api/monitor/jobs",
        {"target": "exp/rerun/monitor", "golden": "exp/golden/monitor"},
    )
    verdict = http.get(f"/api/jobs/{job['id']}/verdict", headers=auth(token)).json()
    assert (verdict["departed"], verdict["first_departure"]) == (False, None)
    assert (verdict["dump_config_url"], verdict["graphs"]) == (None, [])
    assert "no departure" in verdict["summary"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (
            {"target": "exp/target/dump", "golden": "exp/golden/monitor"},
            "target: exp/target/dump: no monitor rank folders",
        ),
        ({"target": "exp/target/monitor", "golden": "../etc"}, "golden: '../etc'"),
        (
            {"target": "exp/target/monitor", "golden": "nothing"},
            "golden: 'nothing': no such folder",
        ),
    ],
)
def test_what_is_no_monitor_run_is_refused_before_a_job_exists(
    client: tuple[TestClient, str], body: dict[str, str], says: str
) -> None:
    http, token = client
    answer = http.post("/api/monitor/jobs", headers=auth(token), json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["message"].startswith(says), answer.json()


def test_uploaded_runs_are_compared_and_the_upload_removed(
    client: tuple[TestClient, str], data: Path, tmp_path: Path
) -> None:
    http, token = client
    target = tar_gz(data / "exp" / "target" / "monitor", tmp_path / "target.tar.gz")
    (rank_folder,) = (data / "exp" / "golden" / "monitor").glob("*-rank0-*")
    golden = tar_gz(rank_folder, tmp_path / "golden.tar.gz")  # the rank folder alone
    with target.open("rb") as t, golden.open("rb") as g:
        created = http.post(
            "/api/monitor/uploads",
            headers=auth(token),
            files={"target": ("target.tar.gz", t), "golden": ("golden.tar.gz", g)},
        )
    assert created.status_code == 201, created.text
    job = wait_job(http, created.json()["job_id"], token)
    assert (job["status"], job["kind"], job["source"]) == ("done", "monitor", "upload"), job
    verdict = http.get(f"/api/jobs/{job['id']}/verdict", headers=auth(token)).json()
    assert (verdict["first_departure"]["step"], verdict["first_departure"]["module"]) == (
        FAULT_STEP,
        "blocks.2.mlp",
    )
    assert verdict["graphs"] == []  # an upload's runs have no dump folders under the data dir
    # Its unpacked runs go once the job has ended (just after it is marked done).
    unpacked = data / ".graphboard" / "uploads" / created.json()["upload_id"]
    deadline = time.monotonic() + 30
    while unpacked.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not unpacked.exists()


def test_an_upload_that_is_no_monitor_run_is_refused(
    client: tuple[TestClient, str], data: Path, tmp_path: Path
) -> None:
    http, token = client
    target = tar_gz(data / "exp" / "target" / "monitor", tmp_path / "target.tar.gz")
    dump = tar_gz(data / "other" / "dump" / "golden", tmp_path / "dump.tar.gz")
    with target.open("rb") as t:
        alone = http.post("/api/monitor/uploads", headers=auth(token), files={"target": t})
    assert (alone.status_code, alone.json()["error"]["code"]) == (422, "missing_golden")
    with target.open("rb") as t, dump.open("rb") as d:
        wrong = http.post(
            "/api/monitor/uploads", headers=auth(token), files={"target": t, "golden": d}
        )
    assert wrong.status_code == 422, wrong.text
    assert wrong.json()["error"]["message"].startswith(
        "golden/golden/step20/rank0: no monitor rank folders"
    ), wrong.json()


def test_ci_check_monitor_fails_on_a_departure_and_passes_without(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(data_dir=data, state_dir=tmp_path / "state")
    token = new_token(settings)
    runs = data / "exp"

    def check(target: str, *extra: str) -> int:
        return graphboard_main(
            [
                "ci-check",
                "--server",
                base,
                "--token",
                token,
                "--monitor",
                "--target",
                str(runs / target / "monitor"),
                "--golden",
                str(runs / "golden" / "monitor"),
                "-q",
                *extra,
            ]
        )

    with live_server(settings) as base:
        assert check("target") == 1
        out = capsys.readouterr().out.splitlines()
        assert out[0] == "graphboard verdict: FAIL (the runs part)"
        assert out[2].startswith("  first departure: step 20, blocks.2.mlp (forward, actv")
        assert out[-1].startswith(f"  open      {base}/monitor?file=builds%2Fmonitor_")
        assert check("rerun", "--json") == 0
        report = json.loads(capsys.readouterr().out)
        assert report["passed"] is True and report["verdict"]["first_departure"] is None
