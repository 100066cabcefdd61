"""The three-way compare's cost (issue 29): the 27k-record compare at a base commit, here
without -nr and here with -nr, alternating in one run, and msprobe's graph_visualize beside.

python bench/bench_noise_reference.py --base /path/to/base/backend   # 5 rounds of each
python bench/bench_noise_reference.py --base DIR --record            # write bench/results/noise_reference_cost.md

``--base``: a ``backend`` folder of the commit to compare against (``git archive <commit>
backend | tar -x -C DIR``, with the compiled accelerators copied beside its sources), so a
compare without -nr can be set against the same compare before this change. Each run is a
``graph_build`` process (``--workers 1``) with PYTHONPATH at one backend; rounds alternate the
order, so a drift of this VM's speed reaches every variant alike. The -nr variant uses the
target dump as its own reference: the cost (read, match, measure, store) is the same as a
distinct reference's, and its verdicts are not the point here.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from harness import DATA, GRAPH_BUILD, REPO, msprobe_binary, precompile, synthetic, timed

RESULTS = Path(__file__).with_name("results") / "noise_reference_cost.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the base commit's backend/")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    golden = synthetic("layers256-golden", "--layers", "256") / "step0" / "rank0"
    target = (
        synthetic("layers256-target", "--layers", "256", "--variant", "target") / "step0" / "rank0"
    )
    here = str(REPO / "backend")
    compare = ["-tp", str(target), "-gp", str(golden), "--workers", "1", "-q"]
    variants = {
        "base commit, no -nr": (str(args.base), compare),
        "this branch, no -nr": (here, compare),
        "this branch, -nr": (here, [*compare, "-nr", str(target)]),
    }
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    precompile(REPO / "backend" / "graphboard", args.base / "graphboard")
    for round_number in range(args.runs + 1):  # round 0 warms the page cache
        names = list(variants)
        if round_number % 2:
            names.reverse()
        for name in names:
            backend, flags = variants[name]
            with tempfile.TemporaryDirectory(dir=DATA) as out:
                wall, used = _run([*GRAPH_BUILD, *flags, "-o", out], backend)
            if round_number:
                seconds[name].append(wall)
                cpu[name].append(used)
    base = statistics.median(seconds["base commit, no -nr"])
    lines = [
        "# The three-way compare's cost (bench/bench_noise_reference.py)",
        "",
        f"27k-record compare (bench/data/layers256-target vs -golden), {args.runs} alternating "
        "rounds, a graph_build process each (--workers 1), seconds:",
        "",
        "| variant | median s | min s | median / base | CPU s (user+sys), median | CPU / base |",
        "|---|---|---|---|---|---|",
    ]
    base_cpu = statistics.median(cpu["base commit, no -nr"])
    for name, found in seconds.items():
        median, used = statistics.median(found), statistics.median(cpu[name])
        lines.append(
            f"| {name} | {median:.3f} | {min(found):.3f} | {median / base:.3f} | {used:.3f} | "
            f"{used / base_cpu:.3f} |"
        )
    lines += [
        "",
        "CPU time is the graph_build process's own (getrusage of the waited child): on a VM",
        "shared with other work it moves far less than the wall time.",
    ]
    binary = msprobe_binary()
    if binary is not None:
        with tempfile.TemporaryDirectory(dir=DATA) as out:
            run = timed(
                [binary, "graph_visualize", "-tp", str(target), "-gp", str(golden), "-o", out]
            )
        lines += ["", f"msprobe graph_visualize (no three-way compare), once: {run.seconds:.3f} s"]
    print("\n".join(lines))
    if args.record:
        RESULTS.write_text("\n".join(lines) + "\n")


def _run(command: list[str], backend: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``command`` with PYTHONPATH at ``backend``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        command, check=True, env={**os.environ, "PYTHONPATH": backend}, stdout=subprocess.DEVNULL
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, used


if __name__ == "__main__":
    main()
