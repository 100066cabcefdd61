"""Forward hooks on ``nn.Module``s: ``Module.<attr path>.<Class>.forward.<n>`` records.

The pre-hook opens the call's scope (APIs called inside become its children), takes the stack
and records the inputs before the module can change them in place; the post-hook records the
output and the module's own parameters and arms the backward hooks for this call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from torch import nn
from torch.utils.hooks import RemovableHandle

from graphboard.probe.grad_flow import InputEdges, watch_module
from graphboard.probe.session import Record, Session


def named_modules(models: Sequence[nn.Module]) -> list[tuple[str, nn.Module]]:
    """(``Module.<path>.<Class>``, module) for every submodule, as msprobe names them.

    The model object itself is not recorded, only what it contains; with several models
    (a list, as Megatron passes them) each path starts with the model's index.
    """
    found: list[tuple[str, nn.Module]] = []
    for index, model in enumerate(models):
        for path, module in model.named_modules():
            if not path:
                continue
            full_path = f"{index}.{path}" if len(models) > 1 else path
            found.append((f"Module.{full_path}.{type(module).__name__}", module))
    return found


@dataclass(slots=True)
class _ForwardCall:
    name: str
    parent: str | None
    record: Record
    inputs: InputEdges | None


class ModuleHooks:
    def __init__(self, session: Session, modules: list[tuple[str, nn.Module]]) -> None:
        self._session = session
        self._modules = modules
        self._handles: list[RemovableHandle] = []
        # One stack of open calls per module: a module may run inside itself (recursion).
        self._open: dict[int, list[_ForwardCall | None]] = {}

    def install(self) -> None:
        for prefix, module in self._modules:
            self._handles.append(
                module.register_forward_pre_hook(partial(self._before, prefix), with_kwargs=True)
            )
            self._handles.append(
                module.register_forward_hook(self._after, with_kwargs=True, always_call=True)
            )

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._open.clear()

    def _before(
        self, prefix: str, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        calls = self._open.setdefault(id(module), [])
        session = self._session
        if not session.accepts_call():
            calls.append(None)
            return
        name = f"{prefix}.forward.{session.counters.next(prefix)}"
        parent = session.begin_call(name)
        with session.quiet():
            record: Record = session.leaves.inputs(args, kwargs, name)
            inputs = InputEdges.capture(args, kwargs)
        session.enter_module(name, parent)
        calls.append(_ForwardCall(name, parent, record, inputs))

    def _after(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any
    ) -> None:
        calls = self._open.get(id(module))
        call = calls.pop() if calls else None
        if call is None:
            return
        session = self._session
        session.exit_scope(call.name)
        leaves = session.leaves
        with session.quiet():
            call.record["output"] = leaves.output(output, f"{call.name}.output")
            call.record["parameters"] = {
                name: leaves.value(param, f"{call.name}.parameters.{name}")
                for name, param in module.named_parameters(recurse=False)
            }
            watch_module(session, call.name, call.inputs, output)
        session.add_forward(call.name, call.parent, call.record)
