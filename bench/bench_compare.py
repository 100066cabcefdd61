"""Compare benchmark: graph_build -gp vs msprobe graph_visualize -gp, side by side.

python bench/bench_compare.py          # resnet step1 vs step0, 256-layer transformer pair
python bench/bench_compare.py --big    # plus a 1,000,000-record-per-side pair
python bench/bench_compare.py --record # also write bench/results/compare.md
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
    synthetic,
    table,
)


def compare_row(case: str, target: Path, golden: Path, runs: int, with_msprobe: bool) -> Row:
    _, records = count_records(target)
    flags = ["-tp", str(target), "-gp", str(golden)]
    ours = repeat(lambda out: [*GRAPH_BUILD, *flags, "-o", str(out), "-q"], runs)
    msprobe = msprobe_binary() if with_msprobe else None
    theirs = (
        repeat(lambda out: [msprobe, "graph_visualize", *flags, "-o", str(out)], runs)
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
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--msprobe-big", action="store_true")
    parser.add_argument("--no-msprobe", action="store_true")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    with_msprobe = not args.no_msprobe
    resnet = SHARED / "fixtures" / "msprobe-resnet50-gpu"
    golden = synthetic("layers256-golden", "--layers", "256") / "step0" / "rank0"
    target = (
        synthetic("layers256-target", "--layers", "256", "--variant", "target") / "step0" / "rank0"
    )
    rows = [
        compare_row(
            "resnet50 step1 vs step0", resnet / "step1", resnet / "step0", args.runs, with_msprobe
        ),
        compare_row("transformer 256 layers per side", target, golden, args.runs, with_msprobe),
    ]
    if args.big:
        big_golden = synthetic("records1m-golden", "--records", "1000000") / "step0" / "rank0"
        big_target = (
            synthetic("records1m-target", "--records", "1000000", "--variant", "target")
            / "step0"
            / "rank0"
        )
        rows.append(
            compare_row(
                "transformer, 1,000,000 records per side",
                big_target,
                big_golden,
                1,
                with_msprobe and args.msprobe_big,
            )
        )
    text = table("graph_build -gp (compare mode)", rows)
    print("\n" + text)
    if args.record:
        record("compare", text)


if __name__ == "__main__":
    main()
