"""construct.json: each recorded node's parent, in the order msprobe writes them.

msprobe inserts a scope (a module call, a module's backward) lazily: when the first record
inside it is written, the record goes in first and the scopes still waiting follow, outermost
first. Reproducing that keeps our construct.json shaped like msprobe's, line for line.

Backward nodes are placed from their forward twin: the parent of ``X.backward.n`` is the
backward twin of the parent of ``X.forward.n``. Inplace layers confuse msprobe's backward
hooks (see /work/shared/fixtures/README.md); deriving the structure from the forward pass
cannot be confused that way.
"""

from __future__ import annotations

from graphboard.graph.names import backward_twin, forward_twin


class Hierarchy:
    def __init__(self) -> None:
        self.parents: dict[str, str | None] = {}
        self._waiting: dict[str, str | None] = {}  # opened scopes not written yet
        self._forward_parent: dict[str, str | None] = {}

    # Forward -----------------------------------------------------------------------------

    def open_forward(self, name: str, parent: str | None) -> None:
        """A module call has started; it is written with the first record inside it."""
        self._forward_parent[name] = parent
        self._waiting[name] = parent

    def record_forward(self, name: str, parent: str | None) -> None:
        self._forward_parent[name] = parent
        self._record(name, parent)

    def record_now(self, name: str, parent: str | None) -> None:
        """A scope written as soon as it opens (msprobe's ``optimizer``)."""
        self._flush_waiting()
        self.parents.setdefault(name, parent)

    # Backward ----------------------------------------------------------------------------

    def open_backward(self, forward_name: str) -> None:
        """A module's backward has started: open it, and any enclosing backward not yet open."""
        chain: list[tuple[str, str | None]] = []
        current: str | None = forward_name
        while current is not None:
            name = backward_twin(current)
            if name is None or self._known(name):
                break
            parent = self._backward_parent(current)
            chain.append((name, parent))
            current = forward_twin(parent) if parent is not None else None
        for name, parent in reversed(chain):
            self._waiting[name] = parent

    def record_backward(self, forward_name: str) -> None:
        name = backward_twin(forward_name)
        if name is None:
            return
        parent = self._backward_parent(forward_name)
        if parent is not None:
            parent_forward = forward_twin(parent)
            if parent_forward is not None:
                self.open_backward(parent_forward)
        self._record(name, parent)

    # Internals ---------------------------------------------------------------------------

    def _backward_parent(self, forward_name: str) -> str | None:
        parent = self._forward_parent.get(forward_name)
        return backward_twin(parent) if parent is not None else None

    def _known(self, name: str) -> bool:
        return name in self.parents or name in self._waiting

    def _record(self, name: str, parent: str | None) -> None:
        if name not in self._waiting:
            self.parents.setdefault(name, parent)
        self._flush_waiting()

    def _flush_waiting(self) -> None:
        for name, parent in self._waiting.items():
            self.parents.setdefault(name, parent)
        self._waiting.clear()
