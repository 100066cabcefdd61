"""Merged-build benchmark: graph_build --rank_size/--tp/--pp vs msprobe graph_visualize with
the same flags, on real Megatron-style dumps (tests/parallel/megatron_gpt.py under msprobe's
torchrun, cached under bench/data/merge-<layout>/).

python bench/bench_merge.py              # tp2, pp2, tp2pp2, dp2tp2; 3 runs each, alternated per case
python bench/bench_merge.py --record     # also write bench/results/merge.md
python bench/bench_merge.py --only pp2vpp2 tp2pp2vpp2 --runs 1 --record  # bench/results/merge-vpp.md
python bench/bench_merge.py --only tp2-l64 tp2pp2-l64 --runs 1 --record   # 64 layers: merge-l64.md
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness import DATA, REPO, msprobe_binary, record, table, timed_row, versus_msprobe_arguments

SCRIPT = REPO / "tests" / "parallel" / "megatron_gpt.py"
LAYOUTS = {  # name: (tp, pp, ranks)
    "tp2": (2, 1, 2),
    "pp2": (1, 2, 2),
    "tp2pp2": (2, 2, 4),
    "dp2tp2": (2, 1, 4),
    "pp2vpp2": (1, 2, 2),
    "tp2pp2vpp2": (2, 2, 4),
    "tp2-l64": (2, 1, 2),  # the same model with 64 layers: ~10x the records of tp2
    "tp2pp2-l64": (2, 2, 4),
}
LAYERS = {"tp2-l64": 64, "tp2pp2-l64": 64}  # --layers; the script's 4 for the others
VPP = {"pp2vpp2": 2, "tp2pp2vpp2": 2}  # model chunks a rank (--vpp); 1 for the others
DEFAULT = ("tp2", "pp2", "tp2pp2", "dp2tp2")


def vpp_flags(name: str) -> list[str]:
    return ["--vpp", str(VPP[name])] if name in VPP else []


def dump(name: str) -> Path:
    """The layout's dump, made once with msprobe's torchrun and dumper."""
    tp, pp, ranks = LAYOUTS[name]
    folder = DATA / f"merge-{name}"
    root = folder / "dump"
    if (root / "step0" / f"rank{ranks - 1}" / "dump.json").exists():
        return root
    msprobe = msprobe_binary()
    if msprobe is None:
        raise SystemExit(
            "msprobe not found: set GRAPHBOARD_MSPROBE_BIN (its torchrun makes the dumps)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    torchrun = Path(msprobe).with_name("torchrun")
    subprocess.run(
        [str(Path(msprobe).with_name("python")), str(torchrun), "--standalone",
         f"--nproc-per-node={ranks}", str(SCRIPT), "--out", str(root),
         "--tp", str(tp), "--pp", str(pp), *vpp_flags(name),
         *(["--layers", str(LAYERS[name])] if name in LAYERS else [])],
        check=True, cwd=folder, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    return root


def main() -> None:
    parser = versus_msprobe_arguments(__doc__)
    parser.add_argument("--only", nargs="+", choices=sorted(LAYOUTS), help="these layouts")
    args = parser.parse_args()
    rows = []
    for name in args.only or DEFAULT:
        tp, pp, ranks = LAYOUTS[name]
        flags = ["--rank_size", str(ranks), "--tp", str(tp), "--pp", str(pp), *vpp_flags(name)]
        rows.append(
            timed_row(
                f"{name} (mix, {ranks} ranks)", dump(name), args.runs, not args.no_msprobe, flags
            )
        )
    text = table(
        "Merged builds: graph_build vs msprobe graph_visualize (wall, whole command)", rows
    )
    print(text)
    if args.record:
        chosen = args.only or []
        if chosen and all(name in VPP for name in chosen):
            record("merge-vpp", text)
        elif chosen and all(name in LAYERS for name in chosen):
            record("merge-l64", text)
        else:
            record("merge", text)


if __name__ == "__main__":
    main()
