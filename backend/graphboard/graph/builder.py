"""Build one rank's graph from its construct.json, dump.json and stack.json.

The steps follow msprobe's builder (reference-builder.md §2) so users see the hierarchy they
know: nodes in construct.json order, backward parents repaired from their forward twins,
recomputed (checkpointed) modules put back under their owners, root-level API runs grouped
into ``Apis_Between_Modules.k``, parameter gradients under the module's last backward call.
Unlike msprobe, nothing is dropped silently: nodes whose parent chain never reaches the root,
and gradients whose module has no backward node, are attached and reported.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from graphboard.dump.construct import Construct, read_construct
from graphboard.dump.jsonio import DumpFile
from graphboard.dump.layout import TENSOR_DIR, RankDir
from graphboard.dump.param_columns import ParamColumns, params_from_columns, params_to_columns
from graphboard.dump.records import (
    Param,
    batch_p2p_ops,
    parse_record,
    text_statistics_read,
    text_statistics_warning,
)
from graphboard.dump.repeats import repeats_warning
from graphboard.dump.stack import Stack, read_stacks
from graphboard.errors import DumpError
from graphboard.graph import names
from graphboard.graph.microstep import assign_micro_steps
from graphboard.graph.model import (
    API_COLLECTION_PREFIX,
    ROOT_NAME,
    TARGET_SIDE,
    Graph,
    Node,
    NodeType,
    node_type_of,
)
from graphboard.graph.recompute import reparent_recomputed

NO_FORWARD_STACK = (
    "This backward node cannot find the forward node and cannot retrieve stack information.",
)
_GRAD = re.compile(r"\.parameters_grad(\.\d+)?$")


class DumpRecords:
    """dump.json parsed into parameters per node name, plus what the header says.

    It pickles compactly, its Params as columns (dump/param_columns.py), for a side read in
    one process and compared in another.
    """

    def __init__(self, path: Path) -> None:
        dump = DumpFile(path)
        self.params: dict[str, list[Param]] = {}
        self.batch_p2p: dict[str, list[dict[str, object]]] = {}
        self.warnings: list[str] = []
        texts_before = text_statistics_read()  # the parsers count them as they go
        for name, record in dump.records():
            self.params[name] = parse_record(name, record, path)
            if "batch_isend_irecv" in name:
                self.batch_p2p[name] = batch_p2p_ops(record)
        repeated = dump.repeated_records(len(self.params))
        if repeated:
            self.warnings.append(repeats_warning(path, repeated, "record"))
        # Rare: only then are the records scanned for them (a repeat may have replaced them).
        moved = text_statistics_read() != texts_before
        text = text_statistics_warning(path, self.params) if moved else None
        if text is not None:
            self.warnings.append(text)
        # one scan, after: a statistics dump has no md5 to stop it early
        self.has_md5 = any(
            param.md5 is not None and param.is_tensor
            for params in self.params.values()
            for param in params
        )
        header = dump.header
        if dump.empty:
            header = {"task": "structure"}  # names only, which is what construct.json gives
            self.warnings.append(
                f"{path}: dump.json is {{}} (no task, no records): the graph is built from"
                " construct.json alone, without parameters"
            )
        self.task = header.get("task")
        self.level = header.get("level")
        self.framework = header.get("framework") or "pytorch"
        self.dump_data_dir = header.get("dump_data_dir")
        if not isinstance(self.task, str) or not self.task:
            raise DumpError(
                path,
                'no "task" in the header',
                expected='"task": "statistics", "tensor", "structure"...',
            )

    def __reduce__(self) -> tuple[Any, ...]:
        header = (self.task, self.level, self.framework, self.dump_data_dir)
        columns = params_to_columns(self.params)
        return (_unpickle_records, (columns, self.batch_p2p, self.has_md5, header, self.warnings))


def _unpickle_records(
    columns: ParamColumns,
    batch_p2p: dict[str, list[dict[str, object]]],
    has_md5: bool,
    header: tuple[Any, Any, Any, Any],
    warnings: list[str],
) -> DumpRecords:
    records = DumpRecords.__new__(DumpRecords)
    records.params = params_from_columns(columns)
    records.batch_p2p = batch_p2p
    records.has_md5 = has_md5
    records.warnings = warnings
    records.task, records.level, records.framework, records.dump_data_dir = header
    return records


def _repair_parent(child: str, parent: str | None, parents: dict[str, str | None]) -> str | None:
    """Fix the parent msprobe's backward hooks report wrongly (reference-builder.md §2.3)."""
    if parent is None:
        twin = names.forward_twin(child)
        twin_parent = parents.get(twin) if twin else None
        if twin_parent:
            candidate = names.backward_twin(twin_parent)
            if candidate is not None and candidate in parents:
                return candidate
        return None
    if not names.is_module_backward(child):
        return parent
    child_prefix = names.strip_segments(child, 4)
    parent_prefix = names.strip_segments(parent, 3)
    if (
        child_prefix is None
        or parent_prefix is None
        or child.count(".") < 4
        or parent.count(".") < 3
    ):
        return parent
    if child_prefix == parent_prefix:
        return parent
    twin = names.forward_twin(child)
    if twin is None or twin not in parents:
        return parent
    twin_parent = parents[twin]
    if twin_parent is None:
        return None
    candidate = names.backward_twin(twin_parent)
    return candidate if candidate is not None and candidate in parents else parent


