"""One statistic over two of (module, step, rank, pass), from a .vis.db's stored rows.

Four shapes: module x step (one rank), module x rank (one step), rank x step (one module)
and module x pass (one step and rank: the precision map, forward / backward / parameter
gradients). A module row is a module name without its pass and call count
(:mod:`graphboard.trends.modules`), at a depth of the graph's tree, by default the model's
layers (``layers_depth``) of the first graph shown. A cell is one node: for the excess, the error and the
level the module's worst call in that pass (the first on a tie), for a raw value its first
call; ``nodes`` names it, on the side the value was read from (the target for a difference).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from graphboard.dump.records import Param
from graphboard.graph.sides import Side, spoken
from graphboard.store import rule_columns
from graphboard.store.reader import FileConfig, GraphKey, VisDb, node_data, overlay
from graphboard.store.reader import graphs as reader_graphs
from graphboard.trends import stored
from graphboard.trends.modules import (
    ModuleNode,
    Pass,
    layers_depth,
    module_depths,
    row_nodes,
)
from graphboard.trends.values import (
    RAW_STATISTICS,
    Statistic,
    raw_value,
    result_tensors,
    results_column,
    worst_relative_error,
)

TARGET, GOLDEN, DIFFERENCE = Side.TARGET.data_source, Side.GOLDEN.data_source, "diff"
TARGET_OF = {TARGET: TARGET, GOLDEN: GOLDEN, DIFFERENCE: TARGET}  # where cells' nodes are
MAX_ROWS = 2000  # a depth with more modules than this is not a heatmap anyone can read
MAX_GRAPHS = 4096  # graphs one heatmap may read (rank x step of a 64-rank, 64-step run)


class Axis(StrEnum):
    MODULE = "module"
    STEP = "step"
    RANK = "rank"
    PASS = "pass"


SHAPES = frozenset(
    {
        (Axis.MODULE, Axis.STEP),
        (Axis.MODULE, Axis.RANK),
        (Axis.RANK, Axis.STEP),
        (Axis.MODULE, Axis.PASS),
    }
)


class HeatmapRefused(ValueError):
    """A query this file cannot answer; the message says which parameter and why."""


@dataclass(frozen=True, slots=True)
class HeatmapQuery:
    rows: Axis
    cols: Axis
    statistic: Statistic
    side: str = TARGET  # a graph key's side (TARGET, GOLDEN) or DIFFERENCE (target minus golden)
    depth: int | None = None  # None: the model's layers
    pass_: Pass | None = None  # the pass a cell reads (not with cols=pass); None: forward
    step: int | None = None  # the step shown when steps are not an axis; None: the first
    rank: int | None = None
    module: str | None = None  # the module of a rank x step heatmap


@dataclass(slots=True)
class Heatmap:
    rows: list[str | int]
    cols: list[str | int]
    values: list[list[float | None]]
    nodes: list[list[str | None]]
    depth: int | None  # the module rows' depth
    depths: list[int] = field(default_factory=list)  # depths holding modules
    step: int | None = None  # fixed step (None: steps are an axis)
    rank: int | None = None


_Cell = tuple[float | None, str | None]


def heatmap(db: VisDb, query: HeatmapQuery) -> Heatmap:
    config = db.config()
    _check(query, config)
    step = _fixed(query.step, config.steps) if Axis.STEP not in (query.rows, query.cols) else None
    rank = _fixed(query.rank, config.ranks) if Axis.RANK not in (query.rows, query.cols) else None
    if query.rows is Axis.RANK:
        return _rank_by_step(db, query, config)
    if query.cols is Axis.PASS:
        assert step is not None and rank is not None
        graphs = [(step, rank)]
        cols: list[str | int] = [str(pass_) for pass_ in Pass]
    elif query.cols is Axis.STEP:
        assert rank is not None
        graphs = [(each, rank) for each in config.steps]
        cols = list(config.steps)
    else:
        assert step is not None
        graphs = [(step, each) for each in config.ranks]
        cols = list(config.ranks)
    if len(graphs) > MAX_GRAPHS:
        raise HeatmapRefused(f"cols={query.cols}: {len(graphs)} graphs, at most {MAX_GRAPHS}")
    found = {
        graph: stored.module_nodes(db, GraphKey(TARGET_OF[query.side], *graph))
        for graph in graphs
        if reader_graphs.has_graph(db, GraphKey(TARGET_OF[query.side], *graph))
    }
    first = next(iter(found.values()), [])
    depths = module_depths(first)
    depth = query.depth if query.depth is not None else layers_depth(first)
    modules = _row_modules(found.values(), depth)
    if query.depth is not None and not modules:
        raise HeatmapRefused(
            f"depth={query.depth}: no module at that depth (modules are at depths {depths})"
        )
    if len(modules) > MAX_ROWS:
        raise HeatmapRefused(
            f"depth={depth}: {len(modules)} modules, at most {MAX_ROWS} rows: "
            "choose a shallower depth"
        )
    row_of = {module: index for index, module in enumerate(modules)}
    values: list[list[float | None]] = [[None] * len(cols) for _ in modules]
    names: list[list[str | None]] = [[None] * len(cols) for _ in modules]
    for column, graph in enumerate(graphs):
        nodes = found.get(graph)
        if nodes is None:
            continue
        passes = list(Pass) if query.cols is Axis.PASS else [query.pass_ or Pass.FORWARD]
        wanted: list[tuple[int, int, list[ModuleNode]]] = []
        for index, pass_ in enumerate(passes):
            by_module: dict[str, list[ModuleNode]] = {}
            for node in nodes:
                if node.pass_ is pass_ and node.module in row_of:
                    by_module.setdefault(node.module, []).append(node)
            where = index if query.cols is Axis.PASS else column
            wanted += [(row_of[module], where, calls) for module, calls in by_module.items()]
        cells = _cells(db, query, graph, [calls for _row, _col, calls in wanted])
        for (row, where, _calls), (value, name) in zip(wanted, cells, strict=True):
            values[row][where], names[row][where] = value, name
    return Heatmap(list(modules), cols, values, names, depth, depths, step, rank)


def _rank_by_step(db: VisDb, query: HeatmapQuery, config: FileConfig) -> Heatmap:
    assert query.module is not None
    if len(config.ranks) * len(config.steps) > MAX_GRAPHS:
        raise HeatmapRefused(
            f"rows=rank&cols=step: {len(config.ranks) * len(config.steps)} graphs, "
            f"at most {MAX_GRAPHS}"
        )
    pass_ = query.pass_ or Pass.FORWARD
    values: list[list[float | None]] = []
    names: list[list[str | None]] = []
    seen = False
    for rank in config.ranks:
        row_values: list[float | None] = []
        row_names: list[str | None] = []
        for step in config.steps:
            key = GraphKey(TARGET_OF[query.side], step, rank)
            calls = (
                [n for n in stored.calls_of(db, key, query.module) if n.pass_ is pass_]
                if reader_graphs.has_graph(db, key)
                else []
            )
            seen = seen or bool(calls)
            value, name = _cells(db, query, (step, rank), [calls])[0] if calls else (None, None)
            row_values.append(value)
            row_names.append(name)
        values.append(row_values)
        names.append(row_names)
    if not seen:
        raise HeatmapRefused(
            f"module={query.module!r}: no {pass_} call of that module on any rank or step"
        )
    return Heatmap(list(config.ranks), list(config.steps), values, names, None)


def _row_modules(graphs: Iterable[list[ModuleNode]], depth: int | None) -> list[str]:
    """Row modules at ``depth`` of every graph, in execution order, a later graph's new
    modules after the first's."""
    modules: dict[str, None] = {}
    if depth is not None:
        for nodes in graphs:
            for node in row_nodes(nodes, depth):
                modules.setdefault(node.module, None)
    return list(modules)


