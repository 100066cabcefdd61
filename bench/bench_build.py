"""Build benchmark: graph_build vs msprobe graph_visualize on real and synthetic dumps.

python bench/bench_build.py            # fixtures + a 256-layer transformer (27k records)
python bench/bench_build.py --big      # plus 1,000,000 records (msprobe skipped there
                                       # unless --msprobe-big: it takes many minutes)
python bench/bench_build.py --record   # also write bench/results/build.md
"""

from __future__ import annotations

from harness import (
    SHARED,
    record,
    steps_only,
    synthetic,
    table,
    timed_row,
    versus_msprobe_arguments,
)


def main() -> None:
    args = versus_msprobe_arguments(__doc__).parse_args()
    with_msprobe = not args.no_msprobe
    rows = [
        timed_row(
            "msprobe-resnet50-gpu (2 steps)",
            steps_only(SHARED / "fixtures" / "msprobe-resnet50-gpu", "resnet50"),
            args.runs,
            with_msprobe,
        ),
        timed_row(
            "convnet-ddp2 target (2 steps x 2 ranks)",
            SHARED / "fixtures" / "convnet-ddp2" / "target",
            args.runs,
            with_msprobe,
        ),
        timed_row(
            "transformer 256 layers (33k construct)",
            synthetic("layers256-golden", "--layers", "256") / "step0" / "rank0",
            args.runs,
            with_msprobe,
        ),
        timed_row(
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
            timed_row("transformer, 1,000,000 records", big, 1, with_msprobe and args.msprobe_big)
        )
    text = table("graph_build (build mode)", rows)
    print("\n" + text)
    if args.record:
        record("build", text)


if __name__ == "__main__":
    main()
