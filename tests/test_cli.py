"""graph_build as a user runs it: a real subprocess, its exit code, stdout and stderr."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import graphboard
from dumpmaker import (
    assert_nothing_written,
    output_folder,
    tiny_model,
    write_dump_root,
)
from graphboard.serve_address import configured_url

_SCRIPT = Path(sys.executable).with_name("graph_build")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "graphboard.cli"]
_GRAPHBOARD = Path(sys.executable).with_name("graphboard")
GRAPHBOARD_COMMAND = (  # ``python -m graphboard.cli`` is graph_build, not graphboard
    [str(_GRAPHBOARD)]
    if _GRAPHBOARD.exists()
    else [
        sys.executable,
        "-c",
        "from graphboard.cli import graphboard_main; raise SystemExit(graphboard_main())",
    ]
)


def _run(
    command: list[str], args: tuple[str | Path, ...], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def graph_build(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return _run(COMMAND, args, cwd)


def graphboard_command(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``graphboard ARGS...`` (a subcommand and its options) as a user runs it."""
    return _run(GRAPHBOARD_COMMAND, args)


def _error_line(run: subprocess.CompletedProcess[str]) -> str:
    """The one line a failure prints (after any progress lines)."""
    assert run.returncode == 1, run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("graph_build: error:")]
    assert len(errors) == 1, run.stderr
    assert errors[0] == run.stderr.splitlines()[-1]
    assert run.stdout == ""
    return errors[0].removeprefix("graph_build: error: ")


@pytest.fixture
def rank(tmp_path: Path) -> Path:
    return tiny_model().write(tmp_path / "dump" / "step0" / "rank0")


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return output_folder(tmp_path)


def test_a_build_exits_0_and_prints_the_output_path(rank: Path, out: Path) -> None:
    run = graph_build("-tp", rank, "-o", out)
    assert run.returncode == 0, run.stderr
    path = Path(run.stdout.strip())
    assert run.stdout == f"{path}\n"
    assert path.parent == out and re.fullmatch(r"build_\d{14}\.vis\.db", path.name)
    assert path.is_file()
    assert f"graph_build: wrote {path} (build of 1 step(s) x 1 rank(s)" in run.stderr


def test_long_option_names_and_overflow_check_are_accepted(tmp_path: Path, out: Path) -> None:
    target = tiny_model().write(tmp_path / "target" / "rank0")
    golden = tiny_model(loss=2.0).write(tmp_path / "golden" / "rank0")
    run = graph_build(
        "--target_path", target, "--golden_path", golden, "--output_path", out, "-oc", "-q"
    )
    assert run.returncode == 0, run.stderr
    path = Path(run.stdout.strip())
    assert path.name.startswith("compare_")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT graph_type, overflow_check FROM tb_config").fetchone() == (
            "compare",
            1,
        )
        (flags,) = conn.execute("SELECT value FROM gb_meta WHERE key = 'flags'").fetchone()
    assert json.loads(flags)["overflow_check"] is True


def test_relative_paths_work_from_the_current_folder(rank: Path, tmp_path: Path) -> None:
    run = graph_build("-tp", "dump/step0/rank0", "-o", "relative-out", "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / run.stdout.strip()).is_file()
    assert run.stdout.startswith("relative-out/build_")


def test_progress_bar_on_stderr_for_multi_rank_multi_step_work(tmp_path: Path, out: Path) -> None:
    root = write_dump_root(
        tmp_path / "dump", {(step, rank): tiny_model() for step in (0, 1) for rank in (0, 1)}
    )
    run = graph_build("-tp", root, "-o", out, "--workers", "1")
    assert run.returncode == 0, run.stderr
    bar = [line for line in run.stderr.splitlines() if line.startswith("[graph_build] ")]
    assert re.fullmatch(r"\[graph_build\] -{30}\s+0% .* 4 graph\(s\) to build", bar[0])
    done = [re.search(r"(\d)/4 step (\d) rank (\d)$", line) for line in bar]
    assert [match.groups() for match in done if match] == [
        ("1", "0", "0"),
        ("2", "0", "1"),
        ("3", "1", "0"),
        ("4", "1", "1"),
    ]
    assert re.search(r"#{30} 100% .* wrote ", bar[-1])
    percents = [int(re.search(r"(\d+)%", line).group(1)) for line in bar]  # type: ignore[union-attr]
    assert percents == sorted(percents)
    assert run.stdout == f"{run.stdout.strip()}\n"  # stdout: only the path


def test_quiet_turns_the_progress_bar_off(tmp_path: Path, out: Path) -> None:
    root = write_dump_root(tmp_path / "dump", {(0, rank): tiny_model() for rank in (0, 1)})
    run = graph_build("-tp", root, "-o", out, "--workers", "1", "--quiet")
    assert run.returncode == 0
    assert run.stderr == ""
    assert Path(run.stdout.strip()).is_file()


def test_progress_log_prints_msprobe_progress_lines_on_stdout(rank: Path, out: Path) -> None:
    run = graph_build("-tp", rank, "-o", out, "-progress_log")
    assert run.returncode == 0, run.stderr
    *progress, path = run.stdout.splitlines()
    assert Path(path).is_file()
    records = [json.loads(line.removeprefix("PROGRESS: ")) for line in progress]
    assert all(line.startswith("PROGRESS: ") for line in progress)
    assert records[-1] == {"current_progress": 100, "process_running": False, "error_msg": []}
    assert all(record["process_running"] for record in records[:-1])


def test_warnings_about_stray_entries_go_to_stderr(rank: Path, out: Path) -> None:
    (rank.parent / "notes.txt").write_text("")
    run = graph_build("-tp", rank.parent, "-o", out)
    assert run.returncode == 0
    assert Path(run.stdout.strip()).is_file()
    assert f"graph_build: warning: {rank.parent / 'notes.txt'}: not a rankN folder, skipped" in (
        run.stderr.splitlines()
    )


@pytest.mark.parametrize("quiet", [False, True])
def test_a_bad_dump_fails_with_one_line_naming_the_file(rank: Path, out: Path, quiet: bool) -> None:
    (rank / "construct.json").write_text('{"Module.a.A.forward.0": ')
    run = graph_build("-tp", rank, "-o", out, *(["-q"] if quiet else []))
    message = _error_line(run)
    assert message == (
        f"{rank / 'construct.json'}: the JSON document ends early at line 1, column 26"
        " (truncated file?)"
    )
    if quiet:
        assert run.stderr.count("\n") == 1
    assert_nothing_written(out)


def test_a_missing_path_fails_with_one_line(tmp_path: Path, out: Path) -> None:
    message = _error_line(graph_build("-tp", tmp_path / "missing", "-o", out))
    assert message == f"{tmp_path / 'missing'}: no such file or folder"
    assert_nothing_written(out)


def test_rank_size_needs_a_folder_of_ranks(rank: Path, out: Path) -> None:
    run = graph_build("-tp", rank, "-o", out, "--rank_size", "8", "--tp", "8", "--pp", "1")
    assert _error_line(run) == (
        f"{rank}: --rank_size 8 merges the rank folders of a dump, but this is one rank's"
        " folder; give the target dump's root or step folder"
    )
    assert_nothing_written(out)


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        (["-lm"], "-lm needs a golden dump (-gp)"),
        (["-fm"], "-fm needs a golden dump (-gp)"),
    ],
)
def test_options_that_need_something_else_fail_with_one_line(
    rank: Path, out: Path, options: list[str], reason: str
) -> None:
    assert _error_line(graph_build("-tp", rank, "-o", out, *options)).startswith(reason)
    assert_nothing_written(out)


