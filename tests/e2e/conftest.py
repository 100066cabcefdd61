"""Browser tests: a real server (uvicorn in a thread, ``create_app``) over real fixture builds,
driven by Debian's headless Chromium through Playwright. Never downloads a browser.

Screenshots of key states go to ``test-artifacts/e2e/`` (gitignored)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import CHROMIUM, CHROMIUM_ARGS, Viewer, is_expected_console_error

from ci_support import live_server
from graphboard.server.settings import Settings

WIDE_CHILDREN = 100_000

if not CHROMIUM.exists():
    pytest.skip(
        f"browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need playwright")

BuildFn = Callable[..., Path]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def e2e_data(tmp_path_factory: pytest.TempPathFactory, built: BuildFn) -> Path:
    """A data dir with the fixture builds under short names (their graph ids)."""
    data = tmp_path_factory.mktemp("e2e-data")
    builds = {
        "stats": built("convnet-stats", compare=True, overflow_check=True),
        "ddp2": built("convnet-ddp2", compare=True),
        "mapping": built("layer-mapping", compare=True),  # no -lm: grey nodes to match by hand
        "overflow": built("convnet-overflow", compare=False, overflow_check=True),
    }
    for name, path in builds.items():
        shutil.copyfile(path, data / f"{name}.vis.db")
    return data


@pytest.fixture(scope="session")
def wide_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with one build whose module has 100,000 API children."""
    from wide_dump import write_wide_dump

    from graphboard.pipeline import BuildOptions, run_build

    work = tmp_path_factory.mktemp("wide")
    dump = write_wide_dump(work / "dump", WIDE_CHILDREN)
    result = run_build(BuildOptions(target=dump, golden=None, output_dir=work / "out"))
    data = work / "data"
    data.mkdir()
    shutil.copyfile(result.path, data / "wide.vis.db")
    return data


@pytest.fixture(scope="session")
def server(e2e_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    state = tmp_path_factory.mktemp("state")
    with live_server(Settings(data_dir=e2e_data, state_dir=state)) as base:
        yield base


@pytest.fixture(scope="session")
def wide_server(wide_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    state = tmp_path_factory.mktemp("wide-state")
    with live_server(Settings(data_dir=wide_data, state_dir=state)) as base:
        yield base


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def viewer(browser: Any, server: str) -> Iterator[Viewer]:
    yield from _viewer(browser, server)


@pytest.fixture
def wide_viewer(browser: Any, wide_server: str) -> Iterator[Viewer]:
    yield from _viewer(browser, wide_server)


def _viewer(browser: Any, base: str) -> Iterator[Viewer]:
    context = browser.new_context(viewport={"width": 1500, "height": 950}, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(15_000)
    found = Viewer(page, base)
    page.on(
        "console",
        lambda message: (
            found.errors.append(message.text)
            if message.type == "error" and not is_expected_console_error(message)
            else None
        ),
    )
    page.on("pageerror", lambda error: found.errors.append(f"page error: {error}"))
    yield found
    context.close()
    assert found.errors == [], f"console errors: {found.errors}"
