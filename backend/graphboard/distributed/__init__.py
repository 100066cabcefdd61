"""Communication ops linked across ranks, and a check that the data sent is the data received.

After every (side, step, rank) graph is in the database, ``link_ranks`` pairs the
``Distributed.*`` nodes of one side (target or golden) and one step across its ranks:

* Point-to-point (send, isend, recv, irecv, and each op of a batch_isend_irecv): the k-th
  message rank a sends to rank b pairs with the k-th message b receives from a. Blocking,
  non-blocking and batched calls share one sequence per (sender, receiver), which is how the
  communication libraries match them (msprobe keys send↔recv and isend↔irecv apart, so it
  cannot link an isend to a recv).
* Collectives: the k-th call of an API (forward and backward counted apart) in a process
  group pairs with the k-th call of it on every other member. A call without a ``group``
  argument runs on the default group: every rank of that side and step in the build (gloo
  dumps carry no group at all, which is why msprobe links none of them). One→many
  (broadcast, scatter) links the root to each member, many→one (gather, reduce) each member
  to the root, every other collective (all_reduce, all_gather, reduce_scatter, all_to_all,
  barrier ...) each member to every other.

Each link gets a verdict from the statistics in dump.json: a copy (send → recv, broadcast
root → member, all_gather contribution → its slot ...) must agree in dtype, shape, Max, Min,
Mean and Norm within ``COPY_RTOL``; a reduction must fit its contributions (SUM: the mean is
the sum of the means, Max/Min/Norm within the sums; MAX/MIN: the extreme) within a tolerance
of a few ulps of the dtype; what every member ends up holding (all_reduce) must agree across
members. Missing statistics make the verdict ``unknown``, never a mismatch.

Where it goes (the SQL is in ``graphboard.store.links``, the graph in ``graphboard.topology``).
Every table is keyed by msprobe's graph coordinates (data_source, step, rank, node_name), so a
reader joins it to ``tb_nodes`` and ``gb_nodes``. Verdicts are ``consistent``, ``mismatch`` or
``unknown``; a reason says why for the last two. A collective is stored once per group call,
not once per pair of members: a many↔many call on N ranks used to be N·(N−1) rows.

``tb_nodes.matched_distributed``
    msprobe's annotation in msprobe's format, so tb_graph_ascend shows our links:
    ``{"communications_type": "send"|"receive"|"send_receive", "nodes_info": {"<peer rank>":
    ["<peer precision_index, or overflow_level with -oc>", "<peer node>"]}}``, a list of those
    for a batch_isend_irecv linking several ops. ``nodes_info`` lists every linked peer.

``gb_comm_calls`` (one row per collective call of a group)
    ``id``; ``data_source``, ``step``; ``group_key`` (process-group id, or ``default`` for a
    call without a group: every dumped rank); ``api``; ``direction`` (forward, backward or
    ''); ``occurrence`` (0-based number of that API and direction in the group);
    ``family`` (one_to_many, many_to_one, many_to_many); ``members`` (JSON list, group
    order); ``present`` (members whose call was found); ``absent`` (JSON {"rank": why it has
    no call}); ``root_rank`` (rooted calls: the root the members named); ``verdict`` and
    ``reason`` (worst over the call's links); ``pair_verdict`` and ``pair_reason``
    (many↔many: the verdict of every pair of present members not in ``gb_call_pairs``).

``gb_call_pairs`` (many↔many only)
    ``call_id``, ``rank_a`` < ``rank_b``, ``verdict``, ``reason``: the pairs whose verdict is
    not the call's ``pair_verdict``. None when every member holds the same data.

``gb_links`` (one row per node and peer, for point-to-point and rooted collectives)
    ``id``; ``data_source``, ``step``, ``rank``, ``node_name``; ``op_index`` (the op of a
    batch_isend_irecv, else 0); ``api`` (the op's API for a batch); ``kind`` (send, receive);
    ``group_key`` (``p2p`` for point-to-point); ``occurrence`` (0-based message or call
    number the pairing used); ``peer_rank``; ``peer_node`` (NULL when the peer's call was not
    found); ``verdict``, ``reason``; ``call_id`` (the rooted call, NULL for point-to-point).
    A broadcast, scatter, gather or reduce links its root to each member: N−1 links per call.

``gb_comm_nodes`` (one row per communication node: the per-node flag)
    ``data_source``, ``step``, ``rank``, ``node_name``; ``api``; ``kind``; ``group_key``;
    ``linked_peers``, ``missing_peers``; ``verdict`` and ``reason`` (worst over the node's
    links: the first mismatch, naming its peer); ``call_id`` (its collective call, NULL for
    point-to-point). A table of its own rather than a ``gb_nodes`` column, because linking
    runs after the part files are merged and must leave the other tables as their writers
    made them.

``gb_peer_links`` (a view)
    gb_links' columns, with every (node, peer) link as one row: gb_links' rows, plus each
    peer of a many↔many call (verdict from gb_call_pairs, else the call's pair_verdict; ``id``
    is then the peer rank) and each member without the call (``peer_node`` NULL). What
    gb_links held before calls were stored once, computed when read, for one node at a time
    through the indexes.

``gb_topology`` / ``gb_topology_ranks``
    which rank sends data to which, per side and step, and each rank's component.

A peer rank absent from the dump, or group members that disagree on how often they called an
API, produce a warning that names them and unlinked rows, never an exception. Pairing costs a
few dict operations per call, and a many↔many call whose members agree is judged once
(``call_verdicts``): linear in the number of communication nodes. The annotations are the one
output that grows with the square of a group's size, as msprobe's format lists every peer on
every member; they are cut from one text per call.

Modules, one job each: ``model`` (the nodes and links passed between steps), ``apis`` (which
family an API is), ``calls`` (a call's peer, root, group and ReduceOp from its parameters),
``stats`` and ``data_checks`` (statistics and what a copy or a reduction must satisfy),
``collective_checks`` (those checks per collective API), ``p2p`` and ``collectives`` (pairing),
``call_verdicts`` (a many↔many call's pairs without judging each), ``annotations`` (msprobe's
JSON and the per-node flag), ``tables`` (rows, traffic and counts), ``report`` (warnings),
``context`` (state shared while pairing), ``linker`` (the entry point and the GC pause).
"""

from graphboard.distributed.data_checks import COPY_RTOL, check_reduction, compare_copy
from graphboard.distributed.linker import link_ranks
from graphboard.distributed.model import (
    DISTRIBUTED_PREFIX,
    CommNode,
    LinkSummary,
    collect_comm_nodes,
)
from graphboard.distributed.stats import TensorStats
from graphboard.distributed.verdicts import CONSISTENT, Consistency, Verdict, combine

__all__ = [
    "CONSISTENT",
    "COPY_RTOL",
    "DISTRIBUTED_PREFIX",
    "CommNode",
    "Consistency",
    "LinkSummary",
    "TensorStats",
    "Verdict",
    "check_reduction",
    "collect_comm_nodes",
    "combine",
    "compare_copy",
    "link_ranks",
]
