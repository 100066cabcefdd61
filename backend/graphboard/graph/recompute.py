"""Activation checkpointing: put re-run modules back under the module that owns them.

A recomputed forward (and its backward) runs outside its owner's hooks, so msprobe's
construct.json puts it at the root. Its stack shows the checkpoint machinery, and its name
is deeper than a real top-level module's; a normal call of the same module path (the donor)
tells where it belongs (reference-builder.md §2.4).
"""

from __future__ import annotations

from graphboard.graph import names
from graphboard.graph.model import Graph, Node, NodeType

_CHECKPOINT_FILE = "torch/utils/checkpoint.py"
_AUTOGRAD_FUNCTION_FILE = "torch/autograd/function.py"


def _frame(frame: str) -> tuple[str, str]:
    """``File x.py, line 3, in fn, \\n src`` -> (``x.py``, ``fn``)."""
    file_part, _, rest = frame.partition(", line ")
    _, _, function = rest.partition(", in ")
    return file_part.removeprefix("File ").strip(), function.split(",", 1)[0].strip()


def is_recompute_stack(frames: tuple[str, ...] | None) -> bool:
    if not frames:
        return False
    parsed = [_frame(frame) for frame in frames]
    for index, (path, function) in enumerate(parsed):
        if function == "recompute_fn" and path.endswith(_CHECKPOINT_FILE):
            return True
        if function == "backward" or (
            function == "checkpoint_function_backward" and "megatron" in path
        ):
            following = parsed[index + 1 : index + 3]
            if any(_AUTOGRAD_FUNCTION_FILE in later_path for later_path, _ in following):
                return True
    return False


def _is_recompute_name(name: str) -> bool:
    segments = name.split(".")
    if len(segments) > 7:
        return True
    if len(segments) == 7:
        return not (segments[1].isdigit() and segments[3].isdigit())
    if len(segments) == 6:
        return not segments[1].isdigit()
    return False


def reparent_recomputed(graph: Graph, framework: str) -> None:
    root = graph.root
    root_names = {child.name for child in root.children}
    recomputed: list[Node] = []
    for child in root.children:
        if child.type is not NodeType.MODULE:
            continue
        if framework == "pytorch":
            stack = child.stack
            twin_name = names.forward_twin(child.name)
            if twin_name is not None and twin_name in graph.nodes:
                stack = graph.nodes[twin_name].stack
            if not is_recompute_stack(stack):
                continue
        twin = names.swap_direction(child.name)
        if _is_recompute_name(child.name) and twin is not None and twin in root_names:
            recomputed.append(child)
    if not recomputed:
        return
    prefixes = {names.module_prefix(node.name) for node in recomputed}
    # Donors: normal calls of the same module path, in order; forward and backward re-runs
    # each consume their own copy of the queue.
    donors: dict[str, list[Node]] = {}
    for name, node in graph.nodes.items():
        if ".forward." not in name or node.type is not NodeType.MODULE:
            continue
        if node.parent is None or node.parent is root:
            continue
        prefix = names.module_prefix(name)
        if prefix in prefixes:
            donors.setdefault(prefix, []).append(node)
    taken: dict[tuple[str, str], int] = {}
    moved: set[int] = set()
    for node in recomputed:
        direction = "backward" if ".backward." in node.name else "forward"
        prefix = names.module_prefix(node.name)
        queue = donors.get(prefix, [])
        position = taken.get((direction, prefix), 0)
        if position >= len(queue):
            continue
        taken[(direction, prefix)] = position + 1
        donor_parent = queue[position].parent
        assert donor_parent is not None
        # The re-run happens during the owner's backward pass.
        owner = graph.nodes.get(donor_parent.name.replace(".forward.", ".backward."))
        if owner is None or _is_descendant(owner, node):
            continue
        node.parent = None
        node.attach(owner)
        moved.add(id(node))
    if moved:
        root.children = [child for child in root.children if id(child) not in moved]


def _is_descendant(candidate: Node, ancestor: Node) -> bool:
    node: Node | None = candidate
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent
    return False
