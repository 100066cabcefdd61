"""Backward records: gradients caught on their way through autograd, without changing the graph.

* An API's backward is its output's ``grad_fn``: a node hook sees the gradients flowing in
  (``input``) and out to the API's differentiable inputs (``output``), as in msprobe's dumps
  (``Functional.linear.N.backward`` lists addmm's three input gradients).
* A module's backward starts when the gradient of one of its outputs arrives (tensor hooks on
  the outputs) and ends when the module's own graph has produced the gradients of its inputs.
  PyTorch's full backward hooks find that point by wrapping inputs and outputs in an identity
  Function, which forbids inplace layers (``ReLU(inplace=True)`` raises). Instead, at the end of
  the forward call, we walk the autograd nodes the call created (their sequence numbers are
  above a mark taken when it began) and hook the ones that consume an input: their gradients
  for that input, summed, are the module's input gradient, and when the last has run the
  module's backward is over. Nothing is added to the graph, so results cannot change.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from graphboard.graph.names import backward_twin
from graphboard.probe.leaves import Json
from graphboard.probe.session import Record, Session

Node = Any  # torch.autograd.graph.Node; its Python API is untyped
Edge = tuple[Node, int]


def iter_tensors(value: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    """Tensors inside nested tuples, lists and dicts, in order."""
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 32 and isinstance(value, tuple | list):
        for item in value:
            yield from iter_tensors(item, depth + 1)
    elif depth < 32 and isinstance(value, dict):
        for item in value.values():
            yield from iter_tensors(item, depth + 1)


def _sequence_nr(node: Node) -> int:
    getter = getattr(node, "_sequence_nr", None)
    return int(getter()) if getter is not None else -1


# API backward ----------------------------------------------------------------------------


def grad_nodes(value: Any) -> set[int]:
    """ids of the grad_fns of the tensors in ``value``, taken before an API runs."""
    return {id(tensor.grad_fn) for tensor in iter_tensors(value) if tensor.grad_fn is not None}


def watch_api(session: Session, forward_name: str, output: Any, nodes_before: set[int]) -> None:
    """Hook the node that computes the API's first differentiable output."""
    for tensor in iter_tensors(output):
        node = tensor.grad_fn
        if node is None:
            continue
        # A result handed back unchanged (``x.float()`` on float x) has no backward of its own.
        if id(node) in nodes_before:
            return
        watcher = _ApiBackward(session, forward_name)
        session.keep_handle(node.register_hook(watcher.on_node_done))
        return


@dataclass(eq=False)
class _ApiBackward:
    session: Session
    forward_name: str
    done: bool = False

    def on_node_done(self, grad_inputs: tuple[Any, ...], grad_outputs: tuple[Any, ...]) -> None:
        if self.done or not self.session.active:
            return
        self.done = True  # a retained graph may run the node again; msprobe keeps one record
        name = backward_twin(self.forward_name) or self.forward_name
        leaves = self.session.leaves
        with self.session.quiet():
            record: Record = {
                "input": leaves.args(grad_outputs, f"{name}.input"),
                "output": leaves.args(grad_inputs, f"{name}.output"),
            }
        self.session.add_backward(self.forward_name, record)


# Module backward -------------------------------------------------------------------------


@dataclass
class InputEdges:
    """Where a module call's differentiable inputs enter the graph, taken before it runs."""

    edges: list[Edge]
    mark: int  # sequence number of a node made just before the call: later nodes are the call's
    keep_alive: list[Node] = field(default_factory=list)

    @classmethod
    def capture(cls, args: Any, kwargs: Any) -> InputEdges | None:
        if not torch.is_grad_enabled():
            return None
        edges: list[Edge] = []
        keep_alive: list[Node] = []
        mark: int | None = None
        for tensor in iter_tensors((args, kwargs)):
            if not tensor.requires_grad:
                continue
            try:
                # A throwaway view: its node points at exactly the (node, slot) that the
                # module's own ops will point at, leaf or not; it is never used.
                probe_node = tensor.view_as(tensor).grad_fn
            except RuntimeError:
                probe_node = None
            if probe_node is None:
                continue
            edges.append(probe_node.next_functions[0])
            keep_alive.append(probe_node)  # keeps a leaf's AccumulateGrad node (and its id) alive
            if mark is None:
                mark = _sequence_nr(probe_node)
        if mark is None:
            return None
        return cls(edges, mark, keep_alive)


