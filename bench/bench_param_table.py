"""What gb_params (each node's parameters typed, store/param_table.py) costs a build: the 27k
compare by graph_build with the table and without it (its write turned off in the child),
alternated round by round (the machine's speed drifts), wall and CPU medians (the CPU time,
user + system, of the command: steadier than the wall on a shared machine), file sizes.

    .venv/bin/python bench/bench_param_table.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
_RUN = "from graphboard.cli import graph_build_command; graph_build_command()"
_WITHOUT = "import graphboard.store.param_table as t; t.write = lambda conn, graphs: None; " + _RUN
VARIANTS = {"with gb_params": _RUN, "without gb_params": _WITHOUT}


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(code: str, out: Path) -> tuple[float, float, int]:
    shutil.rmtree(out, ignore_errors=True)
    cpu = _cpu()
    args = ["-tp", str(DATA / "layers256-target"), "-gp", str(DATA / "layers256-golden")]
    started = time.perf_counter()
    command = [sys.executable, "-c", code, *args, "-o", str(out), "-q"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    return seconds, _cpu() - cpu, sum(path.stat().st_size for path in out.glob("*.vis.db"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    walls: dict[str, list[float]] = {label: [] for label in VARIANTS}
    cpus: dict[str, list[float]] = {label: [] for label in VARIANTS}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(rounds):
            labels = list(VARIANTS) if round_ % 2 == 0 else list(reversed(VARIANTS))
            for label in labels:
                wall, cpu, sizes[label] = _run(VARIANTS[label], Path(scratch) / "out")
                walls[label].append(wall)
                cpus[label].append(cpu)
    print(
        f"| 27k compare, {rounds} runs each, alternated | wall median (s) | CPU median (s) "
        "| CPU runs (s) | file (MB) |"
    )
    print("|---|---|---|---|---|")
    for label in VARIANTS:
        shown = " ".join(f"{run:.2f}" for run in cpus[label])
        print(
            f"| {label} | {statistics.median(walls[label]):.2f} | "
            f"{statistics.median(cpus[label]):.2f} | {shown} | {sizes[label] / 1e6:.1f} |"
        )
    for name, measured in (("wall", walls), ("CPU", cpus)):
        with_, without = (statistics.median(measured[label]) for label in VARIANTS)
        print(f"gb_params costs {100 * (with_ - without) / without:+.1f}% of the {name} time")


if __name__ == "__main__":
    main()