class _Builder:
    def __init__(
        self, construct: Construct, records: DumpRecords, stacks: dict[str, Stack], side: str
    ) -> None:
        self.construct = construct
        self.records = records
        self.stacks = stacks
        self.root = Node(ROOT_NAME, NodeType.MODULE)
        self.nodes: dict[str, Node] = {ROOT_NAME: self.root}
        self.side = side

    def node(self, name: str) -> Node:
        node = self.nodes.get(name)
        if node is not None:
            return node
        node = Node(name, node_type_of(name), params=self.records.params.get(name))
        if self.records.batch_p2p:
            node.batch_p2p = self.records.batch_p2p.get(name)
        stack = self.stacks.get(name)
        node.stack = stack if stack is not None else self._twin_stack(name)
        if self.construct.micro_steps is not None:
            node.micro_step = self.construct.micro_steps.get(name, 0)
        self.nodes[name] = node
        return node

    def _twin_stack(self, name: str) -> Stack | None:
        """The stack of a node that has none of its own: its forward twin's."""
        twin = names.forward_twin(name)
        if twin is None:
            return None
        stack = self.stacks.get(twin)
        if stack is not None:
            return stack
        # A forward node that exists but has no stack gives an empty stack, as in msprobe;
        # the "cannot find" message is only for a forward node that is nowhere in the dump.
        known = twin in self.construct.parents or twin in self.records.params
        return None if known else NO_FORWARD_STACK

    def init_nodes(self) -> None:
        parents = self.construct.parents
        nodes, root, node = self.nodes, self.root, self.node
        for child, parent in parents.items():
            if parent is None or ".backward." in child:  # only these may need a repair
                parent = _repair_parent(child, parent, parents)
            parent_node = root if parent is None else (nodes.get(parent) or node(parent))
            (nodes.get(child) or node(child)).attach(parent_node)

    def collect_root_api_runs(self) -> None:
        """Group each run of 2+ consecutive root-level APIs under ``Apis_Between_Modules.k``."""
        children = self.root.children
        regrouped: list[Node] = []
        index = 0
        start = 0
        while start < len(children):
            end = start
            while end < len(children) and children[end].type is NodeType.API:
                end += 1
            if end - start >= 2:
                collection = Node(
                    f"{API_COLLECTION_PREFIX}.{index}", NodeType.API_COLLECTION, parent=self.root
                )
                index += 1
                collection.micro_step = children[start].micro_step
                collection.children = children[start:end]
                for api in collection.children:
                    api.parent = collection
                self.nodes[collection.name] = collection
                regrouped.append(collection)
                start = end
            else:
                regrouped.append(children[start])
                start += 1
        self.root.children = regrouped

    def add_parameters_grad(self, graph: Graph) -> None:
        """Attach gradient records under the last backward call of their module."""
        last_backward: dict[str, tuple[int, Node]] = {}
        for name, node in self.nodes.items():
            if names.is_module_backward(name):
                prefix, _, call = name.rpartition(".backward.")
                if call.isdigit():
                    best = last_backward.get(prefix)
                    if best is None or int(call) > best[0]:
                        last_backward[prefix] = (int(call), node)
        for name, params in self.records.params.items():
            if name in self.nodes or not _GRAD.search(name):
                continue
            prefix = name[: name.rindex(".parameters_grad")]
            grad = Node(name, NodeType.MODULE, params=params)
            owner = last_backward.get(prefix)
            if owner is not None:
                grad.attach(owner[1])
            else:
                grad.attach(self._nearest_backward_owner(prefix))
                graph.rescued_grads.append(name)
            self.nodes[name] = grad

    def _nearest_backward_owner(self, prefix: str) -> Node:
        """For a module without a backward node (inplace hooks lose it): its forward
        parent's backward twin, else the root."""
        forward = self.nodes.get(f"{prefix}.forward.0")
        parent = forward.parent if forward is not None else None
        while parent is not None and parent is not self.root:
            twin = names.backward_twin(parent.name)
            if twin is not None and twin in self.nodes:
                return self.nodes[twin]
            parent = parent.parent
        return self.root

    def attach_orphans(self, graph: Graph) -> None:
        """Nodes whose parent chain never reaches the root go under the root, reported."""
        reachable = {id(node) for node in graph.walk()}
        if len(reachable) == len(self.nodes):
            return
        for node in list(self.nodes.values()):
            if id(node) in reachable:
                continue
            # Climb to the top of this detached chain (or to a node of a cycle).
            top = node
            seen = {id(top)}
            while (
                top.parent is not None
                and id(top.parent) not in seen
                and id(top.parent) not in reachable
            ):
                top = top.parent
                seen.add(id(top))
            if top.parent is not None and id(top.parent) not in reachable:
                top.detach()  # break the cycle
            if top.parent is None:
                top.attach(self.root)
                graph.orphans.append(top.name)
            for reached in _subtree(top):
                reachable.add(id(reached))


