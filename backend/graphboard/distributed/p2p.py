"""Pairing point-to-point messages: send/isend/recv/irecv and each op of a batch_isend_irecv.

The k-th message rank a sends to rank b pairs with the k-th message b receives from a,
whatever call carried it: blocking, non-blocking and batched calls share one sequence per
(sender, receiver), which is how the communication libraries match them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from itertools import zip_longest

from graphboard.distributed.apis import P2P_FAMILIES, Family, batch_op
from graphboard.distributed.calls import INPUT, OUTPUT, Call
from graphboard.distributed.context import PairingContext
from graphboard.distributed.data_checks import compare_copy
from graphboard.distributed.model import Endpoint, Link
from graphboard.distributed.stats import TensorStats, as_int

P2P_GROUP = "p2p"
Channel = tuple[str, int, int, int]  # (side, step, sender rank, receiver rank)


# One end of a message: the call (or batch op) and what it sent, or what arrived. A plain
# tuple, as there is one per message end.
_P2PEnd = tuple[Endpoint, TensorStats | None]
# Family members as module names: looked up once per message end
_SEND, _BATCH = Family.SEND, Family.BATCH


def _p2p_ends(call: Call) -> Iterator[tuple[Family, int | None, _P2PEnd]]:
    """(SEND or RECV, peer rank, this end) of a plain call or of each op of a batch."""
    node = call.node
    family = call.family
    if family is not _BATCH:
        payload = (
            call.tensor(INPUT, 0, "tensor") if family is _SEND else call.tensor(OUTPUT, 0, "tensor")
        )
        yield family, call.rank_arg(), (call.endpoint, payload)
        return
    for index, op in enumerate(node.batch_p2p or []):
        parsed = batch_op(op)
        if parsed is None:
            continue
        api, family = parsed
        # what arrived is only in the output; what was sent is in both
        payload = TensorStats.of_param(call.params.get(f"output.0.{index}"))
        if payload is None and family is _SEND:
            payload = TensorStats.of_param(call.params.get(f"input.0.{index}"))
        yield family, as_int(op.get("peer")), (Endpoint(node.rank, node, api, index), payload)


def link_p2p(ctx: PairingContext, calls: Iterable[Call]) -> None:
    sends: dict[Channel, list[_P2PEnd]] = defaultdict(list)
    recvs: dict[Channel, list[_P2PEnd]] = defaultdict(list)
    for call in calls:
        if call.family not in P2P_FAMILIES:
            continue
        node = call.node
        for family, peer, end in _p2p_ends(call):
            if peer is None:
                ctx.warnings.add(
                    "no-peer",
                    f"{node.side} step {node.step} rank {node.rank}: {node.name} names no "
                    "peer rank (src/dst missing or not an integer); it is not linked",
                )
            elif family is _SEND:
                sends[(node.side, node.step, node.rank, peer)].append(end)
            else:
                recvs[(node.side, node.step, peer, node.rank)].append(end)
    for channel in dict.fromkeys([*sends, *recvs]):  # deterministic order, no duplicates
        side, step, sender, receiver = channel
        sent, received = sends.get(channel, []), recvs.get(channel, [])
        for occurrence, (out, into) in enumerate(zip_longest(sent, received)):
            if out is not None and into is not None:
                source, target = out[0], into[0]
                verdict = compare_copy(out[1], into[1])
            elif out is not None:
                source = out[0]
                target = Endpoint(receiver, None, source.api)
                verdict = ctx.unlinked(side, step, source, receiver)
            else:
                target = into[0]
                source = Endpoint(sender, None, target.api)
                verdict = ctx.unlinked(side, step, target, sender)
            ctx.links.append(Link(side, step, P2P_GROUP, occurrence, source, target, verdict))
        if (
            len(sent) != len(received)
            and ctx.in_dump(side, step, sender)
            and ctx.in_dump(side, step, receiver)
        ):
            ctx.warnings.add(
                "p2p-count",
                f"{side} step {step}: rank {sender} sends {len(sent)} message(s) to rank "
                f"{receiver}, but rank {receiver} receives {len(received)} from rank {sender}",
            )