def test_target_and_golden_at_different_levels_fail_with_one_line(
    rank: Path, tmp_path: Path, out: Path
) -> None:
    message = _error_line(graph_build("-tp", rank, "-gp", tmp_path / "dump", "-o", out))
    assert "is a rank folder but the golden" in message and "is a steps folder" in message
    assert_nothing_written(out)


def test_a_missing_required_option_is_a_usage_error(rank: Path) -> None:
    run = graph_build("-tp", rank)
    assert run.returncode == 2
    assert "the following arguments are required: -o/--output_path" in run.stderr


def test_version() -> None:
    run = graph_build("--version")
    assert run.returncode == 0 and run.stdout.strip() == f"graphboard {graphboard.__version__}"


def _compare_dumps(tmp_path: Path) -> tuple[Path, Path]:
    """A target whose last API (Torch.sum) returns 5 where the golden's returns 1."""
    target = tiny_model(loss=5.0).write(tmp_path / "target" / "step0" / "rank0")
    golden = tiny_model(loss=1.0).write(tmp_path / "golden" / "step0" / "rank0")
    return target, golden


def test_a_compare_ends_with_what_it_found(tmp_path: Path, out: Path) -> None:
    """The demo's summary lines on stderr, after the "wrote" line; stdout stays the path. Under
    the default rules, graphboard's dtype-aware: the output 5 against 1 far beyond its band."""
    target, golden = _compare_dumps(tmp_path)
    run = graph_build("-tp", target, "-gp", golden, "-o", out)
    assert run.returncode == 0, run.stderr
    path = Path(run.stdout.strip())
    assert run.stdout == f"{path}\n"
    graph = path.name.removesuffix(".vis.db")
    lines = run.stderr.splitlines()
    wrote = next(i for i, line in enumerate(lines) if line.startswith("graph_build: wrote "))
    assert [shown_command(line) for line in lines[wrote + 1 :]] == [
        f"graph_build:  graph     {graph} (compare, summary mode, steps [0], ranks [0])",
        "graph_build:  rules     dtype-aware",
        "graph_build:  nodes     8 pass, 0 warning, 1 error, 0 unmatched",
        "graph_build:  overflow  0 medium, 0 high, 0 critical",
        "graph_build:  first error: Torch.sum.0.forward (target step 0 rank 0); worst output.0 "
        "d = 1.96, band 5.01e-07: error: d 1.96 beyond the band 5.01e-07 its inputs and own "
        "rounding explain",
        view_line(
            out,
            f"{configured_url()}/?graph={graph}&step=0&rank=0&node=Torch.sum.0.forward"
            "&rules=dtype-aware",
        ),
    ]


def view_line(folder: Path, url: str, prefix: str = "graph_build:") -> str:
    """The summary's last line when no server serves the file: how to start one (the command
    as PATH finds it or by its path, which a test cannot know), then the URL."""
    return (
        f"{prefix}  view      no server was found serving this file: start one with `"
        f"{COMMAND_AS_SHOWN} serve --data-dir {folder}`, then open {url}"
    )


COMMAND_AS_SHOWN = "<graphboard>"


def shown_command(line: str) -> str:
    """``line`` with the graphboard command of a view line as COMMAND_AS_SHOWN."""
    return re.sub(r"start one with `\S*graphboard ", f"start one with `{COMMAND_AS_SHOWN} ", line)


def test_a_build_or_a_quiet_compare_prints_no_findings(
    rank: Path, tmp_path: Path, out: Path
) -> None:
    built = graph_build("-tp", rank, "-o", out)
    assert built.returncode == 0 and "nodes " not in built.stderr
    target, golden = _compare_dumps(tmp_path)
    quiet = graph_build("-tp", target, "-gp", golden, "-o", out, "-q")
    assert quiet.returncode == 0 and quiet.stderr == ""
