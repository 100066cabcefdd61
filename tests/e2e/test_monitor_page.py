"""The /monitor page in a real browser, over a real comparison: the 1-rank TrainerMon run with
block 2's MLP scaled from step 20 against its golden (tests/monitor's runs), compared by
``graphboard monitor``. The heatmap is drawn, the first-departure marker stands at the step
the API names, clicking a cell draws that module's lines, the dump config downloads and the
.vis.db of the departure's step opens in the viewer. Then the Build page's monitor tab runs
the same comparison as a job and opens its result here."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from browser_support import Viewer, is_expected_console_error

from ci_support import live_server, new_token
from fixture_cases import fixture_path
from graphboard.cli import graphboard_main
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.settings import Settings

# The TrainerMon runs live with the monitor tests (made once per session, or kept under
# GRAPHBOARD_MONITOR_RUNS); their folder is on the path only when those tests are collected.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "monitor"))
from monitor_runs import FAULT_STEP, MonitorRuns, monitor_runs

__all__ = ["monitor_runs"]  # the session fixture, used here too
FILE = "exp/scale"  # the comparison's id under the data dir


@pytest.fixture(scope="module")
def monitor_server(
    monitor_runs: MonitorRuns, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, Path]]:
    data = tmp_path_factory.mktemp("monitor-page")
    target, golden = data / "exp" / "target" / "monitor", data / "exp" / "golden" / "monitor"
    shutil.copytree(monitor_runs.one_rank("scale"), target)
    shutil.copytree(monitor_runs.one_rank("golden"), golden)
    out = data / "out"
    out.mkdir()
    assert graphboard_main(["monitor", "-tp", str(target), "-gp", str(golden), "-o", str(out)]) == 1
    (written,) = out.glob("*.trend.db")
    shutil.move(written, data / f"{FILE}.trend.db")
    out.rmdir()
    # A dump of the departure's step in the target run's folder (the convnet fixture's real
    # msprobe dump, filed as step 20), built: the page links to it.
    dump = data / "exp" / "target" / "dump"
    stats = fixture_path("convnet-stats")
    for side in ("target", "golden"):
        shutil.copytree(stats / side / "step0", dump / side / f"step{FAULT_STEP}")
    built = run_build(
        BuildOptions(target=dump / "target", golden=dump / "golden", output_dir=data / "exp")
    )
    shutil.move(built.path, data / "exp" / "step20.vis.db")
    settings = Settings(data_dir=data, state_dir=tmp_path_factory.mktemp("monitor-state"))
    token = new_token(settings)
    with live_server(settings) as base:
        yield base, token, data


@pytest.fixture
def page(browser: Any, monitor_server: tuple[str, str, Path]) -> Iterator[Viewer]:
    context = browser.new_context(
        viewport={"width": 1400, "height": 1000}, locale="en-US", accept_downloads=True
    )
    found = Viewer(context.new_page(), monitor_server[0])
    found.page.set_default_timeout(20_000)
    found.page.on(
        "console",
        lambda message: (
            found.errors.append(message.text)
            if message.type == "error" and not is_expected_console_error(message)
            else None
        ),
    )
    found.page.on("pageerror", lambda error: found.errors.append(f"page error: {error}"))
    yield found
    context.close()
    assert found.errors == [], f"console errors: {found.errors}"


def _open_monitor(viewer: Viewer, file: str) -> Any:
    page = viewer.page
    page.goto(f"{viewer.base}/monitor?{urlencode({'file': file})}")
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector("#monitor-heatmap .heatmaplayer")
    return page


def _plot(page: Any, host: str, expression: str) -> Any:
    return page.evaluate(
        f"() => {{ const p = document.getElementById('{host}'); return {expression}; }}"
    )


def test_heatmap_marker_lines_config_and_the_step_s_graph(page: Viewer) -> None:
    api = httpx.get(f"{page.base}/api/monitor/{FILE}/report").json()
    first = api["report"]["first_departure"]
    assert (first["step"], first["module"]) == (FAULT_STEP, "blocks.2.mlp")
    browser_page = _open_monitor(page, FILE)
    assert "first departure: step 20, blocks.2.mlp" in browser_page.text_content("#monitor-summary")
    assert browser_page.input_value("#monitor-metric") == first["metric"]
    ticks = browser_page.locator("#monitor-heatmap .xtick text").all_text_contents()
    assert ticks[0] == "0" and len(ticks) > 10  # the steps (plotly may thin the labels)
    columns = _plot(browser_page, "monitor-heatmap", "p.data[0].x")
    assert columns == [str(step) for step in range(50)]
    rows = _plot(browser_page, "monitor-heatmap", "p.data[0].y")
    assert first["target"] in rows
    # The red first-departure line: at the API's step, and drawn over that column.
    marker = _plot(browser_page, "monitor-heatmap", "p.layout.shapes[0]")
    assert (
        marker["x0"] == columns.index(str(first["step"])) and marker["line"]["color"] == "#e5533d"
    )
    assert browser_page.locator("#monitor-heatmap .shapelayer path").count() >= 1
    row = rows.index(first["target"])
    center = browser_page.evaluate(
        "([r, c]) => globalThis.graphboardMonitor.cellCenter(r, c)", [row, marker["x0"]]
    )
    line_box = browser_page.locator("#monitor-heatmap .shapelayer path").first.bounding_box()
    assert abs(line_box["x"] + line_box["width"] / 2 - center["x"]) < 2
    page.shot("monitor-01-heatmap")

    # A click on the departing cell draws that target's lines, both runs, apart from step 20.
    browser_page.mouse.click(center["x"], center["y"])
    browser_page.wait_for_selector(f'body[data-series="{first["target"]}"]')
    names = _plot(browser_page, "monitor-lines", "p.data.map((t) => t.name)")
    assert names == ["target", "golden"]
    target_y = _plot(browser_page, "monitor-lines", "p.data[0].y")
    golden_y = _plot(browser_page, "monitor-lines", "p.data[1].y")
    assert target_y[:FAULT_STEP] == golden_y[:FAULT_STEP]
    assert target_y[FAULT_STEP] != golden_y[FAULT_STEP]
    assert first["target"] in browser_page.text_content("#monitor-lines .gtitle")
    page.shot("monitor-02-lines")

    # The dump config for that step and module downloads.
    with browser_page.expect_download() as download:
        browser_page.click("#monitor-dump-config")
    config = json.loads(Path(download.value.path()).read_text())
    assert config["step"] == [FAULT_STEP] and config["rank"] == [first["rank"]]
    assert config["statistics"]["list"][0] == "Module.blocks.2.mlp."
    assert download.value.suggested_filename == "config.json"

    # The .vis.db of that step (built from this run's dump) opens in the viewer at step 20.
    link = browser_page.locator("#monitor-graphs a")
    assert link.count() == 1 and link.get_attribute("data-match") == "step and run"
    assert link.text_content() == "step 20: exp/step20.vis.db"
    link.click()
    browser_page.wait_for_url("**/?graph=exp%2Fstep20*")
    browser_page.wait_for_selector("body[data-ready=true]")
    assert browser_page.evaluate("new URL(location).searchParams.get('step')") == "20"
    browser_page.locator("#pane-target .tree-row:not([hidden])").first.wait_for()


def test_the_build_page_compares_monitor_runs_as_a_job(
    page: Viewer, monitor_server: tuple[str, str, Path]
) -> None:
    _base, token, _data = monitor_server
    browser_page = page.page
    browser_page.goto(f"{page.base}/build")
    browser_page.wait_for_selector("body[data-ready=true]")
    browser_page.fill("#token-input", token)
    browser_page.click("#token-form button[type=submit]")
    browser_page.wait_for_selector("body[data-token=ok]")
    browser_page.click("#tab-monitor")
    options = browser_page.locator("#monitor-target option").all_text_contents()
    assert options == ["exp/golden/monitor", "exp/scale.trend.db", "exp/target/monitor"]
    browser_page.select_option("#monitor-target", "exp/target/monitor")
    browser_page.select_option("#monitor-golden", "exp/golden/monitor")
    browser_page.click("#monitor-start")
    browser_page.wait_for_selector("body[data-job-status=done]")
    result = browser_page.text_content("#job-result")
    assert "First departure" in result and "step 20, blocks.2.mlp (forward: actv" in result
    assert "exp/step20" in result  # the .vis.db of that step
    page.shot("monitor-03-build-page")
    browser_page.click("#open-result")
    browser_page.wait_for_url("**/monitor?file=builds*")
    browser_page.wait_for_selector("body[data-ready=true]")
    browser_page.wait_for_selector("#monitor-heatmap .heatmaplayer")
    assert browser_page.input_value("#monitor-file").startswith("builds/monitor_")
