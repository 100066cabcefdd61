"""``rules=`` on the read API, ``graphboard verdict --rules`` and ``ci-check --rules``, on a
real compare built in the test: a bf16 GPT whose layer-1 MLP output is 5% off, against fp32
(tests/dtype_dumps.py). graphboard's rules are the default (issue 29); msprobe's answer
unchanged one switch away (``rules=msprobe``), and by default for a file that holds no
dtype-aware verdicts."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ci_support import live_server, new_token
from dtype_dumps import Dumps, dtype_dumps
from fixture_cases import reference_db
from graphboard.cli import graphboard_main
from graphboard.server.app import create_app
from graphboard.server.settings import Settings
from test_cli import graphboard_command

__all__ = ["dtype_dumps"]

Q = {"side": "NPU", "step": 0, "rank": 0}
MLP = "Module.blocks.1.mlp."


@pytest.fixture(scope="module")
def served(dtype_dumps: Dumps, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    data_dir = tmp_path_factory.mktemp("dtype-rules-api")
    built = dtype_dumps.compare("graphboard", "gpt", 2, "scaled")
    shutil.copy(built, data_dir / "scaled.vis.db")
    return data_dir, "scaled"


@pytest.fixture(scope="module")
def client(served: tuple[Path, str]) -> Iterator[TestClient]:
    data_dir, _graph = served
    with TestClient(create_app(Settings(data_dir=data_dir))) as test_client:
        yield test_client


def _get(client: TestClient, path: str, **params: Any) -> Any:
    response = client.get(f"/api/graphs/scaled/{path}", params={**Q, **params})
    assert response.status_code == 200, response.text
    return response.json()


def test_first_error_under_each_rule_set(client: TestClient) -> None:
    ours = _get(client, "first-error", rules="dtype-aware")["node"]
    assert ours["name"].startswith(MLP) and ours["introduced"] == "error"
    default, msprobe = _get(client, "first-error"), _get(client, "first-error", rules="msprobe")
    assert default == _get(client, "first-error", rules="dtype-aware")
    assert msprobe["node"] is None or not msprobe["node"]["name"].startswith(MLP)


def test_filter_counts_and_badges_follow_the_rule_set(client: TestClient) -> None:
    ours = _get(client, "filter", precision="error", rules="dtype-aware", limit=500)
    theirs = _get(client, "filter", precision="error", rules="msprobe", limit=500)
    assert _get(client, "filter", precision="error", limit=500) == ours  # the default
    assert ours["total"] == 1 and ours["items"][0]["name"].startswith(MLP)
    assert theirs["total"] > 100  # msprobe's dtype rule: nearly every bf16 node
    root_ours = _get(client, "children", rules="dtype-aware")["parent"]
    root_theirs = _get(client, "children", rules="msprobe")["parent"]
    assert root_ours["rollup"]["error_leaves"] < root_theirs["rollup"]["error_leaves"]
    assert root_ours["rollup"]["worst_node"].startswith(MLP)
    first = _get(client, "path", name=ours["items"][0]["name"], rules="dtype-aware")["node"]
    assert (
        first["level"] == "error"
        and first["color"]
        == _get(client, "path", name=ours["items"][0]["name"], rules="msprobe")["node"]["color"]
    )
    found = _get(client, "search", q="mlp.out.Linear.forward", rules="dtype-aware")["items"]
    assert [node["level"] for node in found] == ["pass", "error"]  # layers 0 and 1
    passing = _get(client, "path", name="Module.blocks.0.mlp.GptMlp.forward.0", rules="dtype-aware")
    assert passing["node"]["level"] == "pass" and passing["node"]["precision_index"] == 0


def test_concurrent_requests_each_answer_under_their_own_rule_set(client: TestClient) -> None:
    """Requests under msprobe's and the dtype-aware rules, in flight at once on two threads,
    each answer as they do alone: the rule set is the request's, never state on a reader
    another request shares (a pooled or cached reader would mix them)."""
    reads = [
        ("filter", {"precision": "error", "limit": 3}),
        ("first-error", {}),
        ("children", {}),
        ("search", {"q": "mlp.out.Linear.forward"}),
    ]
    alone = {
        (path, rules): _get(client, path, rules=rules, **params)
        for path, params in reads
        for rules in ("msprobe", "dtype-aware")
    }
    assert alone["filter", "msprobe"] != alone["filter", "dtype-aware"]  # the test can tell
    start = threading.Barrier(2)

    def ask(rules: str) -> list[tuple[str, Any]]:
        start.wait()
        return [
            (path, _get(client, path, rules=rules, **params))
            for _round in range(6)
            for path, params in reads
        ]

    with ThreadPoolExecutor(2) as pool:
        both = ("msprobe", "dtype-aware")
        answered = dict(zip(both, pool.map(ask, both), strict=True))
    for rules, answers in answered.items():
        for path, answer in answers:
            assert answer == alone[path, rules], (path, rules)


def test_rule_verdict_explains_per_parameter(client: TestClient) -> None:
    first = _get(client, "first-error", rules="dtype-aware")["node"]["name"]
    found = _get(client, "rule-verdict", name=first)
    assert found["verdict"] == "error" and found["introduced"] and found["stored"] == "error"
    weight = next(param for param in found["params"] if param["introduces"])
    assert weight["key"] == "parameters.weight"
    assert weight["difference"] > weight["band"] == pytest.approx(2 * 2**-8)
    passing = _get(client, "rule-verdict", name="Module.blocks.0.mlp.GptMlp.forward.0")
    assert passing["verdict"] == "pass"
    output = next(param for param in passing["params"] if param["is_output"])
    assert output["difference"] <= output["band"] and "within the band" in output["reason"]


def test_an_unknown_rule_set_is_refused(client: TestClient) -> None:
    response = client.get(
        "/api/graphs/scaled/filter", params={**Q, "precision": "error", "rules": "x"}
    )
    assert response.status_code == 422


def test_reads_default_to_the_rules_the_file_holds(tmp_path: Path, client: TestClient) -> None:
    """A compare graphboard built reads under dtype-aware when no rule set is named; msprobe's
    file, which holds none, under msprobe's (not refused), and the listing says which."""
    listed = {entry["id"]: entry for entry in client.get("/api/graphs").json()["files"]}
    assert listed["scaled"]["default_rules"] == "dtype-aware"
    shutil.copy2(reference_db("convnet-stats"), tmp_path / "theirs.vis.db")
    with TestClient(create_app(Settings(data_dir=tmp_path))) as theirs:
        [entry] = theirs.get("/api/graphs").json()["files"]
        assert entry["default_rules"] == "msprobe"
        url, query = "/api/graphs/theirs/filter", {**Q, "precision": "error", "limit": 500}
        default = theirs.get(url, params=query)
        assert default.status_code == 200, default.text
        assert default.json() == theirs.get(url, params={**query, "rules": "msprobe"}).json()
        refused = theirs.get(url, params={**query, "rules": "dtype-aware"})
        assert refused.status_code != 200 and "holds no dtype-aware verdicts" in refused.text


