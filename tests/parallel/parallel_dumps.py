"""Real tensor/pipeline/data-parallel dumps: the layouts, and how one is made.

``make_dump`` trains tests/parallel/megatron_gpt.py one step on gloo with
msprobe's torchrun in one layout and dumps it with msprobe's dumper (statistics, level L0 or
mix). The session fixtures in conftest.py make each on first use.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from msprobe_runner import msprobe_python, run_msprobe_script

SCRIPT = Path(__file__).with_name("megatron_gpt.py")


@dataclass(frozen=True, slots=True)
class Layout:
    """A parallel layout of the model: Megatron's tp, pp, the virtual pipeline's chunks per
    rank (vpp) and the data-parallel count."""

    name: str
    tp: int = 1
    pp: int = 1
    dp: int = 1
    vpp: int = 1
    model_list: bool = False  # the model given to the dumper as a list of chunks (vpp > 1 too)
    sequence_parallel: bool = False
    wrong_layer: int | None = None  # a global layer number whose first MLP weight is off

    @property
    def ranks(self) -> int:
        return self.tp * self.pp * self.dp

    def merge_flags(self) -> list[str]:
        """msprobe graph_visualize's flags that merge this layout (one value each: a build)."""
        flags = ["--rank_size", str(self.ranks), "--tp", str(self.tp), "--pp", str(self.pp)]
        return flags + (["--vpp", str(self.vpp)] if self.vpp > 1 else [])

    def script_arguments(self) -> list[str]:
        arguments = ["--tp", str(self.tp), "--pp", str(self.pp)]
        if self.vpp > 1:
            arguments += ["--vpp", str(self.vpp)]
        if self.model_list:
            arguments.append("--model-list")
        if self.sequence_parallel:
            arguments.append("--sequence-parallel")
        if self.wrong_layer is not None:
            arguments += ["--wrong-layer", str(self.wrong_layer)]
        return arguments


LAYOUTS = {
    layout.name: layout
    for layout in (
        Layout("tp1"),
        Layout("tp2", tp=2),
        Layout("pp2", pp=2),
        Layout("tp2pp2", tp=2, pp=2),
        Layout("sp", tp=2, sequence_parallel=True),
        Layout("dp2tp2", tp=2, dp=2),
        Layout("dp2tp2pp2", tp=2, pp=2, dp=2),  # msprobe's full strategy: 8 ranks
        Layout("tp2-wrong", tp=2, wrong_layer=1),
        Layout("pp2vpp2", pp=2, vpp=2),  # interleaved: two model chunks a rank
        Layout("tp2pp2vpp2", tp=2, pp=2, vpp=2),
        Layout("tp1-listed", model_list=True),  # a golden for pp2vpp2: Module.0.module...
        Layout("pp2-listed", pp=2, model_list=True),
    )
}


@dataclass(frozen=True, slots=True)
class ParallelDump:
    layout: Layout
    level: str
    root: Path  # the dump's root: step0/rank0 ... rankN-1
    seconds: float  # how long torchrun took, for the report (never asserted)


DumpFn = Callable[[str, str], ParallelDump]
ReferenceFn = Callable[..., Path]  # (name, level, *msprobe options)
CompareFn = Callable[[str, str, str], Path]


def compare_flags(target: Layout, golden: Layout) -> list[str]:
    """msprobe graph_visualize's merge flags for a compare: two values each, target first."""
    pairs = (("--rank_size", target.ranks, golden.ranks), ("--tp", target.tp, golden.tp))
    pairs += (("--pp", target.pp, golden.pp),)
    if target.vpp > 1 or golden.vpp > 1:
        pairs += (("--vpp", target.vpp, golden.vpp),)
    return [item for flag, first, second in pairs for item in (flag, str(first), str(second))]


def _torchrun() -> Path:
    torchrun = Path(msprobe_python()).with_name("torchrun")
    if not torchrun.is_file():
        pytest.skip(f"no torchrun beside {msprobe_python()}")
    return torchrun


def make_dump(layout: Layout, level: str, folder: Path) -> ParallelDump:
    """Run the model in ``layout`` under torchrun (msprobe's Python); the dump lands in
    ``folder/dump``. ``--standalone`` picks a free rendezvous port, so concurrent sessions on
    one machine do not collide."""
    started = time.perf_counter()
    run_msprobe_script(
        _torchrun(),
        "--standalone",
        f"--nproc-per-node={layout.ranks}",
        str(SCRIPT),
        "--out",
        str(folder / "dump"),
        "--level",
        level,
        *layout.script_arguments(),
        cwd=folder,
        timeout=300,
    )
    root = folder / "dump"
    ranks = sorted(path.name for path in (root / "step0").iterdir())
    assert ranks == [f"rank{rank}" for rank in range(layout.ranks)], ranks
    return ParallelDump(layout, level, root, time.perf_counter() - started)
