"""``graphboard verdict FILE.vis.db`` as a user runs it: a real subprocess on msprobe's own
files and on graphboard's; exit 0 within --max-errors, 1 beyond, 2 for no verdict."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dumpmaker import tiny_model
from fixture_cases import reference_db
from graphboard.pipeline import BuildOptions, run_build
from graphboard.serve_address import configured_url
from test_cli import GRAPHBOARD_COMMAND, graphboard_command, shown_command, view_line

PROG = "graphboard verdict"


def verdict(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return graphboard_command("verdict", *args)


def _copy(case: str, folder: str, into: Path) -> Path:
    """msprobe's file, copied (its name kept): the fixtures are read-only."""
    into.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(reference_db(case, folder), into))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _error_line(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{PROG}: error: "), run.stderr
    return lines[0].removeprefix(f"{PROG}: error: ")


def test_msprobes_file_gets_the_jobs_verdict_and_is_left_alone(tmp_path: Path) -> None:
    path = _copy("convnet-stats", "reference-oc", tmp_path / "files")
    before = _digest(path)
    graph = path.name.removesuffix(".vis.db")
    failed = verdict(path)
    assert failed.returncode == 1, failed.stderr
    assert failed.stderr == ""
    assert (
        [shown_command(line) for line in failed.stdout.splitlines()]
        == [
            "graphboard verdict: FAIL (1 error(s), more than the 0 allowed)",
            f"  graph     {graph} (compare, summary mode, steps [0], ranks [0])",
            "  rules     msprobe",  # msprobe's file holds no dtype-aware verdicts: the default falls back
            "  nodes     81 pass, 8 warning, 1 error, 0 unmatched",  # API collections not counted
            "  overflow  0 medium, 0 high, 0 critical",
            "  first error: Functional.gelu.0.forward (target step 0 rank 0); worst input.approximate: "
            "error: The scalar parameters of NPU and Bench are inconsistent.",
            view_line(
                path.parent,
                f"{configured_url()}/?graph={graph}&step=0&rank=0&node=Functional.gelu.0.forward",
                prefix="",
            ),
        ]
    )
    passed = verdict(path, "--max-errors", "1")
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.startswith("graphboard verdict: PASS (1 error(s), at most 1 allowed)\n")
    # viewing never writes: no derived file, journal or cache next to the file, the bytes unchanged
    assert [entry.name for entry in path.parent.iterdir()] == [path.name]
    assert _digest(path) == before


def test_step_and_rank_restrict_the_verdict_to_their_graphs(tmp_path: Path) -> None:
    path = _copy("convnet-ddp2", "reference", tmp_path)
    whole = json.loads(verdict(path, "--json", "--max-errors", "1000").stdout)
    assert whole["steps"] == [0, 1] and whole["ranks"] == [0, 1]
    parts = {}
    for step in (0, 1):
        for rank in (0, 1):
            run = verdict(path, "--json", "--step", str(step), "--rank", str(rank))
            assert run.returncode in (0, 1), run.stderr
            parts[step, rank] = json.loads(run.stdout)
            assert parts[step, rank]["steps"] == [step] and parts[step, rank]["ranks"] == [rank]
    for level in ("pass", "warning", "error", "unmatched"):
        assert whole["counts"][level] == sum(part["counts"][level] for part in parts.values())
    rank1 = json.loads(verdict(path, "--json", "--rank", "1").stdout)
    assert rank1["steps"] == [0, 1] and rank1["ranks"] == [1]
    assert rank1["first_error"]["rank"] == 1
    for level in ("pass", "error"):
        assert rank1["counts"][level] == parts[0, 1]["counts"][level] + parts[1, 1]["counts"][level]


def test_graphboards_own_file_and_the_json_of_the_api(tmp_path: Path) -> None:
    target = tiny_model(loss=5.0).write(tmp_path / "target" / "step0" / "rank0")
    golden = tiny_model(loss=1.0).write(tmp_path / "golden" / "step0" / "rank0")
    path = run_build(BuildOptions(target=target, golden=golden, output_dir=tmp_path / "out")).path
    run = verdict(path, "--json", "--rules", "msprobe")  # msprobe's metrics, as the API's
    assert run.returncode == 1, run.stderr
    shown = json.loads(run.stdout)
    graph = path.name.removesuffix(".vis.db")
    assert shown == {
        "job_id": None,  # a file judged on its own belongs to no job (it was "")
        "graph": graph,
        "graph_type": "compare",
        "data_mode": "summary",
        "steps": [0],
        "ranks": [0],
        "counts": {"pass": 8, "warning": 0, "error": 1, "unmatched": 0},
        "overflow": {"medium": 0, "high": 0, "critical": 0},
        "first_error": {
            "name": "Torch.sum.0.forward",
            "side": "target",
            "step": 0,
            "rank": 0,
            "level": "error",
            "precision_index": 1.0,
            "worst_metric": {
                "parameter": "output.0",
                "result": "error",
                "metric": "MaxRelativeErr",
                "value": 400.0,
                "shown": "400.0%",
                "message": "error: the output's norm differs by more than 50% while the inputs "
                "agree within 10%",
            },
        },
        "url": f"/?graph={graph}&step=0&rank=0&node=Torch.sum.0.forward",
        "diagnosis": {
            "kind": "first_error",
            "found": True,
            "summary": "step 0 rank 0: the first error starts at Torch.sum.0.forward",
            "step": 0,
            "rank": 0,
            "node": "Torch.sum.0.forward",
            "node_class": "error",
            "advice": shown["diagnosis"]["advice"],
        },
    }


def test_a_build_without_golden_passes(tmp_path: Path) -> None:
    rank = tiny_model().write(tmp_path / "dump" / "step0" / "rank0")
    path = run_build(BuildOptions(target=rank, output_dir=tmp_path / "out")).path
    run = verdict(path)
    assert run.returncode == 0, run.stderr
    assert "  nodes     0 pass, 0 warning, 0 error, 0 unmatched" in run.stdout
    assert "  first error: none" in run.stdout


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "no such file"),
        (b"not a database, just text\n" * 100, "not an SQLite database"),
    ],
    ids=["missing", "corrupt"],
)
def test_a_missing_or_corrupt_file_is_exit_2_with_one_line(
    tmp_path: Path, content: bytes | None, reason: str
) -> None:
    path = tmp_path / "broken.vis.db"
    if content is not None:
        path.write_bytes(content)
    message = _error_line(verdict(path))
    assert "broken.vis.db" in message and reason in message