def _verdict(path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """``graphboard verdict`` as a user runs it."""
    return graphboard_command("verdict", path, *options)


def test_verdict_cli_takes_the_rule_set(served: tuple[Path, str]) -> None:
    data_dir, graph = served
    path = data_dir / f"{graph}.vis.db"
    theirs = _verdict(path, "--json", "--rules", "msprobe")
    assert "rules" not in json.loads(theirs.stdout)  # msprobe's JSON as before
    ours = _verdict(path, "--json", "--max-errors", "1")  # the default: dtype-aware
    assert _verdict(path, "--json", "--rules", "dtype-aware", "--max-errors", "1").stdout == (
        ours.stdout
    )
    assert ours.returncode == 0, ours.stderr
    shown = json.loads(ours.stdout)
    assert shown["rules"] == "dtype-aware" and shown["not_judged"] == 0
    assert shown["counts"]["error"] == 1 and shown["first_error"]["name"].startswith(MLP)
    assert shown["url"].endswith("&rules=dtype-aware")
    worst = shown["first_error"]["worst_metric"]  # the working's deciding parameter
    assert worst["parameter"] == "parameters.weight" and worst["metric"] == "d"
    assert worst["value"] == pytest.approx(0.05 / 1.05, rel=1e-2)
    assert worst["message"].startswith("error: a parameter differs by d 0.0476")
    assert theirs.returncode == 1  # msprobe's rules: far more than 0 errors
    assert "  rules     dtype-aware" in _verdict(path).stdout.splitlines()


def test_verdict_cli_refuses_an_msprobe_file_under_dtype_aware(tmp_path: Path) -> None:
    copied = Path(shutil.copy2(reference_db("convnet-stats"), tmp_path))  # fixtures: read-only
    default = _verdict(copied, "--json")  # the default falls back to msprobe's rules
    assert default.returncode in (0, 1), default.stderr
    assert "rules" not in json.loads(default.stdout)
    assert default.stdout == _verdict(copied, "--json", "--rules", "msprobe").stdout
    found = _verdict(copied, "--rules", "dtype-aware")
    assert found.returncode == 2
    assert "holds no dtype-aware verdicts" in found.stderr


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("ci-check-rules"))
    token = new_token(settings)
    with live_server(settings) as base:
        yield base, token


def test_ci_check_takes_the_rule_set(
    dtype_dumps: Dumps, server: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    base, token = server
    target = dtype_dumps.dump("graphboard", "gpt", 2, "bf16")
    golden = dtype_dumps.dump("graphboard", "gpt", 2, "fp32")
    common = ["ci-check", "--server", base, "--token", token, "-q"]
    common += ["--target", str(target), "--golden", str(golden)]
    assert graphboard_main([*common, "--json"]) == 0  # the default: dtype-aware
    shown = json.loads(capsys.readouterr().out)
    assert shown["passed"] and shown["verdict"]["rules"] == "dtype-aware"
    assert shown["verdict"]["counts"]["error"] == 0
    assert graphboard_main([*common, "--rules", "msprobe"]) == 1  # every bf16 node