def _cells(
    db: VisDb, query: HeatmapQuery, graph: tuple[int, int], wanted: Sequence[list[ModuleNode]]
) -> list[_Cell]:
    """(value, node name) of each cell of one graph: ``wanted`` holds each cell's calls."""
    key = GraphKey(TARGET_OF[query.side], *graph)
    if query.statistic is Statistic.EXCESS:
        view = overlay.graph_view(db, key)
        stale = sorted(view.manual | view.base_level.keys())
        excess = rule_columns.subtree_excess(view.columns, stale)
        if excess is None:
            raise HeatmapRefused(
                f"statistic=excess: {db.path.name} holds no dtype-aware excess (msprobe's file, "
                "or graphboard's built before it): rebuild it with graph_build, or use error "
                "or level"
            )
        return [_worst(calls, [float(excess[node.order]) for node in calls]) for calls in wanted]
    if query.statistic is Statistic.LEVEL:
        worst = overlay.graph_view(db, key).columns["worst_level"]
        return [_worst(calls, [int(worst[node.order]) for node in calls]) for calls in wanted]
    if query.statistic is Statistic.ERROR:
        read = _read(db, key, [node for calls in wanted for node in calls])
        return [
            _worst(calls, [worst_relative_error(read.get(node.order, {})) for node in calls])
            for calls in wanted
        ]
    firsts = [min(calls, key=lambda node: node.call) for calls in wanted]
    results = _results(db, key, firsts)
    cells: list[_Cell] = [
        (raw_value(results[node.order], query.statistic), node.name) for node in firsts
    ]
    if query.side != DIFFERENCE:
        return cells
    golden = GraphKey(GOLDEN, *graph)
    if not reader_graphs.has_graph(db, golden):
        return [(None, name) for _value, name in cells]
    orders = node_data.orders_of_names(db, golden, [node.name for node in firsts])
    counterparts = [
        replace(node, order=orders[node.name]) for node in firsts if node.name in orders
    ]
    golden_results = _results(db, golden, counterparts)
    differences: list[_Cell] = []
    for (value, name), node in zip(cells, firsts, strict=True):
        order = orders.get(node.name)
        other = raw_value(golden_results[order], query.statistic) if order is not None else None
        differences.append(
            (value - other if value is not None and other is not None else None, name)
        )
    return differences


