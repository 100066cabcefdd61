"""``graphboard verdict`` on the file a finished job wrote prints the JSON the job's verdict
endpoint gave (``GET /api/jobs/{id}/verdict``, through ci-check), but the job's id and the
graph id, which is the file's path under the server's data dir."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from ci_support import live_server, new_token
from fixture_cases import fixture_path
from graphboard.cli import graphboard_main
from graphboard.server.settings import Settings


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, str, str]]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("verdict-api"))
    token = new_token(settings)
    with live_server(settings) as base:
        yield settings, base, token


@pytest.mark.parametrize(
    ("case", "flags"),
    [("convnet-stats", ["--overflow-check"]), ("convnet-overflow", ["--overflow-check"])],
)
def test_the_cli_prints_the_endpoints_verdict(
    server: tuple[Settings, str, str],
    capsys: pytest.CaptureFixture[str],
    case: str,
    flags: list[str],
) -> None:
    settings, base, token = server
    root = fixture_path(case)
    sides = ["--target", str(root / "target")]
    if (root / "golden").is_dir():
        sides += ["--golden", str(root / "golden")]
    code = graphboard_main(
        ["ci-check", "--server", base, "--token", token, *sides, *flags, "--json", "-q"]
    )
    assert code in (0, 1)
    api = json.loads(capsys.readouterr().out)["verdict"]
    path = settings.data_root / f"{api['graph']}.vis.db"
    assert path.is_file(), api["graph"]

    code_of_cli = graphboard_main(["verdict", str(path), "--json"])
    assert code_of_cli == code
    ours = json.loads(capsys.readouterr().out)
    stem = path.name.removesuffix(".vis.db")
    assert ours["job_id"] is None and ours["graph"] == stem
    assert ours["url"] == api["url"].replace(
        f"graph={quote(api['graph'], safe='')}", f"graph={stem}"
    )
    for field in ("job_id", "graph", "url"):
        del ours[field], api[field]
    assert ours == api
    if case == "convnet-stats":
        # the default rules, dtype-aware: the first injected change in execution order, the
        # 1e-3 noise on blocks.0.conv2's weight (msprobe's rules flag only the tanh GELU after)
        assert api["rules"] == "dtype-aware"
        assert api["first_error"]["name"] == "Functional.conv2d.2.forward"
    else:  # a build: no levels, but overflow levels counted
        assert api["counts"]["pass"] == 0 and sum(api["overflow"].values()) > 0
