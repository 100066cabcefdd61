"""Regex searches that froze the server (issue 16): `graphboard serve` in a child process
answers them in bounded time, answers other requests meanwhile, and stops on SIGTERM."""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from served_files import BuildFn, Q

from ci_support import free_port, serve_process
from dumpmaker import tiny_model
from graphboard.pipeline import BuildOptions, run_build

HUGE_NAME = "Functional." + "x" * 10_000_000 + ".0.forward"  # as in the issue: 10 MB
ANSWER_SECONDS = 60  # a hang guard: RE2 answers these in well under a second


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, built: BuildFn) -> Iterator[tuple[str, Path]]:
    data = tmp_path_factory.mktemp("regex-data")
    shutil.copyfile(built("convnet-stats", overflow_check=True), data / "convnet.vis.db")
    dump = tiny_model().add(HUGE_NAME, "Module.net.Net.forward.0")
    folder = dump.write(tmp_path_factory.mktemp("huge-dump") / "step0" / "rank0")
    result = run_build(BuildOptions(target=folder, golden=None, output_dir=data / "out"))
    result.path.rename(data / "huge.vis.db")
    port = free_port()
    process = serve_process(data, port)
    try:
        yield f"http://127.0.0.1:{port}", data
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _regex(base: str, graph: str, pattern: str) -> httpx.Response:
    return httpx.get(
        f"{base}/api/graphs/{graph}/search",
        params={**Q, "q": pattern, "regex": True},
        timeout=ANSWER_SECONDS,
    )


def test_catastrophic_regexes_do_not_freeze_the_server(served: tuple[str, Path]) -> None:
    base, _data = served
    bad = [
        ("convnet", "(.|.)*!"),
        ("convnet", ".*.*.*!"),
        ("convnet", r"(?:(\w|\.)*)*!"),
        ("huge", "x+z"),
        ("huge", "(a|b)*a(a|b){20}c"),
    ]
    with ThreadPoolExecutor(len(bad)) as pool:
        pending = [pool.submit(_regex, base, graph, pattern) for graph, pattern in bad]
        # while they run (or right after): the server answers something else
        other = httpx.get(f"{base}/api/graphs/convnet/children", params=Q, timeout=ANSWER_SECONDS)
        assert other.status_code == 200 and other.json()["parent"]["name"] == "DefaultModel"
        answers = [future.result() for future in pending]
    for (graph, pattern), answer in zip(bad[:4], answers[:4], strict=True):
        assert answer.status_code == 200, (graph, pattern, answer.text)
        assert answer.json()["total"] == 0, (graph, pattern)
    refused = answers[4]
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["code"] == "invalid_regex"
    assert "too complex for this graph's longest name (10000021 bytes)" in error["message"]
    found = _regex(base, "huge", r"x\.0\.forward$")
    assert found.status_code == 200 and found.json()["total"] == 1


def test_the_server_stops_on_sigterm_after_a_heavy_search(built: BuildFn, tmp_path: Path) -> None:
    shutil.copyfile(built("convnet-stats", overflow_check=True), tmp_path / "convnet.vis.db")
    port = free_port()
    process = serve_process(tmp_path, port)
    try:
        base = f"http://127.0.0.1:{port}"
        assert _regex(base, "convnet", "(.|.)*!").status_code == 200
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=ANSWER_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail("graphboard serve ignored SIGTERM")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
