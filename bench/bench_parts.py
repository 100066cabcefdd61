"""What one compiled function saves: a build timed with it and with its Python, alternately.

python bench/bench_parts.py                       # the 27k-record compare and build, every part
python bench/bench_parts.py --parts summary --runs 5

Each run is a fresh ``graph_build`` process; a part is turned off in it by swapping that one
function for its Python before the build starts (the rest stays compiled), so the two columns
differ by that function alone. The runs of every variant alternate, as the machine's speed
drifts; the table gives medians.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
TARGET = BENCH / "data" / "layers256-target"
GOLDEN = BENCH / "data" / "layers256-golden"

# part -> the statements that turn it off, run before graphboard.cli is imported
PARTS = {
    "parse_sections": (
        "import graphboard.dump.records as r; r.parse_record = r.parse_record_in_python"
    ),
    "count_keys": (
        "import graphboard.dump.repeats as r;"
        " r.count_line_starts = r.count_line_starts_in_python;"
        " r.count_keys = r.count_keys_in_python"
    ),
    "pack_params": "import graphboard.graph.builder as b; b._records = None",
    "summary_metrics": (
        "import graphboard.compare.metrics as m; m.summary_metrics = m.summary_metrics_in_python"
    ),
}
RUN = (
    "import sys; {off}; sys.argv = ['graph_build', *sys.argv[1:]];"
    " from graphboard.cli import graph_build_command; graph_build_command()"
)


def _timed(off: str, arguments: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one build, its child processes' CPU included."""
    with tempfile.TemporaryDirectory() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", RUN.format(off=off or "pass"), *arguments, "-o", out],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="*", default=list(PARTS), choices=list(PARTS))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--build", action="store_true", help="the target alone, no golden")
    args = parser.parse_args()
    arguments = ["-tp", str(TARGET)] + ([] if args.build else ["-gp", str(GOLDEN)])
    variants = {"all compiled": "", **{f"{part} in Python": PARTS[part] for part in args.parts}}
    if len(args.parts) > 1:
        variants["all of these in Python"] = "; ".join(PARTS[part] for part in args.parts)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for _ in range(args.runs):
        for name, off in variants.items():
            times[name].append(_timed(off, arguments))
    base_wall = statistics.median(wall for wall, _ in times["all compiled"])
    base_cpu = statistics.median(cpu for _, cpu in times["all compiled"])
    what = "build" if args.build else "compare"
    print(f"| 27k-record {what} | wall s (median) | vs all compiled | CPU s | vs all compiled |")
    print("|---|---|---|---|---|")
    for name, runs in times.items():
        wall = statistics.median(run for run, _ in runs)
        cpu = statistics.median(run for _, run in runs)
        print(
            f"| {name} | {wall:.2f} | {100 * (wall - base_wall) / base_wall:+.1f}% "
            f"| {cpu:.2f} | {100 * (cpu - base_cpu) / base_cpu:+.1f}% |"
        )


if __name__ == "__main__":
    main()
