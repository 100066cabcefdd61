"""The parallel-merge flags of ``graph_build`` (msprobe's ``--rank_size --tp --pp --vpp
--order``), one value each for a build and two (target golden) for a compare, checked as
msprobe checks them before any work starts.

Beyond msprobe: ``--cp`` and ``--ep`` say a layout is context- or expert-parallel, which is
refused naming what is supported (msprobe assumes cp = ep = 1 without asking); a single
``--vpp`` or ``--order`` value in a compare is refused rather than silently read as 1 / the
default for both sides, as msprobe does; an order must name each of tp, cp, ep, dp, pp once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from graphboard.errors import GraphboardError

DEFAULT_ORDER = "tp-cp-ep-dp-pp"  # Megatron's default rank order, tp the fastest-varying
ORDER_TOKENS = frozenset(DEFAULT_ORDER.split("-"))
SUPPORTED = "tensor (--tp), pipeline (--pp, --vpp) and data parallel layouts"
_ORDER = re.compile(r"^[a-z\-]+$")


class ParallelFlagsError(GraphboardError):
    """Parallel-merge flags that cannot describe a layout, or do not fit the dumps."""


@dataclass(frozen=True, slots=True)
class ParallelFlags:
    """One side's layout as the flags give it: ranks, tensor, pipeline and virtual pipeline
    sizes, and Megatron's rank order; the data-parallel count is what is left over."""

    rank_size: int
    tp: int
    pp: int
    vpp: int = 1
    order: str = DEFAULT_ORDER

    @property
    def dp(self) -> int:
        return self.rank_size // (self.tp * self.pp)

    def describe(self) -> str:
        text = f"rank_size {self.rank_size}, tp {self.tp}, pp {self.pp}"
        return text + (f", vpp {self.vpp}" if self.vpp > 1 else "")


@dataclass(frozen=True, slots=True)
class ParallelOptions:
    """The merge flags of a build (``golden`` None) or of a compare."""

    target: ParallelFlags
    golden: ParallelFlags | None


def _values(flag: str, given: Sequence[int] | None, count: int, kind: str) -> list[int] | None:
    if given is None:
        return None
    if len(given) != count:
        raise ParallelFlagsError(
            f"--{flag} takes {count} value{'s' if count > 1 else ''} for a {kind}"
            f"{' (target golden)' if count == 2 else ''}, got {len(given)}: {' '.join(map(str, given))}"
        )
    for value in given:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ParallelFlagsError(f"--{flag} must be whole numbers above 0, got {value!r}")
    return list(given)


def _refuse_other_parallelism(cp: Sequence[int] | None, ep: Sequence[int] | None) -> None:
    for flag, given in (("cp", cp), ("ep", ep)):
        if given is not None and any(value != 1 for value in given):
            name = "context" if flag == "cp" else "expert"
            raise ParallelFlagsError(
                f"--{flag} {' '.join(map(str, given))}: {name}-parallel ({flag.upper()}) layouts "
                f"cannot be merged yet; graphboard merges {SUPPORTED} (--{flag} must be 1)"
            )


def check_order(order: str) -> None:
    if not _ORDER.match(order):
        raise ParallelFlagsError(f"--order {order!r} must be lower-case names joined by '-'")
    tokens = order.split("-")
    if sorted(tokens) != sorted(ORDER_TOKENS):
        raise ParallelFlagsError(
            f"--order {order!r} must name each of tp, cp, ep, dp and pp once, e.g. {DEFAULT_ORDER}"
        )
    if abs(tokens.index("ep") - tokens.index("dp")) != 1:
        raise ParallelFlagsError(
            f"--order {order!r}: ep and dp must be next to each other, as Megatron requires"
        )


def check_flags(flags: ParallelFlags, side: str) -> None:
    """msprobe's rules for one side, each broken one named with its values."""
    rank_size, tp, pp = flags.rank_size, flags.tp, flags.pp
    where = f"{side}: " if side else ""
    if tp > rank_size or pp > rank_size:
        raise ParallelFlagsError(
            f"{where}--tp {tp} and --pp {pp} must each be at most --rank_size {rank_size}"
        )
    if rank_size % (tp * pp):
        raise ParallelFlagsError(
            f"{where}--tp {tp} x --pp {pp} = {tp * pp} does not divide --rank_size {rank_size}: "
            f"rank_size must be tp x pp x the data-parallel count"
        )
    if flags.vpp > 1 and pp == 1:
        raise ParallelFlagsError(f"{where}--vpp {flags.vpp} needs a pipeline (--pp above 1)")
    check_order(flags.order)


def parallel_options(
    *,
    rank_size: Sequence[int] | None = None,
    tp: Sequence[int] | None = None,
    pp: Sequence[int] | None = None,
    vpp: Sequence[int] | None = None,
    order: Sequence[str] | None = None,
    cp: Sequence[int] | None = None,
    ep: Sequence[int] | None = None,
    compare: bool,
) -> ParallelOptions | None:
    """The merge flags as given on the command line, checked; None when none is given."""
    if all(value is None for value in (rank_size, tp, pp, vpp, order, cp, ep)):
        return None
    _refuse_other_parallelism(cp, ep)
    count, kind = (2, "compare") if compare else (1, "build")
    rank_sizes = _values("rank_size", rank_size, count, kind)
    tps = _values("tp", tp, count, kind)
    pps = _values("pp", pp, count, kind)
    if rank_sizes is None or tps is None or pps is None:
        absent = [
            f"--{flag}"
            for flag, values in (("rank_size", rank_sizes), ("tp", tps), ("pp", pps))
            if values is None
        ]
        raise ParallelFlagsError(
            f"parallel merge needs --rank_size, --tp and --pp together; {', '.join(absent)} missing"
        )
    vpps = _values("vpp", vpp, count, kind) or [1] * count
    if order is not None and len(order) != count:
        raise ParallelFlagsError(
            f"--order takes {count} value{'s' if count > 1 else ''} for a {kind}, got {len(order)}"
        )
    orders = list(order) if order is not None else [DEFAULT_ORDER] * count
    sides = []
    for index, side in enumerate(("target", "golden")[:count]):
        flags = ParallelFlags(rank_sizes[index], tps[index], pps[index], vpps[index], orders[index])
        check_flags(flags, side if compare else "")
        sides.append(flags)
    return ParallelOptions(sides[0], sides[1] if compare else None)