def test_a_sqlite_file_that_is_not_a_vis_db_is_exit_2(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "other.vis.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    assert "not a .vis.db (no tb_nodes / tb_config table)" in _error_line(verdict(path))


def test_a_graph_not_in_the_file_is_exit_2_naming_what_it_holds(tmp_path: Path) -> None:
    path = _copy("convnet-stats", "reference", tmp_path)
    message = _error_line(verdict(path, "--step", "0", "--rank", "3"))
    assert message == f"{path.name}: no target graph at step 0 rank 3; the file holds step 0 rank 0"
    assert _error_line(verdict(path, "--max-errors", "-1")) == "--max-errors must be 0 or more"


def test_a_folder_is_named_as_one_with_the_files_under_it(tmp_path: Path) -> None:
    """It said "no such file" for a folder that exists."""
    first = _copy("convnet-stats", "reference", tmp_path / "runs")
    second = _copy("convnet-ddp2", "reference", tmp_path / "runs" / "nightly")
    folder = tmp_path / "runs"
    assert _error_line(verdict(folder)) == (
        f"{folder}: a folder, not a .vis.db; give one of the files under it: "
        f"{first.name}, nightly/{second.name}"
    )
    (tmp_path / "empty").mkdir()
    assert _error_line(verdict(tmp_path / "empty")) == (
        f"{tmp_path / 'empty'}: a folder, not a .vis.db, and none is under it"
    )


def test_the_url_is_to_open_only_when_a_server_serves_the_file(tmp_path: Path) -> None:
    """Every command printed ``open http://127.0.0.1:8000/...`` whether or not a server ran
    there. Now: with a real server on the file's folder the line is ``open``; with a server
    on another folder holding a file of the same name (someone else's), or none, the line
    says how to start one."""
    from ci_support import free_port, live_server
    from graphboard.server.settings import Settings

    path = _copy("convnet-stats", "reference", tmp_path / "mine")
    graph = path.name.removesuffix(".vis.db")

    def last_line(port: int) -> str:
        run = subprocess.run(
            [*GRAPHBOARD_COMMAND, "verdict", str(path)],
            capture_output=True,
            text=True,
            env={**os.environ, "GRAPHBOARD_PORT": str(port)},
            check=False,
        )
        assert run.returncode == 1, run.stderr
        return shown_command(run.stdout.splitlines()[-1])

    def url(port: int) -> str:
        return (
            f"http://127.0.0.1:{port}/?graph={graph}&step=0&rank=0&node=Functional.gelu.0.forward"
        )

    port = free_port()
    assert last_line(port) == view_line(path.parent, url(port), prefix="")
    other = tmp_path / "other"
    other.mkdir()
    (other / path.name).write_bytes(path.read_bytes() + b"\0" * 512)  # same name, not this file
    for folder, serves in ((other, False), (path.parent, True)):
        settings = Settings(data_dir=folder, state_dir=tmp_path / f"state-{folder.name}")
        with live_server(settings) as base:
            port = int(base.rsplit(":", 1)[1])
            expected = (
                f"  open      {url(port)}"
                if serves
                else view_line(path.parent, url(port), prefix="")
            )
            assert last_line(port) == expected
