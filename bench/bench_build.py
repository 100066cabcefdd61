"""Build benchmark: graph_build vs msprobe graph_visualize on real and synthetic dumps.

python bench/bench_build.py            # fixtures + a 256-layer transformer (27k records)
python bench/bench_build.py --big      # plus 1,000,000 records (msprobe skipped there
                                       # unless --msprobe-big: it takes many minutes)
python bench/bench_build.py --record   # also write bench/results/build.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import (
    GRAPH_BUILD,
    SHARED,
    Row,
    count_records,
    msprobe_binary,
    record,
    repeat,
    steps_only,
    synthetic,
    table,
)


def build_row(
    case: str, dump: Path, runs: int, with_msprobe: bool, extra: tuple[str, ...] = ()
) -> Row:
    _, records = count_records(dump)
    ours = repeat(lambda out: [*GRAPH_BUILD, "-tp", str(dump), "-o", str(out), "-q", *extra], runs)
    msprobe = msprobe_binary() if with_msprobe else None
    theirs = (
        repeat(
            lambda out: [msprobe, "graph_visualize", "-tp", str(dump), "-o", str(out), *extra], runs
        )
        if msprobe
        else None
    )
    print(
        f"{case}: {ours[0].seconds:.2f}s"
        + (f" (msprobe {theirs[0].seconds:.2f}s)" if theirs else ""),
        flush=True,
    )
    return Row(case, records, ours, theirs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--big", action="store_true", help="add the 1,000,000-record dump")
    parser.add_argument(
        "--msprobe-big", action="store_true", help="run msprobe on the big dump too"
    )
    parser.add_argument("--no-msprobe", action="store_true")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    with_msprobe = not args.no_msprobe
    rows = [
        build_row(
            "msprobe-resnet50-gpu (2 steps)",
            steps_only(SHARED / "fixtures" / "msprobe-resnet50-gpu", "resnet50"),
            args.runs,
            with_msprobe,
        ),
        build_row(
            "convnet-ddp2 target (2 steps x 2 ranks)",
            SHARED / "fixtures" / "convnet-ddp2" / "target",
            args.runs,
            with_msprobe,
        ),
        build_row(
            "transformer 256 layers (33k construct)",
            synthetic("layers256-golden", "--layers", "256") / "step0" / "rank0",
            args.runs,
            with_msprobe,
        ),
        build_row(
            "transformer 256 layers, -oc",
            synthetic("layers256-golden", "--layers", "256") / "step0" / "rank0",
            args.runs,
            with_msprobe,
            ("-oc",),
        ),
    ]
    if args.big:
        big = synthetic("records1m-golden", "--records", "1000000") / "step0" / "rank0"
        rows.append(
            build_row("transformer, 1,000,000 records", big, 1, with_msprobe and args.msprobe_big)
        )
    text = table("graph_build (build mode)", rows)
    print("\n" + text)
    if args.record:
        record("build", text)


if __name__ == "__main__":
    main()
