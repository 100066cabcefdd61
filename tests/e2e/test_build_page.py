"""The Build page in a real browser: a token, a build from dump folders on the server with
live progress and its verdict, opening the result in the viewer; an upload; a failed build;
a refused token."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import Viewer, is_expected_console_error

from ci_support import live_server, new_token, tar_gz
from fixture_cases import fixture_path
from graphboard.server.settings import Settings

BAD_TOKEN = "gbt_000000000000_" + "x" * 43


@pytest.fixture(scope="module")
def build_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    data = tmp_path_factory.mktemp("build-data")
    stats = fixture_path("convnet-stats")
    shutil.copytree(stats / "target", data / "runs" / "stats" / "target")
    shutil.copytree(stats / "golden", data / "runs" / "stats" / "golden")
    (data / "runs" / "partial" / "rank0").mkdir(parents=True)
    (data / "runs" / "partial" / "rank0" / "dump.json").write_text("{}")
    archives = tmp_path_factory.mktemp("build-archives")
    tar_gz(stats / "target", archives / "target.tar.gz")
    tar_gz(stats / "golden", archives / "golden.tar.gz")
    broken = archives / "broken"
    shutil.copytree(stats / "target", broken)
    (broken / "step0" / "rank0" / "dump.json").chmod(0o644)
    (broken / "step0" / "rank0" / "dump.json").write_text('{"data": {')
    tar_gz(broken, archives / "broken.tar.gz")
    settings = Settings(data_dir=data, state_dir=tmp_path_factory.mktemp("build-state"))
    token = new_token(settings)
    with live_server(settings) as base:
        yield base, token, archives


@pytest.fixture
def page(browser: Any, build_server: tuple[str, str, Path]) -> Iterator[Viewer]:
    base = build_server[0]
    context = browser.new_context(viewport={"width": 1200, "height": 900}, locale="en-US")
    found = Viewer(context.new_page(), base)
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
    # A refused token is reported by the page and logged by the browser as a failed request.
    assert [error for error in found.errors if "401" not in error] == []


def _open_build(viewer: Viewer, token: str | None) -> Any:
    page = viewer.page
    page.goto(f"{viewer.base}/build")
    page.wait_for_selector("body[data-ready=true]")
    if token is not None:
        page.fill("#token-input", token)
        page.click("#token-form button[type=submit]")
        page.wait_for_selector("body[data-token]:not([data-token=checking]):not([data-token=none])")
    return page


def test_build_from_server_folders_then_open_the_first_error(
    page: Viewer, build_server: tuple[str, str, Path]
) -> None:
    _base, token, _archives = build_server
    browser_page = page.page
    browser_page.goto(f"{page.base}/")
    browser_page.click("#build-link")  # the viewer links to the Build page
    browser_page.wait_for_selector("body[data-ready=true]")
    assert "No token yet" in browser_page.text_content("#token-status")
    browser_page = _open_build(page, token)
    assert browser_page.text_content("#token-status") == "Token accepted"
    options = browser_page.locator("#folder-target option")
    labels = [options.nth(index).text_content() for index in range(options.count())]
    assert "runs/stats/target (1 step(s) × 1 rank(s))" in labels
    partial = browser_page.locator('#folder-target option[value="runs/partial"]')
    assert partial.is_disabled() and "missing construct.json" in partial.get_attribute("title")
    browser_page.select_option("#folder-target", "runs/stats/target")
    browser_page.select_option("#folder-golden", "runs/stats/golden")
    browser_page.check("#folder-overflow")
    browser_page.click("#folder-start")
    browser_page.wait_for_selector("body[data-job-status=done]")
    assert browser_page.locator("#job-progress").evaluate("e => e.value") == 100
    result = browser_page.text_content("#job-result")
    # the default rules, dtype-aware: the first error is convnet-stats' first injected change,
    # blocks.0.conv2's 1e-3 weight noise (msprobe's rules: 82 / 8 / 1, the tanh GELU after it)
    first = "Functional.conv2d.2.forward"
    assert "83 pass · 2 warning · 6 error · 0 unmatched" in result, result
    assert f"{first} (step 0, rank 0)" in result
    page.shot("build-01-done")
    browser_page.locator("#job-list tbody tr").first.wait_for()
    assert browser_page.locator("#job-list tbody tr").first.get_attribute("data-status") == "done"
    browser_page.click("#open-result")
    browser_page.wait_for_selector("body[data-ready=true]")
    assert f"node={first}" in browser_page.url
    selected = browser_page.locator("#pane-target .tree-row.selected")
    selected.wait_for()
    assert selected.get_attribute("data-name") == first


def test_upload_archives_and_a_failed_build(
    page: Viewer, build_server: tuple[str, str, Path]
) -> None:
    _base, token, archives = build_server
    browser_page = _open_build(page, token)
    browser_page.click("#tab-upload")
    browser_page.set_input_files("#upload-target", str(archives / "target.tar.gz"))
    browser_page.set_input_files("#upload-golden", str(archives / "golden.tar.gz"))
    browser_page.click("#upload-start")
    browser_page.wait_for_selector("body[data-job-status=done]")
    assert "6 error" in browser_page.text_content("#job-result")  # dtype-aware, the default
    browser_page.click("#back")
    browser_page.set_input_files("#upload-target", str(archives / "broken.tar.gz"))
    browser_page.set_input_files("#upload-golden", [])
    browser_page.click("#upload-start")
    browser_page.wait_for_selector("body[data-job-status=failed]")
    error = browser_page.text_content("#job-result .build-error")
    assert error.startswith("target/broken/step0/rank0/dump.json: "), error
    assert browser_page.locator("#rebuild").is_visible()
    assert browser_page.locator("#open-result").is_hidden()
    page.shot("build-02-failed")


def test_a_refused_token_and_chinese_labels(page: Viewer) -> None:
    browser_page = _open_build(page, BAD_TOKEN)
    status = browser_page.locator("#token-status")
    assert status.text_content() == "The server refused this token (unknown or revoked)"
    assert "error-text" in (status.get_attribute("class") or "")
    browser_page.click("#lang-toggle")
    assert browser_page.text_content("#folder-start") == "开始构图"
    assert browser_page.text_content("#tab-upload") == "上传压缩包"
    browser_page.click("#lang-toggle")  # back to English for the next tests of this browser
