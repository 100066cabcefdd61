"""Score matched node pairs: parameters paired by name, metrics per data mode, then the rules.

One engine serves the builder and the server's manual matching, so a pair scores the same
whichever way it was paired.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from graphboard.compare import metrics, msprobe_pairing
from graphboard.compare.result import DataMode, NodeComparison, ParamRow
from graphboard.compare.rules import apply_rules
from graphboard.dump.records import Param, Role
from graphboard.graph.model import Graph, Node, NodeType

_ROLE_ORDER = {Role.INPUT: 0, Role.PARAMETERS: 1, Role.PARAMETERS_GRAD: 2, Role.OUTPUT: 3}


def pair_params(target: list[Param], golden: list[Param]) -> list[ParamRow]:
    """Rows in target order; names pair first, leftovers of a role pair by position."""
    if len(target) == len(golden):  # the common case: the same parameters in the same order
        rows = []
        for target_param, golden_param in zip(target, golden, strict=True):
            if target_param.key != golden_param.key or target_param.role is not golden_param.role:
                break
            rows.append(ParamRow(target_param, golden_param))
        else:
            return rows  # nothing to look up
    golden_by_key = {param.key: param for param in golden}
    rows = []
    leftover_target: dict[Role, list[ParamRow]] = defaultdict(list)
    used: set[str] = set()
    for param in target:
        counterpart = golden_by_key.get(param.key)
        if (
            counterpart is not None
            and counterpart.key not in used
            and counterpart.role is param.role
        ):
            used.add(counterpart.key)
            rows.append(ParamRow(param, counterpart))
        else:
            row = ParamRow(param, None)
            rows.append(row)
            leftover_target[param.role].append(row)
    extras: list[ParamRow] = []
    leftover_golden: dict[Role, list[Param]] = defaultdict(list)
    for param in golden:
        if param.key not in used:
            leftover_golden[param.role].append(param)
    for role, params in leftover_golden.items():
        waiting = leftover_target.get(role, [])
        for position, param in enumerate(params):
            if position < len(waiting):
                waiting[position].golden = param
                waiting[position].paired_by = "position"
            else:
                extras.append(ParamRow(None, param))
    if extras:
        rows.extend(extras)
        rows.sort(key=lambda row: _ROLE_ORDER[(row.target or row.golden).role])  # type: ignore[union-attr]
    return rows


def _measure(rows: list[ParamRow], mode: DataMode, target_dir: str, golden_dir: str) -> None:
    """Each row's metrics in ``mode`` (md5 mode compares checksums in the rules instead)."""
    if mode is DataMode.SUMMARY:
        for row in rows:
            row.metrics = metrics.summary_metrics(row.target, row.golden)
    elif mode is DataMode.TENSOR:
        for row in rows:
            target_array, target_problem = metrics.load_param_tensor(row.target, target_dir)
            golden_array, golden_problem = metrics.load_param_tensor(row.golden, golden_dir)
            row.metrics, messages = metrics.tensor_metrics(target_array, golden_array)
            found = [problem for problem in (target_problem, golden_problem, *messages) if problem]
            if found:
                row.messages = [*row.messages, *found]


def compare_pair(
    target: Node,
    golden: Node,
    mode: DataMode,
    target_tensor_dir: str = "",
    golden_tensor_dir: str = "",
    parallel_merge: bool = False,
) -> NodeComparison | None:
    """Score one pair; None when there is nothing to score (no record, structure mode)."""
    if mode is DataMode.STRUCTURE or target.params is None:
        return None
    rows = pair_params(target.params, golden.params or [])
    if not rows:
        return NodeComparison(rows, None)
    _measure(rows, mode, target_tensor_dir, golden_tensor_dir)
    # msprobe's rules judge msprobe's pairs: by position, where a kind of parameters lists
    # the same names in another order on the two sides (compare/msprobe_pairing.py)
    moved = msprobe_pairing.positional_goldens(target.params, golden.params or [])
    judged = rows if moved is None else msprobe_pairing.msprobe_rows(rows, moved)
    if judged is not rows:
        fresh = [row for row, mine in zip(judged, rows, strict=True) if row is not mine]
        _measure(fresh, mode, target_tensor_dir, golden_tensor_dir)
    checksums: list[tuple[str | None, str | None]] | None = None
    if mode is DataMode.MD5:
        checksums = [(metrics.md5_of(row.target), metrics.md5_of(row.golden)) for row in judged]
    level = apply_rules(target.name, judged, mode, checksums, golden.name, parallel_merge)
    if judged is not rows:
        msprobe_pairing.carry_back(rows, judged)
    comparison = NodeComparison(rows, level)
    comparison.extra_target = [
        row.target.key for row in rows if row.golden is None and row.target is not None
    ]
    comparison.extra_golden = [
        row.golden.key for row in rows if row.target is None and row.golden is not None
    ]
    return comparison


def compare_graphs(target: Graph, golden: Graph, mode: DataMode) -> None:
    """Score every matched target node; API collections take their worst child's index."""
    compare_nodes(target, golden, mode, target.nodes.values())
    settle_collections(target, mode)


def compare_nodes(target: Graph, golden: Graph, mode: DataMode, nodes: Iterable[Node]) -> None:
    """Score the matched nodes among ``nodes`` of ``target``, but API collections, which
    take their children's worst index once the children are scored (settle_collections)."""
    for node in nodes:
        if node.counterpart is None or node.type is NodeType.API_COLLECTION:
            continue
        comparison = compare_pair(
            node, node.counterpart, mode, target.tensor_dir, golden.tensor_dir, target.merged
        )
        node.comparison = comparison
        node.precision = comparison.precision_index if comparison is not None else None


def api_collections(target: Graph) -> list[Node]:
    """The matched API collections, whose index is their children's worst, children first (in
    node_order): a merged graph's gathered collection holds per-rank ones, settled before it."""
    return [
        node
        for node in target.ordered()
        if node.counterpart is not None and node.type is NodeType.API_COLLECTION
    ]


def settle_collections(target: Graph, mode: DataMode) -> None:
    """Give each matched API collection its worst child's index (the children scored)."""
    if mode is DataMode.STRUCTURE:
        return
    for collection in api_collections(target):
        collection.precision = max(
            (child.precision or 0 for child in collection.children), default=0
        )
