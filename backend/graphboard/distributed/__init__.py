"""Communication ops linked across ranks, and a check that the data sent is the data received.

After every (side, step, rank) graph is in the database, ``link_ranks`` pairs the
``Distributed.*`` nodes of one side (NPU or Bench) and one step across its ranks:

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

Where it goes (the SQL is in ``graphboard.store.links``, the graph in ``graphboard.topology``):

* ``tb_nodes.matched_distributed``: msprobe's annotation, same format, so tb_graph_ascend
  shows our links: ``{"communications_type": "send"|"receive"|"send_receive", "nodes_info":
  {"<peer rank>": ["<peer precision_index, or overflow_level with -oc>", "<peer node>"]}}``,
  a list of those for a batch_isend_irecv linking several ops.
* ``gb_links``: one row per (node, peer) with the verdict and its reason, including peers
  that could not be found (``peer_node`` NULL).
* ``gb_comm_nodes``: the per-node flag. One row per communication node with its worst
  verdict (``mismatch`` when any of its links disagrees) and the reason; readers join it on
  (data_source, step, rank, node_name) like ``gb_nodes``. A table of its own rather than a
  ``gb_nodes`` column, because linking runs after the part files are merged and must leave
  the other tables as their writers made them.
* ``gb_topology`` / ``gb_topology_ranks``: which rank sends data to which, per side and step.

A peer rank absent from the dump, or group members that disagree on how often they called an
API, produce a warning that names them and unlinked rows, never an exception. Pairing costs a
few dict operations per call: linear in the number of communication nodes, plus one link per
pair of members of each collective call (what msprobe's annotation lists anyway).

Modules, one job each: ``model`` (the nodes and links passed between steps), ``apis`` (which
family an API is), ``calls`` (a call's peer, root, group and ReduceOp from its parameters),
``stats`` and ``data_checks`` (statistics and what a copy or a reduction must satisfy),
``collective_checks`` (those checks per collective API), ``p2p`` and ``collectives`` (pairing),
``annotations`` (msprobe's JSON and the per-node flag), ``report`` (warnings), ``linker`` (the
entry point).
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
