"""Pairing collectives: the k-th call of an API (forward and backward counted apart) in a
process group pairs with the k-th call of it on every other member.

A call without a ``group`` argument runs on the default group: every rank of that side and
step in the build (gloo dumps carry no group at all). One→many (broadcast, scatter) links the
root to each member, many→one (gather, reduce) each member to the root, every other collective
each member to every other.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

from graphboard.distributed.apis import P2P_FAMILIES, ROOTED_KINDS, Family
from graphboard.distributed.call_verdicts import call_verdict, pair_verdicts
from graphboard.distributed.calls import Call
from graphboard.distributed.collective_checks import CHECKS, Check, Instance, check_unsupported
from graphboard.distributed.context import PairingContext
from graphboard.distributed.group_call import GroupCall
from graphboard.distributed.model import Endpoint, Link
from graphboard.distributed.report import ranks_text
from graphboard.distributed.verdicts import Verdict, combine, mismatch, unknown

InstanceKey = tuple[str, int, str, str, str, int]  # side, step, group, API, direction, call #


def link_collectives(ctx: PairingContext, calls: Iterable[Call]) -> None:
    instances: dict[InstanceKey, dict[int, Call]] = defaultdict(dict)
    counters: Counter[tuple[str, int, str, str, str, int]] = Counter()
    members_of: dict[tuple[str, int, str], tuple[int, ...]] = {}
    for call in calls:
        if call.family in P2P_FAMILIES:
            continue
        node = call.node
        group = (node.side, node.step, call.group_key)
        if group not in members_of:
            default = tuple(sorted(ctx.dumped.get((node.side, node.step), ())))
            members_of[group] = call.members or default
        counter = (node.side, node.step, call.group_key, call.api, call.direction, node.rank)
        occurrence = counters[counter]
        counters[counter] += 1
        key = (node.side, node.step, call.group_key, call.api, call.direction, occurrence)
        instances[key][node.rank] = call
    _check_call_counts(ctx, counters, members_of)
    for (side, step, group_key, api, direction, occurrence), by_rank in instances.items():
        members = members_of[(side, step, group_key)]
        if any(rank not in members for rank in by_rank):  # a rank outside its own group
            members = tuple(sorted({*members, *by_rank}))
        instance = Instance(side, step, api, group_key, occurrence, members, by_rank)
        instance.direction = direction
        _link_instance(ctx, instance)


def _check_call_counts(
    ctx: PairingContext,
    counters: Counter[tuple[str, int, str, str, str, int]],
    members_of: dict[tuple[str, int, str], tuple[int, ...]],
) -> None:
    per_api: dict[tuple[str, int, str, str, str], dict[int, int]] = defaultdict(dict)
    for (side, step, group_key, api, direction, rank), count in counters.items():
        per_api[(side, step, group_key, api, direction)][rank] = count
    for (side, step, group_key, api, direction), counts in per_api.items():
        members = members_of[(side, step, group_key)]
        for rank in members:
            if rank not in counts and ctx.in_dump(side, step, rank):
                counts[rank] = 0
        if len(set(counts.values())) <= 1:
            continue
        by_count: dict[int, list[int]] = defaultdict(list)
        for rank, count in counts.items():
            by_count[count].append(rank)
        detail = "; ".join(
            f"{count} time(s) on rank(s) {ranks_text(ranks)}"
            for count, ranks in sorted(by_count.items(), reverse=True)
        )
        called = f"{api} ({direction})" if direction else api
        ctx.warnings.add(
            "call-count",
            f"{side} step {step}: group {group_key} (ranks {ranks_text(members)}) disagrees "
            f"on how often it called {called}: {detail}",
        )


def _link_instance(ctx: PairingContext, instance: Instance) -> None:
    first = next(iter(instance.calls.values()))
    check = CHECKS.get(instance.api, check_unsupported)
    call_id = len(ctx.group_calls) + 1
    for call in instance.calls.values():
        call.call_id = call_id
    present = tuple(rank for rank in instance.members if rank in instance.calls)
    if first.family in ROOTED_KINDS:
        verdict = _link_rooted(ctx, instance, first.family is Family.ONE_TO_MANY, check, call_id)
        # the links to these members are gb_links rows already, which count them as orphans
        absent = {
            rank: ctx.absence(instance.side, instance.step, rank)
            for rank in instance.members
            if rank not in instance.calls
        }
        ctx.group_calls.append(GroupCall(call_id, instance, first.family, present, absent, verdict))
        return
    absent = {
        rank: ctx.unlinked_group(instance.side, instance.step, instance.calls, present, rank)
        for rank in instance.members
        if rank not in instance.calls
    }
    default, exceptions = pair_verdicts(check(instance), present)
    verdict = call_verdict(default, exceptions, absent)
    ctx.group_calls.append(
        GroupCall(call_id, instance, first.family, present, absent, verdict, default, exceptions)
    )


def _link_rooted(
    ctx: PairingContext,
    instance: Instance,
    root_sends: bool,
    check: Callable[[Instance], Check],
    call_id: int,
) -> Verdict:
    """Link the root to every other member; the verdict of the whole call."""
    declared = {rank: call.rank_arg() for rank, call in instance.calls.items()}
    votes = Counter(root for root in declared.values() if root is not None)
    if not votes:
        for call in instance.calls.values():
            node = call.node
            ctx.warnings.add(
                "no-peer",
                f"{node.side} step {node.step} rank {node.rank}: {node.name} names no root "
                "rank; it is not linked",
            )
        return unknown("no member names the root rank")
    root = instance.root = votes.most_common(1)[0][0]
    result = check(instance)
    verdicts: list[Verdict] = []
    for rank in instance.members:
        if rank == root:
            continue
        if root in instance.calls and rank in instance.calls:
            source, target = (root, rank) if root_sends else (rank, root)
            verdict = result.verdict(source, target)
            if declared[rank] not in (None, root):
                verdict = mismatch(f"rank {rank} names root {declared[rank]}, the others {root}")
            link = Link(
                instance.side,
                instance.step,
                instance.group_key,
                instance.occurrence,
                instance.calls[source].endpoint,
                instance.calls[target].endpoint,
                verdict,
                call_id,
            )
        elif root in instance.calls:
            link = _unlinked(ctx, instance, instance.calls[root], rank, root_sends, call_id)
        elif rank in instance.calls:
            link = _unlinked(ctx, instance, instance.calls[rank], root, not root_sends, call_id)
        else:
            continue
        ctx.links.append(link)
        verdicts.append(link.verdict)
    return combine(verdicts) if verdicts else unknown("no member to link with")


def _unlinked(
    ctx: PairingContext, instance: Instance, call: Call, peer: int, sends: bool, call_id: int
) -> Link:
    here, there = call.endpoint, Endpoint(peer, None, call.api)
    verdict = ctx.unlinked(instance.side, instance.step, here, peer)
    source, target = (here, there) if sends else (there, here)
    return Link(
        instance.side,
        instance.step,
        instance.group_key,
        instance.occurrence,
        source,
        target,
        verdict,
        call_id,
    )
