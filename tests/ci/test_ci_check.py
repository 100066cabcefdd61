"""``graphboard ci-check`` end to end against a real server: exit 0 within the threshold, 1
beyond it, 2 for a bad token, a failed build or an unreachable server; and its polling."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_support import free_port, live_server, new_token
from fixture_cases import fixture_path
from graphboard.ci.check import MAX_POLL, wait_for
from graphboard.ci.client import CiError
from graphboard.cli import graphboard_main
from graphboard.server.settings import Settings


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("ci-check"))
    token = new_token(settings)
    with live_server(settings) as base:
        yield base, token


def _check(base: str, token: str, *extra: str) -> int:
    stats = fixture_path("convnet-stats")
    return graphboard_main(
        [
            "ci-check",
            "--server",
            base,
            "--token",
            token,
            "--target",
            str(stats / "target"),
            "--golden",
            str(stats / "golden"),
            *extra,
        ]
    )


def test_a_passing_threshold_exits_0(
    server: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    base, token = server
    # msprobe's rules, one switch away (the default's counts: test_dtype_rules_api)
    assert _check(base, token, "--max-errors", "1", "--overflow-check", "--rules", "msprobe") == 0
    out = capsys.readouterr()
    assert out.out.startswith("graphboard verdict: PASS (1 error(s), at most 1 allowed)")
    assert "82 pass, 8 warning, 1 error, 0 unmatched" in out.out
    assert "first error: Functional.gelu.0.forward (target step 0 rank 0)" in out.out
    assert f"open      {base}/?graph=builds%2Fcompare_" in out.out
    assert "ci-check: uploaded; job " in out.err and "done 100%" in out.err


def test_a_failing_threshold_exits_1_and_json_says_why(
    server: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    base, token = server
    assert _check(base, token, "--json", "-q", "--rules", "msprobe") == 1
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert report["passed"] is False and report["max_errors"] == 0
    assert report["verdict"]["counts"]["error"] == 1
    assert report["url"].startswith(f"{base}/?graph=builds%2Fcompare_")
    assert out.err == ""


def test_a_bad_token_exits_2(server: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    base, _token = server
    assert _check(base, "gbt_000000000000_" + "x" * 43) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ci-check: error: 401 invalid_token: the bearer token is unknown or revoked"]


def test_a_failed_build_exits_2_with_the_reason(
    server: tuple[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base, token = server
    broken = tmp_path / "target"
    shutil.copytree(fixture_path("convnet-stats", "target"), broken)
    (broken / "step0" / "rank0" / "dump.json").chmod(0o644)
    (broken / "step0" / "rank0" / "dump.json").write_text("{")
    code = graphboard_main(
        ["ci-check", "--server", base, "--token", token, "--target", str(broken), "-q"]
    )
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ci-check: error: the build failed: target/target/step0/rank0/dump.json")


def test_refusals_before_uploading_exit_2(
    server: tuple[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base, token = server
    missing = ["ci-check", "--server", base, "--token", token, "--target", str(tmp_path / "no")]
    assert graphboard_main(missing) == 2
    assert "--target" in capsys.readouterr().err
    partial = tmp_path / "partial" / "rank0"
    partial.mkdir(parents=True)
    (partial / "dump.json").write_text("{}")
    refused = ["ci-check", "--server", base, "--token", token, "--target", str(partial.parent)]
    assert graphboard_main(refused) == 2
    assert "422 invalid_dump: " in capsys.readouterr().err
    offline = f"http://127.0.0.1:{free_port()}"
    assert _check(offline, token) == 2
    assert f"cannot reach {offline}" in capsys.readouterr().err


class _Jobs:
    """A client whose job stays running for ``polls`` polls."""

    def __init__(self, polls: int) -> None:
        self.polls = polls
        self.seen = 0

    def job(self, _job_id: str) -> dict[str, Any]:
        self.seen += 1
        status = "done" if self.seen > self.polls else "running"
        return {"status": status, "progress": min(100, 10 * self.seen)}


def test_polling_backs_off_and_times_out() -> None:
    slept: list[float] = []
    now = [0.0]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    job = wait_for(_Jobs(8), "j", 600, lambda _job: None, sleep=sleep, clock=lambda: now[0])  # type: ignore[arg-type]
    assert job["status"] == "done" and len(slept) == 8
    assert slept[0] == 0.5 and slept == sorted(slept) and max(slept) == MAX_POLL
    with pytest.raises(CiError, match="did not finish within 3s"):
        wait_for(_Jobs(100), "j", 3, lambda _job: None, sleep=sleep, clock=lambda: now[0])  # type: ignore[arg-type]
