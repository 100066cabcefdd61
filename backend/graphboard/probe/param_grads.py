"""``Module.<path>.<Class>.parameters_grad.<n>`` records: a module's parameter gradients.

A hook on each parameter sees the gradient computed by one backward pass (before it is
accumulated into ``.grad``). When every parameter of a module has reported, the set is written
as record ``n`` (msprobe counts these sets, not module calls), parameters in the order their
gradients arrived, as msprobe lists them. A set left incomplete (a parameter unused in this
pass) is written when the backward pass ends. These records are in dump.json only: msprobe
keeps them out of construct.json and its builder hangs them under the last backward call.
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from graphboard.probe.leaves import Json
from graphboard.probe.session import Session


class _ModuleGrads:
    def __init__(self, session: Session, prefix: str, names: list[str]) -> None:
        self.session = session
        self.prefix = prefix
        self.names = names
        self.count = 0
        self.pending: dict[str, Json] = {}

    @property
    def record_name(self) -> str:
        return f"{self.prefix}.parameters_grad.{self.count}"

    def on_grad(self, param_name: str, grad: torch.Tensor) -> None:
        if not self.session.accepts_call():
            return
        if param_name in self.pending:  # a second pass before the first completed
            self.flush()
        with self.session.quiet():
            leaf = self.session.leaves.value(grad, f"{self.record_name}.{param_name}")
        self.pending[param_name] = [leaf]
        if len(self.pending) == len(self.names):
            self.flush()
        else:
            self.session.finish_at_end_of_backward(self, self.flush)

    def flush(self) -> None:
        self.session.finished(self)
        if not self.pending:
            return
        self.session.add_data_only(self.record_name, dict(self.pending))
        self.pending.clear()
        self.count += 1


class ParameterGrads:
    def __init__(self, session: Session, modules: list[tuple[str, nn.Module]]) -> None:
        self._session = session
        self._modules = modules
        self._states: dict[str, _ModuleGrads] = {}  # kept across start/stop: counts continue
        self._handles: list[RemovableHandle] = []

    def install(self) -> None:
        seen: set[int] = set()  # a tied parameter is reported by the first module that owns it
        for prefix, module in self._modules:
            params = [
                (name, param)
                for name, param in module.named_parameters(recurse=False)
                if param.requires_grad and id(param) not in seen
            ]
            if not params:
                continue
            seen.update(id(param) for _, param in params)
            state = self._states.get(prefix)
            if state is None:
                state = self._states[prefix] = _ModuleGrads(
                    self._session, prefix, [name for name, _ in params]
                )
            for name, param in params:
                self._handles.append(param.register_hook(partial(state.on_grad, name)))

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