def _consumers(
    outputs: list[torch.Tensor], inputs: InputEdges
) -> dict[int, tuple[Node, list[tuple[int, int]]]]:
    """Nodes created by the call that take an input's gradient: id -> (node, [(slot, input index)])."""
    targets: dict[tuple[int, int], int] = {}
    for index, (node, slot) in enumerate(inputs.edges):
        targets.setdefault((id(node), slot), index)
    found: dict[int, tuple[Node, list[tuple[int, int]]]] = {}
    seen: set[int] = set()
    queue = [
        t.grad_fn
        for t in outputs
        if t.grad_fn is not None and _sequence_nr(t.grad_fn) > inputs.mark
    ]
    while queue:
        node = queue.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for slot, (child, child_slot) in enumerate(node.next_functions):
            if child is None:
                continue
            input_index = targets.get((id(child), child_slot))
            if input_index is not None:
                found.setdefault(id(node), (node, []))[1].append((slot, input_index))
            elif (
                id(child) not in seen and child.next_functions and _sequence_nr(child) > inputs.mark
            ):
                queue.append(child)
    return found


class ModuleBackwardCall:
    """The gradients of one module call, gathered until its backward record can be written."""

    def __init__(self, session: Session, forward_name: str, outputs: int, inputs: int) -> None:
        self.session = session
        self.forward_name = forward_name
        self.name = backward_twin(forward_name) or forward_name
        self.grad_outputs: list[Json] = [None] * outputs
        self.grad_inputs: list[torch.Tensor | None] = [None] * inputs
        self.outputs_waiting = outputs
        self.consumers_waiting = 0
        self.started = False
        self.done = False

    def on_grad_output(self, index: int, grad: torch.Tensor) -> None:
        if self.done or not self.session.active:
            return
        with self.session.quiet():
            self._start()
            self.grad_outputs[index] = self.session.leaves.value(grad, f"{self.name}.input.{index}")
        self.outputs_waiting -= 1
        if self.consumers_waiting == 0 and self.outputs_waiting == 0:
            self.finish()

    def on_consumer_done(
        self,
        slots: list[tuple[int, int]],
        grad_inputs: tuple[Any, ...],
        grad_outputs: tuple[Any, ...],
    ) -> None:
        if self.done or not self.session.active:
            return
        with self.session.quiet():
            self._start()
            for slot, index in slots:
                grad = grad_inputs[slot]
                if grad is None:
                    continue
                total = self.grad_inputs[index]
                self.grad_inputs[index] = grad if total is None else total + grad
        self.consumers_waiting -= 1
        if self.consumers_waiting == 0:
            self.finish()

    def _start(self) -> None:
        if not self.started:
            self.started = True
            self.session.begin_backward(self.forward_name)
            self.session.finish_at_end_of_backward(self, self.finish)

    def finish(self) -> None:
        """Write the record with what has arrived (called early when a backward pass ends)."""
        if self.done:
            return
        self.done = True
        self.session.finished(self)
        if not self.started or not self.session.active:
            return
        with self.session.quiet():
            grads = self.session.leaves.args(self.grad_inputs, f"{self.name}.output")
        self.grad_inputs = []
        self.session.add_backward(self.forward_name, {"input": self.grad_outputs, "output": grads})


def watch_module(
    session: Session, forward_name: str, inputs: InputEdges | None, output: Any
) -> None:
    """Arm the hooks that will write ``<module>.backward.<n>`` for this call."""
    outputs = [tensor for tensor in iter_tensors(output) if tensor.requires_grad]
    if not outputs:
        return
    call = ModuleBackwardCall(
        session, forward_name, len(outputs), len(inputs.edges) if inputs else 0
    )
    for index, tensor in enumerate(outputs):
        session.keep_handle(tensor.register_hook(partial(call.on_grad_output, index)))
    if inputs is None:
        return
    consumers = _consumers(outputs, inputs)
    call.consumers_waiting = len(consumers)
    for node, slots in consumers.values():
        session.keep_handle(node.register_hook(partial(call.on_consumer_done, slots)))
