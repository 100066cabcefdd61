"""Compare benchmark: graph_build -gp vs msprobe graph_visualize -gp, side by side.

python bench/bench_compare.py          # resnet step1 vs step0, 256-layer transformer pair
python bench/bench_compare.py --big    # plus a 1,000,000-record-per-side pair
python bench/bench_compare.py --record # also write bench/results/compare.md
"""

from __future__ import annotations

from harness import SHARED, record, synthetic, table, timed_row, versus_msprobe_arguments


def main() -> None:
    args = versus_msprobe_arguments(__doc__).parse_args()
    with_msprobe = not args.no_msprobe
    resnet = SHARED / "fixtures" / "msprobe-resnet50-gpu"
    golden = synthetic("layers256-golden", "--layers", "256") / "step0" / "rank0"
    target = (
        synthetic("layers256-target", "--layers", "256", "--variant", "target") / "step0" / "rank0"
    )
    rows = [
        timed_row(
            "resnet50 step1 vs step0",
            resnet / "step1",
            args.runs,
            with_msprobe,
            ("-gp", str(resnet / "step0")),
        ),
        timed_row(
            "transformer 256 layers per side",
            target,
            args.runs,
            with_msprobe,
            ("-gp", str(golden)),
        ),
    ]
    if args.big:
        big_golden = synthetic("records1m-golden", "--records", "1000000") / "step0" / "rank0"
        big_target = (
            synthetic("records1m-target", "--records", "1000000", "--variant", "target")
            / "step0"
            / "rank0"
        )
        rows.append(
            timed_row(
                "transformer, 1,000,000 records per side",
                big_target,
                1,
                with_msprobe and args.msprobe_big,
                ("-gp", str(big_golden)),
            )
        )
    text = table("graph_build -gp (compare mode)", rows)
    print("\n" + text)
    if args.record:
        record("compare", text)


if __name__ == "__main__":
    main()
