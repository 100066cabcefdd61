"""The one way to read a .vis.db: graphboard's own files and msprobe's, through one API.

A node is two things: its ``tb_nodes`` row (name, type, parent, stored precision, parameter
dicts, stack, links), read with msprobe's own indexes, and its per-graph columns (structure,
levels, match state, roll-ups), read from ``gb_arrays`` into memory, or for a file msprobe
wrote derived once from its ``tb_nodes`` (:mod:`graphboard.store.msprobe_columns`). What
users matched since the build is applied on load, so every answer already includes it. All
SQL binds its values; the only names spliced into SQL are the reader's own constants.

:class:`VisDb` is the open file (:mod:`.opening`: its connection, kind and config); every read
is a plain function taking it, one module per job: the graphs it holds (:mod:`.graphs`, and
as they are now, :mod:`.listing`), the matching overlay (:mod:`.overlay`), a rule set's
verdicts (:mod:`.rules`), node summaries (:mod:`.summaries`), the tree (:mod:`.tree`), stored
node data (:mod:`.node_data`), search and filter (:mod:`.search`), peers across ranks
(:mod:`.peers`), and for a file opened ``writable``, saving users' matches
(:mod:`.manual_matches`). A read that answers with verdicts takes the rule set as an argument.
"""

from graphboard.store.graph_views import GraphKey
from graphboard.store.name_regex import compile_search_regex, required_literal
from graphboard.store.reader.config import FileConfig, GraphStats
from graphboard.store.reader.manual_matches import WriteRefused
from graphboard.store.reader.node_data import NodeRecord, StoredNode
from graphboard.store.reader.opening import Source, connect
from graphboard.store.reader.overlay import ManualPair
from graphboard.store.reader.peers import Peer, PeerLinks
from graphboard.store.reader.summaries import NodeSummary, Page
from graphboard.store.reader.vis_db import VisDb, open_vis_db

__all__ = [
    "FileConfig",
    "GraphKey",
    "GraphStats",
    "ManualPair",
    "NodeRecord",
    "NodeSummary",
    "Page",
    "Peer",
    "PeerLinks",
    "Source",
    "StoredNode",
    "VisDb",
    "WriteRefused",
    "compile_search_regex",
    "connect",
    "open_vis_db",
    "required_literal",
]
