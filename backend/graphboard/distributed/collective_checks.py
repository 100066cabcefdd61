"""What each collective API must satisfy, read from the calls of one group call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from graphboard.distributed.calls import INPUT, OUTPUT, Call
from graphboard.distributed.data_checks import (
    agree,
    check_reduction,
    compare_copy,
    compare_pooled,
    pooled,
    reduce_rtol,
)
from graphboard.distributed.report import ranks_text
from graphboard.distributed.stats import TensorStats
from graphboard.distributed.verdicts import CONSISTENT, Verdict, combine, unknown


@dataclass(slots=True)
class Instance:
    """One collective call: the same (group, API, direction, occurrence) on every member."""

    side: str
    step: int
    api: str
    group_key: str
    occurrence: int
    members: tuple[int, ...]
    calls: dict[int, Call]
    root: int | None = None
    direction: str = ""  # forward | backward, counted apart

    @property
    def complete(self) -> bool:
        return len(self.calls) == len(self.members)

    @property
    def root_call(self) -> Call | None:
        return self.calls.get(self.root) if self.root is not None else None

    def position(self) -> dict[int, int]:
        return {rank: index for index, rank in enumerate(self.members)}

    def each(self, read: Callable[[Call], TensorStats | None]) -> dict[int, TensorStats | None]:
        return {rank: read(call) for rank, call in self.calls.items()}

    def all_members(self, read: Callable[[Call], TensorStats | None]) -> list[TensorStats | None]:
        """``read`` of every member in group order; only meaningful when ``complete``."""
        return [read(self.calls[rank]) for rank in self.members]


@dataclass(slots=True)
class Check:
    """A collective's verdicts: for the whole call, per member, and per (source, target).

    ``same`` and ``per_rank`` make a pair's verdict depend only on what each of its two members
    holds, so that a call whose members agree is judged once, not once per pair (see
    ``call_verdicts``); ``pair`` is for checks that really differ per pair (all_gather's slots).
    """

    group: Verdict | None = None
    per_rank: dict[int, Verdict] = field(default_factory=dict)
    pair: Callable[[int, int], Verdict] | None = None
    uniform: Verdict | None = None  # the verdict of every pair, when one holds for all
    same: dict[int, TensorStats | None] | None = None  # results every member must share

    def verdict(self, source: int, target: int) -> Verdict:
        if self.uniform is not None:
            return self.uniform
        parts = [self.group, self.per_rank.get(source), self.per_rank.get(target)]
        found = [part for part in parts if part is not None]
        if self.same is not None:
            found.append(
                compare_copy(self.same.get(source), self.same.get(target), f"rank {target} result")
            )
        if self.pair is not None:
            found.append(self.pair(source, target))
        return combine(found)


def _slot(items: list[TensorStats | None] | None, index: int | None) -> TensorStats | None:
    if items is None or index is None or index >= len(items):
        return None
    return items[index]


def _incomplete(instance: Instance, same: dict[int, TensorStats | None] | None = None) -> Check:
    """Members are missing: nothing can be checked against the group, but what the present
    members hold (``same``) must still agree."""
    missing = [rank for rank in instance.members if rank not in instance.calls]
    return Check(group=unknown(f"rank(s) {ranks_text(missing)} missing from the call"), same=same)


def _input(position: int, name: str) -> Callable[[Call], TensorStats | None]:
    return lambda call: call.tensor(INPUT, position, name)


def _output(position: int, name: str) -> Callable[[Call], TensorStats | None]:
    return lambda call: call.tensor(OUTPUT, position, name)


def _check_all_reduce(instance: Instance) -> Check:
    results = instance.each(_output(0, "tensor"))
    if not instance.complete:
        return _incomplete(instance, same=results)
    op = next(iter(instance.calls.values())).reduce_op()
    parts = instance.all_members(_input(0, "tensor"))
    distinct = set(results.values())
    if len(distinct) == 1:  # the normal case: one result, checked once, agreeing everywhere
        (result,) = distinct
        same = CONSISTENT if result is not None else unknown("no statistics for the result")
        return Check(uniform=combine([check_reduction(result, parts, op), same]))
    per_rank = {rank: check_reduction(result, parts, op) for rank, result in results.items()}
    return Check(per_rank=per_rank, same=results)


def _check_reduce(instance: Instance) -> Check:
    root = instance.root_call
    if root is None or not instance.complete:
        return _incomplete(instance)
    parts = instance.all_members(_input(0, "tensor"))
    result = root.tensor(OUTPUT, 0, "tensor")
    return Check(group=check_reduction(result, parts, root.reduce_op()))


def _check_broadcast(instance: Instance) -> Check:
    root = instance.root_call
    sent = root.tensor(INPUT, 0, "tensor") if root is not None else None
    received = instance.each(_output(0, "tensor"))
    return Check(pair=lambda _root, member: compare_copy(sent, received.get(member)))


def _check_scatter(instance: Instance) -> Check:
    root = instance.root_call
    chunks = root.tensor_list(INPUT, 1) if root is not None else None
    received = instance.each(_output(0, "tensor"))
    position = instance.position()
    return Check(
        pair=lambda _root, member: compare_copy(
            _slot(chunks, position.get(member)), received.get(member)
        )
    )


def _check_gather(instance: Instance) -> Check:
    root = instance.root_call
    gathered = root.tensor_list(OUTPUT, 1) if root is not None else None
    sent = instance.each(_input(0, "tensor"))
    position = instance.position()
    return Check(
        pair=lambda member, _root: compare_copy(
            sent.get(member), _slot(gathered, position.get(member))
        )
    )


def _exchanged(
    sent: dict[int, list[TensorStats | None]],
    received: dict[int, list[TensorStats | None]],
    position: dict[int, int],
    a: int,
    b: int,
) -> Verdict:
    """What a put in b's slot arrived in a's slot on b, and the reverse (all_to_all)."""
    return combine(
        [
            compare_copy(_slot(sent.get(a), position[b]), _slot(received.get(b), position[a])),
            compare_copy(_slot(sent.get(b), position[a]), _slot(received.get(a), position[b])),
        ]
    )


def _check_all_gather(instance: Instance) -> Check:
    position = instance.position()
    # every slot of every member gets the contribution of that slot's owner
    contribution = instance.each(_input(1, "tensor"))
    sent = {rank: [stats] * len(instance.members) for rank, stats in contribution.items()}
    received = {rank: call.tensor_list(OUTPUT, 0) for rank, call in instance.calls.items()}
    return Check(pair=lambda a, b: _exchanged(sent, received, position, a, b))


def _check_all_to_all(instance: Instance) -> Check:
    position = instance.position()
    sent = {rank: call.tensor_list(INPUT, 1) for rank, call in instance.calls.items()}
    received = {rank: call.tensor_list(OUTPUT, 0) for rank, call in instance.calls.items()}
    return Check(pair=lambda a, b: _exchanged(sent, received, position, a, b))


def _check_all_gather_into_tensor(instance: Instance) -> Check:
    results = instance.each(_output(0, "output_tensor"))
    if not instance.complete:
        return _incomplete(instance, same=results)
    expected = pooled(instance.all_members(_input(1, "input_tensor")))
    per_rank = {rank: compare_pooled(expected, got, "gathered") for rank, got in results.items()}
    return Check(per_rank=per_rank, same=results)


def _check_reduce_scatter(instance: Instance) -> Check:
    if not instance.complete:
        return _incomplete(instance)
    op = next(iter(instance.calls.values())).reduce_op()
    chunks = {rank: call.tensor_list(INPUT, 1) for rank, call in instance.calls.items()}
    per_rank = {
        rank: check_reduction(
            instance.calls[rank].tensor(OUTPUT, 0, "output"),
            [_slot(chunks[member], index) for member in instance.members],
            op,
        )
        for index, rank in enumerate(instance.members)
    }
    return Check(per_rank=per_rank)


def _check_reduce_scatter_tensor(instance: Instance) -> Check:
    """Chunks are not dumped one by one; totals over the group must still add up."""
    if not instance.complete:
        return _incomplete(instance)
    op = next(iter(instance.calls.values())).reduce_op()
    inputs = pooled(instance.all_members(_input(1, "input")))
    outputs = pooled(instance.all_members(_output(0, "output")))
    if inputs is None or outputs is None:
        return Check(group=unknown("no statistics for the reduce-scatter"))
    rtol = reduce_rtol(outputs.dtype)
    if op in ("SUM", "AVG") and inputs.mean is not None and outputs.mean is not None:
        divisor = 1 if op == "SUM" else len(instance.members)
        expected = inputs.mean * (inputs.numel or 0) / divisor
        actual = outputs.mean * (outputs.numel or 0)
        scale = inputs.scale * (inputs.numel or 0)
        return Check(group=agree(f"{op} of all elements", expected, actual, rtol, scale))
    if op in ("MAX", "MIN"):
        want, got = (inputs.max, outputs.max) if op == "MAX" else (inputs.min, outputs.min)
        return Check(group=agree(f"{op} over the group", want, got, rtol, inputs.scale))
    return Check(group=unknown(f"ReduceOp {op} cannot be checked from statistics"))


def _check_all_to_all_single(instance: Instance) -> Check:
    """Splits are not in the statistics; the data the group holds must still be conserved."""
    if not instance.complete:
        return _incomplete(instance)
    inputs = pooled(instance.all_members(_input(1, "input")))
    outputs = pooled(instance.all_members(_output(0, "output")))
    return Check(group=compare_pooled(inputs, outputs, "exchanged data"))


def _check_no_data(instance: Instance) -> Check:
    return Check(group=unknown(f"{instance.api} carries no data"))


def check_unsupported(instance: Instance) -> Check:
    return Check(group=unknown(f"no data check for {instance.api}"))


CHECKS: dict[str, Callable[[Instance], Check]] = {
    "all_reduce": _check_all_reduce,
    "reduce": _check_reduce,
    "broadcast": _check_broadcast,
    "scatter": _check_scatter,
    "gather": _check_gather,
    "all_gather": _check_all_gather,
    "all_gather_into_tensor": _check_all_gather_into_tensor,
    "_all_gather_base": _check_all_gather_into_tensor,
    "reduce_scatter": _check_reduce_scatter,
    "reduce_scatter_tensor": _check_reduce_scatter_tensor,
    "_reduce_scatter_base": _check_reduce_scatter_tensor,
    "all_to_all": _check_all_to_all,
    "all_to_all_single": _check_all_to_all_single,
    "barrier": _check_no_data,
    "monitored_barrier": _check_no_data,
}
