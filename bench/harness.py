"""Shared pieces of the benchmarks: cached synthetic inputs, timed runs, side-by-side tables.

Each run is a fresh process (start-up included, as a user sees it); peak RSS is the largest
resident set of that process tree, from wait4.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import TextIO

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO / "tests"))  # for ci_support, below

DATA = Path(os.environ.get("GRAPHBOARD_BENCH_DATA", BENCH / "data"))
SHARED = Path(os.environ.get("GRAPHBOARD_SHARED", REPO.parent / "shared"))
GRAPH_BUILD = [sys.executable, "-m", "graphboard.cli"]
GRAPHBOARD = str(Path(sys.executable).with_name("graphboard"))


# The tests' helpers serve the benchmarks too (tests/ci_support): imported on first use, as
# they pull in the server, ~90 MB that every command forked from this process would report
# as its own peak RSS (Linux carries the high-water mark across fork and exec).
def free_port() -> int:
    from ci_support import free_port as find_free_port

    return find_free_port()


def serve_process(data_dir: Path, port: int, **environment: str) -> subprocess.Popen[bytes]:
    from ci_support import serve_process as start

    return start(data_dir, port, **environment)


def msprobe_binary() -> str | None:
    for candidate in (
        os.environ.get("GRAPHBOARD_MSPROBE_BIN"),
        str(REPO / ".venv-msprobe" / "bin" / "msprobe"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return shutil.which("msprobe")


def synthetic(name: str, *args: str) -> Path:
    """A dump from make_synthetic_dump.py, generated once and cached under bench/data/."""
    root = DATA / name
    if not (root / "step0").exists():
        root.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, str(BENCH / "make_synthetic_dump.py"), "--out", str(root), *args],
            check=True,
        )
    return root


def steps_only(fixture: Path, name: str) -> Path:
    """A copy of a fixture's stepN folders alone: msprobe refuses stray files beside them."""
    root = DATA / name
    if not root.exists():
        root.mkdir(parents=True)
        for step in fixture.glob("step*"):
            shutil.copytree(step, root / step.name)
    return root


def count_records(root: Path) -> tuple[int, int]:
    """(construct entries, dump records) over every rank folder.

    Counted in one child process: parsing a million-record dump.json here would raise this
    process's peak RSS, and every benchmarked command forked from it inherits that peak in its
    own ``ru_maxrss`` (Linux carries the high-water mark across fork and exec).
    """
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as child:
        return child.submit(_count_in_this_process, root).result()


def _count_in_this_process(root: Path) -> tuple[int, int]:
    import orjson

    construct = records = 0
    for rank_dir in {path.parent for path in root.rglob("construct.json")}:
        construct += len(orjson.loads((rank_dir / "construct.json").read_bytes()))
        dump = rank_dir / "dump.json"
        if dump.stat().st_size < 2**31:  # orjson's limit
            records += len(orjson.loads(dump.read_bytes()).get("data", {}))
    return construct, records


@dataclass(slots=True)
class Run:
    seconds: float
    peak_rss_mb: float


def precompile(*sources: Path) -> None:
    """Byte-compile the Python under ``sources``, as an installed package is (pip compiles it
    at install): else every timed run of an edited checkout, or one run with
    PYTHONDONTWRITEBYTECODE set, spends its start-up compiling it again."""
    import compileall

    for source in sources:
        compileall.compile_dir(str(source), quiet=1)


_precompiled = False


def timed(
    command: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> Run:
    """One run of ``command`` (with ``env`` added to this process's environment); the
    checkout's own package byte-compiled before the first."""
    global _precompiled
    if not _precompiled:
        precompile(REPO / "backend" / "graphboard")
        _precompiled = True
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **env} if env else None,
    )
    assert process.stderr is not None
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    error = process.stderr.read().decode(errors="replace")
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}):\n{error[-2000:]}")
    return Run(seconds, usage.ru_maxrss / 1024)


def repeat(command_for: object, runs: int) -> list[Run]:
    results = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(dir=DATA) as out:
            results.append(timed(command_for(Path(out))))  # type: ignore[operator]
    return results


@dataclass(slots=True)
class Row:
    case: str
    nodes: int
    ours: list[Run]
    theirs: list[Run] | None

    @property
    def ours_s(self) -> float:
        return statistics.median(run.seconds for run in self.ours)


def timed_row(
    case: str, target: Path, runs: int, with_msprobe: bool, flags: Sequence[str] = ()
) -> Row:
    """graph_build, and msprobe graph_visualize when asked for and installed, on the same
    input: ``-tp target`` and ``flags`` (``-gp golden`` for a compare, ``-oc``...)."""
    _, records = count_records(target)
    given = ["-tp", str(target), *flags]
    ours = repeat(lambda out: [*GRAPH_BUILD, *given, "-o", str(out), "-q"], runs)
    msprobe = msprobe_binary() if with_msprobe else None
    theirs = (
        repeat(lambda out: [msprobe, "graph_visualize", *given, "-o", str(out)], runs)
        if msprobe
        else None
    )
    print(
        f"{case}: {ours[0].seconds:.2f}s"
        + (f" (msprobe {theirs[0].seconds:.2f}s)" if theirs else ""),
        flush=True,
    )
    return Row(case, records, ours, theirs)


def versus_msprobe_arguments(doc: str) -> argparse.ArgumentParser:
    """The options of the benchmarks that time graph_build against msprobe."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--big", action="store_true", help="add the 1,000,000-record case")
    parser.add_argument(
        "--msprobe-big", action="store_true", help="run msprobe on the big case too"
    )
    parser.add_argument("--no-msprobe", action="store_true")
    parser.add_argument("--record", action="store_true")
    return parser


def table(title: str, rows: list[Row]) -> str:
    lines = [
        f"## {title}",
        "",
        "| case | records | graphboard s (median, best) | records/s | peak RSS MB | msprobe s | msprobe RSS MB | speed-up |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ours = row.ours_s
        best = min(run.seconds for run in row.ours)
        rss = max(run.peak_rss_mb for run in row.ours)
        if row.theirs:
            theirs = statistics.median(run.seconds for run in row.theirs)
            their_rss = max(run.peak_rss_mb for run in row.theirs)
            other = f"{theirs:.2f} | {their_rss:.0f} | {theirs / ours:.1f}x"
        else:
            other = "– | – | –"
        lines.append(
            f"| {row.case} | {row.nodes:,} | {ours:.2f}, {best:.2f} | {row.nodes / ours:,.0f} | {rss:.0f} | {other} |"
        )
    return "\n".join(lines)


def record(name: str, text: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M")
    machine = f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at start"
    (BENCH / "results" / f"{name}.md").write_text(f"# {name} ({stamp}, {machine})\n\n{text}\n")


class _Tee(io.TextIOBase):
    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


@contextmanager
def recorded(name: str, enabled: bool) -> Iterator[None]:
    """Print as usual and, when ``enabled``, also keep what was printed as bench/results/<name>.md
    (a fenced block: these benchmarks print free-form lines, not a table)."""
    if not enabled:
        yield
        return
    kept = io.StringIO()
    with redirect_stdout(_Tee(sys.stdout, kept)):
        yield
    record(name, "```\n" + kept.getvalue().strip("\n") + "\n```")