def _read(db: VisDb, key: GraphKey, nodes: Sequence[ModuleNode]) -> dict[int, dict[str, object]]:
    """Each node's stored results dict (outputs, or a parameters_grad node's gradients), for
    the relative errors the compare stored on its rows."""
    found: dict[int, dict[str, object]] = {}
    for pass_ in {node.pass_ for node in nodes}:
        orders = [node.order for node in nodes if node.pass_ is pass_]
        found.update(node_data.dicts_of(db, key, orders, results_column(pass_)))
    return found


def _results(db: VisDb, key: GraphKey, nodes: Sequence[ModuleNode]) -> dict[int, list[Param]]:
    """Each node's result tensors (outputs, or a parameters_grad node's gradients)."""
    params = node_data.params_by_order(db, key, [node.order for node in nodes])
    return {node.order: result_tensors(params.get(node.order, []), node.pass_) for node in nodes}


def _worst(calls: Sequence[ModuleNode], values: Sequence[float | None]) -> _Cell:
    """The call with the largest value (the first call on a tie, or when none has one)."""
    best: tuple[float, int] | None = None
    chosen = min(range(len(calls)), key=lambda index: calls[index].call)
    for index, value in enumerate(values):
        if value is None or value < 0:
            continue
        score = (value, -calls[index].call)
        if best is None or score > best:
            best, chosen = score, index
    value = values[chosen]
    return (None if value is None or value < 0 else value), calls[chosen].name


def _fixed(given: int | None, available: list[int]) -> int:
    return given if given is not None else (available[0] if available else 0)


def _check(query: HeatmapQuery, config: FileConfig) -> None:
    if (query.rows, query.cols) not in SHAPES:
        raise HeatmapRefused(
            f"rows={query.rows}&cols={query.cols}: not a heatmap; one of "
            "rows=module&cols=step, rows=module&cols=rank, rows=rank&cols=step, "
            "rows=module&cols=pass"
        )
    shown = (query.rows, query.cols)
    for axis, given, available in (
        (Axis.STEP, query.step, config.steps),
        (Axis.RANK, query.rank, config.ranks),
    ):
        if axis in shown and given is not None:
            raise HeatmapRefused(
                f"{axis}={given}: every {axis} is an axis of this heatmap; give {axis} "
                "only for the one shown when it is not"
            )
        if given is not None and given not in available:
            raise HeatmapRefused(f"{axis}={given}: the file has {axis}s {available}")
    if query.rows is Axis.RANK:
        if query.module is None:
            raise HeatmapRefused("module: required for rows=rank&cols=step (the module shown)")
        if query.depth is not None:
            raise HeatmapRefused("depth: only for module rows (rows=module)")
    elif query.module is not None:
        raise HeatmapRefused("module: only for rows=rank&cols=step")
    if query.cols is Axis.PASS and query.pass_ is not None:
        raise HeatmapRefused("pass: the passes are the columns of rows=module&cols=pass")
    # refusals name the side as the request may: target/golden, not the graph key's word
    side = spoken(query.side)
    if query.side not in TARGET_OF:
        raise HeatmapRefused(f"side={side}: one of target, golden, diff")
    if query.statistic not in RAW_STATISTICS:
        if not config.compare:
            raise HeatmapRefused(
                f"statistic={query.statistic}: needs a compare; this file is a build "
                "(use norm, max, min or mean)"
            )
        if query.side != TARGET:
            raise HeatmapRefused(
                f"side={side}: statistic={query.statistic} is the target's (side=target)"
            )
    elif query.side != TARGET and not config.compare:
        raise HeatmapRefused(f"side={side}: a build has only the target side")
