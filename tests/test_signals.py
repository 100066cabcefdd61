"""graph_build stopped by a signal mid-build, as a user, a timeout or a service manager stops
it: exit 128 + the signal, the output folder as it was, and no child left running."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dumpmaker import USER_FILE, assert_nothing_written, output_folder
from stopping_support import (
    CHILDREN_GONE_SECONDS,
    assert_all_gone,
    default_stop_signals,
    descendants,
    synthetic_dump,
    tagged,
    wait_for,
)
from test_cli import COMMAND, graph_build

STOP_SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synthetic")
    synthetic_dump(root / "golden", "golden")
    synthetic_dump(root / "target", "target")
    synthetic_dump(root / "ranks", "target", ranks=2, layers=LAYERS_A_RANK)
    return root


LAYERS_A_RANK = 150  # two ranks, each built by a pool worker


def _temp_files(out: Path) -> list[Path]:
    return [entry for entry in out.iterdir() if entry.name != USER_FILE]


def _stop_mid_build(
    arguments: list[str | Path], out: Path, signum: int, written: int = 0, pool: bool = False
) -> subprocess.CompletedProcess[str]:
    """Start graph_build, wait until its temporary file holds more than ``written`` bytes,
    send ``signum``; the run, once ended, with every process it had started gone (``pool``:
    a build of several ranks, whose worker processes must be running when the signal comes).

    Its output goes to files, not pipes: reading a pipe to its end would wait for every
    child holding it, and so hide children that outlive the build."""
    output, errors = out.parent / "stdout", out.parent / "stderr"
    with output.open("w") as stdout_file, errors.open("w") as stderr_file:
        process = subprocess.Popen(
            [*COMMAND, *map(str, arguments)],
            stdout=stdout_file,
            stderr=stderr_file,
            preexec_fn=default_stop_signals,
        )
    try:
        wait_for(
            lambda: (
                any(path.stat().st_size > written for path in _temp_files(out))
                or process.poll() is not None
            ),
            60,
            "the build's temporary file",
        )
        assert process.poll() is None, "the build ended before it could be stopped"
        children = descendants(process.pid)
        if pool:
            assert children, "the build runs no worker: nothing would test their end"
        process.send_signal(signum)
        process.wait(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert_all_gone(children)
    return subprocess.CompletedProcess(
        process.args, process.returncode, output.read_text(), errors.read_text()
    )


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda signum: signal.Signals(signum).name)
def test_a_compare_stopped_by_a_signal_cleans_up_like_ctrl_c(
    dumps: Path, tmp_path: Path, signum: int
) -> None:
    out = output_folder(tmp_path)
    run = _stop_mid_build(
        ["-tp", dumps / "target", "-gp", dumps / "golden", "-o", out, "-q"], out, signum
    )
    assert run.returncode == 128 + signum, run.stderr
    assert run.stderr.splitlines()[-1] == (
        f"graph_build: interrupted ({signal.Signals(signum).name})"
    )
    assert run.stdout == ""
    assert_nothing_written(out)


def test_a_compare_stopped_while_its_rows_are_written(dumps: Path, tmp_path: Path) -> None:
    """Later: the writing child holds megabytes of the part file and more arrive."""
    out = output_folder(tmp_path)
    run = _stop_mid_build(
        ["-tp", dumps / "target", "-gp", dumps / "golden", "-o", out, "-q"],
        out,
        signal.SIGTERM,
        written=4 * 1024 * 1024,
    )
    assert run.returncode == 128 + signal.SIGTERM, run.stderr
    assert_nothing_written(out)


def test_a_multi_rank_build_stopped_by_sigterm_stops_its_workers(
    dumps: Path, tmp_path: Path
) -> None:
    out = output_folder(tmp_path)
    run = _stop_mid_build(
        ["-tp", dumps / "ranks", "-o", out, "-q", "--workers", "2"], out, signal.SIGTERM, pool=True
    )
    assert run.returncode == 128 + signal.SIGTERM, run.stderr
    assert_nothing_written(out)


def test_a_build_whose_parent_is_killed_takes_its_children_along(
    dumps: Path, tmp_path: Path
) -> None:
    """SIGKILL allows no cleanup, but a pool worker must not run on for seconds (it reads
    its dump without looking at the pipe that would tell it)."""
    out = output_folder(tmp_path)
    run = _stop_mid_build(
        ["-tp", dumps / "ranks", "-o", out, "-q", "--workers", "2"],
        out,
        signal.SIGKILL,
        pool=True,
    )
    assert run.returncode == -signal.SIGKILL


def test_a_signal_ignored_by_the_caller_stays_ignored(dumps: Path, tmp_path: Path) -> None:
    """``nohup graph_build ...``: a hang-up must not stop it."""
    out = output_folder(tmp_path)
    arguments = ["-tp", dumps / "ranks" / "step0" / "rank0", "-o", out, "-q"]
    process = subprocess.Popen(
        [*COMMAND, *map(str, arguments)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    wait_for(lambda: bool(_temp_files(out)) or process.poll() is not None, 60, "a temp file")
    process.send_signal(signal.SIGHUP)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert Path(stdout.strip()).is_file()


STOP_SECONDS = 5.0  # what the issue allows a stopped compare


# Issue 30: 20 tries. It failed 1 run in 4 on a loaded machine until the cause was found: a
# stop that came while the part's indexes were built could segfault (exit -11, a part file
# left) or wait seconds for them (store/compiled_sink.py, tests/store/test_sink.py). Since
# the fix, 140 tries in 7 runs (two of them side by side) all stopped in time; about a minute.
TRIES = 20


def test_sigterm_at_random_moments_stops_a_compare_within_5_seconds(
    dumps: Path, tmp_path: Path
) -> None:
    """Issue 30, point 0: SIGTERM at a random moment of a compare (its golden side read
    aside in a pool process), TRIES times: each run ends within 5 s with 143 (or, before
    its handlers are in place, by the signal itself), leaves only the user's file in the
    output folder, no process of its own running (found by an environment tag, so orphans
    count too), and no leaked semaphore reported."""
    arguments = ["-tp", dumps / "target", "-gp", dumps / "golden", "-q", "--workers", "2"]
    (tmp_path / "whole").mkdir()
    whole = output_folder(tmp_path / "whole")
    started = time.monotonic()
    finished = graph_build(*arguments, "-o", whole)
    assert finished.returncode == 0, finished.stderr
    span = time.monotonic() - started  # the moments are drawn over a whole run
    seed = random.randrange(1 << 30)
    moments = random.Random(seed).sample(range(int(span * 1000)), TRIES)
    failures = []
    for index, moment in enumerate(moments):
        try_dir = tmp_path / f"try{index}"
        try_dir.mkdir()
        out = output_folder(try_dir)
        tag = f"{os.getpid()}-{seed}-{index}"
        with (try_dir / "stderr").open("w") as errors:
            process = subprocess.Popen(
                [*COMMAND, *map(str, arguments), "-o", str(out)],
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env={**os.environ, "GRAPHBOARD_TEST_TAG": tag},
                preexec_fn=default_stop_signals,
            )
        time.sleep(moment / 1000)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            failures.append(f"try {index} at {moment} ms: still running {STOP_SECONDS} s later")
        try:
            wait_for(lambda tag=tag: not tagged(tag), CHILDREN_GONE_SECONDS, "its processes to end")
        except AssertionError:
            failures.append(f"try {index} at {moment} ms: processes left {tagged(tag)}")
        stderr = (try_dir / "stderr").read_text()
        if process.returncode not in (128 + signal.SIGTERM, -signal.SIGTERM, 0):
            failures.append(f"try {index} at {moment} ms: exit {process.returncode}: {stderr}")
        if "leaked" in stderr or "Traceback" in stderr:
            failures.append(f"try {index} at {moment} ms: {stderr}")
        left = sorted(entry.name for entry in out.iterdir())
        if process.returncode != 0 and left != [USER_FILE]:
            failures.append(f"try {index} at {moment} ms: left {left}")
    assert not failures, f"seed {seed}, a whole run {span:.1f} s:\n" + "\n".join(failures)


if sys.platform != "linux":  # /proc, and the signals' behaviour, are Linux's here
    pytestmark = pytest.mark.skip(reason="Linux only")