def _subtree(node: Node) -> list[Node]:
    found = [node]
    index = 0
    while index < len(found):
        found.extend(found[index].children)
        index += 1
    return found


def build_graph(
    rank_dir: RankDir, side: str = TARGET_SIDE, records: DumpRecords | None = None
) -> Graph:
    """Read one rank folder and build its graph (with its dump.json's ``records`` when they
    are already parsed)."""
    warnings: list[str] = []
    construct = read_construct(rank_dir.file("construct.json"))
    if construct.repeated:
        warnings.append(
            repeats_warning(rank_dir.file("construct.json"), construct.repeated, "node")
        )
    if records is None:
        records = read_records(rank_dir)
    warnings.extend(records.warnings)
    stacks = read_stacks(rank_dir.file("stack.json"), warnings)
    return assemble_graph(construct, records, stacks, rank_dir, side, warnings)


def read_records(rank_dir: RankDir) -> DumpRecords:
    """dump.json's records, parsed (their parameters all live on: an executor runs this with
    the cyclic collector paused, graphboard/executor.py)."""
    return DumpRecords(rank_dir.file("dump.json"))


def assemble_graph(
    construct: Construct,
    records: DumpRecords,
    stacks: dict[str, Stack],
    rank_dir: RankDir,
    side: str,
    warnings: list[str],
) -> Graph:
    builder = _Builder(construct, records, stacks, side)
    builder.init_nodes()
    graph = Graph(
        side=side,
        step=rank_dir.step,
        rank=rank_dir.rank,
        root=builder.root,
        nodes=builder.nodes,
        task=str(records.task),
        level=records.level,
        framework=records.framework,
        dump_dir=str(rank_dir.path),
        tensor_dir=str(rank_dir.path / TENSOR_DIR),
        warnings=warnings,
        has_md5=records.has_md5,
    )
    reparent_recomputed(graph, records.framework)
    builder.collect_root_api_runs()
    builder.add_parameters_grad(graph)
    builder.attach_orphans(graph)
    if graph.orphans:
        graph.warnings.append(
            f"{rank_dir.path}: {len(graph.orphans)} node(s) whose parent chain never reaches the root "
            f"attached under {ROOT_NAME} (msprobe drops them): {', '.join(graph.orphans[:5])}"
            + (" ..." if len(graph.orphans) > 5 else "")
        )
    if graph.rescued_grads:
        graph.warnings.append(
            f"{rank_dir.path}: {len(graph.rescued_grads)} parameters_grad record(s) whose module has no "
            f"backward node kept under the nearest backward ancestor (msprobe drops them)"
        )
    graph.micro_steps = assign_micro_steps(graph, construct.micro_step_count)
    graph.number()
    return graph
