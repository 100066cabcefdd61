"""The state of one step's recording, shared by every hook and wrapper.

It owns the three outputs (dump.json records, construct.json hierarchy, stack.json stacks),
the call counters, the scopes open on each thread and the "quiet" guard: while the probe
itself computes statistics, or while a wrapped API runs its own implementation, the APIs it
calls must not be recorded as if the model had called them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

from graphboard.graph.names import backward_twin
from graphboard.probe.config import Level, Task
from graphboard.probe.hierarchy import Hierarchy
from graphboard.probe.leaves import Json, LeafWriter
from graphboard.probe.stacks import StackBook, capture_stack

Record = dict[str, Json]
Finisher = Callable[[], None]


class CallCounters:
    """``<n>`` of ``Functional.relu.<n>.forward`` / ``Module.a.Linear.forward.<n>``, per key."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def next(self, key: str) -> int:
        count = self._counts.get(key, 0)
        self._counts[key] = count + 1
        return count


class Session:
    def __init__(self, level: Level, task: Task, leaves: LeafWriter) -> None:
        self.level = level
        self.task = task
        self.leaves = leaves
        self.data: dict[str, Record] = {}
        self.hierarchy = Hierarchy()
        self.stacks = StackBook()
        self.counters = CallCounters()
        self.active = False
        self._local = threading.local()
        self._lock = threading.RLock()
        self._backward_handles: list[RemovableHandle] = []
        # Work that completes a record late: module backward calls cut short, async
        # collectives never waited on. Run at the end of each backward pass and at stop.
        self._backward_finishers: dict[int, Finisher] = {}
        self._stop_finishers: dict[int, Finisher] = {}
        self._callback_graph_task: int | None = None  # the backward pass our callback waits on

    # Guard -------------------------------------------------------------------------------

    def accepts_call(self) -> bool:
        """True when a hook or wrapper firing now should record."""
        return self.active and not getattr(self._local, "quiet", False)

    @contextmanager
    def quiet(self) -> Iterator[None]:
        previous = getattr(self._local, "quiet", False)
        self._local.quiet = True
        try:
            yield
        finally:
            self._local.quiet = previous

    # Scopes ------------------------------------------------------------------------------

    def _scopes(self) -> list[str]:
        scopes: list[str] | None = getattr(self._local, "scopes", None)
        if scopes is None:
            scopes = self._local.scopes = []
        return scopes

    def current_parent(self) -> str | None:
        scopes = self._scopes()
        return scopes[-1] if scopes else None

    def enter_module(self, name: str, parent: str | None) -> None:
        self._scopes().append(name)
        with self._lock:
            self.hierarchy.open_forward(name, parent)

    def exit_scope(self, name: str) -> None:
        scopes = self._scopes()
        if name not in scopes:
            return
        # An exception can skip an inner exit; unwind to the scope that is closing.
        while scopes.pop() != name:
            pass

    def enter_root_scope(self, name: str) -> None:
        """A scope with no forward module behind it (msprobe's ``optimizer``)."""
        self._scopes().append(name)
        if self.level is Level.MIX:
            with self._lock:
                self.hierarchy.record_now(name, None)

    # Records -----------------------------------------------------------------------------

    def begin_call(self, name: str) -> str | None:
        """A forward call starts: its stack is taken now, so that stack.json lists calls in the
        order they began. Returns the scope it is called in (its parent)."""
        stack = capture_stack()
        with self._lock:
            self.stacks.add(name, stack)
        return self.current_parent()

    def add_forward(self, name: str, parent: str | None, record: Record) -> None:
        with self._lock:
            self.data[name] = record
            if self.level is not Level.L1:
                self.hierarchy.record_forward(name, parent)

    def add_backward(self, forward_name: str, record: Record) -> None:
        name = backward_twin(forward_name)
        if name is None:
            return
        with self._lock:
            self.data.setdefault(name, record)
            if self.level is not Level.L1:
                self.hierarchy.record_backward(forward_name)

    def begin_backward(self, forward_name: str) -> None:
        """The gradient of a module's output has arrived: its backward scope is open."""
        if self.level is not Level.L1:
            with self._lock:
                self.hierarchy.open_backward(forward_name)

    def add_data_only(self, name: str, record: Record) -> None:
        """A record msprobe keeps out of construct.json (``parameters_grad``)."""
        with self._lock:
            self.data.setdefault(name, record)

    # Hooks that live on tensors and autograd nodes ---------------------------------------

    def keep_handle(self, handle: RemovableHandle) -> None:
        self._backward_handles.append(handle)

    def remove_handles(self) -> None:
        for handle in self._backward_handles:
            handle.remove()
        self._backward_handles.clear()

    def finish_at_end_of_backward(self, key: object, finisher: Finisher) -> None:
        """Run ``finisher`` when the running backward pass ends (or at stop), unless cancelled."""
        with self._lock:
            self._backward_finishers[id(key)] = finisher
            self._stop_finishers[id(key)] = finisher
            # Once per backward pass: a pass that raised never runs its callbacks, so a flag
            # alone would stay set; the graph task id tells the next pass apart.
            graph_task = torch._C._current_graph_task_id()
            if graph_task != self._callback_graph_task:
                self._callback_graph_task = graph_task
                engine: Any = torch.autograd.Variable._execution_engine
                engine.queue_callback(self._end_of_backward)

    def finish_at_stop(self, key: object, finisher: Finisher) -> None:
        with self._lock:
            self._stop_finishers[id(key)] = finisher

    def finished(self, key: object) -> None:
        with self._lock:
            self._backward_finishers.pop(id(key), None)
            self._stop_finishers.pop(id(key), None)

    def _end_of_backward(self) -> None:
        with self._lock:
            self._callback_graph_task = None
            pending = list(self._backward_finishers.values())
            self._backward_finishers.clear()
        for finisher in pending:
            finisher()

    def finish_all(self) -> None:
        """At stop: complete every record still waiting for gradients or communication."""
        with self._lock:
            pending = list(self._stop_finishers.values())
            self._stop_finishers.clear()
            self._backward_finishers.clear()
        for finisher in pending:
            finisher()
