"""The demo: a real model dumped twice with the probe, compared, and the differences found."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphboard.viewer_link import activate_hint, command, script_dir


def demo(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``graphboard demo ARGS`` run as this test's interpreter (its venv's scripts beside it)."""
    return graphboard("demo", *args, env=env)


def graphboard(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from graphboard.cli import graphboard_main; raise SystemExit(graphboard_main())",
            *map(str, args),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


def test_demo_builds_a_compare_that_finds_the_planted_changes(tmp_path: Path) -> None:
    # PATH without the venv, as in a fresh shell after scripts/demo
    outside = os.pathsep.join(
        folder
        for folder in os.environ.get("PATH", "").split(os.pathsep)
        if folder and Path(folder).resolve() != script_dir().resolve()
    )
    completed = demo("--out", tmp_path, "--no-serve", env={**os.environ, "PATH": outside})
    assert completed.returncode == 0, completed.stderr
    built = sorted((tmp_path / "graphs").glob("compare_*.vis.db"))
    assert len(built) == 1 and str(built[0]) in completed.stdout
    # It says what it found, as ci-check would, and where the viewer opens on it.
    graph = built[0].name.removesuffix(".vis.db")
    assert (
        "demo:  first error: Functional.gelu.0.forward (target step 0 rank 0)" in completed.stdout
    )
    assert (
        f"http://127.0.0.1:8000/?graph={graph}&step=0&rank=0&node=Functional.gelu.0.forward"
        in completed.stdout
    )
    with sqlite3.connect(built[0]) as conn:
        first_error = conn.execute(
            "SELECT first_error FROM gb_graphs WHERE data_source = 'NPU'"
        ).fetchone()[0]
        errors = {
            row[0]
            for row in conn.execute(
                "SELECT node_name FROM tb_nodes WHERE data_source = 'NPU' AND precision_index = 1"
            )
        }
        overflow_check = conn.execute("SELECT overflow_check FROM tb_config").fetchone()[0]
    assert first_error == "Functional.gelu.0.forward"  # the tanh GELU in block 0 comes first
    assert "Torch.softmax.1.forward" in errors  # block 1's bfloat16 softmax
    assert overflow_check == 1
    for run in ("golden", "target"):
        assert (tmp_path / run / "step0" / "rank0" / "dump.json").exists()
    # The Tour's commands were not on PATH after the demo, nor was its closing hint's
    # `graphboard serve`: the demo says how to put them there and names the command by path.
    activate = script_dir() / "activate"
    if activate.exists():
        assert (
            f"demo: graph_build and graphboard are not on PATH: run `. {activate}` first"
            in completed.stdout.splitlines()
        )
    assert (
        f"start one with `{script_dir() / 'graphboard'} serve --data-dir {tmp_path / 'graphs'}`"
        in completed.stdout
    )

    # suggest-matches said "0 proposal(s)" and nothing of why the 4 grey nodes (the target's
    # casts around its bfloat16 softmax) got none
    suggested = graphboard("suggest-matches", built[0])
    assert suggested.returncode == 0 and suggested.stdout == "", suggested.stderr
    assert suggested.stderr == (
        "graphboard suggest-matches: 0 proposal(s) at or above 0.6, 0 fused group(s): the 4 grey "
        "target node(s) have no unmatched golden node to pair with: the golden run has no "
        "counterpart for them (nodes only the target runs)\n"
    )

    # A second demo left two files and `/` opened the older one: it replaces its earlier file
    # (and leaves a file it did not make).
    foreign = tmp_path / "graphs" / "mine.vis.db"
    foreign.write_bytes(built[0].read_bytes())
    with sqlite3.connect(foreign) as conn:
        conn.execute("UPDATE gb_meta SET value = '[\"graph_build\"]' WHERE key = 'command'")
    conn.close()
    again = demo("--out", tmp_path, "--no-serve")
    assert again.returncode == 0, again.stderr
    left = sorted(path.name for path in (tmp_path / "graphs").glob("*.vis.db"))
    newest = Path(again.stdout.split("demo: wrote ", 1)[1].split(" ", 1)[0])
    assert newest != built[0] and left == sorted([newest.name, foreign.name])
    assert f"demo: removed the earlier demo file {built[0].name}" in again.stdout


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_a_busy_port_is_one_line_before_any_work(tmp_path: Path, busy_port: int) -> None:
    """The demo printed the URL (someone else's server there), built, then died with a bind
    traceback; `graphboard serve` gave the traceback too."""
    expected = (
        f"graphboard: error: 127.0.0.1:{busy_port} is already in use (another server?): "
        "pick a free port with --port N\n"
    )
    refused = demo("--out", tmp_path / "demo", "--port", str(busy_port))
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", expected)
    assert not (tmp_path / "demo").exists()  # checked before a minute of work
    served = graphboard("serve", "--data-dir", tmp_path, "--port", str(busy_port))
    assert (served.returncode, served.stdout, served.stderr) == (1, "", expected)


def test_the_commands_are_named_bare_once_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{script_dir()}{os.pathsep}/usr/bin:/bin")
    assert command("graphboard") == "graphboard" and activate_hint() is None
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert command("graphboard") == str(script_dir() / "graphboard")
